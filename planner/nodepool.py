"""The NodePool settings the replay obeys, read from the NodePool and NodeOverlays the program renders. Pure.

The planner replays what would be deployed, so it reads a pool's Karpenter settings from the very
manifests builders/karpenter/ renders for it (as planner/hpa.py reads the rendered ScaledObject),
never from the stack config: the purchase options are the NodePool's karpenter.sh/capacity-type
requirement, the GPU limit its nvidia.com/gpu limit, consolidation its disruption block
(consolidateAfter, Never keeping empty nodes, and the budgets). Karpenter counts a node's GPUs as
its NodeOverlay advertises them: a time-sliced GPU counts as its slices, so does the limit.

Read and not replayed (plan.NOT_MODELLED says so): consolidationPolicy (every policy removes empty
nodes, the only consolidation modelled), expireAfter, scheduled budgets, the zone requirement.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from builders.karpenter import nodepools, overlays
from config.derived import state
from config.facts import catalog
from config.facts.conventions import CAPACITY_TYPE_LABEL, GPU_RESOURCE
from config.sections.gpu_pools import GpuPool
from config.sections.stack import StackConfig
from config.sections.types import duration_seconds

NODEPOOL_LABEL = "karpenter.sh/nodepool"
GPU_COUNT_LABEL = "karpenter.k8s.aws/instance-gpu-count"


@dataclass(frozen=True)
class Budget:
    """One disruption budget of the NodePool."""

    nodes: str
    """A count or a percentage of the pool's nodes."""
    scheduled: bool
    """Active only on a schedule (not replayed: such a budget is skipped)."""
    reasons: tuple[str, ...]
    """The disruption reasons it applies to; empty: all of them."""

    def covers_empty(self) -> bool:
        """Always active and applying to empty nodes."""
        return not self.scheduled and (not self.reasons or "Empty" in self.reasons)

    def allowed(self, live: int) -> int:
        """Nodes it lets go at once out of `live` (Karpenter rounds a percentage up)."""
        text = self.nodes.strip()
        return math.ceil(live * float(text[:-1]) / 100) if text.endswith("%") else int(text)


@dataclass(frozen=True)
class NodePoolSettings:
    """What the replay reads of one rendered NodePool and its NodeOverlays."""

    name: str
    capacity_types: tuple[str, ...]
    """The karpenter.sh/capacity-type requirement's values."""
    gpu_limit: int
    """limits.nvidia.com/gpu, in the units Karpenter counts (see `gpus`)."""
    overlay_gpus: Mapping[int, int]
    """By a node's physical GPU count: the nvidia.com/gpu its NodeOverlay advertises."""
    consolidate_after: int | None
    """Seconds a node stays empty before it is removed; None: never (consolidateAfter: Never)."""
    budgets: tuple[Budget, ...]

    def gpus(self, instance: catalog.InstanceType) -> int:
        """The nvidia.com/gpu a node of this type counts against the limit."""
        return self.overlay_gpus.get(instance.gpu_count, instance.gpu_count)


def _values(requirements: Sequence[Mapping[str, Any]], key: str) -> list[str]:
    return [v for r in requirements if r["key"] == key and r["operator"] == "In" for v in r["values"]]


def read(node_pool: Mapping[str, Any], node_overlays: Sequence[Mapping[str, Any]] = ()) -> NodePoolSettings:
    """The settings of a rendered NodePool; of the overlays, those that select it by name."""
    name = node_pool["metadata"]["name"]
    spec = node_pool["spec"]
    disruption = spec["disruption"]
    after = disruption["consolidateAfter"]
    advertised: dict[int, int] = {}
    for overlay in node_overlays:
        requirements = overlay["spec"]["requirements"]
        if name not in _values(requirements, NODEPOOL_LABEL) or GPU_RESOURCE not in overlay["spec"]["capacity"]:
            continue
        for count in _values(requirements, GPU_COUNT_LABEL):
            advertised[int(count)] = int(overlay["spec"]["capacity"][GPU_RESOURCE])
    return NodePoolSettings(
        name=name,
        capacity_types=tuple(_values(spec["template"]["spec"]["requirements"], CAPACITY_TYPE_LABEL)),
        gpu_limit=int(spec["limits"][GPU_RESOURCE]),
        overlay_gpus=advertised,
        consolidate_after=None if after == "Never" else duration_seconds(after),
        budgets=tuple(Budget(str(b["nodes"]), "schedule" in b, tuple(b.get("reasons", ()))) for b in disruption.get("budgets", ())),
    )


def rendered(cfg: StackConfig, pool: GpuPool) -> NodePoolSettings:
    """The settings of the NodePool (and NodeOverlays) the program renders for the pool."""
    return read(nodepools.node_pool(pool, state.of(cfg).pool(pool.name)), overlays.node_overlays(pool))


def of_stack(cfg: StackConfig) -> dict[str, NodePoolSettings]:
    """Every pool's rendered settings, by pool name."""
    return {p.name: rendered(cfg, p) for p in cfg.gpu_pools}
