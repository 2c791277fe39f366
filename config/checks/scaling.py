"""Scaling and disruption: drains inside a spot notice, startup budgets, scale-down windows, scale to
zero and its schedules, consolidation, spot diversity and prod's fallbacks."""

from __future__ import annotations

import datetime as dt
import itertools
import math
from collections.abc import Iterator

from config.checks.common import catalog_problems, models_with_pools, pool_path
from config.derived import capacity, engine, state
from config.errors import Problem
from config.sections import cron
from config.sections.gpu_pools import GpuPool
from config.sections.models import Schedule
from config.sections.stack import StackConfig
from config.sections.types import duration_seconds

# A Spot interruption gives two minutes' notice; the drain must finish inside it.
SPOT_MAX_GRACE_SECONDS = 110


PROD_SCALE_DOWN_WINDOW_FLOOR = 120
"""Prod never scales a model in on less than two minutes of calm (a flap is a reload and cut streams)."""


REFERENCE_WEEK = dt.datetime(2026, 1, 5)
"""A Monday: schedules are compared over one week from it."""


def rule_spot_drain(cfg: StackConfig) -> Iterator[Problem]:
    """models[].drain.terminationGracePeriodSeconds: within a spot notice on a spot pool."""
    for path, m, pool in models_with_pools(cfg):
        grace = m.drain.termination_grace_period_seconds
        if pool is not None and "spot" in pool.capacity_types and grace > SPOT_MAX_GRACE_SECONDS:
            yield Problem(
                f"{path}.drain.terminationGracePeriodSeconds",
                f"{grace} s is above ~{SPOT_MAX_GRACE_SECONDS} s, but pool {pool.name} uses spot "
                "capacity, which gives a 2-minute notice; the drain cannot be honoured. Fix: lower "
                f"it to {SPOT_MAX_GRACE_SECONDS} or less, or use an on-demand pool",
            )


def rule_startup_budget(cfg: StackConfig) -> Iterator[Problem]:
    """models[].startup.budgetSeconds: at least the pessimistic load time (a cold engine: a replica whose
    compiled kernels are not cached compiles)."""
    for path, m, pool in models_with_pools(cfg):
        slowest = engine.load_seconds(m, pool, pessimistic=True)
        if m.startup.budget_seconds is not None and m.startup.budget_seconds < slowest:
            yield Problem(
                f"{path}.startup.budgetSeconds",
                f"startup budget ({m.startup.budget_seconds} s) is below the pessimistic load time of "
                f"{capacity.checkpoint_gb(m):.0f} GB of checkpoint from {m.weights.source} plus a cold engine start "
                f"(~{slowest} s); the kubelet would kill the pod before the model loads, in a crash loop. "
                f"Fix: raise it to at least {slowest}, or unset it",
            )


def rule_scale_down_window(cfg: StackConfig) -> Iterator[Problem]:
    """autoscaling.scaleDown.stabilizationWindowSeconds: prod keeps a floor under it, and a replica removed
    sooner than a new one can start turns every second burst into a cold start."""
    for path, m, _ in models_with_pools(cfg):
        window = m.autoscaling.scale_down.stabilization_window_seconds
        field = f"{path}.autoscaling.scaleDown.stabilizationWindowSeconds"
        if cfg.is_prod and window < PROD_SCALE_DOWN_WINDOW_FLOOR:
            yield Problem(
                field,
                f"{window} s in prod: a dip of a few scrapes would remove a replica that takes minutes to come back. "
                f"Fix: set it to at least {PROD_SCALE_DOWN_WINDOW_FLOOR}",
            )
        if "scale_down" not in m.autoscaling.model_fields_set:
            continue  # the default window is raised to the budget (builders/serving/scaling.py)
        budget = state.of(cfg).model(m).scale_up
        if window < budget.miss:
            yield Problem(
                field,
                f"{window} s is shorter than the model's scale-up budget on a new node ({budget.miss} s): a replica "
                "removed after a burst takes longer to come back than the calm that removed it. "
                f"Fix: raise it to at least {budget.miss}",
                "warning",
            )


def rule_scale_to_zero(cfg: StackConfig) -> Iterator[Problem]:
    """min 0: idleAfter longer than a cold start. The rest a model at zero needs is its gateway's: the hold
    that outlasts the cold start inside the ALB's idle timeout (config/checks/gateway.py rule_hold); the
    gateway routes by path as well as by host and serves in-cluster callers, so neither ingress.domain nor
    expose is needed."""
    for path, m, _ in models_with_pools(cfg):
        a = m.autoscaling
        s = state.of(cfg).model(m)
        if s.scales_to_zero:
            budget = s.scale_up
            idle = duration_seconds(a.idle_after)
            if idle < budget.miss:
                yield Problem(
                    f"{path}.autoscaling.idleAfter",
                    f"{a.idle_after} is shorter than the model's scale-up budget on a new node ({budget.miss} s): it would go "
                    f"back to zero sooner than a cold start takes. Fix: set idleAfter to at least {math.ceil(budget.miss / 60)}m",
                )


def _window(s: Schedule) -> list[bool]:
    return cron.active_minutes(cron.parse(s.start), cron.parse(s.end), REFERENCE_WEEK, cron.WEEK_MINUTES, s.timezone)


def rule_schedules(cfg: StackConfig) -> Iterator[Problem]:
    """autoscaling.schedules: each floor within the replica bounds, and no two floors that hide each other."""
    for path, m, _ in models_with_pools(cfg):
        a = m.autoscaling
        for i, s in enumerate(a.schedules):
            if s.replicas > m.replicas.max:
                yield Problem(
                    f"{path}.autoscaling.schedules[{i}].replicas",
                    f"{s.replicas} is above replicas.max ({m.replicas.max}); the HPA would stop at max. Fix: lower it or raise max",
                )
            elif s.replicas <= m.replicas.min:
                yield Problem(
                    f"{path}.autoscaling.schedules[{i}].replicas",
                    f"{s.replicas} is not above replicas.min ({m.replicas.min}), so this floor never changes anything. "
                    "Fix: raise it, or remove the schedule",
                    "warning",
                )
        windows = [_window(s) for s in a.schedules]
        for i, j in itertools.combinations(range(len(windows)), 2):
            if not any(x and y for x, y in zip(windows[i], windows[j], strict=True)):
                continue
            same = windows[i] == windows[j]
            message = (
                f"opens and closes with schedules[{i}] all week, so one of the two floors never counts "
                f"({a.schedules[i].replicas} and {a.schedules[j].replicas} replicas). Fix: remove one"
                if same
                else f"overlaps schedules[{i}]: while both are open the larger floor applies (the HPA takes the largest trigger). "
                "Fix: nothing, if nested floors are meant; else make the windows disjoint"
            )
            yield Problem(f"{path}.autoscaling.schedules[{j}]", message, "error" if same else "warning")


def rule_consolidation(cfg: StackConfig) -> Iterator[Problem]:
    """Repacking serving nodes must be acknowledged: underutilized consolidation evicts replicas."""
    for pool in cfg.gpu_pools:
        d = pool.disruption
        serving = [m.name for m in cfg.models if m.pool == pool.name]
        if serving and d.consolidation_policy != "WhenEmpty" and not d.allow_underutilized_consolidation:
            yield Problem(
                f"{pool_path(pool)}.disruption.consolidationPolicy",
                f"{d.consolidation_policy} lets Karpenter evict replicas of {', '.join(serving)} to repack nodes: each "
                "eviction reloads a model and cuts its streams. Fix: use WhenEmpty, or set "
                "disruption.allowUnderutilizedConsolidation: true to accept it",
            )


def rule_spot_diversity(cfg: StackConfig) -> Iterator[Problem]:
    """gpuPools[].instanceTypes: at least three on a spot pool."""
    for pool in cfg.gpu_pools:
        types = pool.resolved_instance_types()
        if "spot" in pool.capacity_types and len(types) < 3 and not catalog_problems(pool):
            yield Problem(
                f"{pool_path(pool)}.instanceTypes",
                f"spot pool with {len(types)} instance type(s); few types mean more interruptions and "
                "insufficient-capacity errors. Fix: allow at least 3 types (more sizes or families)",
                "warning",
            )


def rule_prod_on_demand_fallback(cfg: StackConfig) -> Iterator[Problem]:
    """(prod only) A model's pool has on-demand (or reserved) capacity to fall back on when spot runs out."""
    for path, _m, model_pool in models_with_pools(cfg):
        if model_pool is not None and not {"on-demand", "reserved"} & set(model_pool.capacity_types):
            yield Problem(
                f"{path}.pool",
                f"pool {model_pool.name} is spot-only, "
                "so even the minimum replicas have no fallback when spot capacity runs out. "
                "Fix: add on-demand to the pool's capacityTypes",
                "warning",
            )


def _packed_host(s: state.ModelState) -> tuple[str, int]:
    """The first host type that holds two replicas or more of the model, and how many."""
    return next(((t.name, n) for t in s.hosts if (n := s.replicas_per_node.get(t.name, 0)) >= 2), ("", 0))


def _node_loss(pool: GpuPool | None) -> str:
    return "one node loss or spot interruption" if pool is not None and "spot" in pool.capacity_types else "one node loss"


def rule_placement(cfg: StackConfig) -> Iterator[Problem]:
    """models[].placement: a spread model's pool launches in two zones at least; a model with replicas.min >= 2
    that packs its minimum replicas onto one node is warned (in prod by rule_prod_min_replicas)."""
    for path, m, pool in models_with_pools(cfg):
        s = state.of(cfg).model(m)
        if pool is None or m.replicas.min < 2:
            continue
        if s.spread and s.zones < capacity.SPREAD_MIN_DOMAINS:
            yield Problem(
                f"{path}.placement",
                f"spread needs two zones, but pool {pool.name} launches in one only ({', '.join(pool.zones)}): the zone "
                "spread (minDomains 2, DoNotSchedule) would leave the second replica pending for ever. Fix: list a second "
                f"zone in {pool_path(pool)}.zones, or set placement: pack (the minimum replicas then share a node)",
            )
        elif not s.survives_node_loss and not cfg.is_prod:
            host, per_node = _packed_host(s)
            yield Problem(
                f"{path}.placement",
                f"pack with replicas.min {m.replicas.min}: the minimum replicas may share one node ({host} holds "
                f"{per_node}), so {_node_loss(pool)} takes the model down. Fix: remove placement: pack to spread them "
                "over two zones (a node more at min), or accept it",
                "warning",
            )


def rule_prod_min_replicas(cfg: StackConfig) -> Iterator[Problem]:
    """(prod only) A model's minimum replicas are on two nodes at least: two replicas or more, spread, or on
    nodes that hold one each."""
    for path, m, pool in models_with_pools(cfg):
        if m.replicas.min < 2:
            yield Problem(
                f"{path}.replicas.min",
                "prod model with fewer than 2 minimum replicas: one node loss is an outage. Fix: set min: 2",
                "warning",
            )
            continue
        s = state.of(cfg).model(m)
        if pool is not None and s.hosts and not s.survives_node_loss:
            host, per_node = _packed_host(s)
            yield Problem(
                f"{path}.placement",
                f"prod model packed (placement: pack): its {m.replicas.min} minimum replicas may share one node ({host} "
                f"holds {per_node}), so {_node_loss(pool)} is an outage. Fix: remove placement: pack to spread them "
                "over two zones (a node more at min), or accept the risk",
                "warning",
            )


def rule_node_repair(cfg: StackConfig) -> Iterator[Problem]:
    """karpenter.nodeRepair: on Karpenter 1.14.1 a repair deletes the node with no drain and starts no replacement
    first, so a pool whose models keep one node at min is down until a new node has started and loaded."""
    if not cfg.karpenter.node_repair:
        return
    if not cfg.node_monitoring.enabled:
        yield Problem(
            "karpenter.nodeRepair",
            "is on but nodeMonitoring.enabled is false: GPU faults set no AcceleratedHardwareReady condition without the "
            "node monitoring agent, so only nodes whose Ready condition fails are ever repaired. Fix: set "
            "nodeMonitoring.enabled: true, or karpenter.nodeRepair: false",
            "warning",
        )
    derived = state.of(cfg)
    for pool in cfg.gpu_pools:
        models = [derived.model(m) for m in cfg.models if m.pool == pool.name]
        nodes = sum(m.nodes_at_min for m in models)
        if models and nodes <= 1:
            names = ", ".join(m.name for m in models)
            yield Problem(
                "karpenter.nodeRepair",
                f"repairs {pool.name}'s nodes forcefully (Karpenter 1.14.1: no drain, no budgets, no replacement first), and "
                f"{names} keep{'s' if len(models) == 1 else ''} {nodes} node{'' if nodes == 1 else 's'} of it at min: a "
                "repair is an outage until a new node has started and loaded (a miss, the scale-up budget's). Fix: keep "
                "two nodes at min (replicas.min, placement: spread), or accept it",
                "warning",
            )
