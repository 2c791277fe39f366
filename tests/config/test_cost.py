"""Cost floor and ceiling from catalog prices."""

from __future__ import annotations

import pytest

from config.cost import summarize
from tests.conftest import DEV, PROD, parse, stack_data


def test_dev_floor_and_ceiling() -> None:
    costs = summarize(parse(stack_data(DEV)))
    # floor: 2 x m7i.large (0.1008) + 1 replica on the cheapest single-GPU type, g6.xlarge (0.8048)
    assert costs.floor == pytest.approx(2 * 0.1008 + 0.8048)
    # ceiling: 3 x m7i.large + 3 replicas on the priciest allowed type, g5.2xlarge (1.212)
    assert costs.ceiling == pytest.approx(3 * 0.1008 + 3 * 1.212)


def test_prod_shared_gpus_are_charged_by_share() -> None:
    costs = {m.name: m for m in summarize(parse(stack_data(PROD))).models}
    # MIG 3g.20gb: two slices per A100, 8 GPUs per p4d.24xlarge -> 1/16 of the node
    assert costs["qwen-2-5-7b"].replica_hour_low == pytest.approx(21.957642 / 16)
    # time-slicing x2 on one L40S: half of a g6e.xlarge at the low end, half a g6e.4xlarge at the high end
    assert costs["llama-3-2-3b"].replica_hour_low == pytest.approx(1.861 / 2)
    assert costs["llama-3-2-3b"].replica_hour_high == pytest.approx(3.00424 / 2)
    # tensor parallel 4 on p5.48xlarge: half of the node
    assert costs["llama-3-3-70b"].replica_hour_low == pytest.approx(55.04 / 2)
    assert costs["llama-3-3-70b"].gpu == "4 x NVIDIA H100 80GB"
