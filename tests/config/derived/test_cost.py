"""Cost floor and ceiling from catalog prices, in whole nodes as Karpenter launches them."""

from __future__ import annotations

import pytest

from config.derived import cost
from config.derived.cost import summarize
from config.facts import catalog
from tests.conftest import DEV, PROD, parse, stack_data

PRICE = {name: t.price_per_hour for name, t in catalog.INSTANCE_TYPES.items()}


def test_dev_floor_and_ceiling() -> None:
    costs = summarize(parse(stack_data(DEV)))
    # floor: 2 x m7i.xlarge + 1 replica on one g6.xlarge, the cheapest single-GPU type
    assert costs.compute_floor == pytest.approx(2 * PRICE["m7i.xlarge"] + PRICE["g6.xlarge"])
    # the fixed costs, from AWS's us-east-1 list prices (not the module's constants): the control plane at
    # $0.10/h, dev's one NAT gateway at $0.045/h, the ALB at $0.0225/h, a KMS key at $1 a month
    fixed = 0.10 + 0.045 + 0.0225 + 1 / catalog.HOURS_PER_MONTH
    assert costs.floor == pytest.approx(2 * PRICE["m7i.xlarge"] + PRICE["g6.xlarge"] + fixed)
    # ceiling: 3 x m7i.xlarge + 3 replicas on three g5.2xlarge, the priciest allowed type
    assert costs.compute_ceiling == pytest.approx(3 * PRICE["m7i.xlarge"] + 3 * PRICE["g5.2xlarge"])
    assert costs.ceiling == pytest.approx(3 * PRICE["m7i.xlarge"] + 3 * PRICE["g5.2xlarge"] + fixed)
    assert (costs.models[0].nodes_min, costs.models[0].nodes_max) == (1, 3)


def test_prod_shared_gpus_are_charged_by_the_nodes_they_need() -> None:
    costs = {m.name: m for m in summarize(parse(stack_data(PROD))).models}
    # MIG 3g.20gb: 16 slices per p4d.24xlarge, so 2 and 8 replicas both need one whole node
    qwen = costs["qwen-2-5-7b"]
    assert (qwen.nodes_min, qwen.nodes_max) == (1, 1)
    assert qwen.floor == qwen.ceiling == pytest.approx(PRICE["p4d.24xlarge"])
    # time-slicing x2: two replicas per g6e node (CPU and memory allow it), the minimum spread over two
    # zones (placement: spread, the default for min >= 2): 2 -> 2 nodes, 6 -> 3 nodes
    small = costs["llama-3-2-3b"]
    assert (small.nodes_min, small.nodes_max) == (2, 3)
    assert small.floor == pytest.approx(2 * PRICE["g6e.xlarge"])
    assert small.ceiling == pytest.approx(3 * PRICE["g6e.4xlarge"])
    # tensor parallel 4 on p5.48xlarge: two replicas per node
    big = costs["llama-3-3-70b"]
    assert (big.nodes_min, big.nodes_max) == (1, 2)
    assert big.floor == pytest.approx(PRICE["p5.48xlarge"])
    assert big.gpu == "4 x NVIDIA H100 80GB"


def test_warm_headroom_is_charged_as_the_nodes_it_holds() -> None:
    summary = summarize(parse(stack_data(PROD)))
    (warm,) = summary.headroom
    # one warm GPU on the g6/g5 single-GPU pool: one node, the cheapest or the dearest 1-GPU type that holds an 8B replica
    assert (warm.pool, warm.gpus, warm.nodes_min, warm.nodes_max) == ("gpu-l4-a10g", 1, 1, 1)
    assert warm.floor == pytest.approx(PRICE["g6.xlarge"])  # 3 CPUs and 12Gi fit a g6.xlarge's allocatable 3.6 CPUs, 13.6 GiB
    without = summarize(
        parse(stack_data(PROD)).model_copy(
            update={"gpu_pools": [p.model_copy(update={"headroom": 0}) for p in parse(stack_data(PROD)).gpu_pools]}
        )
    )
    assert summary.floor == pytest.approx(without.floor + warm.floor)
    assert summary.ceiling == pytest.approx(without.ceiling + warm.ceiling)


def test_the_fixed_costs_are_named_and_counted_from_the_stack() -> None:
    """The control plane always; a NAT gateway per zone with perAz (one with single) in a VPC the stack creates, none in
    an existing one; the ALB only when a model is exposed; the KMS key always."""
    dev = summarize(parse(stack_data(DEV)))
    assert [(f.name, f.count) for f in dev.fixed] == [
        ("EKS control plane", 1),
        ("NAT gateway", 1),
        ("application load balancer", 1),
        ("KMS key", 1),
    ]
    assert dev.fixed_per_hour == pytest.approx(cost.EKS_CONTROL_PLANE_PER_HOUR + cost.NAT_GATEWAY_PER_HOUR + cost.ALB_PER_HOUR + 1 / 730)
    prod = parse(stack_data(PROD))
    nats = {f.name: f.count for f in summarize(prod).fixed}["NAT gateway"]
    assert nats == prod.network.az_count  # type: ignore[union-attr]
    existing = summarize(parse(stack_data("existing-vpc-irsa-bottlerocket")))
    assert "NAT gateway" not in {f.name for f in existing.fixed}
    data = stack_data(DEV)
    for m in data["models"]:
        m["expose"] = False
        m["clientNamespaces"] = ["chat"]
    assert "application load balancer" not in {f.name for f in summarize(parse(data)).fixed}


def test_a_system_group_of_two_types_costs_its_cheapest_at_min_and_its_dearest_at_max() -> None:
    """Independent of the shipped stacks (one system type each): m6i.xlarge is cheaper than m7i.xlarge, so
    the floor counts m6i at minSize and the ceiling m7i at maxSize, whatever the list's order."""
    assert PRICE["m6i.xlarge"] < PRICE["m7i.xlarge"]
    one = summarize(parse(stack_data(DEV)))
    for order in (["m7i.xlarge", "m6i.xlarge"], ["m6i.xlarge", "m7i.xlarge"]):
        data = stack_data(DEV)
        data["cluster"]["systemNodeGroup"]["instanceTypes"] = order
        group = data["cluster"]["systemNodeGroup"]
        two = summarize(parse(data))
        assert two.system_floor == pytest.approx(group["minSize"] * PRICE["m6i.xlarge"])
        assert two.system_ceiling == pytest.approx(group["maxSize"] * PRICE["m7i.xlarge"])
        # the GPU side is unchanged
        assert two.compute_ceiling - two.system_ceiling == pytest.approx(one.compute_ceiling - one.system_ceiling)


def test_warm_headroom_at_the_ceiling_is_the_pools_dearest_type_that_holds_it() -> None:
    """Prod's single-GPU pool holds g6 and g5 types that differ in price: the warm GPU's ceiling is the
    dearest single-GPU type of those families (g5.8xlarge in the catalog), its floor the cheapest (g6.xlarge)."""
    (warm,) = summarize(parse(stack_data(PROD))).headroom
    pool = next(p for p in parse(stack_data(PROD)).gpu_pools if p.name == warm.pool)
    single = {t.name: t.price_per_hour for t in catalog.INSTANCE_TYPES.values() if t.family in {"g6", "g5"} and t.gpu_count == 1}
    assert {t.name for t in pool.resolved_instance_types()} == set(single)
    assert warm.floor == pytest.approx(min(single.values())) == pytest.approx(PRICE["g6.xlarge"])
    assert warm.ceiling == pytest.approx(max(single.values()))
    assert warm.ceiling > warm.floor
