"""What the gateway holds, and when (flow control in the Endpoint Picker). Pure.

Every model runs the picker's flow control in its gateway: when its replicas are saturated, or it has
none (a model at zero, or one whose replicas all went), the picker holds a request instead of sending
it to a full queue, and answers 429 (`rejected-ttl-expired`; 503 `rejected-no-endpoints` while the pool
has no endpoint) once the request has waited `ttl_seconds`. Saturation is the picker's utilization detector: a replica's score is
max(waiting / queue_threshold, KV use / kv_threshold), the pool's the average.

- The thresholds sit strictly above KEDA's targets (autoscaling.queueDepthPerReplica and
  kvCacheUsageTarget): were they at or below, the picker would hold exactly the excess that makes
  vLLM's metrics exceed KEDA's targets, the metrics would sit at target, and the HPA would never add
  the replica the held requests wait for (1 -> N stalls; upstream defaults 5 and 0.8 equal KEDA's).
- The TTL of a model that keeps replicas (replicas.min >= 1) is the pessimistic warm scale-up, rounded up
  to TTL_STEP_SECONDS
  (config/derived/scaleup.py: a replica on a warm node at the slow end of every source); that of a
  model at zero is the pessimistic cold start (a new node as well: at zero its node is gone, and the
  first request must outlast the whole start, or the caller meets a 503 however soon after the replica
  serves). Either is capped so a held request, its pick and a margin end inside the ALB's
  idle timeout (a warning says when the cap cuts it short): a burst waits as long as a new replica may
  take where capacity is ready, and beyond that the caller is told at once (429) to back off and
  retry, instead of waiting out a node launch with no byte sent, or meeting the ALB's 504.
- vLLM's own admission bound (--max-num-queued-reqs) stays above the queue threshold, so vLLM never
  answers 503 to what the picker would still send (config/derived/capacity.py max_waiting_requests).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from config.derived.scaleup import HOLD_MARGIN_SECONDS, ScaleUpBudget
from config.sections.models import ModelConfig

TTL_STEP_SECONDS = 30
"""The TTL is rounded up to a multiple of this (within the ALB's cap): it is in the picker's config and the
proxies' bootstrap, both of which roll their pods when they change, and a picker rollout is a gap in
service (the chart's Recreate strategy); a scale-up figure that moves by a few seconds then rolls nothing."""
PICK_TIMEOUT_SECONDS = 30
"""How long the picker may take to pick once a request is released (milliseconds in practice)."""
PICKER_HELD_SHARE = 0.5
"""The share of the picker's memory limit its held requests may take; the rest is its own working set (the
datastore, the scrapes, the parsers)."""
PICKER_BYTES_PER_HELD_BYTE = 4
"""Memory per byte of a held request's body: the picker keeps each body twice and its parsed form
(llm-d-router v0.10.0 pkg/epp/handlers/server.go:445-456; gateway-operations-facts MINOR 2). Unmeasured:
the slow end of two copies plus a parsed form about as large again."""
PICKER_BYTES_PER_HELD_REQUEST = 64 * 1024
"""Memory per held request beyond its body: two goroutines per stream, their stacks and the request's state.
Unmeasured: the slow end (goroutine stacks start at 8 KiB and grow)."""
UPSTREAM_MAX_REQUESTS = 5000
"""The picker's own default request cap per priority band (pkg/epp/flowcontrol/registry/config.go:49)."""
QUEUE_THRESHOLD_MULTIPLE = 2
"""The picker's queue threshold per replica, in KEDA's per-replica queue targets (at least one more request)."""


@dataclass(frozen=True)
class Hold:
    """One model's flow control."""

    queue_threshold: int
    """Waiting requests per replica at which the picker counts it saturated (utilization-detector queueDepthThreshold)."""
    kv_threshold: float
    """KV-cache use at which the picker counts it saturated (kvCacheUtilThreshold)."""
    ttl_seconds: int
    """How long a held request waits before the picker answers 429 (503 while no replica is ready) (defaultRequestTTL)."""
    wanted_seconds: int
    """The pessimistic scale-up the TTL would be without the ALB's cap: warm (hit) for a model that keeps
    replicas, cold (miss) for a model at zero."""
    cold_start: bool = False
    """The model scales to zero: a held request may wait out a whole cold start."""
    max_bytes: int = 0
    """flowControl.maxBytes: what the picker's memory limit holds of held bodies (0: the picker's own 1 GB default)."""
    max_requests: int = 0
    """flowControl.maxRequests: what its memory limit holds of held requests (0: the picker's 5000)."""


def caps(picker_memory_limit_bytes: float) -> tuple[int, int]:
    """Flow control's byte and request caps for a picker of this memory limit: a burst of long prompts beyond
    them is answered 429 (RejectedCapacity) instead of growing the picker into its OOM kill, which would cut
    every stream it relays and drop everything it holds."""
    room = picker_memory_limit_bytes * PICKER_HELD_SHARE
    return int(room // PICKER_BYTES_PER_HELD_BYTE), int(min(UPSTREAM_MAX_REQUESTS, room // PICKER_BYTES_PER_HELD_REQUEST))


def queue_threshold(model: ModelConfig) -> int:
    target = model.autoscaling.queue_depth_per_replica
    return max(math.ceil(QUEUE_THRESHOLD_MULTIPLE * target), math.floor(target) + 1)


def kv_threshold(model: ModelConfig) -> float:
    """Half-way from KEDA's KV target to a full cache: above the target whenever the target is below 1."""
    target = model.autoscaling.kv_cache_usage_target
    return round(target + (1 - target) / 2, 4)


def ttl_cap(alb_idle_timeout_seconds: int) -> int:
    """The longest TTL whose hold, pick and margin end inside the ALB's idle timeout."""
    return alb_idle_timeout_seconds - PICK_TIMEOUT_SECONDS - HOLD_MARGIN_SECONDS


def idle_timeout_for(ttl_seconds: int) -> int:
    """The shortest ALB idle timeout that lets a request be held this long (the inverse of ttl_cap)."""
    return ttl_seconds + PICK_TIMEOUT_SECONDS + HOLD_MARGIN_SECONDS


def hold(
    model: ModelConfig, budget: ScaleUpBudget, alb_idle_timeout_seconds: int, *, cold: bool, picker_memory_limit_bytes: float = 0
) -> Hold:
    """`cold`: the model scales to zero (config/derived/state.py ModelState.scales_to_zero); `picker_memory_limit_bytes`
    sizes flow control's caps (0: the picker's defaults)."""
    slow = budget.pessimistic_budget
    wanted = slow.miss if cold else slow.hit
    # at least 1 s: a TTL of 0 s turns the picker's TTL off (hold forever); config/checks/gateway.py refuses
    # an ALB idle timeout that leaves no second to hold
    ttl = max(1, min(math.ceil(wanted / TTL_STEP_SECONDS) * TTL_STEP_SECONDS, ttl_cap(alb_idle_timeout_seconds)))
    max_bytes, max_requests = caps(picker_memory_limit_bytes) if picker_memory_limit_bytes else (0, 0)
    return Hold(queue_threshold(model), kv_threshold(model), ttl, wanted, cold, max_bytes, max_requests)
