"""Placement of replicas that share a node (issue 26 item 3): the rendered spread, the scheduling it gives, and
the nodes the derived state, gpuLimit and the cost summary count for it."""

from __future__ import annotations

from typing import Any

from config.derived import cost, state
from config.facts import catalog
from offline import harness
from tests.conftest import PROD, parse, stack_data
from tests.support.workloads import model_pod as _pod


def _place(constraint: dict[str, Any], zones: dict[str, int], pending: int) -> list[str]:
    """Where the kube-scheduler may put pending replicas one by one under one DoNotSchedule spread constraint,
    every zone having a node with room: `count + 1 - global minimum <= maxSkew`, the global minimum taken as 0
    while fewer domains than minDomains hold the pool's nodes (Kubernetes TopologySpreadConstraint)."""
    chosen = []
    for _ in range(pending):
        minimum = 0 if len(zones) < constraint.get("minDomains", 1) else min(zones.values())
        fits = sorted(z for z, n in zones.items() if n + 1 - minimum <= constraint["maxSkew"])
        zone = fits[0] if fits else f"new-{len(zones)}"  # no zone fits: Karpenter launches a node in another zone
        zones[zone] = zones.get(zone, 0) + 1
        chosen.append(zone)
    return chosen


def test_the_second_replica_lands_in_a_second_zone_and_further_ones_pack(prod_run: harness.RunResult) -> None:
    (constraint,) = _pod(prod_run, "llama-3-2-3b")["topologySpreadConstraints"]
    assert (constraint["whenUnsatisfiable"], constraint["topologyKey"]) == ("DoNotSchedule", "topology.kubernetes.io/zone")
    # the first replica's node is the pool's only one: the second may not join it
    assert _place(constraint, {"a": 1}, 1) == ["new-1"]
    # two zones in use: further replicas pack onto the nodes there, a zone at most one ahead
    assert _place(constraint, {"a": 1, "b": 1}, 3) == ["a", "b", "a"]


def test_spread_nodes_show_in_the_state_the_limit_and_the_cost() -> None:
    cfg = parse(stack_data(PROD))
    small = state.of(cfg).model("llama-3-2-3b")
    assert small.spread
    assert (small.nodes_at_min, small.hosts[0].name) == (2, "g6e.xlarge")
    assert state.of(cfg).pool("gpu-l40s-shared").gpus_at_min == 2
    costs = {m.name: m for m in cost.summarize(cfg).models}
    assert costs["llama-3-2-3b"].nodes_min == 2
    assert costs["llama-3-2-3b"].floor == 2 * catalog.INSTANCE_TYPES["g6e.xlarge"].price_per_hour
    # packed (placement: pack in the fixture): one node each, as the derived state says
    assert (costs["llama-3-3-70b"].nodes_min, costs["qwen-2-5-7b"].nodes_min) == (1, 1)
    assert all(costs[n].nodes_min == state.of(cfg).model(n).nodes_at_min for n in costs)


def test_spreading_every_shared_prod_model_costs_about_57_6k_a_month() -> None:
    data = stack_data(PROD)
    packed = cost.summarize(parse(data)).floor
    for m in data["models"]:
        m.pop("placement", None)
    next(p for p in data["gpuPools"] if p["name"] == "gpu-a100-mig")["gpuLimit"] = 24
    spread = cost.summarize(parse(data)).floor
    extra_month = (spread - packed) * catalog.HOURS_PER_MONTH
    prices = catalog.INSTANCE_TYPES
    assert round(spread - packed, 2) == round(prices["p5.48xlarge"].price_per_hour + prices["p4d.24xlarge"].price_per_hour, 2)
    assert 55_000 < extra_month < 57_000  # on top of the 3B model's second L40S node, already in the fixture's floor
