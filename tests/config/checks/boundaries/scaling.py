"""Boundary pairs of config/checks/scaling.py and config/checks/gateway.py (see __init__).

The limits that follow from the fixture's figures (a scale-up budget, a load time, a queue threshold, how many
replicas a node holds) are read from the derived state of the parsed stack, as the rules read them, so each
pair stays at its limit when the figures change."""

from __future__ import annotations

import copy
import math
from typing import Any

from config.checks.scaling import SPOT_MAX_GRACE_SECONDS
from config.derived import engine, state
from config.derived.hold import idle_timeout_for
from config.sections.models import ModelConfig
from config.sections.stack import StackConfig
from tests.config.checks.boundaries import Mutation, Pair, parsed
from tests.support.mutations import m0, model_named, p0, pool_named

# minimal-dev's (and scale-to-zero-dev's) only model, on a spot-first pool of four single-GPU types
DEV_MODEL = "models[llama-3-1-8b]"
DEV_POOL = "gpuPools[gpu-l4-a10g]"
# existing-vpc-irsa-bottlerocket's time-sliced model: two replicas share a node
SHARED = "qwen-2-5-1-5b"
SHARED_POOL = "gpu-l40s-shared"
# full-prod's 70B model: packed, tensor parallel 4 on 8-GPU p5 nodes (two replicas a node)
PACKED = "llama-3-3-70b"


def _first_model(d: dict[str, Any]) -> tuple[StackConfig, ModelConfig, state.ModelState]:
    cfg = parsed(d)
    m = cfg.models[0]
    return cfg, m, state.of(cfg).model(m)


def _miss(d: dict[str, Any]) -> int:
    """The first model's scale-up budget on a new node (what idleAfter and a set scale-down window must cover)."""
    return _first_model(d)[2].scale_up.miss


# -- rule_spot_drain -----------------------------------------------------------------------------------


def _grace(seconds: int, capacity_types: list[str] | None = None) -> Mutation:
    """The first model's grace period (preStop 15 s + shutdown 45 s stay under it), on its pool's capacity types."""

    def mutate(d: dict[str, Any]) -> None:
        m0(d)["drain"] = {"terminationGracePeriodSeconds": seconds}
        if capacity_types is not None:
            p0(d)["capacityTypes"] = capacity_types

    return mutate


# -- rule_startup_budget -------------------------------------------------------------------------------


def _startup_budget(offset: int) -> Mutation:
    """budgetSeconds at the pessimistic load time (a cold engine) plus `offset`."""

    def mutate(d: dict[str, Any]) -> None:
        cfg, m, _ = _first_model(d)
        m0(d)["startup"] = {"budgetSeconds": engine.load_seconds(m, cfg.pool(m.pool), pessimistic=True) + offset}

    return mutate


# -- rule_scale_down_window ----------------------------------------------------------------------------


def _scale_down_window(offset: int) -> Mutation:
    """A scale-down window set at the scale-up budget on a new node plus `offset`."""

    def mutate(d: dict[str, Any]) -> None:
        window = _miss(d) + offset
        m0(d).setdefault("autoscaling", {})["scaleDown"] = {"stabilizationWindowSeconds": window, "pods": 1, "periodSeconds": 120}

    return mutate


# -- rule_scale_to_zero --------------------------------------------------------------------------------


def _idle_after(offset: int) -> Mutation:
    """scale-to-zero-dev's idleAfter at its cold start (the miss) plus `offset`, in seconds."""

    def mutate(d: dict[str, Any]) -> None:
        m0(d)["autoscaling"]["idleAfter"] = f"{_miss(d) + offset}s"

    return mutate


# -- rule_schedules ------------------------------------------------------------------------------------


def _floor(bound: str, offset: int) -> Mutation:
    """A weekday business-hours floor at replicas.min or replicas.max (`bound`) plus `offset`."""

    def mutate(d: dict[str, Any]) -> None:
        replicas = m0(d)["replicas"][bound] + offset
        schedule = {"start": "0 8 * * 1-5", "end": "0 18 * * 1-5", "replicas": replicas}
        m0(d).setdefault("autoscaling", {})["schedules"] = [schedule]

    return mutate


def _friday_evening(start: str) -> Mutation:
    """A 08:00-18:00 weekday floor, and a Friday one from `start` to 20:00: a window closes at its end minute, so a
    start at 17:59 shares one minute of the week with the first, at 18:00 none."""

    def mutate(d: dict[str, Any]) -> None:
        m0(d)["replicas"] = {"min": 1, "max": 3}
        m0(d).setdefault("autoscaling", {})["schedules"] = [
            {"start": "0 8 * * 1-5", "end": "0 18 * * 1-5", "replicas": 2},
            {"start": start, "end": "0 20 * * 5", "replicas": 3},
        ]

    return mutate


# -- rule_consolidation --------------------------------------------------------------------------------


def _consolidation(policy: str, acknowledged: bool = False) -> Mutation:
    def mutate(d: dict[str, Any]) -> None:
        p0(d)["disruption"] = {"consolidationPolicy": policy, "allowUnderutilizedConsolidation": acknowledged}

    return mutate


# -- rule_placement / rule_prod_min_replicas ------------------------------------------------------------


def _shared_model(zones: list[str] | None = None, min_replicas: int = 2, placement: str = "spread") -> Mutation:
    """existing-vpc-irsa-bottlerocket's time-sliced model at `min_replicas`, `placement`, its pool in `zones`."""

    def mutate(d: dict[str, Any]) -> None:
        model_named(d, SHARED).update(replicas={"min": min_replicas, "max": 4}, placement=placement)
        if zones is not None:
            pool_named(d, SHARED_POOL)["zones"] = zones

    return mutate


def _set_cpu(d: dict[str, Any], model: str, millis: int) -> None:
    model_named(d, model)["resources"]["cpu"] = f"{millis}m"


def _most_cpu_packing_two(d: dict[str, Any], model: str) -> int:
    """The largest CPU request (millicores) at which a host of the model holds two of its replicas (its minimum
    replicas may then share a node), by bisection on the derived replicas per node of the model's hosts; a
    millicore more, its hosts hold one each."""

    def most_per_node(millis: int) -> int:
        trial = copy.deepcopy(d)
        _set_cpu(trial, model, millis)
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


def _cpu_at_two_per_node(model: str, over: int, then: Mutation | None = None) -> Mutation:
    """The model's CPU request at the most that still puts two replicas on a node, plus `over` millicores."""

    def mutate(d: dict[str, Any]) -> None:
        if then is not None:
            then(d)
        _set_cpu(d, model, _most_cpu_packing_two(d, model) + over)

    return mutate


# -- rule_node_repair ----------------------------------------------------------------------------------


def _node_repair(min_replicas: int) -> Mutation:
    """Node repair on, minimal-dev's model at `min_replicas` (one replica fills a node: a node each)."""

    def mutate(d: dict[str, Any]) -> None:
        d.setdefault("karpenter", {})["nodeRepair"] = True
        m0(d)["replicas"]["min"] = min_replicas

    return mutate


# -- rule_spot_diversity -------------------------------------------------------------------------------


def _types(count: int, capacity_types: list[str] | None = None) -> Mutation:
    """The first pool narrowed to the first `count` of its instance types (all in the catalog)."""

    def mutate(d: dict[str, Any]) -> None:
        p0(d)["instanceTypes"] = p0(d)["instanceTypes"][:count]
        if capacity_types is not None:
            p0(d)["capacityTypes"] = capacity_types

    return mutate


# -- rule_prod_on_demand_fallback / rule_prod_min_replicas -----------------------------------------------


def _prod_capacity(capacity_types: list[str]) -> Mutation:
    """full-prod's first pool (spot and on-demand) with these capacity types."""

    def mutate(d: dict[str, Any]) -> None:
        p0(d)["capacityTypes"] = capacity_types

    return mutate


def _min_replicas(count: int) -> Mutation:
    def mutate(d: dict[str, Any]) -> None:
        m0(d)["replicas"]["min"] = count

    return mutate


# -- gateway.rule_precise_routing --------------------------------------------------------------------------


def _routing(prefix_cache: str, *args: str) -> Mutation:
    def mutate(d: dict[str, Any]) -> None:
        m0(d).update(routing={"prefixCache": prefix_cache}, extraArgs=list(args))

    return mutate


# -- gateway.rule_hold -------------------------------------------------------------------------------------


def _kv_target(target: float) -> Mutation:
    def mutate(d: dict[str, Any]) -> None:
        m0(d).setdefault("autoscaling", {})["kvCacheUsageTarget"] = target

    return mutate


def _max_waiting(offset: int) -> Mutation:
    """maxWaitingRequests at the gateway's queue threshold (from autoscaling.queueDepthPerReplica) plus `offset`."""

    def mutate(d: dict[str, Any]) -> None:
        m0(d)["maxWaitingRequests"] = _first_model(d)[2].hold.queue_threshold + offset

    return mutate


def _one_seq(queue_depth: float) -> Mutation:
    """No maxWaitingRequests, a batch of one: the derived waiting bound is max(1, ceil(4 x queueDepthPerReplica)),
    the queue threshold max(ceil(2 x it), floor(it) + 1); at 0.25 both are 1, above it the bound is 2."""

    def mutate(d: dict[str, Any]) -> None:
        m0(d).update(maxNumSeqs=1)
        m0(d).setdefault("autoscaling", {})["queueDepthPerReplica"] = queue_depth

    return mutate


def _idle_timeout(offset: int) -> Mutation:
    """minimal-dev's ALB idle timeout at the shortest that lets its gateway hold the pessimistic warm scale-up
    (a hold, a pick and the margin), plus `offset`."""

    def mutate(d: dict[str, Any]) -> None:
        wanted = _first_model(d)[2].hold.wanted_seconds
        d.setdefault("ingress", {})["idleTimeoutSeconds"] = idle_timeout_for(wanted) + offset

    return mutate


PAIRS = [
    # -- scaling.rule_spot_drain: a grace period above 110 s on a spot pool
    Pair(
        "scaling.rule_spot_drain",
        f"a grace period of {SPOT_MAX_GRACE_SECONDS + 1} s on a spot pool is refused, {SPOT_MAX_GRACE_SECONDS} s is not",
        bad=_grace(SPOT_MAX_GRACE_SECONDS + 1),
        good=_grace(SPOT_MAX_GRACE_SECONDS),
        path=f"{DEV_MODEL}.drain.terminationGracePeriodSeconds",
        fix=f"lower it to {SPOT_MAX_GRACE_SECONDS} or less, or use an on-demand pool",
    ),
    Pair(
        "scaling.rule_spot_drain",
        "the same grace period is refused on a pool with spot, not on an on-demand one",
        bad=_grace(SPOT_MAX_GRACE_SECONDS + 1, ["spot"]),
        good=_grace(SPOT_MAX_GRACE_SECONDS + 1, ["on-demand"]),
        path=f"{DEV_MODEL}.drain.terminationGracePeriodSeconds",
        fix="or use an on-demand pool",
    ),
    # -- scaling.rule_startup_budget: budgetSeconds < the pessimistic load time
    Pair(
        "scaling.rule_startup_budget",
        "a startup budget a second under the pessimistic load time is refused, at it is not",
        bad=_startup_budget(-1),
        good=_startup_budget(0),
        path=f"{DEV_MODEL}.startup.budgetSeconds",
        fix="Fix: raise it to at least",
    ),
    # -- scaling.rule_scale_down_window: a set window < the scale-up budget on a new node (a miss). The prod floor
    # (window < 120 s) has no pair: every model's miss is above 120 s, so a window at 119 or 120 s also trips
    # this warning at the same path.
    Pair(
        "scaling.rule_scale_down_window",
        "a scale-down window a second shorter than the miss is warned, as long as it is not",
        bad=_scale_down_window(-1),
        good=_scale_down_window(0),
        path=f"{DEV_MODEL}.autoscaling.scaleDown.stabilizationWindowSeconds",
        fix="Fix: raise it to at least",
        severity="warning",
    ),
    # -- scaling.rule_scale_to_zero: idleAfter < the cold start (the miss), in whole seconds
    Pair(
        "scaling.rule_scale_to_zero",
        "idleAfter a second shorter than the cold start is refused, as long as it is not",
        bad=_idle_after(-1),
        good=_idle_after(0),
        path=f"{DEV_MODEL}.autoscaling.idleAfter",
        fix="Fix: set idleAfter to at least",
        stack="scale-to-zero-dev",
    ),
    # -- scaling.rule_schedules: a floor > replicas.max; a floor <= replicas.min; two windows sharing a minute
    Pair(
        "scaling.rule_schedules",
        "a schedule floor one above replicas.max is refused, at max it is not",
        bad=_floor("max", 1),
        good=_floor("max", 0),
        path=f"{DEV_MODEL}.autoscaling.schedules[0].replicas",
        fix="Fix: lower it or raise max",
        stack="scale-to-zero-dev",
    ),
    Pair(
        "scaling.rule_schedules",
        "a schedule floor at replicas.min is warned, one above it is not",
        bad=_floor("min", 0),
        good=_floor("min", 1),
        path=f"{DEV_MODEL}.autoscaling.schedules[0].replicas",
        fix="Fix: raise it, or remove the schedule",
        severity="warning",
    ),
    Pair(
        "scaling.rule_schedules",
        "a window sharing one minute of the week with another is warned, one opening as it closes is not",
        bad=_friday_evening("59 17 * * 5"),
        good=_friday_evening("0 18 * * 5"),
        path=f"{DEV_MODEL}.autoscaling.schedules[1]",
        fix="make the windows disjoint",
        severity="warning",
    ),
    # -- scaling.rule_consolidation: a repacking policy on a serving pool, unless acknowledged
    Pair(
        "scaling.rule_consolidation",
        "WhenEmptyOrUnderutilized unacknowledged is refused, acknowledged it is not",
        bad=_consolidation("WhenEmptyOrUnderutilized"),
        good=_consolidation("WhenEmptyOrUnderutilized", acknowledged=True),
        path=f"{DEV_POOL}.disruption.consolidationPolicy",
        fix="set disruption.allowUnderutilizedConsolidation: true to accept it",
    ),
    Pair(
        "scaling.rule_consolidation",
        "Balanced unacknowledged is refused, WhenEmpty is not",
        bad=_consolidation("Balanced"),
        good=_consolidation("WhenEmpty"),
        path=f"{DEV_POOL}.disruption.consolidationPolicy",
        fix="Fix: use WhenEmpty",
    ),
    # -- scaling.rule_placement: a spread model's pool in fewer than two zones; a packed model with min >= 2
    # whose replicas may share a node (warned outside prod)
    Pair(
        "scaling.rule_placement",
        "a spread model with replicas sharing nodes on a pool of one zone is refused, of two zones it is not",
        bad=_shared_model(zones=["us-west-2a"]),
        good=_shared_model(zones=["us-west-2a", "us-west-2b"]),
        path=f"models[{SHARED}].placement",
        fix="list a second zone in gpuPools[gpu-l40s-shared].zones",
        stack="existing-vpc-irsa-bottlerocket",
    ),
    Pair(
        "scaling.rule_placement",
        "the one-zone pool is refused from replicas.min 2 on, not at 1",
        bad=_shared_model(zones=["us-west-2a"], min_replicas=2),
        good=_shared_model(zones=["us-west-2a"], min_replicas=1),
        path=f"models[{SHARED}].placement",
        fix="or set placement: pack",
        stack="existing-vpc-irsa-bottlerocket",
    ),
    Pair(
        "scaling.rule_placement",
        "packed at replicas.min 2 (two replicas a node) is warned, at 1 it is not",
        bad=_shared_model(min_replicas=2, placement="pack"),
        good=_shared_model(min_replicas=1, placement="pack"),
        path=f"models[{SHARED}].placement",
        fix="Fix: remove placement: pack to spread them",
        stack="existing-vpc-irsa-bottlerocket",
        severity="warning",
    ),
    Pair(
        "scaling.rule_placement",
        "packed with a node holding two replicas is warned, with a millicore more (one a node) it is not",
        bad=_cpu_at_two_per_node(SHARED, 0, then=_shared_model(min_replicas=2, placement="pack")),
        good=_cpu_at_two_per_node(SHARED, 1, then=_shared_model(min_replicas=2, placement="pack")),
        path=f"models[{SHARED}].placement",
        fix="Fix: remove placement: pack to spread them",
        stack="existing-vpc-irsa-bottlerocket",
        severity="warning",
    ),
    # -- scaling.rule_node_repair: a pool whose models keep <= 1 node at min
    Pair(
        "scaling.rule_node_repair",
        "one node at min is warned, two are not",
        bad=_node_repair(1),
        good=_node_repair(2),
        path="karpenter.nodeRepair",
        fix="keep two nodes at min",
        severity="warning",
    ),
    # -- scaling.rule_spot_diversity: fewer than three instance types on a spot pool
    Pair(
        "scaling.rule_spot_diversity",
        "a spot pool of two instance types is warned, of three it is not",
        bad=_types(2),
        good=_types(3),
        path=f"{DEV_POOL}.instanceTypes",
        fix="allow at least 3 types",
        severity="warning",
    ),
    Pair(
        "scaling.rule_spot_diversity",
        "two instance types are warned on a spot pool, not on an on-demand one",
        bad=_types(2, ["spot"]),
        good=_types(2, ["on-demand"]),
        path=f"{DEV_POOL}.instanceTypes",
        fix="allow at least 3 types",
        severity="warning",
    ),
    # -- scaling.rule_prod_on_demand_fallback: a prod model's pool without on-demand or reserved
    Pair(
        "scaling.rule_prod_on_demand_fallback",
        "a spot-only pool is warned, spot with on-demand is not",
        bad=_prod_capacity(["spot"]),
        good=_prod_capacity(["spot", "on-demand"]),
        path="models[llama-3-1-8b].pool",
        fix="add on-demand to the pool's capacityTypes",
        stack="full-prod",
        severity="warning",
    ),
    # -- scaling.rule_prod_min_replicas: min < 2; two replicas or more on one node
    Pair(
        "scaling.rule_prod_min_replicas",
        "a prod model at replicas.min 1 is warned, at 2 it is not",
        bad=_min_replicas(1),
        good=_min_replicas(2),
        path="models[llama-3-1-8b].replicas.min",
        fix="set min: 2",
        stack="full-prod",
        severity="warning",
    ),
    Pair(
        "scaling.rule_prod_min_replicas",
        "a packed prod model whose node holds two replicas is warned, with a millicore more (one a node) it is not",
        bad=_cpu_at_two_per_node(PACKED, 0),
        good=_cpu_at_two_per_node(PACKED, 1),
        path=f"models[{PACKED}].placement",
        fix="or accept the risk",
        stack="full-prod",
        severity="warning",
    ),
    # -- gateway.rule_precise_routing: a KV-event flag in extraArgs under precise routing (any spelling)
    Pair(
        "gateway.rule_precise_routing",
        "--block_size under precise routing is refused, under approximate it is not",
        bad=_routing("precise", "--block_size=16"),
        good=_routing("approximate", "--block_size=16"),
        path=f"{DEV_MODEL}.extraArgs[0]",
        fix="--block-size is managed with routing.prefixCache precise",
    ),
    # -- gateway.rule_hold: the KV threshold above KEDA's target; vLLM's waiting bound strictly above the queue
    # threshold (set, and derived); the hold inside the ALB's idle timeout. The cold-start error (a model at zero
    # held shorter than its expected cold start) and the idle timeout of 60 s (no second to hold) have no pair:
    # the next idle timeout up is still short of the pessimistic start, which warns at the same path.
    Pair(
        "gateway.rule_hold",
        "a KV-cache target of 1 is refused, the float just below it is not",
        bad=_kv_target(1.0),
        good=_kv_target(math.nextafter(1.0, 0.0)),
        path=f"{DEV_MODEL}.autoscaling.kvCacheUsageTarget",
        fix="set it below 1",
    ),
    Pair(
        "gateway.rule_hold",
        "maxWaitingRequests at the gateway's queue threshold is refused, one above it is not",
        bad=_max_waiting(0),
        good=_max_waiting(1),
        path=f"{DEV_MODEL}.maxWaitingRequests",
        fix="Fix: raise maxWaitingRequests above",
    ),
    Pair(
        "gateway.rule_hold",
        "the derived waiting bound (one batch of 1) at the queue threshold is refused, one above it is not",
        bad=_one_seq(0.25),
        good=_one_seq(0.26),
        path=DEV_MODEL,
        fix="or raise maxNumSeqs",
    ),
    Pair(
        "gateway.rule_hold",
        "an idle timeout a second short of holding the pessimistic warm scale-up is warned, at it it is not",
        bad=_idle_timeout(-1),
        good=_idle_timeout(0),
        path="ingress.idleTimeoutSeconds",
        fix="or accept the earlier 429s",
        severity="warning",
    ),
]
