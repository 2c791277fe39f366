"""GPU sharing: what a model on a pool requests, and what a pool's nodes offer.

The one place that answers "which extended resource, and how many, does a replica of model M
request on pool P" (whole GPUs x tensor parallelism, a time-slice, or a MIG slice), and the
matching node capacity that Karpenter's NodeOverlays advertise.
"""

from __future__ import annotations

from dataclasses import dataclass

from config.gpu import GpuPool
from config.models import ModelConfig

GPU = "nvidia.com/gpu"


@dataclass(frozen=True)
class GpuRequest:
    """An extended-resource request of one replica."""

    resource: str
    count: int


def mig_resource(profile: str) -> str:
    """Resource name a MIG slice is advertised as under the `mixed` strategy."""
    return f"nvidia.com/mig-{profile}"


def gpu_request(model: ModelConfig, pool: GpuPool) -> GpuRequest:
    """What one replica of the model requests on the pool (requests equal limits)."""
    if pool.sharing.mig:
        return GpuRequest(mig_resource(pool.sharing.mig.profile), 1)
    if pool.sharing.time_slicing:
        return GpuRequest(GPU, 1)  # one time-slice; tensor parallelism over slices is rejected earlier
    return GpuRequest(GPU, model.tensor_parallel_size)


def node_capacity(pool: GpuPool, gpu_count: int) -> dict[str, int]:
    """Extended resources a node of the pool with gpu_count physical GPUs offers once shared."""
    if pool.sharing.mig:
        gpu = pool.resolved_instance_types()[0].gpu
        assert gpu is not None
        profile = gpu.mig_profile(pool.sharing.mig.profile)
        assert profile is not None
        return {mig_resource(profile.name): gpu_count * profile.max_per_gpu}
    if pool.sharing.time_slicing:
        return {GPU: gpu_count * pool.sharing.time_slicing.replicas}
    return {GPU: gpu_count}
