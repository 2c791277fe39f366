"""The HPA arithmetic, as Kubernetes computes it, read from a rendered ScaledObject. Pure.

KEDA turns each trigger of a ScaledObject into an external metric of the HPA it creates. Given
the metric values, `desired_replicas` answers what the HPA asks for; `from_scaled_object` takes
the trigger types, targets and replica bounds from the very ScaledObject the program renders,
so tests and the capacity planner never restate a threshold.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

HPA_TOLERANCE = 0.1  # kube-controller-manager's default --horizontal-pod-autoscaler-tolerance

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


def triggers(scaled_object: dict[str, Any]) -> list[Trigger]:
    """The triggers of a rendered ScaledObject, with their numeric targets."""
    found = []
    for t in scaled_object["spec"]["triggers"]:
        metric_type = t["metricType"]
        if metric_type not in ("AverageValue", "Value"):
            raise ValueError(f"trigger {t['name']}: metricType {metric_type} is not modelled here")
        found.append(Trigger(t["name"], metric_type, float(t["metadata"]["threshold"])))
    return found


def desired_replicas(current: int, samples: list[MetricSample], minimum: int, maximum: int, tolerance: float = HPA_TOLERANCE) -> int:
    """What the HPA asks for, as Kubernetes computes it for external metrics.

    AverageValue: usage ratio = value / (target x current), desired = ceil(value / target).
    Value: usage ratio = value / target, desired = ceil(current x ratio).
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
            proposal = math.ceil(current * ratio)
        proposals.append(current if abs(ratio - 1.0) <= tolerance else proposal)
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
