"""The derived state of one stack: every fact derived per model and per pool, computed once. Pure.

Checks, builders, components, preflight, the planner, the outputs and the render summary ask
`of(cfg)` instead of recomputing a budget, a node count or an AMI family at their own call site,
so two readers cannot disagree (tests/config/derived/test_derived_state.py fails when a module outside
config/derived/ computes one of these itself). The state is built on a parsed stack before the
rules have passed, so every fact tolerates what the rules will report (a model on a missing pool,
a pool with no catalog type): such facts are empty or zero, never an exception.

Node counts follow Karpenter: at minimum replicas on the cheapest type that holds a replica (its
pick), at maximum replicas on whichever type needs the most GPUs for `max` plus a rollout surge.
"""

from __future__ import annotations

import functools
import math
import weakref
from dataclasses import dataclass

from config.derived import capacity, headroom, scaleup
from config.derived.exposure import Exposure, exposure
from config.derived.hold import Hold, hold
from config.derived.path import RequestPath, chain
from config.derived.sizing import catalog_problems
from config.facts import catalog
from config.sections.gpu_pools import GpuPool
from config.sections.models import ModelConfig
from config.sections.network import ExistingVpc
from config.sections.stack import StackConfig
from config.sections.types import parse_quantity

PURCHASE_OPTIONS = ("on-demand", "spot")


@dataclass(frozen=True)
class ModelState:
    """What a model's config implies on its pool."""

    name: str
    pool: str
    device: capacity.Device | None
    """The smallest device a replica lands on (a GPU, a time-slice or a MIG slice); None when none fits."""
    hosts: tuple[catalog.InstanceType, ...]
    """Pool types that hold at least one replica, cheapest first (Karpenter's preference)."""
    replicas_per_node: dict[str, int]
    """Pods one node holds, by instance type name (GPUs or slices, allocatable CPU and memory): replicas, or the
    pipeline stages of a multi-node replica."""
    nodes_per_replica: dict[str, float]
    """Nodes one replica takes, by instance type name (capacity.nodes_per_replica): what the cost and the planner
    count."""
    peak_host: catalog.InstanceType | None
    """The host that needs the most GPUs for `max` replicas plus a rollout surge."""
    zones: int
    """Zones the model's pool may launch nodes in (the pool's zones, else the VPC's)."""
    spread: bool
    """Replicas that share nodes are spread over at least two zones (capacity.spreads): node counts are placed
    evenly over `zones` zones and packed within each."""
    survives_node_loss: bool
    """The minimum replicas are on two nodes at least: spread, or no host type holds two of them."""
    nodes_at_min: int
    """Nodes the minimum replicas need, on the cheapest host (two at least when spread)."""
    nodes_at_max: int
    """Nodes the maximum replicas need, on the peak host."""
    surge_nodes: int
    """Extra nodes of the peak host a rolling update needs at `max` replicas."""
    scale_up: scaleup.ScaleUpBudget
    scales_to_zero: bool
    """replicas.min is 0: its gateway holds the first request while KEDA wakes it on the proxies' count of
    requests in flight (builders/serving/scaling.py)."""
    exposure: Exposure
    hold: Hold
    """The gateway's flow control (config/derived/hold.py)."""
    path: RequestPath
    """The request path: thresholds, admission bound, hold and timeout chain, with their invariants
    (config/derived/path.py)."""

    gpus_at_min: int
    """GPUs of the nodes at minimum replicas."""
    gpus_at_max: int
    """GPUs of the nodes at maximum replicas."""
    surge_gpus: int
    vcpus_at_min: int
    """vCPUs of the nodes at minimum replicas."""

    warmup_hosts: tuple[catalog.InstanceType, ...]
    """Per GPU type of `hosts`, its cheapest host (Karpenter's pick): the node each compile warm-up Job takes
    while `pulumi up` runs it (builders/serving/warmup.py); empty without the compile cache."""

    @property
    def gpu_labels(self) -> tuple[str, ...]:
        """The GPU types (Karpenter's instance-gpu-name) of the hosts that hold a replica: one compile cache,
        and one warm-up Job, each (builders/serving/compile_cache.py)."""
        return tuple(sorted({t.gpu.label for t in self.hosts if t.gpu is not None}))

    gpus_at_deploy: int
    """GPUs of the nodes a deploy takes at minimum replicas: the replicas, a rolling update's surge and one replica's
    worth per compile warm-up Job (each a replica's engine), placed like replicas on the cheapest host (a shared
    node's free slice takes a warm-up as it would a replica)."""

    def packing(self, host: catalog.InstanceType) -> str:
        """How replicas fill a host: `2 per g6.12xlarge`, or a multi-node replica's `2 x p5.48xlarge per replica`."""
        nodes = self.nodes_per_replica.get(host.name, 1.0)
        if nodes > 1:
            return f"{round(nodes)} x {host.name} per replica"
        return f"{self.replicas_per_node[host.name]} per {host.name}"


@dataclass(frozen=True)
class WarmNodes:
    """The whole nodes a pool's warm headroom holds, on the type where they hold the most GPUs (the limit's worst case)."""

    host: catalog.InstanceType
    nodes: int
    """Whole nodes of `host` the placeholders hold (the GPUs' worst case)."""
    gpus: int
    """Their GPUs: counted in gpuLimit at min and at max."""
    vcpus: int
    """vCPUs of the cheapest nodes that hold the placeholders (Karpenter's pick): counted in the quota minimum."""


@dataclass(frozen=True)
class PoolState:
    """What a pool must hold for its models, in whole nodes and GPUs, and what the account must allow."""

    name: str
    """The pool's name (its NodePool's)."""
    ami_family: str
    """The pool's own amiFamily, else karpenter.defaultAmiFamily."""
    models: tuple[str, ...]
    """Models served on the pool, in stack order."""
    types: tuple[catalog.InstanceType, ...]
    """The pool's catalog instance types (empty when the catalog knows none)."""
    headroom: headroom.Placeholders | None
    """The warm headroom's placeholder pods, or None."""
    warm: WarmNodes | None
    """The nodes the headroom's placeholders hold; None without headroom, or when no type fits one."""
    surge_gpus: int
    """A rolling update's surge of every model of the pool at max (a platform change rolls them all)."""
    vcpus_at_limit: int
    """vCPUs of the nodes `gpuLimit` GPUs make on the pool's largest-vCPU-per-GPU type."""
    instance_classes: tuple[str, ...]
    """EC2 quota classes of the types: P (p*) or G (g*)."""
    purchase_options: tuple[str, ...]
    """The pool's capacity types, in quota order (on-demand, spot)."""
    nodepool_limit: int
    """The NodePool's nvidia.com/gpu limit: gpuLimit in the units Karpenter counts. Its NodeOverlay
    advertises a time-sliced GPU as `replicas` GPUs, so the physical limit is scaled by them."""
    gpus_at_min: int
    """GPUs of the nodes at minimum replicas, with the warm headroom."""
    gpus_at_max: int
    """GPUs of the nodes at maximum replicas, with the warm headroom, before the rollout surge."""
    gpus_at_peak: int
    """GPUs at maximum replicas plus a rolling update's surge: what gpuLimit must cover."""
    vcpus_at_min: int
    """vCPUs of the nodes at minimum replicas, with the warm headroom's nodes."""
    floor_hosts: dict[str, catalog.InstanceType]
    """Per quota class (G, P), the host with the fewest vCPUs that holds one replica of a model of the pool (none
    when the pool hosts no model): whatever a model's minimum, the pool must be able to launch one of them, or no
    replica of it ever starts."""
    packing: tuple[str, ...]
    """Per model, replicas per peak host: `chat: 1 per p5.48xlarge`."""

    def vcpu_quota(self) -> dict[tuple[str, str], tuple[int, int]]:
        """Per (purchase option, instance class): vCPUs at minimum and at the GPU limit."""
        return {(o, c): (self.vcpus_at_min, self.vcpus_at_limit) for o in self.purchase_options for c in self.instance_classes}


@dataclass(frozen=True)
class StackState:
    """The derived state of a stack, by model and pool name."""

    models: dict[str, ModelState]
    pools: dict[str, PoolState]
    in_order: tuple[ModelState, ...]
    """Per model, in the stack's order: a parsed stack may name two models alike (the rules say so)."""
    configs: tuple[ModelConfig, ...]
    """The models' config objects, in the same order."""

    def model(self, key: str | ModelConfig) -> ModelState:
        """A model's state, by name, or by the model's own config object (exact even when names repeat)."""
        if isinstance(key, str):
            return self.models[key]
        return next(s for m, s in zip(self.configs, self.in_order, strict=True) if m is key)

    def pool(self, name: str) -> PoolState:
        return self.pools[name]

    @property
    def scales_to_zero(self) -> bool:
        """A model may scale to zero replicas."""
        return any(m.scales_to_zero for m in self.models.values())


def instance_class(instance: catalog.InstanceType) -> str:
    """The EC2 vCPU quota class of a GPU instance: P for p*, G for g* (and VT)."""
    return "P" if instance.family.startswith("p") else "G"


def pool_zones(cfg: StackConfig, pool: GpuPool) -> int:
    """Zones a pool's nodes may launch in: its own zones, else the VPC's (a new VPC's azCount; an existing
    VPC's private subnets, one zone each at most)."""
    if pool.zones:
        return len(pool.zones)
    if isinstance(cfg.network, ExistingVpc):
        return len(cfg.network.private_subnet_ids)
    return cfg.network.az_count


def _gpus_for(model: ModelConfig, pool: GpuPool, zones: int, replicas: int, instance: catalog.InstanceType) -> int:
    return capacity.placed_nodes(model, pool, instance, replicas, zones) * instance.gpu_count


def _model(cfg: StackConfig, model: ModelConfig) -> ModelState:
    exp = exposure(cfg, model)
    to_zero = model.replicas.min == 0
    pool = cfg.pool(model.pool)
    if pool is not None and catalog_problems(pool):
        pool = None  # a pool the catalog cannot size gives no placement facts (the rules report it)
    budget = scaleup.budget(model, pool, scrape_interval=cfg.observability.vllm_scrape_interval)
    zones = pool_zones(cfg, pool) if pool else 0
    hosts = tuple(capacity.packing_hosts(model, pool)) if pool else ()
    peak = (
        max(hosts, key=functools.partial(_gpus_for, model, pool, zones, model.replicas.max + capacity.ROLLOUT_MAX_SURGE))
        if pool and hosts
        else None
    )
    spread = capacity.spreads(model, pool) if pool else False
    at_min = capacity.placed_nodes(model, pool, hosts[0], model.replicas.min, zones) if pool and hosts else 0
    at_max = capacity.placed_nodes(model, pool, peak, model.replicas.max, zones) if pool and peak else 0
    surge = capacity.placed_surge_nodes(model, pool, peak, zones) if pool and peak else 0
    per_node = {t.name: capacity.replicas_per_node(model, pool, t) for t in pool.resolved_instance_types()} if pool else {}
    warmup_hosts: dict[str, catalog.InstanceType] = {}
    if model.compile_cache_used:
        for t in hosts:  # cheapest first
            if t.gpu is not None:
                warmup_hosts.setdefault(t.gpu.label, t)
    held = hold(
        model,
        budget,
        cfg.ingress.idle_timeout_seconds,
        cold=to_zero,
        picker_memory_limit_bytes=parse_quantity(cfg.gateway.epp_resources.memory_limit),
    )
    at_deploy = (
        capacity.placed_nodes(model, pool, hosts[0], model.replicas.min + capacity.ROLLOUT_MAX_SURGE + len(warmup_hosts), zones)
        if pool and hosts
        else 0
    )
    return ModelState(
        name=model.name,
        warmup_hosts=tuple(warmup_hosts[label] for label in sorted(warmup_hosts)),
        pool=model.pool,
        device=capacity.smallest_device(model, pool) if pool else None,
        hosts=hosts,
        replicas_per_node=per_node,
        nodes_per_replica={t.name: capacity.nodes_per_replica(model, pool, t) for t in pool.resolved_instance_types()} if pool else {},
        peak_host=peak,
        zones=zones,
        spread=spread,
        survives_node_loss=model.replicas.min >= 2 and (spread or all(per_node.get(t.name, 0) < 2 for t in hosts)),
        nodes_at_min=at_min,
        nodes_at_max=at_max,
        surge_nodes=surge,
        gpus_at_min=at_min * hosts[0].gpu_count if hosts else 0,
        gpus_at_deploy=at_deploy * hosts[0].gpu_count if hosts else 0,
        gpus_at_max=at_max * peak.gpu_count if peak else 0,
        surge_gpus=surge * peak.gpu_count if peak else 0,
        vcpus_at_min=at_min * hosts[0].vcpus if hosts else 0,
        scale_up=budget,
        scales_to_zero=to_zero,
        exposure=exp,
        hold=held,
        path=RequestPath(
            hold=held,
            kv_target=model.autoscaling.kv_cache_usage_target,
            waiting_bound=capacity.max_waiting_requests(model, pool) if pool else None,
            waiting_bound_set=model.max_waiting_requests is not None,
            in_flight_bound=capacity.max_in_flight_requests(model, pool) if pool else None,
            chain=chain(cfg.ingress.idle_timeout_seconds, held.ttl_seconds),
            expected_cold_start=budget.miss,
        ),
    )


def _warm_nodes(pool: GpuPool, types: tuple[catalog.InstanceType, ...], shape: headroom.Placeholders | None) -> WarmNodes | None:
    """The headroom's nodes: GPUs on the type where they are most (what gpuLimit must allow), vCPUs on the
    cheapest arrangement (what Karpenter launches, and so what the quota minimum must hold)."""
    if shape is None:
        return None
    fits = [(n, t) for t in types if (n := headroom.nodes(pool, t, shape))]
    if not fits:
        return None
    nodes, host = max(fits, key=lambda nt: nt[0] * nt[1].gpu_count)
    cheap_nodes, cheap = min(fits, key=lambda nt: (nt[0] * nt[1].price_per_hour, nt[1].name))
    return WarmNodes(host, nodes, nodes * host.gpu_count, cheap_nodes * cheap.vcpus)


def _floor_hosts(facts: list[ModelState]) -> dict[str, catalog.InstanceType]:
    floor: dict[str, catalog.InstanceType] = {}
    for host in sorted((h for f in facts for h in f.hosts), key=lambda h: (h.vcpus, h.price_per_hour, h.name)):
        floor.setdefault(instance_class(host), host)
    return floor


def _pool(cfg: StackConfig, pool: GpuPool, in_order: list[ModelState]) -> PoolState:
    on_pool = [m for m in cfg.models if m.pool == pool.name]
    facts = [s for m, s in zip(cfg.models, in_order, strict=True) if m.pool == pool.name]
    types = () if catalog_problems(pool) else tuple(pool.resolved_instance_types())
    shape = headroom.placeholders(pool, on_pool) if types and on_pool else None
    warm = _warm_nodes(pool, types, shape)
    warm_gpus, warm_vcpus = (warm.gpus, warm.vcpus) if warm else (0, 0)
    at_max = sum(f.gpus_at_max for f in facts) + warm_gpus
    surge = sum(f.surge_gpus for f in facts)
    return PoolState(
        name=pool.name,
        ami_family=pool.ami_family or cfg.karpenter.default_ami_family,
        models=tuple(m.name for m in on_pool),
        types=types,
        headroom=shape,
        warm=warm,
        surge_gpus=surge,
        gpus_at_min=sum(f.gpus_at_min for f in facts) + warm_gpus,
        gpus_at_max=at_max,
        gpus_at_peak=at_max + surge,
        vcpus_at_min=sum(f.vcpus_at_min for f in facts) + warm_vcpus,
        floor_hosts=_floor_hosts(facts),
        vcpus_at_limit=max((math.ceil(pool.gpu_limit / t.gpu_count) * t.vcpus for t in types), default=0),
        instance_classes=tuple(sorted({instance_class(t) for t in types})),
        purchase_options=tuple(o for o in PURCHASE_OPTIONS if o in pool.capacity_types),
        nodepool_limit=pool.gpu_limit * (pool.sharing.time_slicing.replicas if pool.sharing.time_slicing else 1),
        packing=tuple(f"{f.name}: {f.packing(f.peak_host)}" for f in facts if f.peak_host),
    )


def derive(cfg: StackConfig) -> StackState:
    """Compute the derived state of a stack (use `of`, which computes it once per config)."""
    in_order = [_model(cfg, m) for m in cfg.models]
    return StackState(
        models={s.name: s for s in in_order},
        pools={p.name: _pool(cfg, p, in_order) for p in cfg.gpu_pools},
        in_order=tuple(in_order),
        configs=tuple(cfg.models),
    )


_CACHE: dict[int, tuple[weakref.ref[StackConfig], StackState]] = {}
"""Derived states by the id of their config, each with a weak reference that says which object it is of
(an id can be reused once its object is freed) and drops the entry with it. Configs are frozen."""


def of(cfg: StackConfig) -> StackState:
    """The derived state of this config object, computed on first ask and kept while the object lives."""
    key = id(cfg)
    held = _CACHE.get(key)
    if held is not None and held[0]() is cfg:
        return held[1]
    state = derive(cfg)
    _CACHE[key] = (weakref.ref(cfg, lambda _ref: _CACHE.pop(key, None)), state)
    return state
