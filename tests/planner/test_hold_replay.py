"""The replay of the gateway's flow control: what it holds, what it releases, what it sheds after the
TTL (429 with a ready replica, 503 with none), and that every request ends exactly one way. Fixture
stacks only (tests/fixtures/stacks/); a TTL other than the derived one is passed as Options.holds."""

from __future__ import annotations

import copy
import dataclasses
import math
from typing import Any

import numpy as np
import pytest

from config.derived import state
from config.derived.hold import Hold
from config.sections.stack import StackConfig
from planner import traffic
from planner.simulate import HPA_SYNC_SECONDS, REFUSED, SHED_NO_ENDPOINTS, SHED_TTL, ModelReplay, Options, Result, simulate
from tests.conftest import parse, stack_data
from tests.support.mutations import dev_with

MODEL = "llama-3-1-8b"
BURST_AT = 300
"""The burst starts 5 minutes in: the fleet at its minimum, idle, on warm nodes."""
BURST_SECONDS = 60
BURST_PER_MINUTE = 400
"""About 400 requests in a minute, where one replica of 8 sequences answers under one a second."""
SECONDS = 1500
"""Long enough to answer the burst on two replicas, short of the scale-down that would remove the second."""
SHORT_SECONDS = 1200
"""As long, when the TTL sheds the excess: past the second replica's start, short of its scale-down."""


def _dev(**model: Any) -> StackConfig:
    cfg: StackConfig = dev_with(**model)
    return cfg


def _burst_fleet() -> StackConfig:
    """minimal-dev at 1 to 2 replicas of 8 sequences each, no headroom: a second replica needs a new node."""
    cfg = _dev(replicas={"min": 1, "max": 2}, maxNumSeqs=8)
    assert all(p.headroom == 0 for p in cfg.gpu_pools)
    return cfg


def _burst() -> dict[str, traffic.Requests]:
    rate = traffic.ModelTraffic.model_validate(
        {
            "ratePerMinute": [[0, BURST_PER_MINUTE], [24, BURST_PER_MINUTE]],
            "promptTokens": {"mean": 512, "sigma": 0},
            "outputTokens": {"mean": 256, "sigma": 0},
        }
    )
    b = traffic.generate(rate, BURST_SECONDS, np.random.default_rng(0))
    return {MODEL: traffic.Requests(b.arrival + BURST_AT, b.prompt, b.output)}


def _hold(cfg: StackConfig) -> Hold:
    return state.of(cfg).model(MODEL).hold


def _covering(cfg: StackConfig) -> Hold:
    """The derived flow control with a TTL as long as the pessimistic cold scale-up (a new node too)."""
    derived = state.of(cfg).model(MODEL)
    return dataclasses.replace(derived.hold, ttl_seconds=derived.scale_up.pessimistic_budget.miss)


def _replay(cfg: StackConfig, requests: dict[str, traffic.Requests], seconds: int, hold: Hold | None = None) -> Result:
    holds = {MODEL: hold} if hold is not None else None
    return simulate(cfg, requests, Options(seconds, spot_availability=1.0, holds=holds))


def _new_replica_ready(replay: ModelReplay) -> float:
    ready = [r.ready_at for r in replay.replicas if r.ready_at is not None and r.ready_at > 0]
    assert len(ready) == 1, "exactly one replica beyond the minimum"
    return ready[0]


def _released(replay: ModelReplay) -> np.ndarray:
    """When each held request left the gateway (sent on, or shed); NaN for the others."""
    return replay.requests.arrival + replay.held_seconds


def _direct(cfg: StackConfig) -> int:
    """What one idle replica takes before the pool saturates: its batch and the picker's queue threshold."""
    return (cfg.models[0].max_num_seqs or 0) + _hold(cfg).queue_threshold


# -- (a) held, not refused, and served once a new replica is ready ---------------------------------------
def test_a_burst_is_held_and_served_once_a_new_replica_is_ready() -> None:
    cfg = _burst_fleet()
    hold = _covering(cfg)
    budget = state.of(cfg).model(MODEL).scale_up
    assert hold.ttl_seconds >= budget.miss + 1  # the TTL covers the cold scale-up the replay performs
    requests = _burst()
    result = _replay(cfg, requests, SECONDS, hold)
    replay = result.models[MODEL]
    n = len(requests[MODEL])
    assert n > 10 * _direct(cfg)

    # the first batch and the picker's queue go straight to the replica; everything after is held, none refused
    assert replay.held == n - _direct(cfg)
    assert (replay.served.sum(), replay.shed_ttl, replay.shed_no_endpoints, replay.refused, replay.unanswered) == (n, 0, 0, 0, 0)
    # vLLM never queued more than the picker's threshold per replica
    assert max(result.series[MODEL]["queue"]) <= 2 * _hold(cfg).queue_threshold

    # some were still held when the new replica became ready, and went out after it
    ready = _new_replica_ready(replay)
    released = _released(replay)
    assert ready - BURST_AT >= budget.miss - budget.terms["signal"] - HPA_SYNC_SECONDS  # a cold scale-up
    assert np.nanmax(released) > ready
    assert np.count_nonzero(released > ready) > 0
    # before it, each went out as a completion freed a slot (at the completion's own instant), not at the next second
    before = released[~np.isnan(released) & (released < ready)]
    assert len(before) > 0
    assert np.all(np.mod(before, 1.0) != 0.0)
    # the last of those arrived by the burst's end, so it waited at least until the replica was ready
    assert ready - (BURST_AT + BURST_SECONDS) <= replay.longest_hold_seconds < hold.ttl_seconds

    # a held request's wait and time to first token include its hold
    held = ~np.isnan(replay.held_seconds)
    assert np.all(replay.wait[held] >= replay.held_seconds[held])
    assert np.all(replay.ttft[held] > replay.held_seconds[held])
    assert float(np.nanmax(replay.ttft)) > replay.longest_hold_seconds


# -- (b) a TTL shorter than the scale-up: 429 while a replica is ready -----------------------------------
def test_held_past_a_ttl_shorter_than_the_scale_up_are_shed_with_429() -> None:
    cfg = _burst_fleet()
    hold = _hold(cfg)  # the derived TTL: the pessimistic warm scale-up, which a new node outlasts
    budget = state.of(cfg).model(MODEL).scale_up
    assert hold.ttl_seconds < budget.miss - budget.terms["signal"] - HPA_SYNC_SECONDS
    requests = _burst()
    n = len(requests[MODEL])
    # (shorter: with nothing held after the TTL, the second replica is scaled in sooner)
    short = _replay(cfg, requests, SHORT_SECONDS).models[MODEL]
    long = _replay(cfg, requests, SECONDS, _covering(cfg)).models[MODEL]

    assert short.shed_ttl > 0
    assert short.shed_no_endpoints == 0  # the minimum's replica was ready throughout
    assert short.refused == 0
    assert int(short.served.sum()) + short.shed_ttl == n
    shed = short.rejected == SHED_TTL
    # shed once held for the TTL (the gateway checks each second, and at each completion)
    assert np.all(short.held_seconds[shed] >= hold.ttl_seconds)
    assert np.all(short.held_seconds[shed] < hold.ttl_seconds + 1)
    assert short.longest_hold_seconds < hold.ttl_seconds + 1
    # ... all before the new replica was ready (the same scale-up as with the long TTL): by then the gateway held nothing
    assert _new_replica_ready(short) == _new_replica_ready(long)
    assert np.nanmax(_released(short)) < _new_replica_ready(short)

    # Exact: the requests are alike, so the replica frees room at the same instants with either TTL while
    # something is held; the short TTL sends on, at each of those instants before the new replica, the
    # oldest request not yet past its TTL, and sheds the rest.
    times = requests[MODEL].arrival
    order = np.flatnonzero(~np.isnan(long.held_seconds))
    assert np.array_equal(order, np.flatnonzero(~np.isnan(short.held_seconds)))  # the same requests were held
    instants = np.sort(_released(long)[order])
    queue, sent = list(order), 0
    for at in instants[instants < _new_replica_ready(long)]:
        while queue and at - times[queue[0]] >= hold.ttl_seconds:
            queue.pop(0)
        if queue:
            queue.pop(0)
            sent += 1
    assert short.shed_ttl == len(order) - sent


# -- (c) a model at zero -------------------------------------------------------------------------------------
def _at_zero() -> StackConfig:
    data = copy.deepcopy(stack_data("scale-to-zero-dev"))
    data["models"][0]["autoscaling"].pop("schedules")  # no pre-warming: the model is at zero from the start
    cfg = parse(data)
    assert state.of(cfg).model(MODEL).scales_to_zero
    return cfg


AT_ZERO = np.array([600.25, 601.5, 640.0])
"""Three requests while the model is at zero and before its first replica can be ready."""
LATER = 1500.0
"""A request once the woken replica serves (before the idle cooldown takes it back to zero)."""


def _zero_requests() -> dict[str, traffic.Requests]:
    arrivals = np.append(AT_ZERO, LATER)
    return {MODEL: traffic.Requests(arrivals, np.full(len(arrivals), 512), np.full(len(arrivals), 256))}


def test_at_zero_the_first_request_is_held_wakes_the_model_and_is_served_after_the_cold_start() -> None:
    cfg = _at_zero()
    hold = _hold(cfg)
    budget = state.of(cfg).model(MODEL).scale_up
    assert hold.cold_start
    result = _replay(cfg, _zero_requests(), 1800)
    replay = result.models[MODEL]
    assert result.series[MODEL]["ready"][: int(AT_ZERO[0]) // 60] == [0.0] * (int(AT_ZERO[0]) // 60)

    [replica] = replay.replicas  # one wake for the three
    assert replica.created == math.floor(AT_ZERO[0])  # KEDA activated on the first held request
    assert replica.ready_at is not None
    cold = replica.ready_at - replica.created
    assert budget.hit - budget.terms["signal"] <= cold <= budget.miss
    assert cold < hold.ttl_seconds  # the derived TTL (the pessimistic cold start) covers it

    assert replay.served.all()
    assert (replay.held, replay.shed_ttl, replay.shed_no_endpoints, replay.refused) == (len(AT_ZERO), 0, 0, 0)
    # held until the first second the replica was ready, then served; its TTFT counts the hold
    np.testing.assert_allclose(replay.held_seconds[: len(AT_ZERO)], math.ceil(replica.ready_at) - AT_ZERO)
    assert np.all(replay.ttft[: len(AT_ZERO)] > replay.held_seconds[: len(AT_ZERO)])
    assert replay.longest_hold_seconds == pytest.approx(math.ceil(replica.ready_at) - AT_ZERO[0])
    # once the replica serves, a request goes straight to it
    assert math.isnan(replay.held_seconds[-1])
    assert replay.ttft[-1] < 5


def test_at_zero_a_ttl_shorter_than_the_cold_start_answers_503() -> None:
    """The config refuses such a TTL for a model at zero (config/checks/gateway.py); the replay counts
    what the gateway would do: 503 (no ready replica) after the TTL, though the wake goes on."""
    cfg = _at_zero()
    budget = state.of(cfg).model(MODEL).scale_up
    short = dataclasses.replace(_hold(cfg), ttl_seconds=(budget.miss - budget.terms["signal"]) // 2)
    replay = _replay(cfg, _zero_requests(), 1800, short).models[MODEL]

    assert replay.shed_no_endpoints == len(AT_ZERO)
    assert (replay.shed_ttl, replay.refused) == (0, 0)
    assert np.all(replay.rejected[: len(AT_ZERO)] == SHED_NO_ENDPOINTS)
    assert not replay.served[: len(AT_ZERO)].any()
    held = replay.held_seconds[: len(AT_ZERO)]
    assert np.all((held >= short.ttl_seconds) & (held < short.ttl_seconds + 1))
    assert np.isnan(replay.ttft[: len(AT_ZERO)]).all()  # never reached vLLM
    # the wake went on: the replica came up after the 503s and served the later request directly
    [replica] = replay.replicas
    assert replica.created == math.floor(AT_ZERO[0])
    assert replica.ready_at is not None
    assert replica.ready_at > AT_ZERO[-1] + short.ttl_seconds
    assert replay.served[-1]
    assert math.isnan(replay.held_seconds[-1])


def test_a_request_still_held_at_the_end_is_neither_served_nor_shed() -> None:
    cfg = _at_zero()
    end = int(AT_ZERO[0]) + 100
    replay = _replay(cfg, _zero_requests(), end).models[MODEL]
    assert replay.held == len(AT_ZERO)
    assert (int(replay.served.sum()), replay.shed_ttl, replay.shed_no_endpoints, replay.refused) == (0, 0, 0, 0)
    assert replay.unanswered == len(replay.requests)  # the later request arrives after the end
    np.testing.assert_allclose(replay.held_seconds[: len(AT_ZERO)], end - AT_ZERO)


# -- (d) every request ends exactly one way ------------------------------------------------------------------
def _refusing() -> tuple[StackConfig, dict[str, traffic.Requests], int, Hold | None]:
    """A picker threshold above vLLM's waiting bound (what the config refuses): vLLM answers 503."""
    cfg = _dev(replicas={"min": 1, "max": 1}, maxNumSeqs=8)
    return cfg, _burst(), SECONDS, dataclasses.replace(_hold(cfg), queue_threshold=100_000)


SCENARIOS = {
    "a burst, a TTL that covers the scale-up": lambda: (_burst_fleet(), _burst(), SECONDS, _covering(_burst_fleet())),
    "a burst, the derived TTL": lambda: (_burst_fleet(), _burst(), SECONDS, None),
    "a burst on one replica, the derived TTL": lambda: (_dev(replicas={"min": 1, "max": 1}, maxNumSeqs=8), _burst(), 2 * SECONDS, None),
    "vLLM's bound below the picker's threshold": _refusing,
    "at zero, the derived TTL": lambda: (_at_zero(), _zero_requests(), 1800, None),
    "at zero, a TTL short of the cold start": lambda: (
        _at_zero(),
        _zero_requests(),
        1800,
        dataclasses.replace(_hold(_at_zero()), ttl_seconds=100),
    ),
}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_every_request_is_served_shed_or_refused_never_two(scenario: str) -> None:
    cfg, requests, seconds, hold = SCENARIOS[scenario]()
    replay = _replay(cfg, requests, seconds, hold).models[MODEL]
    ttl = (hold or _hold(cfg)).ttl_seconds
    served, rejected, held = replay.served, replay.rejected, ~np.isnan(replay.held_seconds)
    shed = (rejected == SHED_TTL) | (rejected == SHED_NO_ENDPOINTS)
    refused = rejected == REFUSED
    assert set(np.unique(rejected).tolist()) <= {0, SHED_TTL, SHED_NO_ENDPOINTS, REFUSED}
    assert not (served & shed).any()
    assert not (served & refused).any()
    # each of these replays ends idle: nothing is left held, waiting or cut, so the three add up
    assert int(served.sum()) + int(shed.sum()) + int(refused.sum()) == len(replay.requests)
    assert replay.unanswered == 0
    # shed means held for the TTL and never sent on; refused and served were sent on within it
    assert held[shed].all()
    assert np.all(replay.held_seconds[shed] >= ttl)
    assert np.isnan(replay.ttft[shed | refused]).all()
    assert np.all(np.nan_to_num(replay.held_seconds[~shed], nan=0.0) < ttl)
    assert not np.isnan(replay.ttft[served]).any()
    assert (replay.shed_ttl + replay.shed_no_endpoints, replay.refused) == (int(shed.sum()), int(refused.sum()))


def test_the_scenarios_reach_every_outcome() -> None:
    """The accounting test above is not vacuous: between them its scenarios serve after a hold, shed
    with 429 and with 503, and see vLLM refuse."""
    seen = {"served after a hold": 0, "429": 0, "503": 0, "vLLM 503": 0}
    for make in SCENARIOS.values():
        cfg, requests, seconds, hold = make()
        replay = _replay(cfg, requests, seconds, hold).models[MODEL]
        seen["served after a hold"] += int((replay.served & ~np.isnan(replay.held_seconds)).sum())
        seen["429"] += replay.shed_ttl
        seen["503"] += replay.shed_no_endpoints
        seen["vLLM 503"] += replay.refused
    assert all(seen.values()), seen


# -- flow control's order: first come, first served, a new request behind the held ones ------------------
def test_the_gateway_sends_requests_on_in_arrival_order_a_new_one_behind_the_held() -> None:
    """llm-d-router v0.10.0 queues every request of a flow in flow control and dispatches the head of the
    queue: its default ordering policy is FCFS (pkg/epp/flowcontrol/registry/config.go:33-34,
    DefaultOrderingPolicyRef = fcfs; pkg/epp/framework/plugins/flowcontrol/ordering/fcfs/fcfs.go:71-83, Less
    by enqueue time) and a dispatch cycle peeks at the head only (pkg/epp/flowcontrol/controller/internal/
    processor.go:374-412, head-of-line blocking). So a request arriving while others are held goes out after
    them, never ahead, even at an instant the pool has room: each request's departure from the gateway
    (its arrival, or its release when held) never precedes an earlier arrival's."""
    cfg = _burst_fleet()
    result = _replay(cfg, _burst(), SECONDS, _covering(cfg))
    replay = result.models[MODEL]
    held = ~np.isnan(replay.held_seconds)
    assert held.any()
    sent = np.where(held, _released(replay), replay.requests.arrival)
    assert np.all(np.diff(sent) >= 0), "a request left the gateway before one that arrived earlier"
    # requests kept arriving while others were held, and went behind them
    first_held = int(np.flatnonzero(held)[0])
    assert held[first_held:].sum() > 100
