"""Karpenter, simplified to what moves cost and latency: nodes of a pool, launched for pending
replicas after a batching wait, packed cheapest-first, spot first with a given availability and
on-demand as the fallback, within the pool's GPU limit, removed when empty for consolidateAfter;
warm headroom as placeholders that any replica preempts. Pure.

Consolidation removes empty nodes within the pool's disruption budgets (those always active).
Not modelled (the report says so): underutilized consolidation (moving replicas to fewer nodes),
scheduled budgets, spot interruptions, drift and expiry.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from config.derived import capacity, headroom
from config.facts import catalog, speed
from config.sections.gpu_pools import GpuPool
from config.sections.models import ModelConfig
from config.sections.types import duration_seconds
from planner import prices


@dataclass(eq=False)
class Node:
    pool: str
    instance: catalog.InstanceType
    capacity_type: str
    launched: float
    ready_at: float
    used: float = 0.0
    """Share of the node its pods take (each replica 1 / replicas per node of its model)."""
    placeholders: int = 0
    pods: int = 0
    empty_since: float | None = None
    gone_at: float | None = None

    @property
    def price(self) -> float:
        return prices.hourly(self.instance, self.capacity_type)


@dataclass
class Pool:
    """One NodePool's nodes and what waits for them."""

    config: GpuPool
    models: list[ModelConfig]
    spot_availability: float
    rng: np.random.Generator
    static_capacity: str | None = None
    """Force one capacity type (the static baseline runs on-demand)."""
    nodes: list[Node] = field(default_factory=list)
    pending_since: float | None = None
    pending_placeholders: int = 0
    waiting: int = 0
    """Replicas of the pool without a node."""
    version: int = 0
    """Bumped on every change to the nodes or what they hold (the replay caches its sums on it)."""

    def __post_init__(self) -> None:
        shape = headroom.placeholders(self.config, self.models)
        self.headroom_pods = shape.pods if shape else 0
        self.placeholder_gpus = shape.gpus_per_pod if shape else 0
        self.consolidate_after = (
            None if self.config.disruption.consolidate_after == "Never" else duration_seconds(self.config.disruption.consolidate_after)
        )

    # -- sizes ---------------------------------------------------------------------------------
    def share(self, model: ModelConfig, instance: catalog.InstanceType) -> float:
        per_node = capacity.replicas_per_node(model, self.config, instance)
        return 1.0 / per_node if per_node else 2.0

    def placeholder_fraction(self, instance: catalog.InstanceType) -> float:
        return self.placeholder_gpus / instance.gpu_count if instance.gpu_count else 1.0

    def live(self) -> list[Node]:
        return [n for n in self.nodes if n.gone_at is None]

    def rates(self) -> tuple[dict[str, float], dict[str, int], float]:
        """Per capacity type: the live nodes' hourly prices and counts; and the share pods use."""
        cost = {"spot": 0.0, "on-demand": 0.0}
        count = {"spot": 0, "on-demand": 0}
        used = 0.0
        for n in self.live():
            cost[n.capacity_type] += n.price
            count[n.capacity_type] += 1
            used += max(0.0, n.used - n.placeholders * self.placeholder_fraction(n.instance))
        return cost, count, used

    def gpus(self) -> int:
        return sum(n.instance.gpu_count for n in self.live())

    def capacity_types(self) -> list[str]:
        if self.static_capacity:
            return [self.static_capacity]
        return [c for c in ("spot", "on-demand") if c in self.config.capacity_types]

    # -- placing ---------------------------------------------------------------------------------
    def fits(self, node: Node, share: float) -> bool:
        return node.used + share <= 1.0 + 1e-9

    def place(self, model: ModelConfig, now: float) -> tuple[Node, bool] | None:
        """A node for one replica now: room on a node (ready or launching), else a placeholder's
        place (preempted at once). Returns the node and whether it was already warm."""
        for node in sorted(self.live(), key=lambda n: (n.ready_at, n.instance.price_per_hour)):
            share = self.share(model, node.instance)
            if self.fits(node, share):
                self._take(node, share, now)
                return node, node.ready_at <= now
        for node in self.live():
            share = self.share(model, node.instance)
            while node.placeholders and not self.fits(node, share):
                self.version += 1
                node.placeholders -= 1
                node.used -= self.placeholder_fraction(node.instance)
                self.pending_placeholders += 1
            if self.fits(node, share):
                self._take(node, share, now)
                return node, node.ready_at <= now
        return None

    def _take(self, node: Node, share: float, now: float) -> None:
        self.version += 1
        node.used += share
        node.pods += 1
        node.empty_since = None

    def release(self, node: Node, model: ModelConfig, now: float) -> None:
        self.version += 1
        node.used = max(0.0, node.used - self.share(model, node.instance))
        node.pods -= 1
        if node.pods == 0 and node.placeholders == 0:
            node.empty_since = now

    def launch(self, model: ModelConfig | None, now: float) -> Node | None:
        """A new node for a pending replica (or placeholder): the cheapest type that holds one,
        spot when the pool allows it and spot has capacity, else on-demand; None at the GPU limit."""
        kinds = self.capacity_types()
        if not kinds:
            return None
        kind = kinds[0]
        if kind == "spot" and self.rng.random() >= self.spot_availability:
            if len(kinds) == 1:
                return None  # spot-only pool without spot capacity: try again later
            kind = kinds[1]
        hosts = capacity.packing_hosts(model, self.config) if model else self.config.resolved_instance_types()
        hosts = [h for h in hosts if self.gpus() + h.gpu_count <= self.config.gpu_limit]
        if not hosts:
            return None
        cheapest = min(hosts, key=lambda t: (prices.hourly(t, kind) * (self.share(model, t) if model else 1.0), t.name))
        ready = now + speed.NODE_READY.value  # the batching second was waited before the launch
        node = Node(self.config.name, cheapest, kind, now, ready)
        self.nodes.append(node)
        self.version += 1
        return node

    def place_placeholders(self, now: float) -> None:
        """Pending placeholders go to nodes with room, else get a node of their own."""
        while self.pending_placeholders:
            node = next((n for n in self.live() if self.fits(n, self.placeholder_fraction(n.instance))), None)
            if node is None:
                node = self.launch(self.models[0] if self.models else None, now)
                if node is None:
                    return
            self.version += 1
            node.placeholders += 1
            node.used += self.placeholder_fraction(node.instance)
            node.empty_since = None
            self.pending_placeholders -= 1

    def empty_budget(self) -> int:
        """Nodes one consolidation pass may remove: the tightest always-active budget that covers
        empty nodes (Karpenter rounds a percentage up; scheduled budgets are not modelled)."""
        live = len(self.live())
        allowed = live
        for budget in self.config.disruption.budgets:
            if budget.schedule is not None or (budget.reasons and "Empty" not in budget.reasons):
                continue
            text = budget.nodes.strip()
            count = math.ceil(live * float(text[:-1]) / 100) if text.endswith("%") else int(text)
            allowed = min(allowed, count)
        return allowed

    def consolidate(self, now: float) -> None:
        if self.consolidate_after is None:
            return
        budget = self.empty_budget()
        for node in sorted(self.live(), key=lambda n: n.empty_since if n.empty_since is not None else math.inf):
            if budget <= 0:
                return
            if node.empty_since is not None and now - node.empty_since >= self.consolidate_after:
                node.gone_at = now
                self.version += 1
                budget -= 1
