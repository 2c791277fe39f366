"""Boundary mutations and values of config/checks/scaling.py and config/checks/gateway.py (the table:
scaling.yaml; see __init__).

The limits that follow from the fixture's figures (a scale-up budget, a load time, a queue threshold, how many
replicas a node holds) are read from the derived state of the parsed stack, as the rules read them, so each
pair stays at its limit when the figures change."""

from __future__ import annotations

import copy
from typing import Any

from config.checks.scaling import SPOT_MAX_GRACE_SECONDS
from config.derived import engine, state
from config.derived.hold import idle_timeout_for
from config.sections.models import ModelConfig
from config.sections.stack import StackConfig
from tests.config.checks.boundaries import mutation, parsed, values
from tests.support.mutations import m0, model_named, p0

values(spot_max_grace=SPOT_MAX_GRACE_SECONDS, spot_max_grace_over=SPOT_MAX_GRACE_SECONDS + 1)


def _first_model(d: dict[str, Any]) -> tuple[StackConfig, ModelConfig, state.ModelState]:
    cfg = parsed(d)
    m = cfg.models[0]
    return cfg, m, state.of(cfg).model(m)


def _miss(d: dict[str, Any]) -> int:
    """The first model's scale-up budget on a new node (what idleAfter and a set scale-down window must cover)."""
    return _first_model(d)[2].scale_up.miss


@mutation
def grace_past_spot_max(d: dict[str, Any], over: int) -> None:
    """The first model's grace period at the most a spot pool allows, plus `over` (preStop 15 s + shutdown 45 s
    stay under it)."""
    m0(d)["drain"] = {"terminationGracePeriodSeconds": SPOT_MAX_GRACE_SECONDS + over}


@mutation
def startup_budget(d: dict[str, Any], offset: int) -> None:
    """budgetSeconds at the pessimistic load time (a cold engine) plus `offset`."""
    cfg, m, _ = _first_model(d)
    m0(d)["startup"] = {"budgetSeconds": engine.load_seconds(m, cfg.pool(m.pool), pessimistic=True) + offset}


@mutation
def scale_down_window(d: dict[str, Any], offset: int) -> None:
    """A scale-down window set at the scale-up budget on a new node plus `offset`."""
    window = _miss(d) + offset
    m0(d).setdefault("autoscaling", {})["scaleDown"] = {"stabilizationWindowSeconds": window, "pods": 1, "periodSeconds": 120}


@mutation
def idle_after(d: dict[str, Any], offset: int) -> None:
    """idleAfter at the cold start (the miss) plus `offset`, in seconds."""
    m0(d)["autoscaling"]["idleAfter"] = f"{_miss(d) + offset}s"


@mutation
def schedule_floor(d: dict[str, Any], bound: str, offset: int) -> None:
    """A weekday business-hours floor at replicas.min or replicas.max (`bound`) plus `offset`."""
    schedule = {"start": "0 8 * * 1-5", "end": "0 18 * * 1-5", "replicas": m0(d)["replicas"][bound] + offset}
    m0(d).setdefault("autoscaling", {})["schedules"] = [schedule]


def _most_cpu_packing_two(d: dict[str, Any], model: str) -> int:
    """The largest CPU request (millicores) at which a host of the model holds two of its replicas (its minimum
    replicas may then share a node), by bisection on the derived replicas per node of the model's hosts; a
    millicore more, its hosts hold one each."""

    def most_per_node(millis: int) -> int:
        trial = copy.deepcopy(d)
        model_named(trial, model)["resources"]["cpu"] = f"{millis}m"
        s = state.of(parsed(trial)).model(model)
        return max((s.replicas_per_node.get(t.name, 0) for t in s.hosts), default=0)

    cfg = parsed(d)
    pool = cfg.pool(next(m for m in cfg.models if m.name == model).pool)
    assert pool is not None
    low, high = 1, max(t.vcpus for t in pool.resolved_instance_types()) * 1000
    assert most_per_node(low) >= 2
    assert most_per_node(high) < 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if most_per_node(middle) >= 2 else (low, middle)
    assert most_per_node(low + 1) == 1, "a millicore more leaves no host of one replica"
    return low


@mutation
def cpu_at_two_per_node(d: dict[str, Any], model: str, over: int) -> None:
    """The model's CPU request at the most that still puts two replicas on a node, plus `over` millicores."""
    model_named(d, model)["resources"]["cpu"] = f"{_most_cpu_packing_two(d, model) + over}m"


@mutation
def first_instance_types(d: dict[str, Any], count: int) -> None:
    """The first pool narrowed to the first `count` of its instance types (all in the catalog)."""
    p0(d)["instanceTypes"] = p0(d)["instanceTypes"][:count]


@mutation
def max_waiting(d: dict[str, Any], offset: int) -> None:
    """maxWaitingRequests at the gateway's queue threshold (from autoscaling.queueDepthPerReplica) plus `offset`."""
    m0(d)["maxWaitingRequests"] = _first_model(d)[2].hold.queue_threshold + offset


@mutation
def idle_timeout(d: dict[str, Any], offset: int) -> None:
    """The ALB idle timeout at the shortest that lets the gateway hold the pessimistic warm scale-up (a hold, a
    pick and the margin), plus `offset`."""
    wanted = _first_model(d)[2].hold.wanted_seconds
    d.setdefault("ingress", {})["idleTimeoutSeconds"] = idle_timeout_for(wanted) + offset
