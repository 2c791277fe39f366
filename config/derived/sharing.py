"""GPU sharing: what a model on a pool requests, and what a pool's nodes offer.

The one place that answers "which extended resource, and how many, does a replica of model M
request on pool P" (whole GPUs x tensor parallelism, a time-slice, or a MIG slice), and the
matching node capacity that Karpenter's NodeOverlays advertise.
"""

from __future__ import annotations

from dataclasses import dataclass

from config.derived.capacity import pool_mig_profile
from config.facts.conventions import GPU_RESOURCE, mig_resource
from config.sections.gpu_pools import GpuPool
from config.sections.models import ModelConfig


@dataclass(frozen=True)
class GpuRequest:
    """An extended-resource request of one replica."""

    resource: str
    count: int


def gpu_request(model: ModelConfig, pool: GpuPool) -> GpuRequest:
    """What one replica of the model requests on the pool (requests equal limits)."""
    if pool.sharing.mig:
        return GpuRequest(mig_resource(pool.sharing.mig.profile), 1)
    if pool.sharing.time_slicing:
        return GpuRequest(GPU_RESOURCE, 1)  # one time-slice; tensor parallelism over slices is rejected earlier
    return GpuRequest(GPU_RESOURCE, model.tensor_parallel_size)


def node_capacity(pool: GpuPool, gpu_count: int) -> dict[str, int]:
    """Extended resources a node of the pool with gpu_count physical GPUs offers once shared."""
    if pool.sharing.mig:
        profile = pool_mig_profile(pool)
        return {mig_resource(profile.name): gpu_count * profile.max_per_gpu}
    if pool.sharing.time_slicing:
        return {GPU_RESOURCE: gpu_count * pool.sharing.time_slicing.replicas}
    return {GPU_RESOURCE: gpu_count}
