"""Karpenter, simplified to what moves cost and latency: nodes of a pool, launched for pending
replicas after a batching wait, packed cheapest-first, spot first with a given availability and
on-demand as the fallback, within the pool's GPU limit, removed when empty for consolidateAfter;
warm headroom as placeholders that any replica preempts. Pure.

The pool's settings (purchase options, GPU limit, consolidateAfter, disruption budgets) are those
of the NodePool the program renders (planner/nodepool.py); what a replica takes of a node, the
types that hold one and the headroom's placeholders come from the stack's derived state
(config/derived/state.py). The pool owns its counters (replicas waiting for a node, placeholders
waiting, the changes the replay caches its sums on): the replay reads them, and only the pool's
methods change them (tests/planner/test_replay.py fails when another module assigns one).

Consolidation removes empty nodes within the pool's disruption budgets (those always active).
A GPU node may fail (`fail`): it holds nothing new and, with node repair, is deleted after the
repair delay (`repair`). Not modelled (the report says so): underutilized consolidation (moving
replicas to fewer nodes), scheduled budgets, spot interruptions, drift and expiry.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from config.derived import scaleup, state
from config.facts import catalog, speed
from config.sections.stack import StackConfig
from planner import prices
from planner.nodepool import NodePoolSettings, rendered

Placement = tuple["Node", bool]
"""A node for a replica, and whether the node was already warm (ready) when it got it."""


@dataclass(eq=False, slots=True)
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
    failed_at: float | None = None
    """When its GPU failed: from then on it holds nothing new (the device plugin withdraws the GPU)."""
    nodes: int = 1
    """Nodes it stands for: 1, or a multi-node replica's group (pipelineParallelSize nodes Karpenter launches
    together for the group's pods, each a whole node, and removes together once the group is gone)."""

    @property
    def price(self) -> float:
        return prices.hourly(self.instance, self.capacity_type) * self.nodes


class Pool:
    """One NodePool's nodes and what waits for them."""

    def __init__(
        self,
        settings: NodePoolSettings,
        derived: state.PoolState,
        models: Mapping[str, state.ModelState],
        spot_availability: float,
        rng: np.random.Generator,
        static_capacity: str | None = None,
    ) -> None:
        self.name = settings.name
        self.settings = settings
        self.derived = derived
        self.spot_availability = spot_availability
        self.rng = rng
        self.static_capacity = static_capacity
        """Force one capacity type (the static baseline runs on-demand)."""
        self.nodes: list[Node] = []
        self._first_model = models[derived.models[0]] if derived.models else None
        shape = derived.headroom
        self.headroom_pods = shape.pods if shape else 0
        self.placeholder_gpus = shape.gpus_per_pod if shape else 0
        self._shares = {name: dict(models[name].nodes_per_replica) for name in derived.models}
        # a replica of more than one node takes a group of whole nodes (Node.nodes), all of it
        self._group = {name: max(1, round(max(shares.values(), default=1.0))) for name, shares in self._shares.items()}
        # The pool's counters: read by the replay, changed only by the methods below (a test fails
        # when another module assigns them).
        self.waiting = 0
        """Replicas of the pool without a node."""
        self.pending_placeholders = 0
        """Headroom placeholders without a node (preempted, or not yet placed)."""
        self.changes = 0
        """Bumped on every change to the nodes or what they hold (the replay caches its sums on it)."""
        self._pending_since: float | None = None

    @classmethod
    def of(
        cls, cfg: StackConfig, name: str, spot_availability: float, rng: np.random.Generator, static_capacity: str | None = None
    ) -> Pool:
        """The pool `name` of the stack: its rendered NodePool, its derived state and its models'."""
        derived = state.of(cfg)
        pool = cfg.pool(name)
        assert pool is not None
        return cls(rendered(cfg, pool), derived.pool(name), derived.models, spot_availability, rng, static_capacity)

    # -- sizes ---------------------------------------------------------------------------------
    def share(self, model: state.ModelState, instance: catalog.InstanceType) -> float:
        """Of a node (a group's node for a multi-node model: all of it) one replica takes."""
        return 1.0 if self._group[model.name] > 1 else self._shares[model.name][instance.name]

    def group(self, model: state.ModelState | None) -> int:
        """Nodes one replica's group takes: 1 but for a multi-node model."""
        return self._group[model.name] if model is not None else 1

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
            count[n.capacity_type] += n.nodes
            used += max(0.0, n.used - n.placeholders * self.placeholder_fraction(n.instance)) * n.nodes
        return cost, count, used

    def gpus(self) -> int:
        """The live nodes' nvidia.com/gpu as the NodePool's limit counts them."""
        return sum(self.settings.gpus(n.instance) * n.nodes for n in self.live())

    def capacity_types(self) -> list[str]:
        if self.static_capacity:
            return [self.static_capacity]
        return [c for c in ("spot", "on-demand") if c in self.settings.capacity_types]

    # -- replicas ----------------------------------------------------------------------------------
    def schedule(self, model: state.ModelState, now: float, launch: bool = False) -> Placement | None:
        """A new replica asks for a node: room on one now, else (with `launch`, the replay's steady
        start) a node of its own at once; else it waits for `provision`, counted in `waiting`."""
        placed = self.place(model, now)
        if placed is None and launch and self.launch(model, now) is not None:
            placed = self.place(model, now)
        if placed is None:
            self.waiting += 1
        return placed

    def provision(self, pending: Sequence[state.ModelState], now: float) -> list[Placement | None]:
        """Karpenter's pass over the pool's pending replicas, in order: each goes to room on a node,
        else, once the batch has waited its idle time, to a new node. Returns each one's placement."""
        if not pending:
            self._pending_since = None
            return []
        if self._pending_since is None:
            self._pending_since = now
        waited = now - self._pending_since >= speed.KARPENTER_BATCH_IDLE.value
        placements: list[Placement | None] = []
        for model in pending:
            placed = self.place(model, now)
            if placed is None and waited and self.launch(model, now) is not None:
                placed = self.place(model, now)
            if placed is not None:
                self.waiting -= 1
            placements.append(placed)
        if not self.waiting:
            self._pending_since = None
        return placements

    def remove(self, model: state.ModelState, node: Node | None, now: float) -> None:
        """A replica goes: off its node, or out of the waiting ones when it had none."""
        if node is None:
            self.waiting -= 1
        else:
            self.release(node, model, now)

    # -- placing ---------------------------------------------------------------------------------
    def fits(self, node: Node, share: float) -> bool:
        return node.failed_at is None and node.used + share <= 1.0 + 1e-9

    def fail(self, node: Node, now: float) -> None:
        """The node's GPU fails: it stays (and costs) until repaired, holding nothing new; its
        placeholders go elsewhere."""
        self.changes += 1
        node.failed_at = now
        self.pending_placeholders += node.placeholders
        node.used -= node.placeholders * self.placeholder_fraction(node.instance)
        node.placeholders = 0

    def repair(self, node: Node, now: float) -> None:
        """Karpenter deletes the failed node (a new one launches for whatever then waits)."""
        self.changes += 1
        node.gone_at = now

    def place(self, model: state.ModelState, now: float) -> Placement | None:
        """A node for one replica now: room on a node (ready or launching), else a placeholder's
        place (preempted at once). Returns the node and whether it was already warm."""
        group = self.group(model)
        for node in sorted(self.live(), key=lambda n: (n.ready_at, n.instance.price_per_hour)):
            share = self.share(model, node.instance)
            if node.nodes == group and self.fits(node, share):
                self._take(node, share, now)
                return node, node.ready_at <= now
        for node in self.live():
            share = self.share(model, node.instance)
            if node.nodes != group:
                continue
            while node.placeholders and not self.fits(node, share):
                self.changes += 1
                node.placeholders -= 1
                node.used -= self.placeholder_fraction(node.instance)
                self.pending_placeholders += 1
            if self.fits(node, share):
                self._take(node, share, now)
                return node, node.ready_at <= now
        return None

    def _take(self, node: Node, share: float, now: float) -> None:
        self.changes += 1
        node.used += share
        node.pods += 1
        node.empty_since = None

    def release(self, node: Node, model: state.ModelState, now: float) -> None:
        self.changes += 1
        node.used = max(0.0, node.used - self.share(model, node.instance))
        node.pods -= 1
        if node.pods == 0 and node.placeholders == 0:
            node.empty_since = now

    def launch(self, model: state.ModelState | None, now: float) -> Node | None:
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
        used, group = self.gpus(), self.group(model)
        limit = self.settings.gpu_limit
        hosts = [h for h in (model.hosts if model else self.derived.types) if used + self.settings.gpus(h) * group <= limit]
        if not hosts:
            return None
        cheapest = min(hosts, key=lambda t: (prices.hourly(t, kind) * (self.share(model, t) if model else 1.0), t.name))
        ready = now + scaleup.node_seconds(cheapest)  # by family, as the budget counts it; the batching second was waited
        node = Node(self.name, cheapest, kind, now, ready, nodes=group)
        self.nodes.append(node)
        self.changes += 1
        return node

    # -- headroom --------------------------------------------------------------------------------
    def warm_headroom(self, now: float) -> None:
        """Every headroom placeholder asks for a node (the replay's steady start)."""
        self.pending_placeholders = self.headroom_pods
        self.place_placeholders(now)

    def place_placeholders(self, now: float) -> None:
        """Pending placeholders go to nodes with room, else get a node of their own."""
        while self.pending_placeholders:
            node = next((n for n in self.live() if self.fits(n, self.placeholder_fraction(n.instance))), None)
            if node is None:
                node = self.launch(self._first_model, now)
                if node is None:
                    return
            self.changes += 1
            node.placeholders += 1
            node.used += self.placeholder_fraction(node.instance)
            node.empty_since = None
            self.pending_placeholders -= 1

    def backdate(self, at: float) -> None:
        """Nodes launched before the replay are up at its start: launched and ready by `at`."""
        for n in self.nodes:
            n.ready_at = min(n.ready_at, at)
            n.launched = min(n.launched, at)

    # -- consolidation -----------------------------------------------------------------------------
    def empty_budget(self) -> int:
        """Nodes one consolidation pass may remove: the tightest always-active budget that covers
        empty nodes (scheduled budgets are not modelled)."""
        live = len(self.live())
        allowed = live
        for budget in self.settings.budgets:
            if budget.covers_empty():
                allowed = min(allowed, budget.allowed(live))
        return allowed

    def consolidate(self, now: float) -> None:
        after = self.settings.consolidate_after
        if after is None:
            return
        budget = self.empty_budget()
        for node in sorted(self.live(), key=lambda n: n.empty_since if n.empty_since is not None else math.inf):
            if budget <= 0:
                return
            if node.empty_since is not None and now - node.empty_since >= after:
                node.gone_at = now
                self.changes += 1
                budget -= 1
