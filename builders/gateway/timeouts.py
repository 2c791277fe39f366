"""The timeout chain of a request through the gateway, each link derived from the one before. Pure.

caller -> ALB (idle timeout T, the `ingress.idleTimeoutSeconds`) -> Envoy -> vLLM, with the Endpoint
Picker consulted by Envoy over ext_proc:

- Envoy keeps an idle downstream connection longer than the ALB does (AWS: the target's keep-alive
  must exceed the load balancer's idle timeout, or the ALB reuses a connection the target closed: 502).
- Envoy drops an idle upstream connection to vLLM before vLLM does (the same race one hop further:
  Envoy would reuse a connection uvicorn closed, 503 UC), so vLLM's keep-alive stays above it.
- A request may be silent (queued, in prefill) up to T on every hop: Envoy's stream idle timeout is T,
  and vLLM's SSE keep-alive comments arrive well inside it (builders/serving/workload.py).
- The Endpoint Picker answers each ext_proc message within the hold (flow control's TTL,
  config/derived/hold.py) plus 30 s to pick, and that ends before the ALB's idle timeout minus the hold
  margin: a held request gets the picker's 429 after its TTL, a stuck picker Envoy's 503, never a hang
  until the ALB's 504.
No total request deadline: a streamed answer may run long; silence is what is bounded.
"""

from __future__ import annotations

from dataclasses import dataclass

from builders.serving.workload import KEEP_ALIVE_MARGIN_SECONDS, keep_alive_seconds, sse_keep_alive_seconds
from config.derived.hold import PICK_TIMEOUT_SECONDS
from config.derived.scaleup import HOLD_MARGIN_SECONDS


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
        """What breaks the chain (empty when it holds): each link against its neighbour."""
        out = []
        if self.ext_proc_message < self.hold + PICK_TIMEOUT_SECONDS:
            out.append(
                f"the ext_proc message timeout ({self.ext_proc_message} s) must cover the hold ({self.hold} s) and a pick "
                f"({PICK_TIMEOUT_SECONDS} s), or a held request ends in a 503 before its TTL"
            )
        if self.envoy_downstream_idle <= self.alb_idle:
            out.append(f"Envoy's downstream idle timeout ({self.envoy_downstream_idle} s) must exceed the ALB's ({self.alb_idle} s)")
        if self.envoy_upstream_idle >= self.vllm_keep_alive:
            out.append(
                f"Envoy's upstream idle timeout ({self.envoy_upstream_idle} s) must stay below vLLM's keep-alive ({self.vllm_keep_alive} s)"
            )
        if self.ext_proc_message > self.alb_idle - HOLD_MARGIN_SECONDS:
            out.append(
                f"the ext_proc message timeout ({self.ext_proc_message} s) must end {HOLD_MARGIN_SECONDS} s before the ALB "
                f"idle timeout ({self.alb_idle} s)"
            )
        if self.sse_keep_alive >= min(self.envoy_stream_idle, self.alb_idle):
            out.append(f"vLLM's SSE keep-alive ({self.sse_keep_alive} s) must be shorter than every idle timeout of the path")
        if self.envoy_stream_idle > self.alb_idle:
            out.append(f"Envoy's stream idle timeout ({self.envoy_stream_idle} s) must not outlive the ALB's ({self.alb_idle} s)")
        return out


def chain(alb_idle_timeout_seconds: int, hold_seconds: int = 0) -> Chain:
    """The chain for an ALB idle timeout (config keeps it at least 60 s) and a hold (config keeps the
    two apart: config/checks/gateway.py)."""
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
