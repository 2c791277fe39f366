"""Compute cost floor and ceiling from the catalog's on-demand prices.

Floor: the system node group at its minimum size plus every model at its minimum replicas on
the cheapest instance type its pool allows. Ceiling: the system node group at its maximum size
plus every model at its maximum replicas on the priciest allowed type. Shared GPUs are charged
by their share of the node. On-demand prices: spot capacity costs less; NAT gateways, load
balancers, storage and the EKS control plane are not included.
"""

from __future__ import annotations

from dataclasses import dataclass

from config import capacity, catalog
from config.gpu_pools import GpuPool
from config.models import ModelConfig
from config.stack import StackConfig


@dataclass(frozen=True)
class ModelCost:
    """What one model costs per hour at its replica bounds."""

    name: str
    pool: str
    gpu: str
    replicas_min: int
    replicas_max: int
    replica_hour_low: float
    replica_hour_high: float

    @property
    def floor(self) -> float:
        return self.replicas_min * self.replica_hour_low

    @property
    def ceiling(self) -> float:
        return self.replicas_max * self.replica_hour_high


@dataclass(frozen=True)
class CostSummary:
    """Compute cost of a stack, per hour."""

    system_floor: float
    system_ceiling: float
    models: list[ModelCost]

    @property
    def floor(self) -> float:
        return self.system_floor + sum(m.floor for m in self.models)

    @property
    def ceiling(self) -> float:
        return self.system_ceiling + sum(m.ceiling for m in self.models)


def replica_hour(model: ModelConfig, pool: GpuPool) -> tuple[float, float, str]:
    """Lowest and highest hourly cost of one replica across the pool's types, and the GPU it gets."""
    hosts = capacity.replica_hosts(model, pool) or pool.resolved_instance_types()
    costs = capacity.replica_hour_prices(model, pool)
    gpus = sorted({t.gpu.model for t in hosts if t.gpu})
    label = ", ".join(gpus)
    if pool.sharing.mig:
        label = f"{label} MIG {pool.sharing.mig.profile}"
    elif pool.sharing.time_slicing:
        label = f"{label} 1/{pool.sharing.time_slicing.replicas} time-slice"
    elif model.tensor_parallel_size > 1:
        label = f"{model.tensor_parallel_size} x {label}"
    return min(costs), max(costs), label


def summarize(cfg: StackConfig) -> CostSummary:
    group = cfg.cluster.system_node_group
    prices = [catalog.INSTANCE_TYPES[t].price_per_hour for t in group.instance_types if t in catalog.INSTANCE_TYPES]
    models = []
    for m in cfg.models:
        pool = cfg.pool(m.pool)
        if pool is None:
            continue
        low, high, label = replica_hour(m, pool)
        models.append(ModelCost(m.name, pool.name, label, m.replicas.min, m.replicas.max, low, high))
    return CostSummary(
        system_floor=group.min_size * min(prices, default=0.0),
        system_ceiling=group.max_size * max(prices, default=0.0),
        models=models,
    )
