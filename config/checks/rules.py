"""Cross-section rules: checked on a parsed StackConfig, before any resource exists.

Each rule returns Problems instead of raising, so one run reports everything at once.
"""

from __future__ import annotations

import datetime as dt
import functools
import itertools
import math
from collections.abc import Callable, Iterator
from typing import Any

from config.derived import capacity, headroom, scaleup
from config.derived.capacity import ALLOCATABLE_CPU, ALLOCATABLE_MEMORY, OVERHEAD_GIB_PER_GPU
from config.derived.exposure import exposed_models, exposure
from config.derived.scheduling import uncovered
from config.errors import Problem
from config.facts import catalog, system_capacity
from config.facts.conventions import HPA_PREFIX, K8S_NAME_MAX, hpa_name, reserved_namespaces
from config.sections import cron, images, weights
from config.sections.gpu_pools import GpuPool
from config.sections.models import ModelConfig, Schedule
from config.sections.network import ExistingVpc, NewVpc
from config.sections.observability import EKS_UNREACHABLE_COMPONENTS
from config.sections.stack import StackConfig
from config.sections.types import duration_seconds, is_zone_id, public_cidr, zone_in_region

# A Spot interruption gives two minutes' notice; the drain must finish inside it.
SPOT_MAX_GRACE_SECONDS = 110


def model_path(model: ModelConfig) -> str:
    return f"models[{model.name}]"


def pool_path(pool: GpuPool) -> str:
    return f"gpuPools[{pool.name}]"


def check_fit(path: str, model: ModelConfig, pool: GpuPool) -> Iterator[Problem]:
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
    device = capacity.smallest_device(model, pool)
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
        yield Problem(
            path,
            f"does not fit pool {pool.name}: needs {need:.1f} GiB per {device.description} "
            f"(weights {capacity.weights_gib(model):.1f} GiB + KV cache for one {model.max_model_len}-token "
            f"sequence {capacity.kv_gib_per_sequence(model):.1f} GiB, over tensorParallelSize {tp}, + "
            f"{OVERHEAD_GIB_PER_GPU} GiB overhead), but has {have:.1f} GiB ({device.gib:.1f} GiB x "
            f"gpuMemoryUtilization {util}); vLLM would fail at startup. Fix: raise "
            f"tensorParallelSize, quantize, shorten maxModelLen, or use another pool: {smallest}",
        )
    if pool.sharing.time_slicing:
        replicas = pool.sharing.time_slicing.replicas
        if util * replicas > 0.95:
            yield Problem(
                f"{path}.gpuMemoryUtilization",
                f"gpuMemoryUtilization {util} x {replicas} time-slice replicas of pool {pool.name} "
                f"= {util * replicas:.2f} of one GPU; time-slicing does not split memory, so the "
                f"replicas sharing a GPU would run out of memory at startup. Fix: set "
                f"gpuMemoryUtilization to at most {math.floor(95 / replicas) / 100:.2f}",
            )


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


def catalog_problems(pool: GpuPool) -> list[Problem]:
    """What the catalog says is wrong with a pool: unknown types, MIG on the wrong GPU."""
    path = pool_path(pool)
    unknown = [t for t in (pool.instance_types or []) if t not in catalog.INSTANCE_TYPES or catalog.INSTANCE_TYPES[t].gpu is None]
    unknown_families = [f for f in (pool.instance_families or []) if f not in catalog.gpu_families()]
    if unknown or unknown_families:
        field, known = (
            ("instanceTypes", sorted(t.name for t in catalog.gpu_instance_types()))
            if unknown
            else ("instanceFamilies", sorted(catalog.gpu_families()))
        )
        return [
            Problem(
                f"{path}.{field}",
                f"{', '.join(unknown + unknown_families)} not in the GPU catalog, so capacity and cost cannot be "
                f"checked. Fix: use one of {', '.join(known)} (or add it to config/facts/catalog.py with its source)",
            )
        ]
    types = pool.resolved_instance_types()
    if not types:
        return [
            Problem(
                f"{path}.gpuCounts",
                f"no catalog instance type of families {', '.join(pool.instance_families or [])} has "
                f"{' or '.join(map(str, pool.gpu_counts or []))} GPUs. Fix: widen gpuCounts or the families",
            )
        ]
    if pool.sharing.mig:
        gpus = sorted({t.gpu.model for t in types if t.gpu})
        if len(gpus) != 1:
            return [
                Problem(
                    f"{path}.sharing.mig",
                    f"a MIG pool must have one GPU model (this one has {', '.join(gpus)}), because MIG "
                    "profile names depend on it. Fix: keep the pool to instance types with the same GPU",
                )
            ]
        gpu = types[0].gpu
        assert gpu is not None
        if not gpu.mig_capable:
            return [
                Problem(
                    f"{path}.sharing.mig",
                    f"{gpu.model} does not support MIG (only A100, H100 and H200 do). Fix: use "
                    "timeSlicing on this GPU, or a p4d/p4de/p5/p5en pool for MIG",
                )
            ]
        profile = pool.sharing.mig.profile
        if gpu.mig_profile(profile) is None:
            return [
                Problem(
                    f"{path}.sharing.mig.profile",
                    f"MIG profile {profile} does not exist on {gpu.model}; the MIG manager would leave "
                    f"the GPUs unpartitioned and no pod could schedule. Fix: use one of "
                    f"{', '.join(p.name for p in gpu.mig_profiles)}",
                )
            ]
    return []


def rule_pool_catalog(cfg: StackConfig) -> Iterator[Problem]:
    for pool in cfg.gpu_pools:
        yield from catalog_problems(pool)


def _models(cfg: StackConfig) -> Iterator[tuple[str, ModelConfig, GpuPool | None]]:
    """Models with their pool; the pool is None when missing or not usable (reported elsewhere)."""
    for m in cfg.models:
        pool = cfg.pool(m.pool)
        yield model_path(m), m, pool if pool is not None and not catalog_problems(pool) else None


def rule_unique_names(cfg: StackConfig) -> Iterator[Problem]:
    reasons = {
        "models": "each becomes Kubernetes object names (two ScaledObjects on one Deployment fight each other)",
        "gpuPools": "each becomes a NodePool, and models pick their pool by name (the second would replace the first)",
    }
    named = (("models", [m.name for m in cfg.models]), ("gpuPools", [p.name for p in cfg.gpu_pools]))
    for kind, names in named:
        seen: dict[str, int] = {}
        for i, name in enumerate(names):
            if name in seen:
                yield Problem(
                    f"{kind}[{i}].name",
                    f"'{name}' is already used by {kind}[{seen[name]}]; names must be unique, because {reasons[kind]}. Fix: rename one",
                )
            seen.setdefault(name, i)


def rule_model_names(cfg: StackConfig) -> Iterator[Problem]:
    reserved = reserved_namespaces(cfg)
    for path, m, _ in _models(cfg):
        if m.name in reserved:
            yield Problem(
                f"{path}.name",
                f"'{m.name}' is a namespace the platform or Kubernetes owns, and each model gets a "
                "namespace of its own name. Fix: choose another name",
            )
        hpa = hpa_name(m.name)
        if len(hpa) > K8S_NAME_MAX:
            yield Problem(
                f"{path}.name",
                f"name too long: KEDA names the HPA {hpa[:20]}... ({len(hpa)} characters), which must "
                f"be at most {K8S_NAME_MAX}. Fix: use at most {K8S_NAME_MAX - len(HPA_PREFIX)} characters",
            )


def rule_pools_exist(cfg: StackConfig) -> Iterator[Problem]:
    names = [p.name for p in cfg.gpu_pools]
    for m in cfg.models:
        path = model_path(m)
        if cfg.pool(m.pool) is None:
            yield Problem(
                f"{path}.pool",
                f"pool '{m.pool}' is not in gpuPools (have: {', '.join(names)}); the model would have "
                "nowhere to run. Fix: use one of those names or add the pool",
            )


def rule_fit(cfg: StackConfig) -> Iterator[Problem]:
    for path, m, pool in _models(cfg):
        if pool is not None:
            yield from check_fit(path, m, pool)
            yield from check_node_room(path, m, pool)


def rule_spot_drain(cfg: StackConfig) -> Iterator[Problem]:
    for path, m, pool in _models(cfg):
        grace = m.drain.termination_grace_period_seconds
        if pool is not None and "spot" in pool.capacity_types and grace > SPOT_MAX_GRACE_SECONDS:
            yield Problem(
                f"{path}.drain.terminationGracePeriodSeconds",
                f"{grace} s is above ~{SPOT_MAX_GRACE_SECONDS} s, but pool {pool.name} uses spot "
                "capacity, which gives a 2-minute notice; the drain cannot be honoured. Fix: lower "
                f"it to {SPOT_MAX_GRACE_SECONDS} or less, or use an on-demand pool",
            )


def rule_startup_budget(cfg: StackConfig) -> Iterator[Problem]:
    for path, m, _ in _models(cfg):
        expected = capacity.expected_load_seconds(m)
        if m.startup.budget_seconds is not None and m.startup.budget_seconds < expected:
            yield Problem(
                f"{path}.startup.budgetSeconds",
                f"startup budget ({m.startup.budget_seconds} s) is below the expected load time of "
                f"{capacity.checkpoint_gb(m):.0f} GB of checkpoint from {m.weights.source} plus the engine start "
                f"(~{expected} s); the kubelet would kill the pod before the model loads, in a crash loop. "
                f"Fix: raise it to at least {expected}, or unset it",
            )


def _gpus_on(model: ModelConfig, pool: GpuPool, replicas: int, instance: catalog.InstanceType) -> int:
    """GPUs of the nodes of this type that `replicas` replicas need."""
    return capacity.nodes_for(model, pool, instance, replicas) * instance.gpu_count


def rule_gpu_limits(cfg: StackConfig) -> Iterator[Problem]:
    """A NodePool's limit counts the GPUs of the nodes Karpenter launches, so count whole nodes:
    at minimum replicas (on the cheapest type, Karpenter's pick), and at maximum replicas plus a
    rolling update's surge of every model of the pool (a platform change rolls them all at once),
    on whichever of the pool's types needs the most GPUs."""
    for pool in cfg.gpu_pools:
        on_pool = [m for m in cfg.models if m.pool == pool.name]
        if not on_pool or catalog_problems(pool):
            continue
        at_min = at_max = surge = 0
        per_node: list[str] = []
        for m in on_pool:
            hosts = capacity.packing_hosts(m, pool)
            if not hosts:
                continue  # reported by the fit and node-room rules
            cheapest = hosts[0]
            at_min += capacity.nodes_for(m, pool, cheapest, m.replicas.min) * cheapest.gpu_count
            peak = m.replicas.max + capacity.ROLLOUT_MAX_SURGE
            worst = max(hosts, key=functools.partial(_gpus_on, m, pool, peak))
            at_max += capacity.nodes_for(m, pool, worst, m.replicas.max) * worst.gpu_count
            surge += capacity.rollout_surge_nodes(m, pool, worst) * worst.gpu_count
            per_node.append(f"{m.name}: {capacity.replicas_per_node(m, pool, worst)} per {worst.name}")
        packing = "; ".join(per_node)
        warm, warm_text = _headroom_gpus(pool, on_pool)
        at_min += warm
        at_max += warm
        if at_min > pool.gpu_limit:
            yield Problem(
                f"{pool_path(pool)}.gpuLimit",
                f"gpuLimit ({pool.gpu_limit}) is below the {at_min} GPUs of the nodes its models need at minimum "
                f"replicas{warm_text}; Karpenter would stop launching nodes and replicas would stay Pending. "
                f"Fix: raise gpuLimit to at least {at_min}",
            )
        elif at_max + surge > pool.gpu_limit:
            yield Problem(
                f"{pool_path(pool)}.gpuLimit",
                f"gpuLimit ({pool.gpu_limit}) is below the {at_max + surge} GPUs of the nodes its models need at maximum "
                f"replicas ({at_max}{warm_text}) plus a rolling update's surge of {capacity.ROLLOUT_MAX_SURGE} replica per model "
                f"({surge}), in whole nodes ({packing}); Karpenter would stop at the limit and scale-out or the rollout "
                f"would stall. Fix: raise gpuLimit to at least {at_max + surge}, or lower replicas.max",
            )


def _headroom_gpus(pool: GpuPool, on_pool: list[ModelConfig]) -> tuple[int, str]:
    """GPUs of the whole nodes the pool's warm headroom holds (on its largest type), and a note."""
    shape = headroom.placeholders(pool, on_pool)
    if shape is None:
        return 0, ""
    hosts = [t for t in pool.resolved_instance_types() if headroom.nodes(pool, t, shape)]
    if not hosts:
        return 0, ""
    gpus = max(headroom.nodes(pool, t, shape) * t.gpu_count for t in hosts)
    return gpus, f", with {gpus} GPUs of nodes for the headroom of {pool.headroom}"


def rule_headroom(cfg: StackConfig) -> Iterator[Problem]:
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
        shape = headroom.placeholders(pool, on_pool)
        if shape is not None and not any(headroom.nodes(pool, t, shape) for t in pool.resolved_instance_types()):
            yield Problem(
                path,
                f"one placeholder ({shape.cpu_millis}m CPU, {shape.memory_mib}Mi memory, {shape.count} x {shape.resource}) "
                "fits on none of the pool's instance types. Fix: allow larger instance types, or lower the models' resources",
            )


def rule_weights(cfg: StackConfig) -> Iterator[Problem]:
    for path, m, _ in _models(cfg):
        if not m.streams_from_s3:
            continue
        for i, arg in enumerate(m.extra_args):
            flag, _, value = arg.partition("=")
            if flag == "--model-loader-extra-config":
                yield Problem(
                    f"{path}.extraArgs[{i}]",
                    "--model-loader-extra-config is set by the platform when weights stream from S3 (the streamer's "
                    "concurrency and memory limit, from the replica's CPU and memory). Fix: remove it",
                )
            if flag == "--load-format":
                fmt = value or (m.extra_args[i + 1] if i + 1 < len(m.extra_args) else "")
                if fmt not in weights.STREAMER_LOAD_FORMATS:
                    yield Problem(
                        f"{path}.extraArgs[{i}]",
                        f"--load-format {fmt or '(missing)'} cannot load an s3:// model; vLLM accepts only "
                        f"{' or '.join(weights.STREAMER_LOAD_FORMATS)} there and would fail at start. "
                        "Fix: remove the flag (the platform sets runai_streamer), or set weights.source: huggingface",
                    )
    if cfg.uses_s3_weights and isinstance(cfg.network, NewVpc) and not cfg.network.s3_gateway_endpoint:
        yield Problem(
            "network.s3GatewayEndpoint",
            "models stream weights from S3 but the VPC has no S3 gateway endpoint: every replica start pulls its "
            "checkpoint through the NAT gateway, slower and billed per GB. Fix: remove s3GatewayEndpoint: false",
            "warning",
        )


def rule_load_balancer_sources(cfg: StackConfig) -> Iterator[Problem]:
    if isinstance(cfg.network, ExistingVpc) and not cfg.network.load_balancer_subnet_cidrs and exposed_models(cfg):
        yield Problem(
            "network.loadBalancerSubnetCidrs",
            "is empty, so vLLM's port admits the load balancer from the whole VPC: any host or pod in it reaches "
            "/metrics and every route vLLM leaves unauthenticated. Fix: list the CIDRs of the subnets the ALB uses "
            f"({'public' if cfg.ingress.scheme == 'internet-facing' else 'private'} subnets for the {cfg.ingress.scheme} scheme)",
            "warning",
        )


def rule_model_callers(cfg: StackConfig) -> Iterator[Problem]:
    for path, m, _ in _models(cfg):
        if not exposure(cfg, m).exposed and not m.client_namespaces:
            yield Problem(
                f"{path}.clientNamespaces",
                "is empty and the model is not exposed, so its NetworkPolicy admits no caller: only Prometheus reaches "
                "it. Fix: list the namespaces of the pods that call it, or set expose: true",
                "warning",
            )


def rule_image_cache(cfg: StackConfig) -> Iterator[Problem]:
    if not cfg.image_cache.enabled:
        return
    for path, m, _ in _models(cfg):
        upstream = images.upstream_for(m.image.repository)
        if upstream is None:
            host, _ = images.split(m.image.repository)
            yield Problem(
                f"{path}.image.repository",
                f"imageCache is on but {host} is not a registry the pull-through cache fronts "
                f"({', '.join(u.host for u in images.UPSTREAMS)}); this image is pulled from {host} directly. "
                "Fix: nothing, if that is intended (e.g. your own ECR); or mirror it to a supported registry",
                "warning",
            )
        elif upstream.needs_credential and cfg.image_cache.docker_hub_username is None:
            yield Problem(
                "imageCache.dockerHubUsername",
                f"is not set, but the image of {m.name} comes from Docker Hub, which ECR's pull-through cache only "
                "imports from with a Docker Hub user and access token. Fix: set imageCache.dockerHubUsername and the "
                "dockerHubAccessToken secret, or set imageCache.enabled: false",
            )
            return


def rule_scale_up(cfg: StackConfig) -> Iterator[Problem]:
    """A replica removed sooner than a new one can start turns every second burst into a cold start."""
    for path, m, _ in _models(cfg):
        if "scale_down" not in m.autoscaling.model_fields_set:
            continue  # the default window is raised to the budget (builders/serving/scaling.py)
        budget = scaleup.budget(m, scrape_interval=cfg.observability.vllm_scrape_interval, exposed=exposure(cfg, m).exposed)
        window = m.autoscaling.scale_down.stabilization_window_seconds
        if window < budget.miss:
            yield Problem(
                f"{path}.autoscaling.scaleDown.stabilizationWindowSeconds",
                f"{window} s is shorter than the model's scale-up budget on a new node ({budget.miss} s): a replica "
                "removed after a burst takes longer to come back than the calm that removed it. "
                f"Fix: raise it to at least {budget.miss}",
                "warning",
            )


REFERENCE_WEEK = dt.datetime(2026, 1, 5)
"""A Monday: schedules are compared over one week from it."""


def _window(s: Schedule) -> list[bool]:
    return cron.active_minutes(cron.parse(s.start), cron.parse(s.end), REFERENCE_WEEK, cron.WEEK_MINUTES, s.timezone)


def rule_scale_to_zero(cfg: StackConfig) -> Iterator[Problem]:
    """min 0 needs a signal that exists at zero and something to hold a request: the HTTP add-on's
    interceptor on the model's route, which routes by host, and timeouts longer than a cold start."""
    cold: list[tuple[str, int]] = []
    for path, m, _ in _models(cfg):
        a = m.autoscaling
        if m.replicas.min == 0:
            exp = exposure(cfg, m)
            budget = scaleup.budget(m, scrape_interval=cfg.observability.vllm_scrape_interval, exposed=exp.exposed)
            if not exp.exposed:
                yield Problem(
                    f"{path}.replicas.min",
                    "is 0 but the model has no route through the interceptor (expose is false): a request at zero replicas "
                    "would find no pod and fail. Fix: set expose: true, or keep replicas.min >= 1",
                )
            elif cfg.ingress.domain is None:
                yield Problem(
                    f"{path}.replicas.min",
                    "is 0 but ingress.domain is not set: the interceptor that holds requests at zero routes by host "
                    f"({m.name}.<domain>), and path routing cannot reach it. Fix: set ingress.domain, or keep replicas.min >= 1",
                )
            else:
                cold.append((m.name, budget.miss))
            idle = duration_seconds(a.idle_after)
            if idle < budget.miss:
                yield Problem(
                    f"{path}.autoscaling.idleAfter",
                    f"{a.idle_after} is shorter than the model's scale-up budget on a new node ({budget.miss} s): it would go "
                    f"back to zero sooner than a cold start takes. Fix: set idleAfter to at least {math.ceil(budget.miss / 60)}m",
                )
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
            if windows[i] == windows[j]:
                yield Problem(
                    f"{path}.autoscaling.schedules[{j}]",
                    f"opens and closes with schedules[{i}] all week, so one of the two floors never counts "
                    f"({a.schedules[i].replicas} and {a.schedules[j].replicas} replicas). Fix: remove one",
                )
            else:
                yield Problem(
                    f"{path}.autoscaling.schedules[{j}]",
                    f"overlaps schedules[{i}]: while both are open the larger floor applies (the HPA takes the largest trigger). "
                    "Fix: nothing, if nested floors are meant; else make the windows disjoint",
                    "warning",
                )
    slowest = max(cold, key=lambda c: c[1], default=None)
    if slowest is not None and cfg.ingress.idle_timeout_seconds < slowest[1] + scaleup.HOLD_MARGIN_SECONDS:
        need = slowest[1] + scaleup.HOLD_MARGIN_SECONDS
        yield Problem(
            "ingress.idleTimeoutSeconds",
            f"{cfg.ingress.idle_timeout_seconds} s does not cover the scale-up budget of {slowest[0]} ({slowest[1]} s), which "
            f"scales to zero, plus {scaleup.HOLD_MARGIN_SECONDS} s for its first token: no byte flows while the interceptor "
            f"holds a request, so the ALB would close it first. Fix: raise idleTimeoutSeconds to at least {need}",
        )


PROD_SCALE_DOWN_WINDOW_FLOOR = 120
"""Prod never scales a model in on less than two minutes of calm (a flap is a reload and cut streams)."""


def rule_disruption(cfg: StackConfig) -> Iterator[Problem]:
    """Disruption controls are rules, not defaults: repacking serving nodes must be acknowledged, and
    prod keeps a floor under the scale-down stabilization window."""
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
    if not cfg.is_prod:
        return
    for path, m, _ in _models(cfg):
        window = m.autoscaling.scale_down.stabilization_window_seconds
        if window < PROD_SCALE_DOWN_WINDOW_FLOOR:
            yield Problem(
                f"{path}.autoscaling.scaleDown.stabilizationWindowSeconds",
                f"{window} s in prod: a dip of a few scrapes would remove a replica that takes minutes to come back. "
                f"Fix: set it to at least {PROD_SCALE_DOWN_WINDOW_FLOOR}",
            )


def rule_pool_capacity(cfg: StackConfig) -> Iterator[Problem]:
    for pool in cfg.gpu_pools:
        family = pool.ami_family or cfg.karpenter.default_ami_family
        if family == "bottlerocket" and pool.sharing.mode != "none":
            yield Problem(
                f"{pool_path(pool)}.sharing",
                "GPU sharing is not supported on Bottlerocket pools here: its device plugin is built "
                "into the OS and ignores the GPU operator's sharing config. Fix: use amiFamily al2023 "
                "for this pool",
            )
        types = pool.resolved_instance_types()
        if "spot" in pool.capacity_types and len(types) < 3 and not catalog_problems(pool):
            yield Problem(
                f"{pool_path(pool)}.instanceTypes",
                f"spot pool with {len(types)} instance type(s); few types mean more interruptions and "
                "insufficient-capacity errors. Fix: allow at least 3 types (more sizes or families)",
                "warning",
            )
    for path, _m, model_pool in _models(cfg):
        if model_pool is None or not cfg.is_prod:
            continue
        if "on-demand" not in model_pool.capacity_types and "reserved" not in model_pool.capacity_types:
            yield Problem(
                f"{path}.pool",
                f"pool {model_pool.name} is spot-only, so even the minimum replicas have no fallback when "
                "spot capacity runs out. Fix: add on-demand to the pool's capacityTypes",
                "warning",
            )


def rule_exposure(cfg: StackConfig) -> Iterator[Problem]:
    exposed = [m.name for m in exposed_models(cfg)]
    if exposed and cfg.ingress.scheme == "internet-facing" and isinstance(cfg.network, ExistingVpc) and not cfg.network.public_subnet_ids:
        yield Problem(
            "network.publicSubnetIds",
            "is empty, but ingress.scheme is internet-facing: the load balancer controller needs public subnets (tag "
            "kubernetes.io/role/elb=1) for an internet-facing ALB and would leave the Ingress without an address. "
            "Fix: list the VPC's public subnets, or use ingress.scheme internal",
        )
    if exposed and cfg.ingress.certificate_arn is None:
        if cfg.is_prod:
            yield Problem(
                "ingress.certificateArn",
                f"is not set, so {', '.join(exposed)} would be served over plain HTTP; prod endpoints must use TLS. "
                "Fix: set an ACM certificate ARN for the endpoints' domain",
            )
        else:
            yield Problem(
                "ingress.certificateArn",
                f"is not set: {', '.join(exposed)} {'is' if len(exposed) == 1 else 'are'} served over plain HTTP inside "
                "the VPC. Fix: set an ACM "
                "certificate ARN to serve HTTPS (HTTP then redirects)",
                "warning",
            )
    if cfg.ingress.scheme == "internet-facing":
        for i, cidr in enumerate(cfg.ingress.allowed_cidrs):
            try:
                public_cidr(cidr)
            except Exception as exc:  # pydantic's custom error carries the message
                yield Problem(f"ingress.allowedCidrs[{i}]", str(exc))


def rule_gpu_operator(cfg: StackConfig) -> Iterator[Problem]:
    """The GPU operator must leave the AMI's driver alone and run on every GPU node."""
    extra = cfg.gpu_operator.extra_values
    for component in ("driver", "toolkit"):
        section = extra.get(component)
        if isinstance(section, dict) and section.get("enabled") is True:
            yield Problem(
                f"gpuOperator.extraValues.{component}.enabled",
                f"must be false on EKS accelerated AMIs, which ship the NVIDIA {component}; a second "
                "copy fights the first and GPUs never register. Fix: remove the override",
            )
    mig_manager = extra.get("migManager")
    if isinstance(mig_manager, dict) and mig_manager.get("enabled") is True:
        yield Problem(
            "gpuOperator.extraValues.migManager.enabled",
            "must stay false: with the AMI's host driver the MIG manager restarts kubelet to change MIG mode and "
            "Karpenter's nodes never come back Ready (NVIDIA/gpu-operator#2415); MIG pools are partitioned at boot "
            "by their EC2NodeClass instead. Fix: remove the override",
        )
    daemonsets = extra.get("daemonsets")
    if isinstance(daemonsets, dict) and "tolerations" in daemonsets:
        tolerations = daemonsets["tolerations"] if isinstance(daemonsets["tolerations"], list) else []
        for pool in cfg.gpu_pools:
            for taint in uncovered(pool.node_taints(), tolerations):
                shown = f"{taint['key']}={taint['value']}:{taint['effect']}" if taint.get("value") else f"{taint['key']}:{taint['effect']}"
                yield Problem(
                    "gpuOperator.extraValues.daemonsets.tolerations",
                    f"gpu NodePool '{pool.name}' taint {shown} is not tolerated by the GPU operator's daemonsets; "
                    "its GPUs would never register and Karpenter would never mark the nodes initialized. "
                    "Fix: remove the override (the platform tolerates every pool taint) or add a toleration for it",
                )


def rule_zones(cfg: StackConfig) -> Iterator[Problem]:
    """Named zones and the certificate must be in the stack's region, and pools may only narrow the zones."""
    arn = cfg.ingress.certificate_arn
    if arn is not None and arn.split(":")[3] != cfg.region:
        yield Problem(
            "ingress.certificateArn",
            f"is a certificate of {arn.split(':')[3]}, but the stack (aws:region) is in {cfg.region}; an ALB can only "
            f"use a certificate of its own region. Fix: request or import the certificate in {cfg.region}",
        )
    for pool in cfg.gpu_pools:
        for i, zone in enumerate(pool.zones):
            if is_zone_id(zone):
                yield Problem(
                    f"{pool_path(pool)}.zones[{i}]",
                    f"'{zone}' is a zone id; a pool's zones are matched against node zone names. Fix: write the zone's "
                    "name (e.g. us-east-1a), or name zones by id in network.availabilityZones and leave the pool's zones unset",
                )
            elif not zone_in_region(zone, cfg.region):
                yield Problem(
                    f"{pool_path(pool)}.zones[{i}]",
                    f"'{zone}' is not a zone of {cfg.region} (aws:region); no node of the pool could launch there. "
                    f"Fix: use a zone of {cfg.region}",
                )
    zones = cfg.network.availability_zones if isinstance(cfg.network, NewVpc) else None
    if zones is None:
        return
    for i, zone in enumerate(zones):
        if not zone_in_region(zone, cfg.region):
            yield Problem(
                f"network.availabilityZones[{i}]",
                f"'{zone}' is not a zone of {cfg.region} (aws:region); the subnet could not be created there. "
                f"Fix: use a zone of {cfg.region}, or correct aws:region",
            )
    if any(is_zone_id(z) for z in zones):
        return  # pool zones are names: which ids they are is an account fact (checked at preview)
    for pool in cfg.gpu_pools:
        outside = [z for z in pool.zones if z not in zones]
        if outside:
            yield Problem(
                f"{pool_path(pool)}.zones",
                f"{', '.join(outside)} {'is' if len(outside) == 1 else 'are'} not among network.availabilityZones "
                f"({', '.join(zones)}); the VPC has no subnet there, so Karpenter could never launch those nodes. "
                "Fix: list zones of the VPC only, or leave zones unset",
            )


def rule_system_capacity(cfg: StackConfig) -> Iterator[Problem]:
    """The system node group holds every system pod with one node lost (config/facts/system_capacity.py)."""
    group = cfg.cluster.system_node_group
    if group.min_size == 1 and not cfg.is_prod:
        yield Problem(
            "cluster.systemNodeGroup.minSize",
            "is 1: there is no spare node, so losing it stops Karpenter, KEDA, CoreDNS and monitoring at once "
            "(the capacity check counts that one node). Fix: set minSize: 2 for a cluster that must keep scaling",
            "warning",
        )
    short = system_capacity.shortfall(cfg)
    if short is None:
        return
    fix = _system_fix(cfg)
    yield Problem(
        "cluster.systemNodeGroup",
        f"with one of its {group.min_size} nodes lost, {short.nodes} x {short.instance.name} leave "
        f"{short.room.cpu_millis}m CPU and {short.room.memory_mib} MiB for the system pods, which request "
        f"{short.need.cpu_millis}m CPU and {short.need.memory_mib} MiB (Karpenter, Prometheus, KEDA, the GPU "
        "operator, CoreDNS, the CSI controller; see config/facts/system_capacity.py): pods would stay Pending and "
        f"nothing scales this group. Fix: {fix}",
    )


def _system_fix(cfg: StackConfig) -> str:
    """The smallest change that fits: a larger catalog type at the same size, or more nodes."""
    group = cfg.cluster.system_node_group
    options = []
    for t in sorted(catalog.cpu_instance_types(), key=lambda t: t.price_per_hour):
        trial = cfg.model_copy(
            update={"cluster": cfg.cluster.model_copy(update={"system_node_group": group.model_copy(update={"instance_types": [t.name]})})}
        )
        if system_capacity.shortfall(trial) is None:
            options.append(f"set instanceTypes to [{t.name}]")
            break
    for size in range(group.min_size + 1, group.min_size + 6):
        sized = group.model_copy(
            update={"min_size": size, "desired_size": max(size, group.desired_size), "max_size": max(size, group.max_size)}
        )
        trial = cfg.model_copy(update={"cluster": cfg.cluster.model_copy(update={"system_node_group": sized})})
        if system_capacity.shortfall(trial) is None:
            options.append(f"raise minSize to {size}")
            break
    return " or ".join(options) if options else "use larger instance types"


def rule_api_reachable(cfg: StackConfig) -> Iterator[Problem]:
    """`pulumi up` creates every Kubernetes object through the API endpoint: something must reach it."""
    endpoint = cfg.cluster.endpoint
    if endpoint.public or endpoint.private_access_cidrs or endpoint.private_access_security_group_ids:
        return
    fix = (
        "list the network `pulumi up` runs from (VPN, transit gateway, a CI runner's subnet) in "
        "cluster.endpoint.privateAccessCidrs, or its security group in cluster.endpoint.privateAccessSecurityGroupIds; "
        "or turn on cluster.endpoint.public with publicCidrs"
    )
    if isinstance(cfg.network, NewVpc):
        yield Problem(
            "cluster.endpoint",
            "only the private endpoint is on, in a VPC this stack creates, and its security group admits only the "
            "cluster itself: nothing could reach the API server during pulumi up, and every Kubernetes object would "
            f"fail after the cluster is created. Fix: {fix}",
        )
    else:
        yield Problem(
            "cluster.endpoint",
            "only the private endpoint is on and no network or security group is allowed to reach it: pulumi up "
            "reaches the API server only if it runs from inside the cluster's security group (e.g. a runner on a "
            f"cluster node). Fix: {fix}",
            "warning",
        )


def rule_deploy_role(cfg: StackConfig) -> Iterator[Problem]:
    """The role that deploys is the one that creates the cluster: EKS (through pulumi-eks, which
    always asks for it) gives the creator an admin access entry of its own, so the stack must not
    declare a second one for it, or EKS refuses it (409) right after creating the cluster."""
    role = cfg.cluster.deploy_role_arn
    if role is None:
        if cfg.is_prod:
            yield Problem(
                "cluster.deployRoleArn",
                "is not set; prod is deployed by CI, and the Kubernetes objects are created as the principal that "
                "creates the cluster. Fix: set it to the role the workflows assume (vars.AWS_ROLE_ARN), and run the "
                "first pulumi up as that role",
            )
        return
    declared = [f"cluster.adminRoleArns[{i}]" for i, arn in enumerate(cfg.cluster.admin_role_arns) if arn == role]
    declared += [f"cluster.access[{i}]" for i, grant in enumerate(cfg.cluster.access) if grant.principal_arn == role]
    for path in declared:
        yield Problem(
            path,
            "is the deploy role (cluster.deployRoleArn): EKS already gives the principal that creates the cluster an "
            "admin access entry, and a second entry for it fails with 409 ResourceInUseException right after the "
            "cluster is created. Fix: remove it here, and run the first pulumi up as the deploy role",
        )


# Chart values the program derives and other parts rely on: an escape hatch may not replace them.
# (section, dotted values path) -> the config field (or fact) to change instead.
PROTECTED_VALUES: dict[tuple[str, tuple[str, ...]], str] = {
    ("karpenter", ("podDisruptionBudget",)): "a drain of the system nodes must never take every Karpenter controller at once",
    ("karpenter", ("priorityClassName",)): "Karpenter runs as system-cluster-critical, so nothing preempts the controller "
    "that brings capacity back",
}
"""Reliability settings an escape hatch may not remove."""
DERIVED_VALUES: dict[tuple[str, tuple[str, ...]], str] = {
    ("ingress", ("clusterName",)): "cluster.name",
    ("ingress", ("region",)): "aws:region",
    ("ingress", ("vpcId",)): "network (the VPC the stack creates or network.vpcId)",
    ("ingress", ("serviceAccount", "name")): "nothing: its Pod Identity association names this service account",
    ("ingress", ("serviceAccount", "create")): "nothing: the chart must create the service account the Pod Identity association names",
    ("karpenter", ("settings", "clusterName")): "cluster.name",
    ("karpenter", ("settings", "interruptionQueue")): "nothing: the stack creates the queue and names it after the cluster",
    ("karpenter", ("settings", "featureGates", "nodeOverlay")): "nothing: sharing pools need the NodeOverlays it enables",
    ("karpenter", ("serviceAccount", "name")): "nothing: its Pod Identity association or IRSA trust names this service account",
    ("karpenter", ("serviceAccount", "create")): "nothing: the chart must create the service account its identity names",
    ("karpenter", ("serviceAccount", "annotations", "eks.amazonaws.com/role-arn")): "karpenter.identity",
    ("karpenter", ("replicas",)): "karpenter.replicas",
    ("karpenter", ("nodeSelector",)): "nothing: Karpenter runs on the system nodes, never on the nodes it manages",
    ("keda", ("operator", "replicaCount")): "keda.operatorReplicas",
    ("observability", ("fullnameOverride",)): "nothing: the Prometheus address KEDA and the outputs use is derived from it",
    ("observability", ("prometheus", "service", "port")): "nothing: the Prometheus address KEDA and the outputs use includes it",
    ("observability", ("prometheus", "prometheusSpec", "retention")): "observability.retention",
    ("observability", ("prometheus", "prometheusSpec", "retentionSize")): "observability.retentionSize",
    ("observability", ("prometheus", "prometheusSpec", "storageSpec")): "observability.storageSize",
    **{
        ("observability", ("prometheus", "prometheusSpec", key)): (
            "nothing: the platform's monitors and rules live outside the chart's release and are selected only this way"
        )
        for key in (
            "podMonitorSelectorNilUsesHelmValues",
            "serviceMonitorSelectorNilUsesHelmValues",
            "ruleSelectorNilUsesHelmValues",
            "podMonitorSelector",
            "serviceMonitorSelector",
            "ruleSelector",
        )
    },
    ("observability", ("grafana", "admin")): "the grafanaAdminPassword secret",
    ("gpuOperator", ("devicePlugin", "config")): "gpuPools[].sharing (the device-plugin configs are rendered from the pools)",
    ("gpuOperator", ("mig", "strategy")): "nothing: MIG slices are requested as nvidia.com/mig-<profile> (mixed strategy)",
}
_SECTION_VALUES = {
    "ingress": lambda cfg: cfg.ingress.extra_values,
    "karpenter": lambda cfg: cfg.karpenter.extra_values,
    "keda": lambda cfg: cfg.keda.extra_values,
    "observability": lambda cfg: cfg.observability.extra_values,
    "gpuOperator": lambda cfg: cfg.gpu_operator.extra_values,
}


def _has_path(values: Any, path: tuple[str, ...]) -> bool:
    for key in path:
        if not isinstance(values, dict) or key not in values:
            return False
        values = values[key]
    return True


def rule_escape_hatches(cfg: StackConfig) -> Iterator[Problem]:
    """extraValues may tune a chart, not replace what the program derives and other parts rely on."""
    for (section, path), reason in PROTECTED_VALUES.items():
        if _has_path(_SECTION_VALUES[section](cfg), path):
            yield Problem(
                f"{section}.extraValues.{'.'.join(path)}",
                f"is pinned by the platform: {reason}. Fix: remove the override",
            )
    for (section, path), instead in DERIVED_VALUES.items():
        if _has_path(_SECTION_VALUES[section](cfg), path):
            dotted = ".".join(path)
            fix = (
                f"remove the override ({instead.removeprefix('nothing: ')})"
                if instead.startswith("nothing:")
                else (f"remove the override and set {instead} instead")
            )
            yield Problem(
                f"{section}.extraValues.{dotted}",
                "is derived by the platform, and other resources rely on the value it sets (an override would point "
                f"them at something that does not exist). Fix: {fix}",
            )


def rule_observability_overrides(cfg: StackConfig) -> Iterator[Problem]:
    """The monitoring escape hatch must not bring back what EKS cannot serve or what destroy leaks."""
    extra = cfg.observability.extra_values
    for component in EKS_UNREACHABLE_COMPONENTS:
        section = extra.get(component)
        if isinstance(section, dict) and section.get("enabled") is True:
            yield Problem(
                f"observability.extraValues.{component}.enabled",
                "EKS does not expose this component to scrape, so its Down alert would fire forever and page on "
                "nothing. Fix: remove the override",
            )
    spec = (extra.get("prometheus") or {}).get("prometheusSpec") if isinstance(extra.get("prometheus"), dict) else None
    policy = spec.get("persistentVolumeClaimRetentionPolicy") if isinstance(spec, dict) else None
    if isinstance(policy, dict) and policy.get("whenDeleted") == "Retain":
        yield Problem(
            "observability.extraValues.prometheus.prometheusSpec.persistentVolumeClaimRetentionPolicy.whenDeleted",
            "is Retain: `pulumi destroy` would leave Prometheus's EBS volume behind, billed and outside the stack. "
            "Fix: remove the override, or snapshot the volume before destroying if the metrics must be kept",
            "warning",
        )


def rule_prod(cfg: StackConfig) -> Iterator[Problem]:
    if not cfg.is_prod:
        return
    if cfg.cluster.system_node_group.min_size < 2:
        yield Problem(
            "cluster.systemNodeGroup.minSize",
            f"prod needs at least 2 system nodes (got {cfg.cluster.system_node_group.min_size}); "
            "Karpenter, KEDA and the monitoring stack would all go down with one node. Fix: set minSize: 2",
        )
    if isinstance(cfg.network, NewVpc):
        if cfg.network.az_count < 3:
            yield Problem("network.azCount", "prod spans fewer than 3 AZs; an AZ outage halves capacity. Fix: set azCount: 3", "warning")
        if cfg.network.nat_gateways == "single":
            yield Problem(
                "network.natGateways", "prod with a single NAT gateway loses egress in an AZ outage. Fix: set natGateways: perAz", "warning"
            )
    if cfg.cluster.deletion_protection is False:
        yield Problem("cluster.deletionProtection", "deletion protection is off in prod. Fix: remove the key (prod turns it on)", "warning")
    for path, m, _ in _models(cfg):
        if m.replicas.min < 2:
            yield Problem(
                f"{path}.replicas.min",
                "prod model with fewer than 2 minimum replicas: one node loss is an outage. Fix: set min: 2",
                "warning",
            )
        if m.image.digest is None:
            yield Problem(
                f"{path}.image.digest",
                "prod image is pinned by tag only; a re-pushed tag changes what runs. Fix: add the sha256 digest",
                "warning",
            )


RULES: tuple[Callable[[StackConfig], Iterator[Problem]], ...] = (
    rule_pool_catalog,
    rule_unique_names,
    rule_model_names,
    rule_pools_exist,
    rule_fit,
    rule_spot_drain,
    rule_startup_budget,
    rule_gpu_limits,
    rule_headroom,
    rule_weights,
    rule_image_cache,
    rule_load_balancer_sources,
    rule_model_callers,
    rule_scale_up,
    rule_scale_to_zero,
    rule_disruption,
    rule_pool_capacity,
    rule_exposure,
    rule_gpu_operator,
    rule_escape_hatches,
    rule_observability_overrides,
    rule_zones,
    rule_system_capacity,
    rule_api_reachable,
    rule_deploy_role,
    rule_prod,
)


def check(cfg: StackConfig) -> list[Problem]:
    """Every cross-section problem of a parsed config."""
    return [p for rule in RULES for p in rule(cfg)]
