"""Compute cost floor and ceiling from the catalog's on-demand prices, in whole nodes.

Karpenter launches whole nodes, so a model is charged for the nodes its replicas need: as many
replicas per node as the node's GPUs (or slices), CPU and memory hold. Floor: the system node
group at its minimum size plus every model's minimum replicas on the pool type that makes them
cheapest. Ceiling: the system node group at its maximum size plus every model's maximum replicas
on the pool type that makes them dearest. A model spread over zones (`placement: spread`) is counted
as placed: evenly over its pool's zones and packed within each, so at least two nodes at min.
Models are counted on nodes of their own (Karpenter may pack two models of one pool together,
which only lowers the cost). On-demand prices: spot costs less. The fixed costs of the stack (the EKS
control plane, its NAT gateways, its load balancer, its KMS key) are in both, each named; what varies
with use (data through the NAT gateways and the ALB, logs, volumes) is not.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from config.derived import capacity, headroom, state
from config.derived.exposure import exposed_models
from config.facts import catalog
from config.sections.gpu_pools import GpuPool
from config.sections.models import ModelConfig
from config.sections.network import NewVpc, nat_gateway_count
from config.sections.stack import StackConfig

# Hourly list prices of what every stack runs whatever its load, us-east-1 (the catalog's region), from AWS's
# pricing pages as of 2026; what is billed per GB or per request on top is left out.
EKS_CONTROL_PLANE_PER_HOUR = 0.10
"""aws.amazon.com/eks/pricing: $0.10 per cluster per hour in standard support (extended support: $0.60)."""
NAT_GATEWAY_PER_HOUR = 0.045
"""aws.amazon.com/vpc/pricing: $0.045 per NAT gateway per hour (and $0.045 per GB processed, not counted)."""
ALB_PER_HOUR = 0.0225
"""aws.amazon.com/elasticloadbalancing/pricing: $0.0225 per ALB per hour (and $0.008 per LCU-hour, not counted)."""
KMS_KEY_PER_MONTH = 1.0
"""aws.amazon.com/kms/pricing: $1 per customer managed key per month (requests not counted)."""


@dataclass(frozen=True)
class ModelCost:
    """What one model costs per hour at its replica bounds."""

    name: str
    pool: str
    gpu: str
    replicas_min: int
    replicas_max: int
    nodes_min: int
    """Nodes the minimum replicas need, on the type where they cost least."""
    nodes_max: int
    """Nodes the maximum replicas need, on the type where they cost most."""
    floor: float
    """Per hour, at minimum replicas."""
    ceiling: float
    """Per hour, at maximum replicas."""


@dataclass(frozen=True)
class HeadroomCost:
    """What a pool's warm headroom costs per hour: the whole nodes its placeholders hold."""

    pool: str
    gpus: int
    nodes_min: int
    nodes_max: int
    floor: float
    """Per hour, on the type where the headroom costs least."""
    ceiling: float
    """Per hour, on the type where it costs most."""


@dataclass(frozen=True)
class FixedCost:
    """Something the stack runs whatever its load, per hour."""

    name: str
    count: int
    per_hour: float
    """All `count` of them."""


@dataclass(frozen=True)
class CostSummary:
    """Cost of a stack, per hour: compute at its bounds, and the fixed costs in both."""

    system_floor: float
    system_ceiling: float
    models: list[ModelCost]
    headroom: list[HeadroomCost] = field(default_factory=list)
    fixed: list[FixedCost] = field(default_factory=list)

    @property
    def fixed_per_hour(self) -> float:
        return sum(f.per_hour for f in self.fixed)

    @property
    def compute_floor(self) -> float:
        return self.system_floor + sum(m.floor for m in self.models) + sum(h.floor for h in self.headroom)

    @property
    def compute_ceiling(self) -> float:
        return self.system_ceiling + sum(m.ceiling for m in self.models) + sum(h.ceiling for h in self.headroom)

    @property
    def floor(self) -> float:
        return self.compute_floor + self.fixed_per_hour

    @property
    def ceiling(self) -> float:
        return self.compute_ceiling + self.fixed_per_hour


def fixed_costs(cfg: StackConfig) -> list[FixedCost]:
    """The EKS control plane, the NAT gateways of a VPC the stack creates, the ALB when a model is exposed (one
    per stack: the models' Ingresses share a group), and the KMS key of the secrets and logs."""
    found = [FixedCost("EKS control plane", 1, EKS_CONTROL_PLANE_PER_HOUR)]
    if isinstance(cfg.network, NewVpc):
        nats = nat_gateway_count(cfg.network.nat_gateways, cfg.network.az_count)
        found.append(FixedCost("NAT gateway", nats, nats * NAT_GATEWAY_PER_HOUR))
    if exposed_models(cfg):
        found.append(FixedCost("application load balancer", 1, ALB_PER_HOUR))
    found.append(FixedCost("KMS key", 1, KMS_KEY_PER_MONTH / catalog.HOURS_PER_MONTH))
    return found


def _label(model: ModelConfig, pool: GpuPool) -> str:
    """What one replica gets, e.g. `4 x NVIDIA H100 80GB` or `NVIDIA L40S 1/2 time-slice`."""
    hosts = capacity.packing_hosts(model, pool)
    label = ", ".join(sorted({t.gpu.model for t in hosts if t.gpu}))
    if pool.sharing.mig:
        return f"{label} MIG {pool.sharing.mig.profile}"
    if pool.sharing.time_slicing:
        return f"{label} 1/{pool.sharing.time_slicing.replicas} time-slice"
    if model.multi_node:
        return f"{model.pipeline_parallel_size} nodes x {model.tensor_parallel_size} x {label}"
    if model.tensor_parallel_size > 1:
        return f"{model.tensor_parallel_size} x {label}"
    return label


def model_cost(model: ModelConfig, pool: GpuPool, zones: int) -> ModelCost:
    """What a model costs per hour at its replica bounds, in whole nodes as its replicas are placed (a spread
    model's over the pool's `zones` zones: at least two nodes at min)."""
    hosts = capacity.packing_hosts(model, pool)

    def at(replicas: int, host: catalog.InstanceType) -> tuple[float, int]:
        nodes = capacity.placed_nodes(model, pool, host, replicas, zones)
        return nodes * host.price_per_hour, nodes

    floor, nodes_min = min((at(model.replicas.min, h) for h in hosts), default=(0.0, 0))
    ceiling, nodes_max = max((at(model.replicas.max, h) for h in hosts), default=(0.0, 0))
    return ModelCost(
        model.name, pool.name, _label(model, pool), model.replicas.min, model.replicas.max, nodes_min, nodes_max, floor, ceiling
    )


def headroom_cost(pool: GpuPool, models: list[ModelConfig]) -> HeadroomCost | None:
    """Placeholders run all the time: their nodes cost as much as serving ones."""
    shape = headroom.placeholders(pool, models)
    if shape is None:
        return None
    costs = [(n * t.price_per_hour, n) for t in pool.resolved_instance_types() if (n := headroom.nodes(pool, t, shape))]
    if not costs:
        return None
    (floor, nodes_min), (ceiling, nodes_max) = min(costs), max(costs)
    return HeadroomCost(pool.name, pool.headroom, nodes_min, nodes_max, floor, ceiling)


def summarize(cfg: StackConfig) -> CostSummary:
    group = cfg.cluster.system_node_group
    prices = [catalog.INSTANCE_TYPES[t].price_per_hour for t in group.instance_types if t in catalog.INSTANCE_TYPES]
    models = []
    for m in cfg.models:
        pool = cfg.pool(m.pool)
        if pool is None:
            continue
        models.append(model_cost(m, pool, state.of(cfg).model(m).zones))
    warm = [h for p in cfg.gpu_pools if (h := headroom_cost(p, [m for m in cfg.models if m.pool == p.name]))]
    return CostSummary(
        system_floor=group.min_size * min(prices, default=0.0),
        system_ceiling=group.max_size * max(prices, default=0.0),
        models=models,
        headroom=warm,
        fixed=fixed_costs(cfg),
    )


@dataclass(frozen=True)
class GatewayCost:
    """What one model's gateway (pickers and proxies) takes of the system nodes, already paid in the floor."""

    name: str
    cpu_millis: int
    memory_mib: int
    per_hour: float
    """Its share of the cheapest system instance type: the larger of its CPU and memory fractions of a node."""


def gateway_costs(cfg: StackConfig) -> list[GatewayCost]:
    """Per model with a gateway, from the system-capacity rows (config/facts/system_capacity.py gateway_rows)."""
    from config.facts.system_capacity import gateway_rows  # the capacity table reads this layer's state

    group = cfg.cluster.system_node_group
    types = [catalog.INSTANCE_TYPES[t] for t in group.instance_types if t in catalog.INSTANCE_TYPES]
    if not types:
        return []
    node = min(types, key=lambda t: t.price_per_hour)
    totals: dict[str, tuple[int, int]] = {}
    for row in gateway_rows(cfg):
        model = row.name.removesuffix("-epp").removesuffix("-proxy")
        cpu, memory = totals.get(model, (0, 0))
        totals[model] = (cpu + row.replicas * row.requests.cpu_millis, memory + row.replicas * row.requests.memory_mib)
    return [
        GatewayCost(name, cpu, memory, node.price_per_hour * max(cpu / (node.vcpus * 1000), memory / (node.memory_gib * 1024)))
        for name, (cpu, memory) in totals.items()
    ]


@dataclass(frozen=True)
class WarmupCost:
    """What one change of a model's compile-cache key costs (a revision, the image or an engine flag)."""

    name: str
    hosts: tuple[str, ...]
    """The node each GPU type's warm-up Job takes (ModelState.warmup_hosts)."""
    seconds: int
    """How long each may hold its node: the model's pessimistic cold start on a new node."""
    dollars: float
    """At on-demand prices, every GPU type's node for `seconds`."""


def warmup_costs(cfg: StackConfig) -> list[WarmupCost]:
    """Per model with the compile cache: its warm-up Jobs' nodes, time and price per key change."""
    derived = state.of(cfg)
    out = []
    for model in cfg.models:
        ms = derived.model(model)
        if not ms.warmup_hosts:
            continue
        seconds = ms.scale_up.pessimistic_budget.miss
        dollars = sum(t.price_per_hour for t in ms.warmup_hosts) * seconds / 3600
        out.append(WarmupCost(model.name, tuple(t.name for t in ms.warmup_hosts), seconds, dollars))
    return out
