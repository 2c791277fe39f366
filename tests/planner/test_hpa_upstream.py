"""The HPA arithmetic against cases ported from the Kubernetes controller's own tests.

Numbers from kubernetes/kubernetes pkg/controller/podautoscaler/replica_calculator_test.go and
horizontal_test.go (each case named after its test); the code under test is planner/hpa.py.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner import hpa
from planner.hpa import Behavior, Policy, Rules, ScaleEvent

NOW = 10_000.0


# -- replica_calculator_test.go: external metrics -----------------------------------------------------
@pytest.mark.parametrize(
    ("name", "current", "ready", "value", "target", "kind", "expected"),
    [
        ("TestReplicaCalcScaleUpCMExternalIgnoresUnreadyPods", 3, 1, 8600, 4400, "Value", 2),
        ("TestReplicaCalcScaleDownCMExternal", 5, 5, 8600, 14334, "Value", 3),
        ("TestReplicaCalcToleranceCMExternal", 3, 3, 8600, 8888, "Value", 3),
        ("TestReplicaCalcScaleUpPerPodCMExternal", 3, 3, 8600, 2150, "AverageValue", 4),
        ("TestReplicaCalcScaleDownPerPodCMExternal", 5, 5, 8600, 2867, "AverageValue", 3),
        ("TestReplicaCalcTolerancePerPodCMExternal", 3, 3, 8600, 2900, "AverageValue", 3),
        ("TestExternalPerPodMetricReplicaOverflow", 1, 1, 2**63 - 1, 1, "AverageValue", 2**31 - 1),
        ("TestExternalPerPodMetricUsageOverflow", 1, 1, 2**63 - 1, 2**63 - 1, "AverageValue", 1),
    ],
)
def test_external_metric_replicas(name: str, current: int, ready: int, value: float, target: float, kind: str, expected: int) -> None:
    sample = hpa.MetricSample(kind, value, target)  # type: ignore[arg-type]
    assert hpa.desired_replicas(current, [sample], 0, 2**31 - 1, ready=ready) == expected, name


# -- horizontal_test.go: TestScalingWithRules ---------------------------------------------------------
def rules(pods: int = 0, pods_period: int = 0, percent: int = 0, percent_period: int = 0, window: int = 0) -> Rules:
    """generateScalingRules: selectPolicy Max; a zero argument leaves that policy out."""
    policies = []
    if pods:
        policies.append(Policy("Pods", pods, pods_period))
    if percent:
        policies.append(Policy("Percent", percent, percent_period))
    return Rules(window, "Max", tuple(policies))


DEFAULT_UP = Rules(0, "Max", (Policy("Pods", 4, 15), Policy("Percent", 100, 15)))
DEFAULT_DOWN = Rules(300, "Max", (Policy("Percent", 100, 15),))


UNIFORM = {3: [-100.0, -60.0, -20.0], 4: [-105.0, -75.0, -45.0, -15.0], 1: [-60.0]}


def spread(changes: list[int]) -> list[ScaleEvent]:
    return [ScaleEvent(c, NOW + offset) for c, offset in zip(changes, UNIFORM[len(changes)], strict=True)]


class Rate(NamedTuple):
    """A TestScalingWithRules case: the replicas now and pre-normalized desired, the bounds, the up and down rules,
    the scale-up and scale-down events already in the period (spread over it) and the count the rate limits allow."""

    current: int
    desired: int
    minimum: int
    maximum: int
    up: Rules
    down: Rules
    ups: list[int]
    downs: list[int]
    expected: int


SCALING_WITH_RULES = {
    "prenormalized desired replicas within range": Rate(5, 7, 3, 8, DEFAULT_UP, DEFAULT_DOWN, [], [], 7),
    "prenormalized desired replicas < minReplicas": Rate(3, 1, 2, 8, DEFAULT_UP, DEFAULT_DOWN, [], [], 2),
    "prenormalized desired replicas within range when minReplicas is 0": Rate(1, 0, 0, 10, DEFAULT_UP, DEFAULT_DOWN, [], [], 0),
    "maxReplicas is the limit because maxReplicas < scaleUpLimit": Rate(20, 1000, 1, 10, DEFAULT_UP, DEFAULT_DOWN, [], [], 10),
    "desired replica count is more than the maximum replica count": Rate(100, 1000, 100, 150, DEFAULT_UP, DEFAULT_DOWN, [], [], 150),
    "scaleUpLimit is the limit because scaleUpLimit < maxReplicas with user policies": Rate(
        3, 1000, 1, 2000, rules(percent=1, percent_period=60), DEFAULT_DOWN, [], [], 4
    ),
    "scaleUp with default behavior": Rate(10, 50, 1, 1000, DEFAULT_UP, DEFAULT_DOWN, [], [], 20),
    "scaleUp with pods policy larger than percent policy": Rate(10, 500, 1, 1000, rules(100, 60, 100, 60), DEFAULT_DOWN, [], [], 110),
    "scaleUp with percent policy larger than pods policy": Rate(10, 500, 1, 1000, rules(2, 60, 100, 60), DEFAULT_DOWN, [], [], 20),
    "scaleUp with spec MaxReplicas limitation with large pod policy": Rate(10, 50, 1, 1000, rules(100, 60), DEFAULT_DOWN, [], [], 50),
    "scaleUp with spec MaxReplicas limitation with large percent policy": Rate(10, 50, 1, 1000, rules(10000, 60), DEFAULT_DOWN, [], [], 50),
    "scaleUp with pod policy limitation": Rate(10, 50, 1, 1000, rules(30, 60), DEFAULT_DOWN, [], [], 40),
    "scaleUp with percent policy limitation": Rate(10, 50, 1, 1000, rules(percent=200, percent_period=60), DEFAULT_DOWN, [], [], 30),
    "scaleDown with percent policy larger than pod policy": Rate(100, 2, 1, 1000, DEFAULT_UP, rules(20, 60, 1, 60, 300), [], [], 80),
    "scaleDown with pod policy larger than percent policy": Rate(100, 2, 1, 1000, DEFAULT_UP, rules(2, 60, 1, 60, 300), [], [], 98),
    "scaleDown with spec MinReplicas=nil limitation with large pod policy": Rate(
        10, 0, 1, 1000, DEFAULT_UP, rules(100, 60, 0, 0, 300), [], [], 1
    ),
    "scaleDown with spec MinReplicas limitation with large pod policy": Rate(
        10, 0, 1, 1000, DEFAULT_UP, rules(100, 60, 0, 0, 300), [], [], 1
    ),
    "scaleDown with spec MinReplicas limitation with large percent policy": Rate(
        10, 2, 5, 1000, DEFAULT_UP, rules(0, 0, 100, 60, 300), [], [], 5
    ),
    "scaleDown with pod policy limitation": Rate(10, 2, 1, 1000, DEFAULT_UP, rules(5, 60, 0, 0, 300), [], [], 5),
    "scaleDown with percent policy limitation": Rate(10, 5, 1, 1000, DEFAULT_UP, rules(0, 0, 50, 60, 300), [], [], 5),
    "scaleUp with spec MaxReplicas limitation with large pod policy and events": Rate(
        100, 500, 1, 200, rules(300, 60), DEFAULT_DOWN, [1, 5, 9], [], 200
    ),
    "scaleUp with spec MaxReplicas limitation with large percent policy and events": Rate(
        100, 500, 1, 200, rules(0, 0, 10000, 60), DEFAULT_DOWN, [1, 5, 9], [], 200
    ),
    "scaleUp with currentReplicas limitation with rate.PeriodSeconds with a lot of recent scale up events": Rate(
        100, 500, 1, 1000, rules(5, 120), DEFAULT_DOWN, [1, 5, 9], [], 100
    ),
    "scaleUp with pod policy and previous scale up events": Rate(100, 500, 1, 1000, rules(150, 120), DEFAULT_DOWN, [1, 5, 9], [], 235),
    "scaleUp with percent policy and previous scale up events": Rate(
        100, 500, 1, 1000, rules(0, 0, 200, 120), DEFAULT_DOWN, [1, 5, 9], [], 255
    ),
    "scaleUp with percent policy and previous scale up and down events": Rate(
        6, 24, 1, 1000, rules(0, 0, 300, 300), DEFAULT_DOWN, [4], [2], 16
    ),
    "scaleDown with default policy and previous events": Rate(10, 5, 1, 1000, DEFAULT_UP, DEFAULT_DOWN, [], [1, 5, 9], 5),
    "scaleDown with spec MinReplicas=nil limitation with large pod policy and previous events": Rate(
        100, 0, 1, 1000, DEFAULT_UP, rules(115, 120, 0, 0, 300), [], [1, 5, 9], 1
    ),
    "scaleDown with spec MinReplicas limitation with large pod policy and previous events": Rate(
        100, 0, 5, 1000, DEFAULT_UP, rules(130, 120, 0, 0, 300), [], [1, 5, 9], 5
    ),
    "scaleDown with spec MinReplicas limitation with large percent policy and previous events": Rate(
        100, 2, 5, 1000, DEFAULT_UP, rules(0, 0, 100, 120, 300), [], [1, 5, 9], 5
    ),
    "scaleDown with pod policy limitation and previous events": Rate(
        100, 2, 1, 1000, DEFAULT_UP, rules(5, 120, 0, 0, 300), [], [1, 5, 9], 100
    ),
    "scaleDown with percent policy limitation and previous events": Rate(
        100, 0, 1, 1000, DEFAULT_UP, rules(0, 0, 50, 120, 300), [], [2, 4, 6], 56
    ),
    "scaleDown with percent policy and previous scale up and down events": Rate(
        10, 1, 1, 1000, DEFAULT_UP, rules(0, 0, 50, 180, 0), [2], [4], 6
    ),
    "scaleDown with previous events preventing further scale down": Rate(
        100, 0, 1, 1000, DEFAULT_UP, rules(0, 0, 10, 120, 300), [], [10, 10, 10], 100
    ),
    "scaleDown with previous events still allowing more scale down": Rate(
        10, 5, 1, 1000, DEFAULT_UP, rules(0, 0, 1000, 120, 300), [], [10, 10, 10], 5
    ),
    "scaleUp with 'outdated' flag ignored (pods 1000/60)": Rate(100, 200, 1, 1000, rules(1000, 60), DEFAULT_DOWN, [8, 12, 9, 11], [], 200),
    "scaleUp with 'outdated' flag ignored (pods 1000/120, percent 100/60)": Rate(
        100, 200, 1, 1000, rules(1000, 120, 100, 60), DEFAULT_DOWN, [8, 12, 9, 11], [], 200
    ),
    "scaleUp with 'outdated' flag ignored (pods 1000/30, percent 100/60)": Rate(
        100, 200, 1, 1000, rules(1000, 30, 100, 60), DEFAULT_DOWN, [8, 12, 9, 11], [], 200
    ),
    "scaleDown with 'outdated' flag ignored (pods 1000/60)": Rate(
        100, 5, 1, 1000, DEFAULT_UP, rules(1000, 60, 0, 0, 300), [], [8, 12, 9, 11], 5
    ),
    "scaleDown with 'outdated' flag ignored (pods 1000/120, percent 100/60)": Rate(
        100, 5, 1, 1000, DEFAULT_UP, rules(1000, 120, 100, 60, 300), [], [8, 12, 9, 11], 5
    ),
    "scaleDown with 'outdated' flag ignored (pods 1000/30, percent 100/60)": Rate(
        100, 5, 1, 1000, DEFAULT_UP, rules(1000, 30, 100, 60, 300), [], [8, 12, 9, 11], 5
    ),
}


@pytest.mark.parametrize("case", SCALING_WITH_RULES.values(), ids=list(SCALING_WITH_RULES))
def test_scaling_with_rules(case: Rate) -> None:
    ups, downs = spread(case.ups) if case.ups else [], spread(case.downs) if case.downs else []
    behavior = Behavior(case.up, case.down, case.minimum, case.maximum, up_events=ups, down_events=downs)
    assert behavior.limit_rate(case.current, case.desired, NOW) == case.expected


# -- horizontal_test.go: TestNormalizeDesiredReplicasWithBehavior -------------------------------------
class Stabilize(NamedTuple):
    """A TestNormalizeDesiredReplicasWithBehavior case: the stored recommendations (value, age in seconds), the replicas
    now and desired, the up and down stabilization windows, the count chosen and the recommendations kept after
    (None: not checked)."""

    history: list[tuple[int, int]]
    current: int
    desired: int
    up_window: int
    down_window: int
    expected: int
    stored: list[int] | None


NORMALIZE = {
    "empty recommendations for scaling down": Stabilize([], 100, 5, 0, 0, 5, [5]),
    "simple scale down stabilization": Stabilize([(4, -120), (5, -60)], 100, 3, 0, 180, 5, [4, 5, 3]),
    "simple scale up stabilization": Stabilize([(4, -120), (5, -60)], 1, 7, 300, 0, 4, [4, 5, 7]),
    "no scale down stabilization": Stabilize([(1, -120), (2, -60)], 100, 3, 300, 0, 3, [1, 2, 3]),
    "no scale up stabilization": Stabilize([(4, -120), (5, -60)], 1, 3, 0, 300, 3, [4, 5, 3]),
    "no scale down stabilization, reuse recommendation element": Stabilize([(10, -600), (9, -540)], 100, 3, 0, 0, 3, [10, 3]),
    "no scale up stabilization, reuse recommendation element": Stabilize([(10, -600), (9, -540)], 1, 100, 0, 0, 100, [10, 100]),
    "scale down stabilization, reuse one of obsolete recommendation element": Stabilize(
        [(10, -600), (4, -60), (5, -120), (9, -540)], 100, 3, 0, 180, 5, [10, 4, 5, 3]
    ),
    "scale up stabilization, reuse one of obsolete recommendation element": Stabilize(
        [(10, -6000), (6, -60), (5, -120), (9, -180)], 1, 100, 300, 0, 5, [100, 6, 5, 9]
    ),
    "scale up and down stabilization, do not scale up when prenormalized rec goes down": Stabilize(
        [(2, -6000), (3, -180)], 2, 1, 300, 300, 2, None
    ),
    "scale up and down stabilization, do not scale down when prenormalized rec goes up": Stabilize(
        [(2, -6000), (1, -180)], 2, 3, 300, 300, 2, None
    ),
}


@pytest.mark.parametrize("case", NORMALIZE.values(), ids=list(NORMALIZE))
def test_normalize_desired_replicas_with_behavior(case: Stabilize) -> None:
    behavior = Behavior(Rules(case.up_window, "Max", ()), Rules(case.down_window, "Max", ()), 0, 10**6)
    behavior.recommendations = [(NOW + age, value) for value, age in case.history]
    assert behavior.stabilize(case.current, case.desired, NOW) == case.expected
    if case.stored is not None:
        assert [value for _, value in behavior.recommendations] == case.stored


# -- horizontal_test.go: TestStoreScaleEvents --------------------------------------------------------
class Store(NamedTuple):
    """A TestStoreScaleEvents case: the scale-up rules, the events before (change, age in seconds), the change counted
    in the last 60 s and the events after storing a scale-up of 5 (change, outdated)."""

    up: Rules
    previous: list[tuple[int, int]]
    in_period: int
    after: list[tuple[int, bool]]


STORE = {
    "Store event into empty pool with two-policy behavior": Store(rules(10, 60, 100, 60), [], 0, [(5, False)]),
    "Store event and replace outdated one": Store(rules(10, 60, 100, 60), [(7, -61)], 0, [(5, False)]),
    "Store event and keep actual one": Store(rules(10, 60, 100, 60), [(7, -58)], 7, [(7, False), (5, False)]),
    "Store event in pool with two entries, replace the outdated one": Store(
        rules(10, 60), [(7, -61), (6, -59)], 6, [(5, False), (6, False)]
    ),
    "Store event and replace one of outdated, different periods": Store(
        rules(10, 60, 100, 30), [(8, -29), (6, -59), (7, -61), (9, -61)], 14, [(8, False), (6, False), (7, True), (5, False)]
    ),
    "Store event in pool with two actual entries": Store(
        rules(10, 120, 100, 30), [(7, -58), (6, -59)], 13, [(7, False), (6, False), (5, False)]
    ),
}


@pytest.mark.parametrize("case", STORE.values(), ids=list(STORE))
def test_store_scale_events(case: Store) -> None:
    behavior = Behavior(case.up, DEFAULT_DOWN, 1, 1000, up_events=[ScaleEvent(c, NOW + age) for c, age in case.previous])
    assert hpa.replicas_change_per_period(60, behavior.up_events, NOW) == case.in_period
    behavior.record(10, 15, NOW)
    assert [(e.replica_change, e.outdated) for e in behavior.up_events] == case.after


# -- single-call tests --------------------------------------------------------------------------------
def test_calculate_scale_up_limit_with_scaling_rules() -> None:
    """TestCalculateScaleUpLimitWithScalingRules: Min of pods 2/60 s and percent 50/60 s from 1 replica."""
    min_rules = Rules(300, "Min", (Policy("Pods", 2, 60), Policy("Percent", 50, 60)))
    assert hpa.scale_up_limit(1, [], [], min_rules, NOW) == 2


def test_calculate_scale_down_limit_with_behaviors() -> None:
    """TestCalculateScaleDownLimitWithBehaviors: the same rules from 5 replicas."""
    min_rules = Rules(300, "Min", (Policy("Pods", 2, 60), Policy("Percent", 50, 60)))
    assert hpa.scale_down_limit(5, [], [], min_rules, NOW) == 3


def test_disabled_policy_never_moves() -> None:
    off = Rules(0, "Disabled", (Policy("Pods", 4, 15),))
    assert hpa.scale_up_limit(3, [], [], off, NOW) == 3
    assert hpa.scale_down_limit(3, [], [], off, NOW) == 3


# -- properties ----------------------------------------------------------------------------------------
@given(
    current=st.integers(1, 200),
    desired=st.integers(0, 500),
    minimum=st.integers(1, 20),
    span=st.integers(0, 200),
)
def test_normalized_replicas_stay_within_bounds_and_between_current_and_desired(
    current: int, desired: int, minimum: int, span: int
) -> None:
    maximum = minimum + span
    current = min(max(current, minimum), maximum)  # the controller brings an out-of-bounds count in first
    behavior = Behavior(DEFAULT_UP, Rules(0, "Max", (Policy("Pods", 1, 60),)), minimum, maximum)
    result = behavior.limit_rate(current, desired, NOW)
    if desired > current:
        assert current <= result <= max(current, min(desired, maximum))
    elif desired < current:
        assert min(current, max(desired, minimum)) <= result <= current
    else:
        assert result == desired


@given(value=st.floats(0, 1e6), target=st.floats(0.01, 1e4), current=st.integers(1, 100))
def test_average_value_asks_for_total_over_target(value: float, target: float, current: int) -> None:
    sample = hpa.MetricSample("AverageValue", value, target)
    desired = hpa.desired_replicas(current, [sample], 1, 10**6)
    if abs(value / (target * current) - 1) > hpa.HPA_TOLERANCE:
        assert desired == min(10**6, max(1, math.ceil(value / target)))
    else:
        assert desired == current
