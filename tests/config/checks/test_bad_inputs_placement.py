"""Bad placements (issue 26 item 3), each with its exact message: a spread model on a pool of one zone, a model
with two replicas or more packed onto one node (a warning, in prod too), and a placement that is not one; and
the valid variants that add nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import PROD, new_problems_after

STAGING = "existing-vpc-irsa-bottlerocket"
"""Not prod, with a time-sliced pool (two replicas per g6e.xlarge) in an existing VPC of two private subnets."""


def model(d: dict[str, Any], name: str) -> dict[str, Any]:
    return next(m for m in d["models"] if m["name"] == name)


def pool(d: dict[str, Any], name: str) -> dict[str, Any]:
    return next(p for p in d["gpuPools"] if p["name"] == name)


def _one_zone(d: dict[str, Any]) -> None:
    model(d, "qwen-2-5-1-5b")["replicas"] = {"min": 2, "max": 4}
    pool(d, "gpu-l40s-shared")["zones"] = ["us-west-2a"]


CASES: dict[str, tuple[str, Callable[[dict[str, Any]], object]]] = {
    "spread-on-a-one-zone-pool": (STAGING, _one_zone),
    "pack-two-replicas-onto-one-node": (
        STAGING,
        lambda d: model(d, "qwen-2-5-1-5b").update(replicas={"min": 2, "max": 4}, placement="pack"),
    ),
    "placement-not-a-choice": (STAGING, lambda d: model(d, "qwen-2-5-1-5b").update(placement="zones")),
    "prod-packs-a-spot-model": (PROD, lambda d: model(d, "llama-3-2-3b").update(placement="pack")),
    "prod-one-minimum-replica": (PROD, lambda d: model(d, "llama-3-2-3b").update(replicas={"min": 1, "max": 6})),
}

EXPECTED: dict[str, list[str]] = {
    "spread-on-a-one-zone-pool": [
        "models[qwen-2-5-1-5b].placement: spread needs two zones, but pool gpu-l40s-shared launches in one only "
        "(us-west-2a): the zone spread (minDomains 2, DoNotSchedule) would leave the second replica pending for ever. "
        "Fix: list a second zone in gpuPools[gpu-l40s-shared].zones, or set placement: pack (the minimum replicas then "
        "share a node)"
    ],
    "pack-two-replicas-onto-one-node": [
        "models[qwen-2-5-1-5b].placement: pack with replicas.min 2: the minimum replicas may share one node "
        "(g6e.xlarge holds 2), so one node loss takes the model down. Fix: remove placement: pack to spread them over "
        "two zones (a node more at min), or accept it"
    ],
    "placement-not-a-choice": ["models[qwen-2-5-1-5b].placement: must be one of 'spread' or 'pack'. Fix: use one of those values"],
    "prod-packs-a-spot-model": [
        "models[llama-3-2-3b].placement: prod model packed (placement: pack): its 2 minimum replicas may share one node "
        "(g6e.xlarge holds 2), so one node loss or spot interruption is an outage. Fix: remove placement: pack to spread "
        "them over two zones (a node more at min), or accept the risk"
    ],
    "prod-one-minimum-replica": [
        "models[llama-3-2-3b].replicas.min: prod model with fewer than 2 minimum replicas: one node loss is an outage. Fix: set min: 2"
    ],
}


def test_every_case_has_its_message() -> None:
    assert set(CASES) == set(EXPECTED)


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_placement(case: str) -> None:
    stack, mutate = CASES[case]
    assert new_problems_after(mutate, stack) == EXPECTED[case]


VALID: dict[str, tuple[str, Callable[[dict[str, Any]], object]]] = {
    # two replicas of a shared pool in a VPC of two zones: spread by default, within gpuLimit, nothing to say
    "spread-by-default": (STAGING, lambda d: model(d, "qwen-2-5-1-5b").update(replicas={"min": 2, "max": 4})),
    # one minimum replica: nothing to spread, packing is not warned outside prod
    "pack-one-replica": (STAGING, lambda d: model(d, "qwen-2-5-1-5b").update(placement="pack")),
    # replicas that each fill a node are on two nodes whatever the placement
    "pack-replicas-that-fill-a-node": (
        STAGING,
        lambda d: model(d, "qwen-2-5-7b").update(replicas={"min": 2, "max": 4}, placement="pack"),
    ),
    # the prod fixture's spread model with its pool narrowed to two zones still spreads
    "prod-spread-over-two-zones": (PROD, lambda d: pool(d, "gpu-l40s-shared").update(zones=["us-east-1a", "us-east-1b"])),
}


@pytest.mark.parametrize("case", sorted(VALID))
def test_valid_placements_add_nothing(case: str) -> None:
    stack, mutate = VALID[case]
    assert new_problems_after(mutate, stack) == []
