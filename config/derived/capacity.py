"""Capacity math, written once: model memory, fit on a GPU or slice, GPUs and node share per replica.

The config rules (does it fit?), the cost summary (what does a replica cost?), the builders
(cache size, startup budget) and the planner all read these functions. Pure; estimates err on
the side of rejecting a config that barely fits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from config.facts import catalog, speed
from config.sections.gpu_pools import GpuPool
from config.sections.models import ModelConfig
from config.sections.types import parse_quantity

GIB = 2**30
# Per-GPU memory vLLM needs beside weights and KV cache: CUDA context, activation peak,
# CUDA graphs. An estimate; it errs on the side of rejecting configs that barely fit.
OVERHEAD_GIB_PER_GPU = 1.5
# Share of a node's CPU and memory a pod can actually get (kubelet, system reserve, daemonsets).
ALLOCATABLE_CPU = 0.9
ALLOCATABLE_MEMORY = 0.85
# Bytes per parameter on the GPU: quantized weights, else the dtype's width.
BYTES_PER_PARAMETER = {"none": None, "fp8": 1.0, "awq": 0.5, "gptq": 0.5}
BYTES_PER_DTYPE = {"bfloat16": 2.0, "float16": 2.0}
TENSOR_PARALLEL_SIZES = (1, 2, 4, 8)
# Pods a rolling update adds above the replica count (the Deployment's maxSurge; maxUnavailable 0).
ROLLOUT_MAX_SURGE = 1
ENFORCE_EAGER = "--enforce-eager"
# A fixed KV cache (time-sliced pools) leaves this much of the replica's share unclaimed beyond the
# fit check's overhead: activations, CUDA graphs and the context then have room to exceed the estimate.
EXPLICIT_KV_MARGIN_GIB = 1.0
# vLLM 0.33's --max-num-seqs default (engine/arg_utils.py; docs/upstream-facts.md#vllm): 1024 on
# H100/H200-class GPUs (>= 70 GiB, not A100), else 256.
MAX_NUM_SEQS_SMALL, MAX_NUM_SEQS_LARGE = 256, 1024
# and its --max-num-batched-tokens default (the step's token budget; chunked prefill is always on in
# V1), chosen by the same rule: 8192 on the large class, else 2048.
MAX_NUM_BATCHED_TOKENS_SMALL, MAX_NUM_BATCHED_TOKENS_LARGE = 2048, 8192
# Admission: beside its running batch a replica holds at most this many batches (max-num-seqs each)
# waiting before vLLM answers 503, and never fewer than this many times the queue depth at which
# KEDA adds a replica.
ADMISSION_BATCHES = 1
ADMISSION_TRIGGER_MULTIPLE = 4


# -- one model's memory ------------------------------------------------------------------------
def weights_gib(model: ModelConfig) -> float:
    """GPU memory the weights take once loaded (online fp8 halves a bf16 checkpoint)."""
    per_parameter = BYTES_PER_PARAMETER[model.quantization] or BYTES_PER_DTYPE[model.dtype]
    return model.parameters_billions * 1e9 * per_parameter / GIB


def checkpoint_gib(model: ModelConfig) -> float:
    """What is downloaded and cached: online fp8 reads the full-precision checkpoint."""
    per_parameter = 0.5 if model.quantization in ("awq", "gptq") else BYTES_PER_DTYPE[model.dtype]
    return model.parameters_billions * 1e9 * per_parameter / GIB


def kv_bytes_per_token(model: ModelConfig) -> float:
    """KV-cache bytes of one token: keys and values of every layer's KV heads."""
    kv_bytes = 1.0 if model.kv_cache_dtype == "fp8" else BYTES_PER_DTYPE[model.dtype]
    a = model.architecture
    return 2 * a.num_layers * a.num_kv_heads * a.head_dim * kv_bytes


def kv_gib_per_sequence(model: ModelConfig) -> float:
    """KV cache of one sequence at maxModelLen: the least vLLM must fit beside the weights."""
    return kv_bytes_per_token(model) * model.max_model_len / GIB


def ranks(model: ModelConfig) -> int:
    """GPUs one replica's weights and KV cache are split over: tensorParallelSize on each of its
    pipelineParallelSize nodes (a pipeline stage holds its share of the layers, so of both)."""
    return model.tensor_parallel_size * model.pipeline_parallel_size


def required_gib_per_device(model: ModelConfig, tp: int | None = None) -> float:
    """Memory one rank needs (at the model's size, or at tp on each pipeline stage): its share of the
    weights and of one sequence's KV cache, plus overhead."""
    gpus = (tp or model.tensor_parallel_size) * model.pipeline_parallel_size
    return (weights_gib(model) + kv_gib_per_sequence(model)) / gpus + OVERHEAD_GIB_PER_GPU


def checkpoint_gb(model: ModelConfig) -> float:
    """The checkpoint in decimal GB, the unit the published transfer rates use."""
    return checkpoint_gib(model) * GIB / 1e9


def s3_rate(host: catalog.InstanceType | None, *, pessimistic: bool = False) -> float:
    """GB/s the Run:ai Model Streamer reads from S3 on a host: its network rate (burst; `pessimistic`, its
    baseline) at the streamer's published share of it, never above the fastest published read. Without a host
    (a pool the catalog cannot size), the one measured rate."""
    if host is None:
        return speed.S3_STREAM_RATE.value
    gbps = host.network.baseline_gbps if pessimistic else host.network.burst_gbps
    return min(speed.STREAMER_MAX_RATE.value, gbps / 8 * speed.STREAMER_LINE_SHARE.value)


def weights_host(model: ModelConfig, pool: GpuPool | None, *, pessimistic: bool = False) -> catalog.InstanceType | None:
    """The host a replica's weights are read on: the cheapest that holds one (what Karpenter launches); with
    `pessimistic`, the pool's host with the lowest baseline network rate."""
    hosts = packing_hosts(model, pool) if pool is not None else []
    if not hosts:
        return None
    return min(hosts, key=lambda h: (h.network.baseline_gbps, h.name)) if pessimistic else hosts[0]


def weights_seconds(model: ModelConfig, host: catalog.InstanceType | None = None, *, pessimistic: bool = False) -> float:
    """Reading the checkpoint from its source on a host: streamed from S3 at the host's rate (s3_rate), or
    downloaded from Hugging Face at its measured rate. The nodes of a multi-node replica read at once and the
    group waits for the slowest: counted as the whole checkpoint on each node (vLLM's loader walks every file and
    keeps its pipeline stage's tensors; whether the streamer's distributed mode splits the reads across nodes is
    not published, and a budget too short is a crash loop, so the slow end)."""
    rate = s3_rate(host, pessimistic=pessimistic) if model.streams_from_s3 else speed.HUGGING_FACE_RATE.value
    return checkpoint_gb(model) / rate


def eager(model: ModelConfig) -> bool:
    """--enforce-eager: no torch.compile and no CUDA graphs (a faster start, slower decode steps)."""
    return ENFORCE_EAGER in model.extra_args


def explicit_kv(model: ModelConfig, pool: GpuPool | None) -> bool:
    """Whether vLLM gets --kv-cache-memory-bytes (and skips its memory-profiling pass)."""
    return model.engine.explicit_kv_cache or (pool is not None and pool.sharing.time_slicing is not None)


def cpu_limit(model: ModelConfig, pool: GpuPool | None) -> str:
    """The vLLM container's CPU limit: resources.cpuLimit, else the allocatable CPU of the pool's smallest
    host shared among the replicas it holds, never below the request (Burstable QoS: the CPU-bound start
    uses the node's idle cores; a limit stays, as the policy checks require)."""
    if model.resources.cpu_limit is not None:
        return model.resources.cpu_limit
    request = parse_quantity(model.resources.cpu)
    hosts = packing_hosts(model, pool) if pool is not None else []
    if not hosts:
        return model.resources.cpu
    host = min(hosts, key=lambda t: (t.vcpus, t.name))
    share = host.vcpus * ALLOCATABLE_CPU / max(1, replicas_per_node(model, pool, host)) if pool else 0.0
    millis = max(round(request * 1000), math.floor(share * 10) * 100)
    return f"{millis // 1000}" if millis % 1000 == 0 else f"{millis}m"


# -- what a replica gets -----------------------------------------------------------------------
@dataclass(frozen=True)
class Device:
    """What one replica gets per tensor-parallel rank: a GPU, a time-slice of one, or a MIG slice."""

    description: str
    gib: float


def pool_mig_profile(pool: GpuPool) -> catalog.MigProfile:
    """The MIG profile of a (validated) MIG pool, from its GPU's catalog entry."""
    assert pool.sharing.mig is not None
    gpu = pool.resolved_instance_types()[0].gpu
    assert gpu is not None
    profile = gpu.mig_profile(pool.sharing.mig.profile)
    assert profile is not None
    return profile


def device_for(pool: GpuPool, instance: catalog.InstanceType) -> Device:
    gpu = instance.gpu
    assert gpu is not None
    if pool.sharing.mig:
        profile = pool.sharing.mig.profile
        return Device(f"MIG {profile} slice of {gpu.model}", gpu.mig_profile_gib(profile))
    return Device(gpu.model, gpu.memory_gib)


def replica_hosts(model: ModelConfig, pool: GpuPool) -> list[catalog.InstanceType]:
    """Pool instance types that can host one replica's GPUs (tensor parallelism divides their GPUs)."""
    tp = model.tensor_parallel_size
    return [t for t in pool.resolved_instance_types() if t.gpu_count >= tp and t.gpu_count % tp == 0]


def smallest_device(model: ModelConfig, pool: GpuPool) -> Device | None:
    """The smallest device a replica of the model may land on in the pool."""
    hosts = replica_hosts(model, pool)
    return min((device_for(pool, t) for t in hosts), key=lambda d: d.gib) if hosts else None


def usable_gib(model: ModelConfig, device: Device) -> float:
    return device.gib * model.gpu_memory_utilization


def kv_cache_gib(model: ModelConfig, device: Device) -> float:
    """KV cache one replica gets on the device: its usable memory on every rank, less the weights and
    the per-rank overhead the fit check counts (what vLLM's profiling would find on an idle GPU)."""
    gpus = ranks(model)
    return usable_gib(model, device) * gpus - weights_gib(model) - OVERHEAD_GIB_PER_GPU * gpus


def explicit_kv_cache_bytes(model: ModelConfig, pool: GpuPool) -> int | None:
    """`--kv-cache-memory-bytes` on a time-sliced pool, and wherever engine.explicitKvCache is on (the
    default: it skips vLLM's profiling pass at start); None elsewhere.

    vLLM sizes its KV cache by profiling free memory device-wide (`total - free` counts every process
    on the GPU), so time-sliced replicas starting together profile each other: a peer loading weights
    shrinks this replica's cache for its lifetime, a peer freeing memory fails the profiling
    (deploy review 2026-12-01 part B, MINOR 2; vllm 0.33.0 v1/worker/gpu_worker.py). An explicit size
    skips the profiling. It is the fit check's budget on the smallest device the replica may land on
    (a larger GPU of the pool only leaves memory unused), less EXPLICIT_KV_MARGIN_GIB per rank and never
    below one sequence of maxModelLen, per GPU: with the size fixed vLLM no longer shrinks the cache to what is left,
    so an overhead above the estimate would grow the replica past its share of the GPU."""
    if not explicit_kv(model, pool):
        return None
    device = smallest_device(model, pool)
    if device is None:
        return None
    # vLLM reads the flag per GPU ("Size of KV Cache per GPU in bytes", vllm/config/cache.py CacheConfig):
    # a tensor- or pipeline-parallel replica's cache is split over its ranks, and so is the margin each rank keeps.
    gpus = ranks(model)
    gib = max(kv_gib_per_sequence(model), kv_cache_gib(model, device) - EXPLICIT_KV_MARGIN_GIB * gpus) / gpus
    return math.floor(gib * GIB)


def default_max_num_seqs(gpu: catalog.Gpu, device_gib: float) -> int:
    """vLLM's --max-num-seqs default for the API server on a device of this GPU: vLLM reads the memory
    the device shows (a MIG slice shows its own), and never gives an A100 the large default."""
    return MAX_NUM_SEQS_LARGE if _large_defaults(gpu, device_gib) else MAX_NUM_SEQS_SMALL


def _large_defaults(gpu: catalog.Gpu, device_gib: float) -> bool:
    return device_gib >= 70 and gpu.label != "a100"


def default_max_num_batched_tokens(gpu: catalog.Gpu, device_gib: float) -> int:
    """vLLM's --max-num-batched-tokens default for the API server on a device of this GPU."""
    return MAX_NUM_BATCHED_TOKENS_LARGE if _large_defaults(gpu, device_gib) else MAX_NUM_BATCHED_TOKENS_SMALL


def max_num_seqs(model: ModelConfig, pool: GpuPool) -> int:
    """Sequences a replica runs at once: maxNumSeqs, else vLLM's default on the pool's devices
    (on a pool of mixed GPUs vLLM picks per node; the smaller default is the one to plan with)."""
    if model.max_num_seqs is not None:
        return model.max_num_seqs
    hosts = replica_hosts(model, pool) or pool.resolved_instance_types()
    defaults = (default_max_num_seqs(t.gpu, device_for(pool, t).gib) for t in hosts if t.gpu is not None)
    return min(defaults, default=MAX_NUM_SEQS_SMALL)


def max_waiting_requests(model: ModelConfig, pool: GpuPool) -> int:
    """Requests a replica holds waiting beside its running batch before vLLM answers 503.

    maxWaitingRequests, else one batch's worth: a replica running max-num-seqs sequences drains a
    queue of that many in about one request's duration, so an admitted request waits at most about
    as long again as it runs, and a refused one learns it at once (503) instead of hanging until its
    timeout. Never below ADMISSION_TRIGGER_MULTIPLE times autoscaling.queueDepthPerReplica, so KEDA
    sees a queue well above its target (and adds replicas) long before a replica refuses anything."""
    if model.max_waiting_requests is not None:
        return model.max_waiting_requests
    trigger = math.ceil(ADMISSION_TRIGGER_MULTIPLE * model.autoscaling.queue_depth_per_replica)
    return max(ADMISSION_BATCHES * max_num_seqs(model, pool), trigger)


def max_in_flight_requests(model: ModelConfig, pool: GpuPool) -> int:
    """`--max-num-queued-reqs`: despite its name, vLLM 0.33.0 counts every unfinished request against
    it, running and waiting ("in-flight (waiting or running)... size it as roughly max_num_seqs plus
    the desired queue depth", config/scheduler.py; v1/engine/async_llm.py), so it is the running
    batch plus the waiting bound."""
    return max_num_seqs(model, pool) + max_waiting_requests(model, pool)


def fits_instance(model: ModelConfig, instance: catalog.InstanceType, tp: int) -> bool:
    """Whether the model fits whole GPUs of the instance at tensor-parallel size tp."""
    if instance.gpu is None or instance.gpu_count < tp or instance.gpu_count % tp:
        return False
    return required_gib_per_device(model, tp) <= instance.gpu.memory_gib * model.gpu_memory_utilization


def smallest_fitting_instance(model: ModelConfig) -> tuple[catalog.InstanceType, int] | None:
    """The cheapest catalog instance (and tensor-parallel size) on which the model fits whole GPUs."""
    for instance in sorted(catalog.gpu_instance_types(), key=lambda t: t.price_per_hour):
        for tp in TENSOR_PARALLEL_SIZES:
            if fits_instance(model, instance, tp):
                return instance, tp
    return None


def gpus_per_pod(model: ModelConfig, pool: GpuPool) -> float:
    """Physical GPUs one pod of a replica occupies (fractions for shared GPUs): the whole replica, or one
    pipeline stage of a multi-node replica."""
    if pool.sharing.time_slicing:
        return 1 / pool.sharing.time_slicing.replicas
    if pool.sharing.mig:
        return 1 / pool_mig_profile(pool).max_per_gpu
    return float(model.tensor_parallel_size)


def gpus_per_replica(model: ModelConfig, pool: GpuPool) -> float:
    """Physical GPUs one replica occupies: its pods' (pipelineParallelSize of them)."""
    return gpus_per_pod(model, pool) * model.pipeline_parallel_size


def node_share(model: ModelConfig, pool: GpuPool, instance: catalog.InstanceType) -> float:
    """The share of one node of this type that a replica occupies (by GPUs)."""
    return gpus_per_replica(model, pool) / instance.gpu_count


def replica_hour_prices(model: ModelConfig, pool: GpuPool) -> list[float]:
    """On-demand price per hour of one replica on each instance type that can host it."""
    hosts = replica_hosts(model, pool) or pool.resolved_instance_types()
    return [t.price_per_hour * node_share(model, pool, t) for t in hosts]


def node_room(model: ModelConfig, pool: GpuPool) -> list[catalog.InstanceType]:
    """Host types whose allocatable CPU and memory hold one replica's requests."""
    hosts = replica_hosts(model, pool) or pool.resolved_instance_types()
    cpu = parse_quantity(model.resources.cpu)
    mem_gib = parse_quantity(model.resources.memory) / GIB
    return [t for t in hosts if t.vcpus * ALLOCATABLE_CPU >= cpu and t.memory_gib * ALLOCATABLE_MEMORY >= mem_gib]


# -- whole nodes, as Karpenter launches them ------------------------------------------------------
def replicas_per_node(model: ModelConfig, pool: GpuPool, instance: catalog.InstanceType) -> int:
    """Pods one node of this type holds, by its GPUs (or slices) and its allocatable CPU and memory: replicas, or
    pipeline stages of a multi-node replica (one each: a stage takes every GPU of its node)."""
    by_gpu = math.floor(instance.gpu_count / gpus_per_pod(model, pool) + 1e-9)
    cpu = parse_quantity(model.resources.cpu)
    mem_gib = parse_quantity(model.resources.memory) / GIB
    by_cpu = math.floor(instance.vcpus * ALLOCATABLE_CPU / cpu + 1e-9)
    by_memory = math.floor(instance.memory_gib * ALLOCATABLE_MEMORY / mem_gib + 1e-9)
    return max(0, min(by_gpu, by_cpu, by_memory))


def nodes_per_replica(model: ModelConfig, pool: GpuPool, instance: catalog.InstanceType) -> float:
    """Nodes of this type one replica takes, in the unit the cost and the planner count: a share of a node, one
    node, or a multi-node replica's pipelineParallelSize nodes (2.0 where a node cannot hold one, which no rule
    lets through)."""
    per_node = replicas_per_node(model, pool, instance)
    return model.pipeline_parallel_size / per_node if per_node else 2.0


def nodes_for(model: ModelConfig, pool: GpuPool, instance: catalog.InstanceType, replicas: int) -> int:
    """Nodes of this type that `replicas` replicas need (0 when a node cannot hold one): their pods
    (pipelineParallelSize each) packed."""
    per_node = replicas_per_node(model, pool, instance)
    return math.ceil(replicas * model.pipeline_parallel_size / per_node) if per_node else 0


def packing_hosts(model: ModelConfig, pool: GpuPool) -> list[catalog.InstanceType]:
    """The pool's types that hold at least one replica, cheapest first (Karpenter's preference)."""
    hosts = replica_hosts(model, pool) or pool.resolved_instance_types()
    return sorted((t for t in hosts if replicas_per_node(model, pool, t) > 0), key=lambda t: (t.price_per_hour, t.name))


def fills_a_node(model: ModelConfig, pool: GpuPool) -> bool:
    """Whether every node a replica can land on holds exactly one: then nothing is lost by
    spreading replicas, while for smaller replicas a preferred spread makes Karpenter launch a
    node per replica instead of packing them."""
    return all(replicas_per_node(model, pool, t) == 1 for t in packing_hosts(model, pool))


def rollout_surge_nodes(model: ModelConfig, pool: GpuPool, instance: catalog.InstanceType) -> int:
    """Extra nodes a rolling update needs at `max` replicas: the surge pods beyond the last full node."""
    at_max = model.replicas.max
    return nodes_for(model, pool, instance, at_max + ROLLOUT_MAX_SURGE) - nodes_for(model, pool, instance, at_max)


# -- placement: replicas that share a node, spread over zones ----------------------------------------
SPREAD_MIN_DOMAINS = 2
"""Zones a spread model's replicas cover at least (the constraint's minDomains)."""


def spreads(model: ModelConfig, pool: GpuPool) -> bool:
    """Whether the model's replicas share nodes and are spread over zones (`placement: spread`, the default, with
    replicas.min 2 or more): a required zone spread with minDomains 2 puts the first two replicas in two zones, so
    on two nodes, and packs further replicas within each zone (builders/serving/workload.py spread()). A model
    whose replicas each fill a node needs none of it: its replicas are on nodes of their own anyway."""
    return model.placement == "spread" and model.replicas.min >= SPREAD_MIN_DOMAINS and not fills_a_node(model, pool)


def placed_nodes(model: ModelConfig, pool: GpuPool, instance: catalog.InstanceType, replicas: int, zones: int) -> int:
    """Nodes of this type that `replicas` replicas need as they are placed: packed (nodes_for), or for a spread
    model split as evenly as the constraint (maxSkew 1) keeps them over the pool's `zones` zones and packed
    within each. Even over every zone is what Karpenter's provisioning does with a batch of pending replicas
    (it counts every zone the NodePool may launch in, and picks the least-used one that keeps the skew), and
    the most nodes the constraint can come to later (a zone of the pool with a node but none of the model's
    replicas holds the global minimum at 0): the bound gpuLimit must allow and the cost counts."""
    if not spreads(model, pool):
        return nodes_for(model, pool, instance, replicas)
    domains = max(1, zones)
    per_zone, extra = divmod(replicas, domains)
    return sum(nodes_for(model, pool, instance, per_zone + (1 if z < extra else 0)) for z in range(domains))


def placed_surge_nodes(model: ModelConfig, pool: GpuPool, instance: catalog.InstanceType, zones: int) -> int:
    """Extra nodes a rolling update needs at `max` replicas, as the replicas are placed."""
    at_max = model.replicas.max
    return placed_nodes(model, pool, instance, at_max + ROLLOUT_MAX_SURGE, zones) - placed_nodes(model, pool, instance, at_max, zones)
