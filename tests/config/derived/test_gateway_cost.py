"""Each gateway's share of the system nodes: what the render summary prints beside the floor."""

from __future__ import annotations

import pytest

from config.derived import cost
from config.facts import catalog
from tests.conftest import DEV, PROD, parse, stack_data


def test_prod_pickers_and_proxies_are_counted_per_model() -> None:
    cfg = parse(stack_data(PROD))
    node = catalog.INSTANCE_TYPES["m7i.xlarge"]
    costs = {g.name: g for g in cost.gateway_costs(cfg)}
    assert sorted(costs) == sorted(m.name for m in cfg.models)
    for g in costs.values():
        # two pickers (prod's standby) at 250m / 512Mi, two proxies at 100m / 512Mi (memory requested at its limit)
        assert (g.cpu_millis, g.memory_mib) == (700, 2048)
        # CPU is the larger share of a 4 vCPU / 16 GiB node
        assert g.per_hour == pytest.approx(node.price_per_hour * 700 / 4000)


def test_precise_routing_adds_the_tokenizer_and_dev_has_one_picker() -> None:
    data = stack_data(DEV)
    data["models"][0]["routing"] = {"prefixCache": "precise"}
    data["cluster"]["systemNodeGroup"].update(minSize=3, desiredSize=3)
    (g,) = cost.gateway_costs(parse(data))
    # one picker with its tokenizer (250m + 1 CPU, 512Mi + 2Gi) and two proxies
    assert (g.cpu_millis, g.memory_mib) == (1250 + 200, 512 + 2048 + 1024)


def test_a_model_at_zero_pays_for_its_gateway_all_day() -> None:
    """Its proxies and picker stay up at zero replicas (they hold the first request): a system-node cost."""
    cfg = parse(stack_data("scale-to-zero-dev"))
    at_zero = {m.name for m in cfg.models if m.replicas.min == 0}
    assert at_zero
    costs = {g.name: g for g in cost.gateway_costs(cfg)}
    assert at_zero <= set(costs)
    # dev: one picker (250m / 512Mi) and two proxies (100m / 512Mi)
    assert all((costs[m].cpu_millis, costs[m].memory_mib) == (450, 1536) for m in at_zero)
