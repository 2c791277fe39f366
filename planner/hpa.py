"""The HPA controller model: its arithmetic as Kubernetes computes it, read from a rendered ScaledObject. Pure.

KEDA turns each trigger of a ScaledObject into an external metric of the HPA it creates. Given
the metric values, `desired_replicas` answers what the HPA asks for; `from_scaled_object` takes
the trigger types, targets and replica bounds from the very ScaledObject the program renders
(builders/serving/scaling.py), so the replay (planner/simulate.py) and the tests never restate a
threshold. `Behavior` keeps what the controller remembers between reconciles (stabilization
windows, scale policies). The program deploys none of this: it is the planner's model of the
controller, checked case by case against upstream's tests (tests/planner/test_hpa_upstream.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

HPA_TOLERANCE = 0.1  # kube-controller-manager's default --horizontal-pod-autoscaler-tolerance
MAX_REPLICAS = 2**31 - 1  # the controller caps a proposal at MaxInt32

MetricType = Literal["AverageValue", "Value"]


@dataclass(frozen=True)
class MetricSample:
    """One trigger's reading: the metric value KEDA reports and the trigger's target."""

    metric_type: MetricType
    value: float
    target: float


@dataclass(frozen=True)
class Trigger:
    """One trigger of a ScaledObject: its name, how the HPA reads it, and its target."""

    name: str
    metric_type: MetricType
    target: float
    activation: float = 0.0
    """KEDA's activationThreshold (default 0): the trigger is active, and wakes a target at zero, above it.
    The HPA never reads it: from one replica up only the target counts."""


METRIC_TRIGGERS = ("prometheus",)
"""Triggers read as metrics against a threshold: vLLM's queue, KV cache and TTFT, and for a model at zero
the requests in flight at its gateway (whose activation is also the wake from zero, which KEDA, not the
HPA, performs: the replay handles it). Cron floors are KEDA's own business too and handled by whoever
replays them."""


def triggers(scaled_object: dict[str, Any]) -> list[Trigger]:
    """The metric triggers of a rendered ScaledObject, with their numeric targets."""
    found = []
    for t in scaled_object["spec"]["triggers"]:
        if t["type"] not in METRIC_TRIGGERS:
            continue
        metric_type = t["metricType"]
        if metric_type not in ("AverageValue", "Value"):
            raise ValueError(f"trigger {t['name']}: metricType {metric_type} is not modelled here")
        metadata = t["metadata"]
        found.append(Trigger(t["name"], metric_type, float(metadata["threshold"]), float(metadata.get("activationThreshold", 0))))
    return found


def desired_replicas(
    current: int,
    samples: list[MetricSample],
    minimum: int,
    maximum: int,
    tolerance: float = HPA_TOLERANCE,
    ready: int | None = None,
) -> int:
    """What the HPA asks for, as Kubernetes computes it for external metrics.

    AverageValue: usage ratio = value / (target x current), desired = ceil(value / target).
    Value: usage ratio = value / target, desired = ceil(ready pods x ratio) (all pods when `ready`
    is not given).
    Within the tolerance of ratio 1 a metric keeps the current count; the HPA takes the largest
    proposal across metrics and clamps it to [minimum, maximum]. (Behavior policies and
    stabilization windows then limit how fast it moves there.)
    """
    proposals = []
    for s in samples:
        if s.metric_type == "AverageValue":
            ratio = s.value / (s.target * current)
            proposal = math.ceil(s.value / s.target)
        else:
            ratio = s.value / s.target
            proposal = math.ceil((current if ready is None else ready) * ratio)
        proposals.append(current if abs(ratio - 1.0) <= tolerance else min(proposal, MAX_REPLICAS))
    return max(minimum, min(maximum, max(proposals)))


def from_scaled_object(scaled_object: dict[str, Any], current: int, readings: Mapping[str, float]) -> int:
    """Desired replicas for metric readings keyed by trigger name, with the ScaledObject's own
    targets and bounds. Every trigger needs a reading (a missing one is KEDA's fallback case)."""
    spec = scaled_object["spec"]
    found = triggers(scaled_object)
    missing = [t.name for t in found if t.name not in readings]
    if missing:
        raise KeyError(f"no reading for trigger(s) {', '.join(missing)}")
    samples = [MetricSample(t.metric_type, readings[t.name], t.target) for t in found]
    return desired_replicas(current, samples, spec["minReplicaCount"], spec["maxReplicaCount"])


# -- behavior: stabilization windows and scale policies ---------------------------------------------
SelectPolicy = Literal["Max", "Min", "Disabled"]


@dataclass(frozen=True)
class Policy:
    """One HPA scaling policy: at most `value` pods, or `value` percent, per `period_seconds`."""

    kind: Literal["Pods", "Percent"]
    value: int
    period_seconds: int


@dataclass(frozen=True)
class Rules:
    """One direction of an HPA's behavior."""

    stabilization_window_seconds: int
    select_policy: SelectPolicy
    policies: tuple[Policy, ...]

    @classmethod
    def from_manifest(cls, rules: Mapping[str, Any]) -> Rules:
        return cls(
            int(rules["stabilizationWindowSeconds"]),
            rules.get("selectPolicy", "Max"),
            tuple(Policy(p["type"], int(p["value"]), int(p["periodSeconds"])) for p in rules["policies"]),
        )


@dataclass
class ScaleEvent:
    replica_change: int
    timestamp: float
    outdated: bool = False


def replicas_change_per_period(period_seconds: int, events: list[ScaleEvent], now: float) -> int:
    """Replicas added (or removed) by the events inside the last period (getReplicasChangePerPeriod)."""
    cutoff = now - period_seconds
    return sum(e.replica_change for e in events if e.timestamp > cutoff)


def _period_start(current: int, up_events: list[ScaleEvent], down_events: list[ScaleEvent], period_seconds: int, now: float) -> int:
    """The replica count at the start of a policy's period: current, minus what that period added, plus what it removed."""
    return (
        current - replicas_change_per_period(period_seconds, up_events, now) + replicas_change_per_period(period_seconds, down_events, now)
    )


def _policy_limit(
    current: int,
    up_events: list[ScaleEvent],
    down_events: list[ScaleEvent],
    rules: Rules,
    now: float,
    proposed: Callable[[int, Policy], int],
    widest: Callable[[int, int], int],
    narrowest: Callable[[int, int], int],
) -> int:
    """The limit a direction's policies set now: each policy proposes a count from the replicas at the start of
    its period; selectPolicy Max takes the widest proposal (the most replicas up, the fewest down), Min the
    narrowest, Disabled keeps the current count (as do no policies)."""
    if rules.select_policy == "Disabled":
        return current
    pick = narrowest if rules.select_policy == "Min" else widest
    result: int | None = None
    for p in rules.policies:
        count = proposed(_period_start(current, up_events, down_events, p.period_seconds, now), p)
        result = count if result is None else pick(result, count)
    return current if result is None else result


def scale_up_limit(current: int, up_events: list[ScaleEvent], down_events: list[ScaleEvent], rules: Rules, now: float) -> int:
    """The most replicas the scale-up policies allow now (calculateScaleUpLimitWithScalingRules)."""
    return _policy_limit(current, up_events, down_events, rules, now, _added, widest=max, narrowest=min)


def _added(start: int, p: Policy) -> int:
    """A scale-up policy's proposal from the count at its period's start: its pods more, or its percent more (the count rounded up)."""
    return start + p.value if p.kind == "Pods" else math.ceil(start * (1 + p.value / 100))


def scale_down_limit(current: int, up_events: list[ScaleEvent], down_events: list[ScaleEvent], rules: Rules, now: float) -> int:
    """The fewest replicas the scale-down policies allow now (calculateScaleDownLimitWithBehaviors)."""
    return _policy_limit(current, up_events, down_events, rules, now, _removed, widest=min, narrowest=max)


def _removed(start: int, p: Policy) -> int:
    """A scale-down policy's proposal from the count at its period's start: its pods fewer, or its percent fewer (rounded down)."""
    return start - p.value if p.kind == "Pods" else int(start * (1 - p.value / 100))


@dataclass
class Behavior:
    """One HPA's memory between reconciles: its recent recommendations and scale events, and the
    normalization Kubernetes applies to a metric-based proposal (normalizeDesiredReplicasWithBehaviors)."""

    scale_up: Rules
    scale_down: Rules
    minimum: int
    maximum: int
    recommendations: list[tuple[float, int]] = field(default_factory=list)
    up_events: list[ScaleEvent] = field(default_factory=list)
    down_events: list[ScaleEvent] = field(default_factory=list)

    @classmethod
    def from_scaled_object(cls, scaled_object: Mapping[str, Any]) -> Behavior:
        spec = scaled_object["spec"]
        behavior = spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
        return cls(
            Rules.from_manifest(behavior["scaleUp"]),
            Rules.from_manifest(behavior["scaleDown"]),
            int(spec["minReplicaCount"]),
            int(spec["maxReplicaCount"]),
        )

    def stabilize(self, current: int, desired: int, now: float) -> int:
        """The recommendation within the stabilization windows, and the raw one recorded
        (stabilizeRecommendationWithBehaviors): up takes the lowest, down the highest in its window."""
        up_cutoff = now - self.scale_up.stabilization_window_seconds
        down_cutoff = now - self.scale_down.stabilization_window_seconds
        up, down = desired, desired
        old: int | None = None
        for i, (stamp, recommendation) in enumerate(self.recommendations):
            if stamp > up_cutoff:
                up = min(recommendation, up)
            if stamp > down_cutoff:
                down = max(recommendation, down)
            if stamp < up_cutoff and stamp < down_cutoff:
                old = i
        result = max(current, up)
        result = min(result, down)
        if old is not None:
            self.recommendations[old] = (now, desired)
        else:
            self.recommendations.append((now, desired))
        return result

    def limit_rate(self, current: int, desired: int, now: float) -> int:
        """The policies' limits and the replica bounds (convertDesiredReplicasWithBehaviorRate)."""
        if desired > current:
            limit = max(current, scale_up_limit(current, self.up_events, self.down_events, self.scale_up, now))
            return min(desired, self.maximum, limit)
        if desired < current:
            limit = min(current, scale_down_limit(current, self.up_events, self.down_events, self.scale_down, now))
            return max(desired, self.minimum, limit)
        return desired

    def normalize(self, current: int, proposed: int, now: float) -> int:
        return self.limit_rate(current, self.stabilize(current, proposed, now), now)

    def record(self, previous: int, new: int, now: float) -> None:
        """A rescale happened: remember it for the policies' periods (storeScaleEvent)."""
        if new == previous:
            return
        rules, events = (self.scale_up, self.up_events) if new > previous else (self.scale_down, self.down_events)
        longest = max((p.period_seconds for p in rules.policies), default=0)
        for e in events:
            if e.timestamp < now - longest:
                e.outdated = True
        event = ScaleEvent(abs(new - previous), now)
        outdated = [i for i, e in enumerate(events) if e.outdated]
        if outdated:
            events[outdated[-1]] = event  # the last outdated slot is reused, as storeScaleEvent does
        else:
            events.append(event)
