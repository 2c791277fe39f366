"""Warm GPU headroom: how a pool's `headroom` GPUs become placeholder pods, and the nodes they hold. Pure.

Placeholder pods of a negative priority request what new replicas will need (GPUs or slices, CPU,
memory) and run the pool's model images (so the images are on the node). A pending replica
preempts one at once; the placeholder goes pending, and Karpenter launches a node for it, so the
headroom refills behind the scale-up. Chosen over Karpenter's CapacityBuffer
(docs/upstream-facts.md#headroom): that is alpha behind a feature gate, and its virtual pods cannot pre-pull an image.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from config.derived import capacity
from config.derived.sharing import gpu_request
from config.facts import catalog
from config.sections.gpu_pools import GpuPool
from config.sections.models import ModelConfig
from config.sections.types import parse_quantity

GIB = 2**30


@dataclass(frozen=True)
class Placeholders:
    """A pool's placeholder pods: how many, and what each one holds."""

    pods: int
    gpus_per_pod: int
    """Physical GPUs one placeholder keeps warm."""
    resource: str
    count: int
    """Of the pool's GPU resource (GPUs, time-slices or MIG slices) per pod."""
    cpu_millis: int
    memory_mib: int


def chunk_gpus(pool: GpuPool, models: list[ModelConfig]) -> int:
    """GPUs one placeholder holds: the largest replica of the pool (tensor parallelism needs its
    GPUs on one node), one GPU when GPUs are shared."""
    if pool.sharing.mode != "none":
        return 1
    return max((m.tensor_parallel_size for m in models), default=1)


def slots_per_gpu(pool: GpuPool) -> int:
    if pool.sharing.time_slicing:
        return pool.sharing.time_slicing.replicas
    if pool.sharing.mig:
        return capacity.pool_mig_profile(pool).max_per_gpu
    return 1


def placeholders(pool: GpuPool, models: list[ModelConfig]) -> Placeholders | None:
    """None without headroom or models (the rules reject headroom without models)."""
    if pool.headroom == 0 or not models:
        return None
    chunk = chunk_gpus(pool, models)
    request = gpu_request(max(models, key=lambda m: m.tensor_parallel_size), pool)
    if pool.sharing.mode == "none":
        count, replicas_held = chunk, max(chunk // m.tensor_parallel_size for m in models)
    else:
        count = replicas_held = slots_per_gpu(pool)
    cpu = max(parse_quantity(m.resources.cpu) for m in models) * replicas_held
    memory = max(parse_quantity(m.resources.memory) for m in models) * replicas_held
    return Placeholders(
        pods=math.ceil(pool.headroom / chunk),
        gpus_per_pod=chunk,
        resource=request.resource,
        count=count,
        cpu_millis=math.ceil(cpu * 1000),
        memory_mib=math.ceil(memory / 2**20),
    )


def nodes(pool: GpuPool, instance: catalog.InstanceType, shape: Placeholders) -> int:
    """Whole nodes of this type the placeholders fill (by GPUs, CPU and memory)."""
    by_gpu = instance.gpu_count // shape.gpus_per_pod
    by_cpu = math.floor(instance.vcpus * capacity.ALLOCATABLE_CPU * 1000 / shape.cpu_millis)
    by_memory = math.floor(instance.memory_gib * capacity.ALLOCATABLE_MEMORY * 1024 / shape.memory_mib)
    per_node = max(0, min(by_gpu, by_cpu, by_memory))
    return math.ceil(shape.pods / per_node) if per_node else 0
