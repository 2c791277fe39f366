"""Fit and limits: a replica fits its GPU and its node, a pool's gpuLimit and headroom hold its models in
whole nodes, and the system node group holds the system pods with a node lost."""

from __future__ import annotations

import math
from collections.abc import Iterator

from config.checks.common import catalog_problems, models_with_pools, pool_path
from config.derived import capacity, cost, headroom, state
from config.derived.capacity import ALLOCATABLE_CPU, ALLOCATABLE_MEMORY, OVERHEAD_GIB_PER_GPU
from config.errors import Problem
from config.facts import catalog, system_capacity
from config.sections.gpu_pools import GpuPool
from config.sections.models import ModelConfig
from config.sections.stack import StackConfig


def _ranks(model: ModelConfig) -> str:
    tp, pp = model.tensor_parallel_size, model.pipeline_parallel_size
    return f"tensorParallelSize {tp}" if pp == 1 else f"{tp * pp} GPUs (tensorParallelSize {tp} x pipelineParallelSize {pp})"


def check_fit(path: str, model: ModelConfig, pool: GpuPool, device: capacity.Device | None) -> Iterator[Problem]:
    """Does a replica fit its device (the smallest it may land on, from the derived state)?"""
    tp = model.tensor_parallel_size
    types = pool.resolved_instance_types()
    if pool.sharing.mode != "none" and tp > 1:
        yield Problem(
            f"{path}.tensorParallelSize",
            f"tensorParallelSize is {tp} but pool {pool.name} shares GPUs ({pool.sharing.mode}); "
            "a shared GPU or MIG slice cannot take part in tensor parallelism. Fix: use "
            "tensorParallelSize 1, or move the model to a pool of whole GPUs",
        )
        return
    if device is None:
        counts = sorted({t.gpu_count for t in types})
        yield Problem(
            f"{path}.tensorParallelSize",
            f"tensorParallelSize ({tp}) must divide the GPUs per node of pool {pool.name} "
            f"({', '.join(map(str, counts))}); vLLM would fail at startup after a long image pull. "
            f"Fix: use a tensorParallelSize that divides {counts[-1]}, or a pool with more GPUs per node",
        )
        return
    util = model.gpu_memory_utilization
    need = capacity.required_gib_per_device(model)
    have = capacity.usable_gib(model, device)
    if need > have:
        suggestion = capacity.smallest_fitting_instance(model)
        if suggestion:
            inst, stp = suggestion
            assert inst.gpu is not None
            smallest = (
                f"the smallest catalog instance that fits is {inst.name} ({inst.gpu_count} x {inst.gpu.model}) at tensorParallelSize {stp}"
            )
        else:
            smallest = "no catalog instance fits it unquantized; quantize it (fp8, awq) or shorten maxModelLen"
        raise_ = "pipelineParallelSize" if model.multi_node else "tensorParallelSize"
        yield Problem(
            path,
            f"does not fit pool {pool.name}: needs {need:.1f} GiB per {device.description} "
            f"(weights {capacity.weights_gib(model):.1f} GiB + KV cache for one {model.max_model_len}-token "
            f"sequence {capacity.kv_gib_per_sequence(model):.1f} GiB, over {_ranks(model)}, + "
            f"{OVERHEAD_GIB_PER_GPU} GiB overhead), but has {have:.1f} GiB ({device.gib:.1f} GiB x "
            f"gpuMemoryUtilization {util}); vLLM would fail at startup. Fix: raise {raise_}, quantize, shorten "
            f"maxModelLen, or use another pool: {smallest}",
        )
    if pool.sharing.time_slicing:
        replicas = pool.sharing.time_slicing.replicas
        if util * replicas > 0.95 + 1e-9:  # the product of two decimals, compared in floating point
            largest = math.floor(95 / replicas) / 100
            fix = (
                f"set gpuMemoryUtilization to at most {largest:.2f}"
                if largest > MIN_GPU_MEMORY_UTILIZATION
                # the field's floor leaves no share this small: fewer replicas on each GPU instead
                else f"lower gpuPools[{pool.name}].sharing.timeSlicing.replicas to at most "
                f"{math.floor(0.95 / 0.06 + 1e-9)} (each then at gpuMemoryUtilization 0.06)"
            )
            yield Problem(
                f"{path}.gpuMemoryUtilization",
                f"gpuMemoryUtilization {util} x {replicas} time-slice replicas of pool {pool.name} "
                f"= {util * replicas:.2f} of one GPU; time-slicing does not split memory, so the "
                f"replicas sharing a GPU would run out of memory at startup. Fix: {fix}",
            )


MIN_GPU_MEMORY_UTILIZATION = 0.05
"""models[].gpuMemoryUtilization's exclusive floor (config/sections/models.py)."""


def check_node_room(path: str, model: ModelConfig, pool: GpuPool) -> Iterator[Problem]:
    if not capacity.node_room(model, pool):
        hosts = capacity.replica_hosts(model, pool) or pool.resolved_instance_types()
        biggest = max(hosts, key=lambda t: (t.memory_gib, t.vcpus))
        yield Problem(
            f"{path}.resources",
            f"cpu {model.resources.cpu} / memory {model.resources.memory} fit no instance type of "
            f"pool {pool.name} (largest: {biggest.name}, {biggest.vcpus} vCPU / {biggest.memory_gib} GiB, "
            f"of which about {ALLOCATABLE_CPU:.0%} / {ALLOCATABLE_MEMORY:.0%} is allocatable); the pods "
            "would stay Pending. Fix: lower resources or add larger instance types to the pool",
        )


def rule_fit(cfg: StackConfig) -> Iterator[Problem]:
    """models[].tensorParallelSize, gpuMemoryUtilization and resources against the pool's devices and nodes."""
    derived = state.of(cfg)
    for path, m, pool in models_with_pools(cfg):
        if pool is not None:
            yield from check_fit(path, m, pool, derived.model(m).device)
            yield from check_node_room(path, m, pool)


def rule_bottlerocket_sharing(cfg: StackConfig) -> Iterator[Problem]:
    """gpuPools[].sharing: none on a Bottlerocket pool."""
    for pool in cfg.gpu_pools:
        if state.of(cfg).pool(pool.name).ami_family == "bottlerocket" and pool.sharing.mode != "none":
            yield Problem(
                f"{pool_path(pool)}.sharing",
                "GPU sharing is not supported on Bottlerocket pools here: its device plugin is built "
                "into the OS and ignores the GPU operator's sharing config. Fix: use amiFamily al2023 "
                "for this pool",
            )


def rule_image_snapshot(cfg: StackConfig) -> Iterator[Problem]:
    """gpuPools[].imageSnapshot: a Bottlerocket data volume, so a Bottlerocket pool."""
    for pool in cfg.gpu_pools:
        family = state.of(cfg).pool(pool.name).ami_family
        if pool.image_snapshot is not None and family != "bottlerocket":
            yield Problem(
                f"{pool_path(pool)}.imageSnapshot",
                f"is a Bottlerocket data volume, but the pool runs {family}, whose images live on its root volume: "
                "the snapshot would be mounted nowhere containerd reads. Fix: set amiFamily: bottlerocket on the pool, "
                "or remove imageSnapshot",
            )


def _monthly_ceiling(cfg: StackConfig, pool_name: str) -> float:
    """What a pool's models at maximum replicas and its headroom cost a month on their dearest types (the cost summary's ceiling)."""
    summary = cost.summarize(cfg)
    hourly = sum(m.ceiling for m in summary.models if m.pool == pool_name) + sum(h.ceiling for h in summary.headroom if h.pool == pool_name)
    return hourly * catalog.HOURS_PER_MONTH


def _holds(s: state.PoolState, models: list[state.ModelState], limit: int, headroom: int) -> bool:
    """Every model with its surge, and the headroom, fit the limit on their own (the errors of rule_gpu_limits and rule_headroom)."""
    return (
        s.gpus_at_min <= limit
        and all(m.hosts and m.gpus_at_max + m.surge_gpus <= limit for m in models)
        and (headroom == 0 or (s.warm is not None and s.warm.gpus <= limit))
    )


def _narrowing(cfg: StackConfig, pool: GpuPool) -> tuple[list[int], float, float] | None:
    """For a family pool the limit does not hold: the widest gpuCounts (smallest sizes first) under which it holds,
    with the monthly ceilings of that narrowing and of keeping every size (raising gpuLimit instead); None without one."""
    if pool.instance_families is None:
        return None
    counts = sorted({t.gpu_count for t in pool.resolved_instance_types()})
    for k in range(len(counts) - 1, 0, -1):
        narrow = pool.model_copy(update={"gpu_counts": counts[:k]})
        narrowed = cfg.model_copy(update={"gpu_pools": [narrow if p is pool else p for p in cfg.gpu_pools]})
        derived = state.of(narrowed)
        models = [derived.model(m) for m in narrowed.models if m.pool == pool.name]
        if _holds(derived.pool(pool.name), models, pool.gpu_limit, pool.headroom):
            return counts[:k], _monthly_ceiling(narrowed, pool.name), _monthly_ceiling(cfg, pool.name)
    return None


def rule_gpu_limits(cfg: StackConfig) -> Iterator[Problem]:
    """A NodePool's limit counts the GPUs of the nodes Karpenter launches, so count whole nodes: at
    minimum replicas (on the cheapest type, Karpenter's pick) with the warm headroom's nodes, an error
    above the limit; each model at maximum replicas plus its rolling update's surge, on whichever of the
    pool's types needs the most GPUs, an error above it on its own; every model and the headroom at
    their peak together (they need not peak at once: the placeholders step aside for replicas), a warning."""
    derived = state.of(cfg)
    for pool in cfg.gpu_pools:
        s = derived.pool(pool.name)
        if not s.models or catalog_problems(pool):
            continue
        path = f"{pool_path(pool)}.gpuLimit"
        limit = pool.gpu_limit
        warm_text = f", with {s.warm.gpus} GPUs of nodes for the headroom of {pool.headroom}" if s.warm else ""
        models = [(m, derived.model(m)) for m in cfg.models if m.pool == pool.name]
        models_min = sum(ms.gpus_at_min for _, ms in models)
        headroom_alone = s.warm is not None and s.warm.gpus > limit  # rule_headroom's error
        if models_min > limit:
            yield Problem(
                path,
                f"gpuLimit ({limit}) is below the {s.gpus_at_min} GPUs of the nodes its models need at minimum "
                f"replicas{warm_text}; Karpenter would stop launching nodes and replicas would stay Pending. "
                f"Fix: raise gpuLimit to at least {s.gpus_at_min}",
            )
            continue
        if s.gpus_at_min > limit and not headroom_alone:
            assert s.warm is not None
            yield Problem(
                path,
                f"gpuLimit ({limit}) is below the {s.gpus_at_min} GPUs of the nodes its models need at minimum replicas "
                f"({models_min}) with the {s.warm.gpus} GPUs of nodes for the headroom of {pool.headroom}: even at rest part "
                f"of the headroom could never launch. Fix: raise gpuLimit to at least {s.gpus_at_min}, or lower headroom",
            )
            continue
        alone = [(m, ms) for m, ms in models if ms.peak_host and ms.gpus_at_max + ms.surge_gpus > limit]
        narrowing = _narrowing(cfg, pool) if alone else None
        for m, ms in alone:
            assert ms.peak_host is not None
            need = ms.gpus_at_max + ms.surge_gpus
            host = ms.peak_host
            raise_fix = f"raise gpuLimit to at least {need}"
            if narrowing is not None and narrowing[1] < narrowing[2]:
                counts, narrow_month, raise_month = narrowing
                fix = (
                    f"set gpuCounts: {counts}, within the limit at a ceiling of ${narrow_month:,.0f} a month at maximum "
                    f"replicas, against ${raise_month:,.0f} a month to {raise_fix} and keep the {host.gpu_count}-GPU "
                    f"{host.name}; or lower models[{m.name}].replicas.max"
                )
            else:
                fix = f"{raise_fix}, or lower models[{m.name}].replicas.max"
            yield Problem(
                path,
                f"gpuLimit ({limit}) is below the {need} GPUs of the nodes {m.name} alone needs at maximum replicas "
                f"({ms.gpus_at_max}) plus a rolling update's surge of {capacity.ROLLOUT_MAX_SURGE} replica ({ms.surge_gpus}), "
                f"in whole nodes ({ms.packing(host)}); Karpenter would stop at the limit and "
                f"its scale-out or rollout would stall. Fix: {fix}",
            )
        at_deploy = sum(ms.gpus_at_deploy for _, ms in models)
        if any(ms.warmup_hosts for _, ms in models) and not alone and at_deploy > limit:
            yield Problem(
                path,
                f"gpuLimit ({limit}) is below the {at_deploy} GPUs of the nodes a deploy takes at minimum replicas ({models_min}): "
                "each model's replicas, a rolling update's surge and a replica's worth per compile warm-up Job (one per GPU "
                "type, docs/scale-up.md#the-compile-cache); Karpenter would hold a warm-up (replicas then compile) or a surge "
                f"replica (`pulumi up` waits for it) at the limit. Fix: raise gpuLimit to at least {at_deploy}, or set "
                "engine.compileCache: false on a model of this pool",
                "warning",
            )
        if not alone and not headroom_alone and s.gpus_at_peak > limit:
            models_max = sum(ms.gpus_at_max for _, ms in models)
            surge = f"a rolling update's surge of {capacity.ROLLOUT_MAX_SURGE} replica per model ({s.surge_gpus})"
            if s.warm:
                what = f"its models and headroom at once: maximum replicas ({models_max}), {surge} and the headroom's nodes ({s.warm.gpus})"
                fits = "Each model with its surge fits the limit, and so does the headroom, so the limit binds only when they all peak"
                then = "the headroom's placeholders then give way to replicas, and what is left waits for capacity"
            else:
                what = f"its models at once: maximum replicas ({models_max}) and {surge}"
                fits = "Each model with its surge fits the limit, so the limit binds only when they all peak"
                then = "a scale-out or rollout then waits for capacity another gives back"
            yield Problem(
                path,
                f"gpuLimit ({limit}) is below the combined peak of {s.gpus_at_peak} GPUs of {what}, in whole nodes "
                f"({'; '.join(s.packing)}). {fits} together: {then}. Fix: nothing, if they do not peak together; "
                f"else raise gpuLimit to at least {s.gpus_at_peak}",
                "warning",
            )


def rule_headroom(cfg: StackConfig) -> Iterator[Problem]:
    """gpuPools[].headroom: on a pool with models, within gpuLimit, in whole replicas, on a type it fits."""
    for pool in cfg.gpu_pools:
        if pool.headroom == 0 or catalog_problems(pool):
            continue
        path = f"{pool_path(pool)}.headroom"
        on_pool = [m for m in cfg.models if m.pool == pool.name]
        if not on_pool:
            yield Problem(
                path,
                f"headroom {pool.headroom} on a pool no model uses; placeholders would hold GPUs for nothing. "
                "Fix: remove headroom, or put a model on the pool",
            )
            continue
        if pool.headroom > pool.gpu_limit:
            yield Problem(
                path,
                f"headroom ({pool.headroom} GPUs) is more than the pool's gpuLimit ({pool.gpu_limit}); Karpenter could "
                "never launch it, let alone the replicas. Fix: lower headroom or raise gpuLimit",
            )
            continue
        chunk = headroom.chunk_gpus(pool, on_pool)
        if pool.headroom % chunk:
            yield Problem(
                path,
                f"headroom {pool.headroom} is not a multiple of {chunk}, the GPUs of the pool's largest replica "
                f"(tensorParallelSize {chunk}); a placeholder holds one replica's GPUs on one node. "
                f"Fix: set headroom to {max(chunk, pool.headroom - pool.headroom % chunk)} or "
                f"{pool.headroom + chunk - pool.headroom % chunk}",
            )
        s = state.of(cfg).pool(pool.name)
        shape = s.headroom
        if s.warm is not None and s.warm.gpus > pool.gpu_limit:
            yield Problem(
                path,
                f"headroom {pool.headroom} holds {s.warm.nodes} whole {s.warm.host.name} node(s), {s.warm.gpus} GPUs, more than "
                f"the pool's gpuLimit ({pool.gpu_limit}) on its own; Karpenter could never launch them all. Fix: lower headroom, "
                f"or raise gpuLimit to at least {s.warm.gpus}",
            )
        if shape is not None and s.warm is None:
            yield Problem(
                path,
                f"one placeholder ({shape.cpu_millis}m CPU, {shape.memory_mib}Mi memory, {shape.count} x {shape.resource}) "
                "fits on none of the pool's instance types. Fix: allow larger instance types, or lower the models' resources",
            )


def rule_system_node_group_size(cfg: StackConfig) -> Iterator[Problem]:
    """cluster.systemNodeGroup.minSize: prod needs a spare node; elsewhere one node is a warning."""
    group = cfg.cluster.system_node_group
    if cfg.is_prod and group.min_size < 2:
        yield Problem(
            "cluster.systemNodeGroup.minSize",
            f"prod needs at least 2 system nodes (got {group.min_size}); "
            "Karpenter, KEDA and the monitoring stack would all go down with one node. Fix: set minSize: 2",
        )
    elif group.min_size == 1 and not cfg.is_prod:
        yield Problem(
            "cluster.systemNodeGroup.minSize",
            "is 1: there is no spare node, so losing it stops Karpenter, KEDA, CoreDNS and monitoring at once "
            "(the capacity check counts that one node). "
            "Fix: set minSize: 2 for a cluster that must keep scaling",
            "warning",
        )


def rule_system_capacity(cfg: StackConfig) -> Iterator[Problem]:
    """The system node group holds every system pod with one node lost (config/facts/system_capacity.py)."""
    group = cfg.cluster.system_node_group
    short = system_capacity.shortfall(cfg)
    if short is None:
        return
    fix = _system_fix(cfg)
    yield Problem(
        "cluster.systemNodeGroup",
        f"with one of its {group.min_size} nodes lost, {short.nodes} x {short.instance.name} leave "
        f"{short.room.cpu_millis}m CPU and {short.room.memory_mib} MiB for the system pods, which request "
        f"{short.need.cpu_millis}m CPU and {short.need.memory_mib} MiB (Karpenter, Prometheus, KEDA, the GPU "
        "operator, CoreDNS, the CSI controller, the models' gateways; see config/facts/system_capacity.py): pods "
        "would stay Pending and "
        f"nothing scales this group. Fix: {fix}",
    )


def _system_fix(cfg: StackConfig) -> str:
    """The smallest change that fits: more nodes first (the group grows in place), else a larger catalog
    type (a managed node group whose instance types change is replaced, every system pod moved)."""
    group = cfg.cluster.system_node_group
    options = []
    for size in range(group.min_size + 1, group.min_size + 6):
        sized = group.model_copy(
            update={"min_size": size, "desired_size": max(size, group.desired_size), "max_size": max(size, group.max_size)}
        )
        trial = cfg.model_copy(update={"cluster": cfg.cluster.model_copy(update={"system_node_group": sized})})
        if system_capacity.shortfall(trial) is None:
            options.append(f"raise minSize and desiredSize to {size}")
            break
    for t in sorted(catalog.cpu_instance_types(), key=lambda t: t.price_per_hour):
        trial = cfg.model_copy(
            update={"cluster": cfg.cluster.model_copy(update={"system_node_group": group.model_copy(update={"instance_types": [t.name]})})}
        )
        if system_capacity.shortfall(trial) is None:
            options.append(f"set instanceTypes to [{t.name}] (replaces the node group)")
            break
    return " or ".join(options) if options else "use larger instance types"
