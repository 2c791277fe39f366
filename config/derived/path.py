"""One model's request path, stated once: the thresholds at which its gateway holds, vLLM's admission bound,
the hold, and every timeout of the chain, with the invariants that tie them. Pure.

caller -> ALB (idle timeout T, `ingress.idleTimeoutSeconds`) -> Envoy -> vLLM, with the Endpoint Picker
consulted by Envoy over ext_proc:

- The gateway's thresholds (config/derived/hold.py) sit strictly above KEDA's targets, and vLLM's waiting
  bound strictly above the gateway's queue threshold: were it at or below, a replica would answer 503 to
  what the gateway still sends it, instead of the gateway holding the request.
- A held request, its pick and a margin end inside T: the picker answers 429 (or 503 with no replica)
  after the hold, never the ALB's 504 (config/derived/hold.py ttl_cap computes the hold from it).
- Envoy keeps an idle downstream connection longer than the ALB does (AWS: the target's keep-alive must
  exceed the load balancer's idle timeout, or the ALB reuses a connection the target closed: 502).
- Envoy drops an idle upstream connection to vLLM before vLLM does (the same race one hop further: Envoy
  would reuse a connection uvicorn closed, 503 UC), so vLLM's keep-alive stays above it.
- A request may be silent (queued, in prefill) up to T on every hop: Envoy's stream idle timeout is T,
  and vLLM's SSE keep-alive comments arrive well inside it.
No total request deadline: a streamed answer may run long; silence is what is bounded.

The checks (config/checks/gateway.py rule_hold), the builders (the Envoy bootstrap, the picker's config,
vLLM's flags and environment), the planner and the render's hold table read it from the model's derived
state (ModelState.path).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Literal

from config.derived.hold import PICK_TIMEOUT_SECONDS, Hold, idle_timeout_for
from config.derived.scaleup import HOLD_MARGIN_SECONDS

KEEP_ALIVE_MARGIN_SECONDS = 20
"""How far each keep-alive outlives the idle timeout of the hop in front of it."""
SSE_KEEP_ALIVE_MAX_SECONDS = 30
"""The longest gap between SSE keep-alive comments of an idle stream."""


class Outcome(enum.IntEnum):
    """What the gateway does with a request, as the picker's flow control names it (the `outcome` label of
    llm_d_epp_flow_control_requests_total), and vLLM's own refusal; the int is the planner's code."""

    DISPATCHED = 0
    EVICTED_TTL = 1
    """Held for the TTL with a ready replica: 429."""
    REJECTED_NO_ENDPOINTS = 2
    """Held for the TTL with no ready replica: 503."""
    REFUSED_BY_REPLICA = 3
    """vLLM's own 503: its waiting bound was full (not a flow-control outcome: the picker sent it)."""
    REJECTED_CAPACITY = 4
    """Flow control's queue full (its byte or request cap): 429."""

    @property
    def label(self) -> str | None:
        """The picker's metric label (None: not one of its outcomes)."""
        return _LABELS[self]

    @property
    def status(self) -> int:
        return {Outcome.DISPATCHED: 200, Outcome.REJECTED_NO_ENDPOINTS: 503, Outcome.REFUSED_BY_REPLICA: 503}.get(self, 429)


_LABELS = {
    Outcome.DISPATCHED: "Dispatched",
    Outcome.EVICTED_TTL: "EvictedTTL",
    Outcome.REJECTED_NO_ENDPOINTS: "RejectedNoEndpoints",
    Outcome.REFUSED_BY_REPLICA: None,
    Outcome.REJECTED_CAPACITY: "RejectedCapacity",
}
SHED: tuple[Outcome, ...] = (Outcome.EVICTED_TTL, Outcome.REJECTED_NO_ENDPOINTS, Outcome.REJECTED_CAPACITY)
"""The flow-control outcomes a caller sees as an error."""


def keep_alive_seconds(alb_idle_timeout_seconds: int) -> int:
    """vLLM's HTTP keep-alive: above the ALB idle timeout."""
    return alb_idle_timeout_seconds + KEEP_ALIVE_MARGIN_SECONDS


def sse_keep_alive_seconds(alb_idle_timeout_seconds: int) -> int:
    """How often an idle stream (queued, in prefill, between tokens) gets an SSE comment: well inside the ALB
    idle timeout, so a long wait does not end the stream."""
    return min(SSE_KEEP_ALIVE_MAX_SECONDS, alb_idle_timeout_seconds // 4)


@dataclass(frozen=True)
class Chain:
    """Every timeout of the path, in seconds."""

    alb_idle: int
    envoy_downstream_idle: int
    envoy_stream_idle: int
    ext_proc_message: int
    envoy_upstream_idle: int
    vllm_keep_alive: int
    sse_keep_alive: int
    hold: int = 0
    """The longest a request is held by flow control (its TTL)."""

    def problems(self) -> list[str]:
        """What breaks the chain (empty when it holds): each link against its neighbour, once."""
        out = []
        if self.ext_proc_message < self.hold + PICK_TIMEOUT_SECONDS:
            out.append(
                f"the ext_proc message timeout ({self.ext_proc_message} s) must cover the hold ({self.hold} s) and a pick "
                f"({PICK_TIMEOUT_SECONDS} s), or a held request ends in a 503 before its TTL"
            )
        if self.ext_proc_message > self.alb_idle - HOLD_MARGIN_SECONDS:
            out.append(
                f"the ext_proc message timeout ({self.ext_proc_message} s) must end {HOLD_MARGIN_SECONDS} s before the ALB "
                f"idle timeout ({self.alb_idle} s)"
            )
        if self.envoy_downstream_idle <= self.alb_idle:
            out.append(f"Envoy's downstream idle timeout ({self.envoy_downstream_idle} s) must exceed the ALB's ({self.alb_idle} s)")
        if self.envoy_upstream_idle >= self.vllm_keep_alive:
            out.append(
                f"Envoy's upstream idle timeout ({self.envoy_upstream_idle} s) must stay below vLLM's keep-alive ({self.vllm_keep_alive} s)"
            )
        if self.sse_keep_alive >= min(self.envoy_stream_idle, self.alb_idle):
            out.append(f"vLLM's SSE keep-alive ({self.sse_keep_alive} s) must be shorter than every idle timeout of the path")
        if self.envoy_stream_idle > self.alb_idle:
            out.append(f"Envoy's stream idle timeout ({self.envoy_stream_idle} s) must not outlive the ALB's ({self.alb_idle} s)")
        return out


def chain(alb_idle_timeout_seconds: int, hold_seconds: int = 0) -> Chain:
    """The chain for an ALB idle timeout (config keeps it at least 60 s) and a hold (its TTL)."""
    t = alb_idle_timeout_seconds
    keep_alive = keep_alive_seconds(t)
    return Chain(
        alb_idle=t,
        envoy_downstream_idle=t + KEEP_ALIVE_MARGIN_SECONDS,
        envoy_stream_idle=t,
        ext_proc_message=hold_seconds + PICK_TIMEOUT_SECONDS,
        envoy_upstream_idle=keep_alive - KEEP_ALIVE_MARGIN_SECONDS,
        vllm_keep_alive=keep_alive,
        sse_keep_alive=sse_keep_alive_seconds(t),
        hold=hold_seconds,
    )


Field = Literal["autoscaling.kvCacheUsageTarget", "admission", "ingress.idleTimeoutSeconds", "chain"]


@dataclass(frozen=True)
class PathProblem:
    """An invariant of the path that does not hold: which setting it is about, what breaks, how bad."""

    field: Field
    message: str
    severity: Literal["error", "warning"] = "error"


@dataclass(frozen=True)
class RequestPath:
    """One model's request path."""

    hold: Hold
    kv_target: float
    """KEDA's KV-cache use target (autoscaling.kvCacheUsageTarget)."""
    waiting_bound: int | None
    """Requests a replica keeps waiting before vLLM answers 503 (config/derived/capacity.py max_waiting_requests;
    None when the model fits no type of its pool)."""
    waiting_bound_set: bool
    """The bound is the model's maxWaitingRequests (else derived from one batch, maxNumSeqs)."""
    in_flight_bound: int | None
    """vLLM's `--max-num-queued-reqs`: the running batch plus the waiting bound."""
    chain: Chain
    expected_cold_start: int
    """The expected (not pessimistic) cold start: what a model at zero's hold must at least cover."""

    def problems(self, model: str) -> list[PathProblem]:
        """Every invariant of the path, each stated here once (empty when the path holds)."""
        out: list[PathProblem] = []
        held = self.hold
        if held.kv_threshold <= self.kv_target:
            out.append(
                PathProblem(
                    "autoscaling.kvCacheUsageTarget",
                    f"{self.kv_target:g} leaves the gateway no KV-cache threshold above it: the gateway would hold requests at "
                    "KEDA's target, vLLM's KV use would sit there, and the model would never scale out. Fix: set it "
                    "below 1, e.g. 0.8",
                )
            )
        if self.waiting_bound is not None and self.waiting_bound <= held.queue_threshold:
            out.append(PathProblem("admission", self._admission_message()))
        if self.chain.alb_idle - PICK_TIMEOUT_SECONDS - HOLD_MARGIN_SECONDS < 1:
            out.append(
                PathProblem(
                    "ingress.idleTimeoutSeconds",
                    f"{self.chain.alb_idle} s leaves {model}'s gateway no time to hold a request: a hold, a "
                    f"{PICK_TIMEOUT_SECONDS} s pick and {HOLD_MARGIN_SECONDS} s of margin must fit inside the ALB's idle "
                    f"timeout. Fix: raise it to at least {idle_timeout_for(1)}",
                )
            )
            return out  # the chain is then broken by the same cause
        if held.cold_start and held.ttl_seconds < self.expected_cold_start:
            out.append(
                PathProblem(
                    "ingress.idleTimeoutSeconds",
                    f"{self.chain.alb_idle} s caps how long {model}'s gateway holds a request at {held.ttl_seconds} s "
                    f"(a hold, a {PICK_TIMEOUT_SECONDS} s pick and {HOLD_MARGIN_SECONDS} s of margin inside the ALB's idle "
                    f"timeout), short of its expected cold start ({self.expected_cold_start} s): {model} scales to zero, and "
                    f"the first request after a quiet spell would get a 503 before a replica can serve it. Fix: raise it to "
                    f"at least {idle_timeout_for(self.expected_cold_start)} ({idle_timeout_for(held.wanted_seconds)} covers "
                    "the pessimistic cold start), or keep replicas.min >= 1",
                )
            )
        elif held.ttl_seconds < held.wanted_seconds:
            start = "cold start" if held.cold_start else "warm scale-up"
            during = "a slow cold start the first callers get 503" if held.cold_start else "a slow scale-up callers get 429"
            out.append(
                PathProblem(
                    "ingress.idleTimeoutSeconds",
                    f"{self.chain.alb_idle} s caps how long {model}'s gateway holds a request at {held.ttl_seconds} s (a hold, "
                    f"a {PICK_TIMEOUT_SECONDS} s pick and {HOLD_MARGIN_SECONDS} s of margin inside the ALB's idle timeout), "
                    f"short of its pessimistic {start} ({held.wanted_seconds} s): during {during} before a new replica can "
                    f"serve them. Fix: raise it to at least {idle_timeout_for(held.wanted_seconds)}, or accept the earlier "
                    f"{'503' if held.cold_start else '429'}s",
                    "warning",
                )
            )
        out += [PathProblem("chain", f"the timeout chain breaks: {p}") for p in self.chain.problems()]
        return out

    def _admission_message(self) -> str:
        threshold = self.hold.queue_threshold
        if self.waiting_bound_set:
            return (
                f"{self.waiting_bound} is not above the gateway's queue threshold ({threshold}, twice "
                "autoscaling.queueDepthPerReplica): a replica would answer 503 to requests the gateway still sends it "
                f"instead of the gateway holding them. Fix: raise maxWaitingRequests above {threshold}, or remove it"
            )
        return (
            f"vLLM's waiting bound ({self.waiting_bound}: one batch, maxNumSeqs) is not above the gateway's queue "
            f"threshold ({threshold}, from autoscaling.queueDepthPerReplica): a replica would answer 503 to requests the "
            f"gateway still sends it instead of the gateway holding them. Fix: set maxWaitingRequests above {threshold}, "
            "or raise maxNumSeqs"
        )
