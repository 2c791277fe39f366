"""The replay: requests through the gateway and replicas, replicas through the HPA, replicas onto nodes. Pure.

One loop over the seconds of the replay (`Replay.run`); each tick runs its phases in this order:

1. arrivals: the second's requests reach the model's gateway, whose flow control (the Endpoint
   Picker's, llm-d-router v0.10.0, utilization detector; thresholds and TTL from the derived
   state's `Hold`) dispatches or holds each one. A replica's saturation is max(waiting /
   queue threshold, KV use / KV threshold), the pool's the average over its ready replicas (1 with
   none). Below 1 a request goes at once to the next ready replica in turn; at 1 or above it is held
   (FIFO), behind whatever is held already. Held requests are released one by one, saturation
   re-read after each, whenever it falls below 1: each second, as a completion frees room, as a
   replica becomes ready. One held for the TTL is shed: 429 while the pool has a ready replica, 503
   while it has none. A dispatched request still meets vLLM's admission bound (--max-num-queued-reqs,
   a 503); else it waits in that replica's queue and is admitted when the replica has a sequence slot
   and KV cache for it (`Batches`): its first token comes after its prefill (behind the replica's
   earlier prefills) and one decode step, its completion after its output at the step time of the
   batch it joined. Admissions, completions and releases interleave at the requests' own times; a
   held request's wait and time to first token count from its arrival at the gateway.
2. serving: the completions through the end of the second are booked (what they free admits
   what waits, and releases what the gateway holds), so the scrape that follows reads the queues
   the second leaves.
3. control loop: Prometheus scrapes every `vllmScrapeInterval` (vLLM's metrics and, for a model at
   zero, the requests in flight at its gateway: held plus dispatched and not completed); KEDA wakes a
   model at zero when its gateway holds a request (or a cron floor opens) and takes it to zero when
   idle; the HPA (planner/hpa.py) reconciles every 15 s with the rendered ScaledObject's triggers,
   targets, behavior and bounds; KEDA's fallback holds the count while no replica reports metrics.
4. provisioning: each pool (planner/fleet.py, with the rendered NodePool's settings) binds its
   pending replicas, launching nodes after Karpenter's batching wait, re-places the headroom's
   placeholders and consolidates empty nodes.
5. terminations: a draining replica (no longer an endpoint: the gateway sends it nothing new) leaves
   its node once idle after its preStop sleep, or when the shutdown timeout cuts it.
6. accounting: each pool's cost, nodes and used share accrue since its last change; every
   minute the series are sampled.

A new replica starts in the scale-up budget's terms after its node: image (on a new node),
weights, engine start, probe, load balancer. The order is the one the figures depend on: the
scrape reads queues after the second's completions, and a drained replica's room is free for
the next tick's pending replicas, not this one's.

Every request ends one way: served; shed by the gateway (429 after the TTL with a ready replica,
503 with none); refused by vLLM (503); or unanswered (cut by a drain, or still held or waiting when
the replay ends). `ModelReplay` counts each, the requests ever held and the longest hold.
"""

from __future__ import annotations

import heapq
import itertools
import math
import operator
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

import numpy as np

from builders.gateway import router
from builders.serving import scaling
from config.derived import capacity, state
from config.derived.hold import Hold
from config.derived.path import Outcome
from config.facts import speed
from config.sections import cron
from config.sections.models import ModelConfig
from config.sections.stack import StackConfig
from config.sections.types import duration_seconds
from planner import hpa
from planner.fleet import Node, Pool
from planner.serving import Measured, ReplicaPerformance, performance
from planner.traffic import DAY_SECONDS, REPLAY_START, Requests, stream

PROMETHEUS = "http://prometheus.monitoring.svc:9090"
HPA_SYNC_SECONDS = int(speed.HPA_SYNC_PERIOD.value)
MINUTE = 60
CONSOLIDATION_TICK = 10
"""Seconds between consolidation passes (Karpenter's own loop is of that order)."""


@dataclass(eq=False, slots=True)
class Replica:
    model: str
    created: float
    node: Node | None = None
    ready_at: float | None = None
    draining_since: float | None = None
    running: int = 0
    running_ids: set[int] = field(default_factory=set)
    context: float = 0.0
    prefill_free_at: float = 0.0
    queue: deque[int] = field(default_factory=deque)
    prefixes: dict[int, None] = field(default_factory=dict)
    """The shared prefixes whose KV blocks this replica still caches, least recently used first."""

    def ready(self, now: float) -> bool:
        return self.ready_at is not None and self.ready_at <= now and self.draining_since is None


@dataclass(slots=True)
class ModelReplay:
    """One model during the replay: its replicas, its autoscaler's memory and its requests' fate."""

    config: ModelConfig
    derived: state.ModelState
    """The model's derived state (hosts, replicas per node, scale-up budget, scales to zero)."""
    perf: ReplicaPerformance
    requests: Requests
    behavior: hpa.Behavior | None
    scaled_object: dict[str, object]
    start_seconds: float
    """From binding to a warm node to serving: weights, engine start, probe, load balancer."""
    image_seconds: float
    replicas: list[Replica] = field(default_factory=list)
    version: int = 0
    """Bumped whenever a replica is added, drained or removed."""
    ready_cache: list[Replica] = field(default_factory=list)
    ready_version: int = -1
    ready_until: float = -1.0
    draining: int = 0
    hold: Hold | None = None
    """The gateway's flow control: saturation thresholds and the TTL (the derived state's, or Options.holds)."""
    gate: tuple[float, float, float] = (0.0, 0.0, 0.0)
    """The utilization detector's arithmetic: 1 / queue threshold, 1 / (KV tokens x KV threshold), 1 / KV threshold."""
    holding: deque[int] = field(default_factory=deque)
    """The requests flow control holds now, oldest first."""
    queued: int = 0
    context: float = 0.0
    """Waiting requests and KV tokens summed over all the model's replicas (kept by dispatch, admit,
    completion and removal): a bound that spares the detector's loop while far from saturation."""
    wake_above: float | None = None
    """A model at zero: KEDA activates it when the gateway's requests in flight exceed this (the trigger's activationThreshold)."""
    max_in_flight: int = 2**31
    """vLLM's --max-num-queued-reqs: a request finding this many running and waiting on its replica gets a 503."""
    floors: list[int] = field(default_factory=list)
    """The cron floor of each minute of the replay (0 outside every schedule)."""
    last_active: float = 0.0
    idle_after: float = math.inf
    recent_ttft: deque[tuple[float, float]] | None = None
    """(arrival, ttft) of the last two minutes, kept only when the model scales on p95 TTFT."""
    next_request: int = 0
    turn: int = 0
    routing: str = "gateway"
    """How a dispatched request picks its replica (ROUTINGS)."""
    weights: tuple[float, float, float] = (0.0, 0.0, 0.0)
    """The picker's scorer weights the stack renders: queue, KV-cache utilization, prefix cache."""
    prefix_slots: int = 0
    """Shared prefixes one replica's cache keeps (PREFIX_CACHE_SHARE of its KV cache over the traffic's prefix length)."""
    prefix_share: float = 0.0
    """The share of a prompt a cached shared prefix covers (the prefix scorer's score on a hit)."""
    scraped: dict[str, float] | None = None
    failures: int = 0
    cut_by_failures: int = 0
    """Requests running or queued on a replica when its node's GPU failed (never answered)."""
    ttft: np.ndarray = field(default_factory=lambda: np.zeros(0))
    wait: np.ndarray = field(default_factory=lambda: np.zeros(0))
    served: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    held_seconds: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """By request, how long the gateway held it (to its release, its shedding or the replay's end); NaN if never held."""
    prefix_skipped: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    """By request, the prompt tokens a cached shared prefix spared its prefill (after the replay)."""
    rejected: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int8))
    """By request, who refused it: SHED_TTL (429), SHED_NO_ENDPOINTS (503), REFUSED (vLLM's 503), else 0."""
    series: dict[str, list[float]] = field(default_factory=dict)

    def saturated(self) -> bool:
        """The utilization detector (`saturated`), answered at once when even the sums over every replica
        (max(a, b) <= a + b, and KV use is at most its tokens) stay below one per ready replica."""
        ready = self.ready_cache
        per_waiting, per_token, _ = self.gate
        if ready and self.queued * per_waiting + self.context * per_token < len(ready):
            return False
        return saturated(ready, self.gate)

    def active(self) -> list[Replica]:
        return [r for r in self.replicas if r.draining_since is None]

    def in_flight(self) -> int:
        """The requests in flight at the gateway's proxies: held, or dispatched and not completed."""
        return len(self.holding) + sum(r.running + len(r.queue) for r in self.replicas)

    # -- the requests' outcomes (after the replay) --
    @property
    def held(self) -> int:
        """Requests the gateway held at least once (served later, shed, or still held at the end)."""
        return int(np.count_nonzero(~np.isnan(self.held_seconds)))

    @property
    def longest_hold_seconds(self) -> float:
        return float(np.nanmax(self.held_seconds)) if self.held else 0.0

    @property
    def shed_ttl(self) -> int:
        """Held for the TTL with a ready replica: 429 (EvictedTTL, rejected-ttl-expired)."""
        return int(np.count_nonzero(self.rejected == SHED_TTL))

    @property
    def shed_no_endpoints(self) -> int:
        """Held for the TTL with no ready replica: 503 (RejectedNoEndpoints)."""
        return int(np.count_nonzero(self.rejected == SHED_NO_ENDPOINTS))

    @property
    def refused(self) -> int:
        """Dispatched to a replica at vLLM's admission bound: 503 from vLLM."""
        return int(np.count_nonzero(self.rejected == REFUSED))

    @property
    def prefix_hit_rate(self) -> float:
        """Of the requests with a shared prefix that reached a replica, the share whose prefix it cached."""
        groups = self.requests.prefix_group
        if groups is None:
            return 0.0
        reached = (groups >= 0) & (self.rejected == 0) & ~np.isnan(self.ttft)
        return float(np.mean(self.prefix_skipped[reached] > 0)) if reached.any() else 0.0

    @property
    def unanswered(self) -> int:
        """Neither served nor refused: cut by a drain, or still held or waiting when the replay ends."""
        return int(len(self.requests) - self.served.sum()) - self.shed_ttl - self.shed_no_endpoints - self.refused


@dataclass(frozen=True)
class Options:
    seconds: int
    spot_availability: float = 0.9
    static_replicas: dict[str, int] | None = None
    """The static baseline: these replicas all the time, on-demand, no autoscaling."""
    seed: int = 0
    holds: dict[str, Hold] | None = None
    """Per model, flow control other than the derived state's (a what-if TTL or threshold)."""
    routing: str = "gateway"
    """gateway: the Endpoint Picker's scorers as rendered; least-loaded: its queue and KV scorers only;
    round-robin: each request to the next ready replica (an ALB straight to the pods)."""
    start_replicas: dict[str, int] | None = None
    """Per model, the ready replicas the replay starts with (within min and max); default: min, or the
    schedule floor of the first minute."""
    gpu_failures: float = 0.0
    """GPU node failures per node per day (Poisson, from the seed): a failed node's replicas stop at once
    (what they ran or queued is cut, unanswered) and it holds nothing new; with node repair Karpenter
    deletes it after speed.NODE_REPAIR_ACCELERATED and its pods start again through a new node (a miss)."""
    node_repair: bool | None = None
    """Whether Karpenter repairs a failed node; None: the stack's karpenter.nodeRepair. Either way only with the node
    monitoring agent (nodeMonitoring.enabled), whose condition the repair acts on. Off, the node stays failed."""
    measured: dict[str, Measured] | None = None
    """Per model, its replica as measured on the stack's cluster (`make measure`) in place of the prediction."""


@dataclass
class Result:
    models: dict[str, ModelReplay]
    pools: dict[str, Pool]
    seconds: int
    cost_seconds: dict[str, dict[str, float]]
    """Pool -> capacity type -> the sum over seconds of the hourly prices of live nodes (/ 3600: dollars)."""
    node_seconds: dict[str, dict[str, float]]
    series: dict[str, dict[str, list[float]]]
    used_seconds: dict[str, float]
    """Pool -> sum over seconds of the share of its live nodes that pods (not placeholders) use."""
    failures: dict[str, list[tuple[float, float | None]]] = field(default_factory=dict)
    """Pool -> (failed at, repaired at or None) of each GPU node that failed."""


TTFT_WINDOW = 120.0
"""The ttft-p95 trigger's rate window (builders/serving/scaling.py: [2m])."""
ROUTINGS = ("gateway", "least-loaded", "round-robin")
PREFIX_CACHE_SHARE = 0.5
"""Share of a replica's KV cache that keeps finished requests' shared prefixes (vLLM frees a request's
blocks into an LRU that new requests reuse on a hash match and evict when they need room): an assumption
between an idle replica (all of it) and a saturated one (little)."""
MODELLED_TRIGGERS = ("queue-depth", "kv-cache", "ttft-p95", scaling.GATEWAY_REQUESTS_TRIGGER)
SHED_TTL, SHED_NO_ENDPOINTS, REFUSED = Outcome.EVICTED_TTL, Outcome.REJECTED_NO_ENDPOINTS, Outcome.REFUSED_BY_REPLICA
"""`ModelReplay.rejected`: the gateway's 429 and 503 after the TTL, and vLLM's 503."""
_push, _pop = heapq.heappush, heapq.heappop


# -- the requests on the gateway and the replicas ------------------------------------------------------
Completion = tuple[float, int, Replica, float, ModelReplay, int, "_Column"]
"""(time, order, replica, tokens it held, model, request, the model's answered flags)."""
_Hot = tuple[
    "_Column",
    "_Column",
    "_Column",
    "_Column",
    "_Column",
    "_Column",
    "_Column",
    int,
    int,
    ReplicaPerformance,
    deque[tuple[float, float]] | None,
    "_Column",
]
"""Per model, what admit reads: arrival at the gateway, dispatch to vLLM, prompt and output tokens,
queue wait, time to first token and answered flags by request; max-num-seqs, KV cache tokens, the
replica's roofline; the recent TTFTs (or None); the prompt tokens a prefix hit spared each request."""


def saturated(ready: list[Replica], gate: tuple[float, float, float]) -> bool:
    """The utilization detector: the pool is saturated when the average over its ready replicas of
    max(waiting / queue threshold, KV use / KV threshold) reaches 1, or when it has no ready replica."""
    if not ready:
        return True
    per_waiting, per_token, full = gate
    total = 0.0
    for r in ready:
        queued = len(r.queue) * per_waiting
        kv = r.context * per_token
        if kv > full:
            kv = full  # KV use is at most the whole cache
        total += queued if queued > kv else kv
    return total >= len(ready)


class _Column(Protocol):
    """By request, a field or an outcome as the hot path indexes it (`Batches`): the memoryview of a numpy
    array, whose items read and write as Python numbers."""

    def __getitem__(self, i: int, /) -> Any: ...

    def __setitem__(self, i: int, value: Any, /) -> None: ...

    def __len__(self) -> int: ...


def _column(values: np.ndarray) -> _Column:
    return cast(_Column, values.data)


def _view(values: np.ndarray, dtype: type) -> _Column:
    """A request field as the hot path reads it: no copy when it has the dtype already."""
    return _column(np.ascontiguousarray(values, dtype=dtype))


def pick(s: ModelReplay, ready: list[Replica], group: int) -> Replica:
    """The Endpoint Picker's choice (llm-d-router v0.10.0, max-score picker): the highest weighted sum of
    the queue scorer ((most waiting - its waiting) / (most - least), 1 when all wait alike), the KV-cache
    utilization scorer (1 - its KV use) and the prefix-cache scorer (the share of the prompt it caches:
    the traffic's prefix share for a cached shared prefix, else 0). Ties go round the replicas in turn,
    as the picker's random tie-break spreads them."""
    w_queue, w_kv, w_prefix = s.weights
    start = s.turn % len(ready)
    order = ready[start:] + ready[:start] if start else ready
    affinity = group >= 0 and w_prefix > 0
    if not affinity or not any(group in r.prefixes for r in order):
        if not s.queued:
            return min(order, key=_CONTEXT)  # nothing waits anywhere (the common case): as below
        for r in order:
            if r.queue:
                break
        else:
            # every queue empty and no cached prefix: the emptiest cache wins (KV use capped at 1 orders
            # nothing below the cap), ties in turn
            return min(order, key=_CONTEXT)
    queues = [len(r.queue) for r in order]
    most = max(queues)
    spread = most - min(queues)
    bonus = w_prefix * s.prefix_share if affinity else 0.0
    capacity = s.perf.kv_capacity_tokens or 1
    best, best_score = order[0], -1.0
    for r, waiting in zip(order, queues, strict=True):
        kv = r.context / capacity
        score = w_kv * (1.0 - (kv if kv < 1.0 else 1.0)) + (w_queue * (most - waiting) / spread if spread else w_queue)
        if bonus and group in r.prefixes:
            score += bonus
        if score > best_score:
            best, best_score = r, score
    return best


_CONTEXT = operator.attrgetter("context")


class Batches:
    """The gateway's flow control and the replicas' running batches: dispatch, holding, shedding,
    admission, prefill, decode and completion of each request.

    By request, memoryviews of numpy arrays in the hot path: indexed as Python numbers (numpy's own scalar
    access costs more than the arithmetic around it), eight bytes a request (a list of Python numbers takes
    about 36, and the two replays plan.run runs side by side slowed each other by a quarter on a 7-day
    replay with lists), and the outcomes are the arrays the replay returns, not copies."""

    def __init__(self, models: dict[str, ModelReplay]) -> None:
        self.completions: list[Completion] = []
        self._order = itertools.count()
        self.arrivals = {name: _view(s.requests.arrival, np.float64) for name, s in models.items()}
        self.sent = {name: _column(np.array(s.requests.arrival, dtype=np.float64)) for name, s in models.items()}
        """When each request reached vLLM: its arrival, or its release by the gateway."""
        self.ttfts = {name: _column(np.full(len(s.requests), np.nan)) for name, s in models.items()}
        self.waits = {name: _column(np.full(len(s.requests), np.nan)) for name, s in models.items()}
        self.answered = {name: _column(np.zeros(len(s.requests), dtype=bool)) for name, s in models.items()}
        self.held_for = {name: _column(np.full(len(s.requests), np.nan)) for name, s in models.items()}
        self.rejected = {name: _column(np.zeros(len(s.requests), dtype=np.int8)) for name, s in models.items()}
        self.groups = {
            name: None if s.requests.prefix_group is None else _view(s.requests.prefix_group, np.int64) for name, s in models.items()
        }
        self.prefix_tokens = {
            name: _view(s.requests.prefix_tokens, np.int64) for name, s in models.items() if s.requests.prefix_tokens is not None
        }
        self.skip = {name: _column(np.zeros(len(s.requests), dtype=np.int64)) for name, s in models.items()}
        """By request, the prompt tokens a prefix-cache hit spared its prefill."""
        # Per model, everything admit reads: the request columns and the replica's constants.
        self._hot: dict[str, _Hot] = {
            name: (
                self.arrivals[name],
                self.sent[name],
                _view(s.requests.prompt, np.int64),
                _view(s.requests.output, np.int64),
                self.waits[name],
                self.ttfts[name],
                self.answered[name],
                s.perf.max_num_seqs,
                s.perf.kv_capacity_tokens,
                s.perf,
                s.recent_ttft,
                self.skip[name],
            )
            for name, s in models.items()
        }

    def dispatch(self, s: ModelReplay, i: int, at: float) -> None:
        """The request goes to a ready replica (there is one: the pool is not saturated), chosen by the
        model's routing, which refuses it at vLLM's admission bound (503, not served) or queues and
        admits it. A shared prefix that replica still caches is not prefilled again."""
        ready = s.ready_cache
        name = s.config.name
        groups = self.groups[name]
        group = -1 if groups is None else groups[i]
        n = len(ready)
        if n == 1:
            r = ready[0]
        elif s.routing == "round-robin":
            r = ready[s.turn % n]
        elif group < 0 and not s.queued:
            # the picker's first rule without the call (the common case): nothing waits, no prefix to follow
            start = s.turn % n
            r = min(ready[start:] + ready[:start] if start else ready, key=_CONTEXT)
        else:
            r = pick(s, ready, group)
        s.turn += 1
        if r.running + len(r.queue) >= s.max_in_flight:
            self.rejected[name][i] = REFUSED
            return
        if group >= 0:
            cached = r.prefixes
            if group in cached:
                del cached[group]
                self.skip[name][i] = self.prefix_tokens[name][i]
            elif len(cached) >= s.prefix_slots:
                del cached[next(iter(cached))]
            cached[group] = None
        queue = r.queue
        if not queue:
            # nothing ahead of it (nearly always): admitted now when the replica has a slot and KV cache for it
            hot = self._hot[name]
            tokens = hot[2][i] + hot[3][i] / 2
            if r.running < hot[7] and not (r.running and r.context + tokens > hot[8]):
                self._begin(s, r, i, at, tokens, hot)
                return
        queue.append(i)
        s.queued += 1
        self.admit(s, r, at)

    def release(self, s: ModelReplay, now: float) -> None:
        """What the gateway holds, oldest first: shed once held for the TTL (429 with a ready replica,
        503 with none), sent on one by one while the pool is below saturation."""
        if s.ready_version != s.version or now >= s.ready_until:
            _refresh_ready(s, now)
        name = s.config.name
        holding, times, held_for = s.holding, self.arrivals[name], self.held_for[name]
        assert s.hold is not None
        ttl = s.hold.ttl_seconds
        while holding:
            i = holding[0]
            waited = now - times[i]
            if waited >= ttl:
                holding.popleft()
                held_for[i] = waited
                self.rejected[name][i] = SHED_TTL if s.ready_cache else SHED_NO_ENDPOINTS
                continue
            if s.saturated():
                return
            holding.popleft()
            held_for[i] = waited
            self.sent[name][i] = now
            self.dispatch(s, i, now)

    def admit(self, s: ModelReplay, r: Replica, now: float) -> None:
        """Admit what the replica's queue holds while it has a sequence slot and KV cache."""
        hot = self._hot[s.config.name]
        prompt, output, limit, capacity = hot[2], hot[3], hot[7], hot[8]
        queue = r.queue
        while queue and r.running < limit:
            i = queue[0]
            tokens = prompt[i] + output[i] / 2  # a sequence holds its prompt and, on average, half its output
            if r.running and r.context + tokens > capacity:
                return
            queue.popleft()
            s.queued -= 1
            self._begin(s, r, i, now, tokens, hot)

    def _begin(self, s: ModelReplay, r: Replica, i: int, now: float, tokens: float, hot: _Hot) -> None:
        """Request i joins the replica's batch at `now`, holding `tokens` of its KV cache: its prefill,
        first token and completion are booked."""
        times, sent, prompt, output, wait, ttft, answered, _, _, perf, recent, skip = hot
        arrival = times[i]
        start = now if now > arrival else arrival
        begin = start if start > r.prefill_free_at else r.prefill_free_at
        # its prompt's steps, shared with the batch's decodes; prefills queue behind each other
        prefill, step, stall = perf.booking(prompt[i] - skip[i], r.running, r.context, tokens)
        prefill_done = begin + prefill
        r.prefill_free_at = prefill_done
        r.running += 1
        r.context += tokens
        s.context += tokens
        first = prefill_done + perf.request_overhead  # the prefill's last step samples the first token
        wait[i] = start - arrival  # from the gateway: a held request's hold counts
        ttft[i] = first - arrival
        if recent is not None:
            # vLLM's own histogram: from the request reaching vLLM, not the gateway
            reached = sent[i]
            recent.append((reached, first - reached))
        # its other tokens at the batch's step time, and the others' prefills its steps carry (about
        # one each over its life in a steady batch): ReplicaPerformance.tpot's rule
        steps = output[i] - 1
        decode = steps * step + (r.running - 1) * stall
        _push(self.completions, (prefill_done + (decode if steps > 0 else 0.0), next(self._order), r, tokens, s, i, answered))
        r.running_ids.add(i)

    def complete_until(self, now: float) -> None:
        """Book every completion up to `now`: its slot and KV cache go to what its replica queues, and
        the room it leaves to what the gateway holds."""
        completions = self.completions
        while completions and completions[0][0] <= now:
            done, _, r, tokens, s, i, answered = _pop(completions)
            ids = r.running_ids
            if i not in ids:
                continue  # its replica was killed at the end of its drain: never served
            ids.discard(i)
            r.running -= 1
            r.context -= tokens
            s.context -= tokens
            answered[i] = True
            if r.queue:
                self.admit(s, r, done)
            if s.holding:
                self.release(s, done)


# -- the pools' sums --------------------------------------------------------------------------------------
class Ledger:
    """Per pool, sums over seconds: node cost by capacity type, node counts, the share pods use.

    A pool's sums accrue between its changes: from (changes, since, hourly prices, node counts,
    used share) of its last change. A change during second t counts from second t + 1 on."""

    def __init__(self, pools: dict[str, Pool]) -> None:
        self.cost = {p: {"spot": 0.0, "on-demand": 0.0} for p in pools}
        self.node_seconds = {p: {"spot": 0.0, "on-demand": 0.0} for p in pools}
        self.used_seconds = dict.fromkeys(pools, 0.0)
        self._since: dict[str, tuple[int, int, dict[str, float], dict[str, int], float]] = {
            name: (p.changes, 0, *p.rates()) for name, p in pools.items()
        }

    def accrue_changed(self, pools: dict[str, Pool], until: int) -> None:
        """Book, up to `until`, the pools that changed since they last accrued."""
        since = self._since
        for name, p in pools.items():
            if since[name][0] != p.changes:
                self.accrue(name, p, until)

    def accrue(self, name: str, pool: Pool, until: int) -> None:
        """Book the pool's sums since its last change up to `until`, then start from its current state."""
        _, since, rate, count, used = self._since[name]
        span = until - since
        for kind in ("spot", "on-demand"):
            self.cost[name][kind] += rate[kind] * span
            self.node_seconds[name][kind] += count[kind] * span
        self.used_seconds[name] += used * span
        self._since[name] = (pool.changes, until, *pool.rates())


# -- the replay ---------------------------------------------------------------------------------------------
class Replay:
    """One replay of a stack's fleet: built in its steady state, then run tick by tick."""

    def __init__(self, cfg: StackConfig, requests: dict[str, Requests], options: Options) -> None:
        self.options = options
        self.static = options.static_replicas
        self.scrape_every = duration_seconds(cfg.observability.vllm_scrape_interval)
        capacity = "on-demand" if self.static else None
        self.pools = {
            p.name: Pool.of(cfg, p.name, options.spot_availability, stream(options.seed, f"pool:{p.name}"), capacity) for p in cfg.gpu_pools
        }
        self.models = {m.name: self._model(cfg, m, requests) for m in cfg.models}
        self.at_zero = [s for s in self.models.values() if s.derived.scales_to_zero]
        """The models KEDA may take to zero (and wake from it), in stack order."""
        self._steady_start()
        self.batches = Batches(self.models)
        self.ledger = Ledger(self.pools)
        self.series: dict[str, dict[str, list[float]]] = {}
        for name in self.models:
            self.series[name] = {k: [] for k in ("requests", "desired", "ready", "queue", "held", "ttftP99")}
        for name in self.pools:
            self.series[f"pool:{name}"] = {"nodes": []}
        self.minute_desired = dict.fromkeys(self.models, 0)
        # Karpenter repairs a GPU fault only from the node monitoring agent's AcceleratedHardwareReady condition
        chosen = options.node_repair if options.node_repair is not None else cfg.karpenter.node_repair
        self.repairing = chosen and cfg.node_monitoring.enabled
        self.fault_cap: dict[str, int] = {}
        """Per pool, the most nodes its GPU limit allows: the candidate failures' rate is per that many."""
        self.faults = self._fault_times()
        """(second, pool, acceptance draw, node draw) of each candidate GPU failure, in time order."""
        self.repairs: list[tuple[float, int, str, Node]] = []
        self.failed: dict[str, list[tuple[float, float | None]]] = {name: [] for name in self.pools}
        self._fault_order = itertools.count()

    def _fault_times(self) -> list[tuple[float, str, float, float]]:
        """Candidate failures per pool at the rate of its largest node count (thinned at each one by the
        share of that count that is live: a Poisson process at `gpu_failures` per live node-day)."""
        rate = self.options.gpu_failures
        if rate <= 0:
            return []
        found: list[tuple[float, str, float, float]] = []
        for name, pool in self.pools.items():
            rng = stream(self.options.seed, f"faults:{name}")
            per_node = min(pool.settings.gpus(t) for t in pool.derived.types) if pool.derived.types else 1
            cap = max(1, pool.settings.gpu_limit // max(1, per_node))
            self.fault_cap[name] = cap
            at = 0.0
            while True:
                at += float(rng.exponential(DAY_SECONDS / (rate * cap)))
                if at >= self.options.seconds:
                    break
                found.append((at, name, float(rng.random()), float(rng.random())))
        return sorted(found)

    def _model(self, cfg: StackConfig, m: ModelConfig, requests: dict[str, Requests]) -> ModelReplay:
        derived = state.of(cfg).model(m.name)
        budget = derived.scale_up
        pool = cfg.pool(m.pool)
        assert pool is not None
        so = scaling.scaled_object(m, PROMETHEUS, pool, budget.miss, scales_to_zero=derived.scales_to_zero)
        triggers = hpa.triggers(so)
        unknown = [t.name for t in triggers if t.name not in MODELLED_TRIGGERS]
        if unknown:
            raise ValueError(f"{m.name}: the planner does not model trigger(s) {', '.join(unknown)}")
        wake = [t.activation for t in triggers if t.name == scaling.GATEWAY_REQUESTS_TRIGGER]
        if derived.scales_to_zero and not wake:
            raise ValueError(f"{m.name}: scales to zero without the {scaling.GATEWAY_REQUESTS_TRIGGER} trigger that wakes it")
        reqs = requests.get(m.name) or Requests(np.zeros(0), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
        hold = (self.options.holds or {}).get(m.name, derived.hold)
        perf = performance(m, pool, measured=(self.options.measured or {}).get(m.name))
        if self.options.routing not in ROUTINGS:
            raise ValueError(f"routing {self.options.routing!r}: use one of {', '.join(ROUTINGS)}")
        weights = scorer_weights(m, hold)
        if self.options.routing == "least-loaded":
            weights = (weights[0], weights[1], 0.0)
        prefix_length = prefix_share = 0.0
        if reqs.prefix_tokens is not None and (reqs.prefix_tokens > 0).any():
            has = reqs.prefix_tokens > 0
            prefix_length = float(reqs.prefix_tokens[has].mean())
            prefix_share = float((reqs.prefix_tokens[has] / reqs.prompt[has]).mean())
        terms = budget.terms
        return ModelReplay(
            m,
            derived,
            perf,
            reqs,
            None if self.static else hpa.Behavior.from_scaled_object(so),
            so,
            start_seconds=terms["weights"] + terms["engineStart"] + terms["probe"] + terms["loadBalancer"],
            image_seconds=terms["imagePull"],
            recent_ttft=deque() if m.autoscaling.ttft_p95_seconds is not None and not self.static else None,
            hold=hold,
            gate=(1.0 / hold.queue_threshold, 1.0 / (max(1, perf.kv_capacity_tokens) * hold.kv_threshold), 1.0 / hold.kv_threshold),
            wake_above=wake[0] if wake else None,
            routing=self.options.routing,
            weights=weights,
            prefix_slots=max(1, math.floor(PREFIX_CACHE_SHARE * perf.kv_capacity_tokens / prefix_length)) if prefix_length else 0,
            prefix_share=prefix_share,
            max_in_flight=derived.path.in_flight_bound or capacity.max_in_flight_requests(m, pool),
            floors=floors(m, self.options.seconds),
            idle_after=float(duration_seconds(m.autoscaling.idle_after)) if derived.scales_to_zero else math.inf,
        )

    def _steady_start(self) -> None:
        """The replay starts in steady state: each model at its starting count (Options.start_replicas,
        at least its minimum and the first minute's schedule floor; the static count for the static
        fleet) on ready nodes, and the headroom's placeholders on theirs."""
        start = self.options.start_replicas or {}
        for name, s in self.models.items():
            floor = s.floors[0] if s.floors else 0
            count = max(s.config.replicas.min, floor, min(start.get(name, 0), s.config.replicas.max))
            if self.static:
                count = self.static[name]
            elif s.behavior is not None and count:
                # a running HPA has recommended this count through its windows: the first reconcile must
                # not read the empty queues at t=0 as a reason to scale the warm start straight down
                s.behavior.recommendations.append((0.0, count))
            for _ in range(count):
                _new_replica(s, self.pools[s.config.pool], -(10**6), warm=True)
            for r in s.replicas:
                r.ready_at = 0.0
        for p in self.pools.values():
            if not self.static:
                p.warm_headroom(-(10**6))
            p.backdate(0.0)

    def run(self, progress: Callable[[int], None] | None = None) -> Result:
        # a second's GPU faults first: a failure at `at` cuts what its replicas hold at that instant (completions
        # before it booked), before the second's arrivals and completions go on
        phases = (self.gpu_faults, self.arrivals, self.serving, self.control_loop, self.provisioning, self.terminations, self.accounting)
        t = 0
        while t < self.options.seconds:
            for phase in phases:
                phase(t)
            following = self.next_tick(t)
            if progress and following // 3600 > t // 3600:
                progress(3600 * (following // 3600 - t // 3600))
            t = following
        return self._result()

    # -- 1. arrivals ----------------------------------------------------------------------------------
    def arrivals(self, t: int) -> None:
        """The second's requests reach the gateway. What it holds is shed after the TTL or released
        while the pool is below saturation (oldest first); each new request then goes behind what is
        held, is held while the pool is saturated (or has no ready replica), or goes at once to the
        next ready replica in turn."""
        now = float(t)
        batches = self.batches
        completions, complete_until, release, dispatch = batches.completions, batches.complete_until, batches.release, batches.dispatch
        if completions and completions[0][0] <= now:
            complete_until(now)
        for name, s in self.models.items():
            times = batches.arrivals[name]
            if s.holding:
                release(s, now)
            if s.next_request >= len(times) or times[s.next_request] >= now + 1:
                continue
            s.last_active = now
            holding = s.holding
            end = now + 1
            count = len(times)
            gate = s.gate
            per_waiting, per_token, _ = gate
            for i in range(s.next_request, count):
                at = times[i]
                if at >= end:
                    break
                s.next_request = i + 1
                if completions and completions[0][0] <= at:
                    complete_until(at)
                if s.ready_version != s.version or at >= s.ready_until:
                    _refresh_ready(s, at)  # a replica became ready (or the set changed): an endpoint now
                    if holding:
                        release(s, at)
                # flow control holds it (FIFO) behind what it holds, or while saturated (ModelReplay.saturated inline)
                ready = s.ready_cache
                if holding or not ready or (s.queued * per_waiting + s.context * per_token >= len(ready) and saturated(ready, gate)):
                    holding.append(i)
                    continue
                dispatch(s, i, at)

    # -- 2. serving -----------------------------------------------------------------------------------
    def serving(self, t: int) -> None:
        """Every completion through the end of the second is booked."""
        completions = self.batches.completions
        if completions and completions[0][0] <= t + 1:
            self.batches.complete_until(float(t + 1))

    # -- 2b. GPU faults -------------------------------------------------------------------------------
    def gpu_faults(self, t: int) -> None:
        """The second's GPU failures, and the repairs due (Options.gpu_failures, Options.node_repair)."""
        end = t + 1
        while self.faults and self.faults[0][0] < end:
            at, name, accept, which = self.faults.pop(0)
            self._fail(name, at, accept, which)
        while self.repairs and self.repairs[0][0] < end:
            at, _, name, node = _pop(self.repairs)
            self._repair(name, node, at)

    def _fail(self, name: str, at: float, accept: float, which: float) -> None:
        pool = self.pools[name]
        eligible = [n for n in pool.live() if n.failed_at is None and n.ready_at <= at]
        if not eligible or accept >= len(eligible) / self.fault_cap[name]:
            return
        node = eligible[int(which * len(eligible))]
        self.batches.complete_until(at)
        pool.fail(node, at)
        self.failed[name].append((at, None))
        for s in self.models.values():
            for r in s.replicas:
                if r.node is not node:
                    continue
                # the engine dies with its GPU: what runs or waits is cut; the pod stays bound, not ready
                s.cut_by_failures += len(r.running_ids) + len(r.queue)
                s.queued -= len(r.queue)
                r.queue.clear()
                r.running_ids.clear()
                r.running = 0
                s.context -= r.context
                r.context = 0.0
                r.ready_at = math.inf
                s.version += 1
        if self.repairing:
            _push(self.repairs, (at + speed.NODE_REPAIR_ACCELERATED.value, next(self._fault_order), name, node))

    def _repair(self, name: str, node: Node, at: float) -> None:
        """Karpenter deletes the node with no drain (1.14.1); the ReplicaSets start its pods again, pending."""
        pool = self.pools[name]
        if node.gone_at is not None:
            return  # consolidation removed it first (empty): nothing left to repair
        pool.repair(node, at)
        self.failed[name] = [(f, at if f == node.failed_at else r) for f, r in self.failed[name]]
        for s in self.models.values():
            for r in [r for r in s.replicas if r.node is node]:
                recreate = r.draining_since is None
                _remove(s, pool, r, at)
                if recreate:
                    _new_replica(s, pool, at)

    # -- 3. control loop ------------------------------------------------------------------------------
    def control_loop(self, t: int) -> None:
        """Prometheus scrapes; KEDA wakes and idles the models that scale to zero; the HPA reconciles."""
        if self.static:
            return  # a fixed fleet: nothing reads the scrapes
        now = float(t)
        if t % self.scrape_every == 0:
            for s in self.models.values():
                s.scraped = _scrape(s, now)
        if self.at_zero:
            self._keda(t, now)
        if t % HPA_SYNC_SECONDS == 0:
            self._hpa(now)

    def _keda(self, t: int, now: float) -> None:
        for s in self.at_zero:
            floor = s.floors[t // MINUTE] if s.floors else 0
            in_flight = s.in_flight()
            busy = in_flight or floor
            if busy:
                s.last_active = now
            current = len(s.active())
            assert s.wake_above is not None
            # KEDA reads the gateway-requests trigger at its polling interval, from what Prometheus last
            # scraped of the proxies: a held request wakes the model a scrape and a poll later, not at once
            polled = t % int(s.scaled_object["spec"]["pollingInterval"]) == 0  # type: ignore[index]
            seen = (s.scraped or {}).get(scaling.GATEWAY_REQUESTS_TRIGGER, 0.0)
            if current == 0 and ((polled and seen > s.wake_above) or floor):
                # the trigger goes active on a held request (or the cron window opens): 0 -> 1
                s.behavior.record(0, 1, now)  # type: ignore[union-attr]
                _rescale(s, self.pools[s.config.pool], 1, now)
            elif current > 0 and not busy and now - s.last_active >= s.idle_after and t % HPA_SYNC_SECONDS == 0:
                # every trigger inactive for cooldownPeriod: KEDA scales the target to zero
                s.behavior.record(current, 0, now)  # type: ignore[union-attr]
                _rescale(s, self.pools[s.config.pool], 0, now)

    def _hpa(self, now: float) -> None:
        for s in self.models.values():
            current = len(s.active())
            if current == 0:
                self.minute_desired[s.config.name] = 0
                continue  # at zero KEDA, not the HPA, owns the count
            desired = _desired(s, now)
            self.minute_desired[s.config.name] = desired
            if desired != current:
                assert s.behavior is not None
                s.behavior.record(current, desired, now)
                _rescale(s, self.pools[s.config.pool], desired, now)

    # -- 4. provisioning ------------------------------------------------------------------------------
    def provisioning(self, t: int) -> None:
        """Each pool binds its pending replicas, re-places its placeholders, and consolidates."""
        now = float(t)
        for p in self.pools.values():
            if p.waiting:
                self._bind_pending(p, now)
            if p.pending_placeholders:
                p.place_placeholders(now)
            if t % CONSOLIDATION_TICK == 0:
                p.consolidate(now)

    def _bind_pending(self, pool: Pool, now: float) -> None:
        pending = [(s, r) for s in self.models.values() if s.config.pool == pool.name for r in s.replicas if r.node is None]
        for (s, r), placed in zip(pending, pool.provision([s.derived for s, _ in pending], now), strict=True):
            if placed is not None:
                _bind(s, r, placed[0], placed[1], now)

    # -- 5. terminations ------------------------------------------------------------------------------
    def terminations(self, t: int) -> None:
        """Draining replicas that are done leave their nodes."""
        for s in self.models.values():
            if s.draining:
                _finish_draining(s, self.pools[s.config.pool], float(t))

    # -- 6. accounting --------------------------------------------------------------------------------
    def accounting(self, t: int) -> None:
        """The pools changed in this second accrue up to its end; a minute's end samples the series."""
        self.ledger.accrue_changed(self.pools, t + 1)
        if (t + 1) % MINUTE == 0:
            _sample(self.models, self.pools, self.series, self.minute_desired, t + 1, self.static)

    def next_tick(self, t: int) -> int:
        """The next second anything can happen. Every second while replicas wait for a node, drain,
        or placeholders wait; else the next arrival, scrape, HPA sync, consolidation pass or minute.
        (Completions need no tick: they are booked at their own time before anything that reads them.)"""
        soon = t + 2
        arrivals = self.batches.arrivals
        for name, s in self.models.items():  # the common case under load: an arrival in the next second
            if s.next_request < len(arrivals[name]) and arrivals[name][s.next_request] < soon:
                return t + 1
        busy = any(p.waiting or p.pending_placeholders for p in self.pools.values())
        if busy or any(s.draining or s.holding for s in self.models.values()):
            return t + 1
        candidates = [t - t % CONSOLIDATION_TICK + CONSOLIDATION_TICK, t - (t + 1) % MINUTE + MINUTE]
        if not self.static:
            candidates += [t - t % self.scrape_every + self.scrape_every, t - t % HPA_SYNC_SECONDS + HPA_SYNC_SECONDS]
        if self.faults:
            candidates.append(max(t + 1, int(self.faults[0][0])))
        if self.repairs:
            candidates.append(max(t + 1, int(self.repairs[0][0])))
        for name, s in self.models.items():
            if s.next_request < len(arrivals[name]):
                candidates.append(max(t + 1, int(arrivals[name][s.next_request])))
        return min(candidates)

    def _result(self) -> Result:
        """The replay's end: what was admitted finishes, what still queues is not served."""
        seconds = self.options.seconds
        self.batches.complete_until(float(seconds))
        for name, s in self.models.items():
            for r in s.replicas:
                for i in r.running_ids:
                    self.batches.answered[name][i] = True  # admitted before the end: it finishes; still queued: not served
            times, held_for = self.batches.arrivals[name], self.batches.held_for[name]
            for i in s.holding:
                held_for[i] = seconds - times[i]  # still held at the end: not served
        for name, p in self.pools.items():
            self.ledger.accrue(name, p, seconds)
        for name, s in self.models.items():
            b = self.batches
            s.ttft, s.wait, s.served = np.asarray(b.ttfts[name]), np.asarray(b.waits[name]), np.asarray(b.answered[name])
            s.held_seconds, s.rejected = np.asarray(b.held_for[name]), np.asarray(b.rejected[name])
            s.prefix_skipped = np.asarray(b.skip[name])
            self.series[name]["ttftP99"] = minute_p99(s.requests.arrival, s.ttft, len(self.series[name]["requests"])).tolist()
        ledger = self.ledger
        return Result(self.models, self.pools, seconds, ledger.cost, ledger.node_seconds, self.series, ledger.used_seconds, self.failed)


def simulate(cfg: StackConfig, requests: dict[str, Requests], options: Options, progress: Callable[[int], None] | None = None) -> Result:
    return Replay(cfg, requests, options).run(progress)


def scorer_weights(model: ModelConfig, hold: Hold) -> tuple[float, float, float]:
    """The queue, KV-cache utilization and prefix-cache scorers' weights in the picker's rendered config."""
    profile = router.epp_config(model, hold)["schedulingProfiles"][0]["plugins"]
    weight = {p["pluginRef"]: float(p["weight"]) for p in profile}
    return weight["queue-scorer"], weight["kv-cache-utilization-scorer"], weight["prefix-cache-scorer"]


# -- the control loop's readings ----------------------------------------------------------------------
def _scrape(m: ModelReplay, now: float) -> dict[str, float] | None:
    ready = [r for r in m.replicas if r.ready_at is not None and r.ready_at <= now]
    if not ready and not m.derived.scales_to_zero:
        return None  # no pod, no series: the queries return nothing and KEDA reports an error
    # a model at zero: with no replica available vLLM's queries read 0 (builders/serving/scaling.py _at_zero)
    waiting = sum(len(r.queue) for r in ready)
    kv = sum(min(1.0, r.context / max(1, m.perf.kv_capacity_tokens)) for r in ready) / len(ready) if ready else 0.0
    readings = {"queue-depth": float(waiting), "kv-cache": kv}
    if m.wake_above is not None:
        # the proxies' active downstream requests: held by flow control, or dispatched and not completed
        readings[scaling.GATEWAY_REQUESTS_TRIGGER] = float(m.in_flight())
    if m.recent_ttft is not None:
        while m.recent_ttft and m.recent_ttft[0][0] < now - TTFT_WINDOW:
            m.recent_ttft.popleft()
        values = sorted(v for _, v in m.recent_ttft)
        # idle is 0 seconds to first token, as the query's `or vector(0)` says
        readings["ttft-p95"] = values[min(len(values) - 1, math.ceil(0.95 * len(values)) - 1)] if values else 0.0
    return readings


def _desired(m: ModelReplay, now: float) -> int:
    current = len(m.active())
    assert m.behavior is not None
    if m.scraped is None:
        m.failures += 1
        fallback = scaling_fallback(m)
        proposal = max(current, fallback) if m.failures >= fallback_threshold(m) else current
        return m.behavior.normalize(current, proposal, now)
    m.failures = 0
    triggers = hpa.triggers(m.scaled_object)
    samples = [hpa.MetricSample(t.metric_type, m.scraped[t.name], t.target) for t in triggers]
    ready = sum(1 for r in m.replicas if r.ready(now))
    proposal = hpa.desired_replicas(current, samples, 0, 10**6, ready=ready)
    floor = m.floors[int(now) // MINUTE] if m.floors else 0
    proposal = max(proposal, floor)  # a cron trigger's metric: its desiredReplicas inside the window
    lowest = max(1, m.behavior.minimum)  # KEDA gives the HPA a minimum of 1 when the model may idle at 0
    if current > m.behavior.maximum:
        proposal = m.behavior.maximum
    elif current < lowest:
        proposal = lowest
    return max(lowest, m.behavior.normalize(current, proposal, now))


def scaling_fallback(m: ModelReplay) -> int:
    return int(m.scaled_object["spec"]["fallback"]["replicas"])  # type: ignore[index]


def fallback_threshold(m: ModelReplay) -> int:
    return int(m.scaled_object["spec"]["fallback"]["failureThreshold"])  # type: ignore[index]


def floors(model: ModelConfig, seconds: int) -> list[int]:
    """The cron floor of every minute of the replay: the largest schedule open then, else 0."""
    minutes = math.ceil(seconds / MINUTE) + 1
    floors = [0] * minutes
    for s in model.autoscaling.schedules:
        window = cron.active_minutes(cron.parse(s.start), cron.parse(s.end), REPLAY_START, minutes, s.timezone)
        floors = [max(f, s.replicas if on else 0) for f, on in zip(floors, window, strict=True)]
    return floors if model.autoscaling.schedules else []


# -- a replica's life ------------------------------------------------------------------------------------
def _refresh_ready(s: ModelReplay, now: float) -> None:
    """The replicas ready now, valid until one more becomes ready or the set changes."""
    s.ready_cache = [r for r in s.replicas if r.ready(now)]
    upcoming = [r.ready_at for r in s.replicas if r.ready_at is not None and r.ready_at > now and r.draining_since is None]
    s.ready_until = min(upcoming) if upcoming else math.inf
    s.ready_version = s.version


def _new_replica(s: ModelReplay, pool: Pool, now: float, warm: bool = False) -> Replica:
    s.version += 1
    r = Replica(s.config.name, now)
    s.replicas.append(r)
    placed = pool.schedule(s.derived, now, launch=warm)
    if placed is not None:
        _bind(s, r, placed[0], placed[1], now)
    return r


def _bind(s: ModelReplay, r: Replica, node: Node, warm: bool, now: float) -> None:
    s.version += 1
    r.node = node
    begins = max(now, node.ready_at)
    r.ready_at = begins + (0.0 if warm else s.image_seconds) + s.start_seconds


def _rescale(s: ModelReplay, pool: Pool, desired: int, now: float) -> None:
    active = s.active()
    if desired > len(active):
        for _ in range(desired - len(active)):
            _new_replica(s, pool, now)
        return

    # Scale in: pending first, then starting, then the newest ready (the ReplicaSet's order).
    def order(r: Replica) -> tuple[int, float]:
        if r.node is None:
            return (0, -r.created)
        if r.ready_at is not None and r.ready_at > now:
            return (1, -r.created)
        return (2, -r.created)

    s.version += 1
    for r in sorted(active, key=order)[: len(active) - desired]:
        r.draining_since = now
        s.draining += 1
        if r.node is None or (r.ready_at is not None and r.ready_at > now):
            _remove(s, pool, r, now)


def _remove(s: ModelReplay, pool: Pool, r: Replica, now: float) -> None:
    s.version += 1
    if r in s.replicas:
        s.replicas.remove(r)
        s.context -= r.context  # what it held when cut goes with it
        r.context = 0.0
        if r.draining_since is not None:
            s.draining -= 1
    pool.remove(s.derived, r.node, now)


def _finish_draining(s: ModelReplay, pool: Pool, now: float) -> None:
    """A draining replica holds its node through the preStop sleep; it goes when idle after that,
    or when vLLM's shutdown timeout ends the drain (what still runs or waits then is lost)."""
    drain = s.config.drain
    for r in [r for r in s.replicas if r.draining_since is not None]:
        since = r.draining_since if r.draining_since is not None else now
        elapsed = now - since
        if elapsed < drain.pre_stop_sleep_seconds:
            continue
        if (r.running == 0 and not r.queue) or elapsed >= drain.pre_stop_sleep_seconds + drain.shutdown_timeout_seconds:
            s.queued -= len(r.queue)
            r.queue.clear()  # never admitted: not served
            r.running_ids.clear()  # cut mid-answer: not served (their completions are skipped)
            _remove(s, pool, r, now)


# -- the series ----------------------------------------------------------------------------------------------
def _sample(
    models: dict[str, ModelReplay],
    pools: dict[str, Pool],
    series: dict[str, dict[str, list[float]]],
    desired: dict[str, int],
    t: int,
    static: dict[str, int] | None,
) -> None:
    for name, s in models.items():
        lo, hi = np.searchsorted(s.requests.arrival, [t - MINUTE, t])
        row = series[name]
        row["requests"].append(float(hi - lo))
        row["desired"].append(float(static[name] if static else desired[name] or len(s.active())))
        row["ready"].append(float(sum(1 for r in s.replicas if r.ready(float(t)))))
        row["queue"].append(float(sum(len(r.queue) for r in s.replicas)))
        row["held"].append(float(len(s.holding)))
    for name, p in pools.items():
        series[f"pool:{name}"]["nodes"].append(float(sum(n.nodes for n in p.live())))


def minute_p99(arrival: np.ndarray, ttft: np.ndarray, minutes: int) -> np.ndarray:
    """The 99th percentile (nearest rank) of time to first token by arrival minute, 0 for none."""
    out = np.zeros(minutes)
    keep = ~np.isnan(ttft)
    minute = (arrival[keep] // MINUTE).astype(np.int64)
    values = ttft[keep]
    inside = minute < minutes
    minute, values = minute[inside], values[inside]
    if not len(values):
        return out
    if len(minute) > 1 and bool((minute[1:] < minute[:-1]).any()):
        order = np.argsort(minute, kind="stable")
        minute, values = minute[order], values[order]
    # each minute is one run of the (arrival-ordered) requests: select its rank there, a partition
    # of the run rather than a sort of the whole replay
    counts = np.bincount(minute, minlength=minutes)
    ends = np.cumsum(counts)
    for m in np.flatnonzero(counts):
        run = values[ends[m] - counts[m] : ends[m]]
        k = math.ceil(0.99 * len(run)) - 1
        out[m] = np.partition(run, k)[k]
    return out
