"""Shared pools against gpuLimit (issue 26, items 12 and 13): one model's own maximum plus its rollout surge
above the limit is an error, and so is the headroom alone; models and headroom that exceed it only together
(they need not all peak at once) are a warning naming the combined peak. A family pool too small for the
family's largest size names the cheaper fix, narrowing by gpuCounts or raising the limit, with its monthly
ceiling from the catalog's prices. Each case with its exact message; only the pool problems are compared."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from config.errors import ConfigError
from config.validate import parse_stack_config
from tests.conftest import DEV, new_problems_after, stack_data
from tests.support.mutations import m0, model_named, p0, pool_named

POOL = "gpuPools[gpu-l4-a10g]"


def _second_model(d: dict[str, Any]) -> None:
    d["models"].append({**m0(d), "name": "llama-3-1-8b-batch", "replicas": {"min": 1, "max": 1}})


def _g6e(limit: int, max_replicas: int) -> Callable[[dict[str, Any]], None]:
    def mutate(d: dict[str, Any]) -> None:
        pool = p0(d)
        pool.pop("instanceTypes")
        pool.update(instanceFamilies=["g6e"], gpuLimit=limit, capacityTypes=["on-demand"])
        m0(d)["replicas"].update(max=max_replicas)

    return mutate


CASES: dict[str, Callable[[dict[str, Any]], object]] = {
    # the headroom the dev stack's own comment suggests (gpuPools[].headroom: 1): a warning, not an error
    "dev-headroom-one": lambda d: p0(d).update(headroom=1),
    # a second model on the shared pool: each fits with its surge, together they do not
    "second-model-on-a-shared-pool": _second_model,
    # one model's own maximum plus its surge above the limit
    "one-model-alone-above-the-limit": lambda d: (p0(d).update(gpuLimit=3), m0(d)["replicas"].update(max=3)),
    # the headroom alone above the limit
    "headroom-alone-above-the-limit": lambda d: p0(d).update(headroom=5),
    # at minimum replicas the headroom cannot all be warm
    "headroom-at-minimum-above-the-limit": lambda d: (p0(d).update(headroom=2), m0(d)["replicas"].update(min=3)),
    # g6e: the 8-GPU size needs gpuLimit 8 ($22k a month); narrowing to 1- and 4-GPU sizes holds the limit of 4
    "family-pool-narrowing-is-cheaper": _g6e(limit=4, max_replicas=3),
    # no narrowing holds a limit of 3 (four 1-GPU replicas need 4): raise the limit
    "family-pool-no-narrowing-holds": _g6e(limit=3, max_replicas=3),
}

EXPECTED: dict[str, list[str]] = {
    "dev-headroom-one": [
        f"{POOL}.gpuLimit: gpuLimit (4) is below the combined peak of 5 GPUs of its models and headroom at once: maximum "
        "replicas (3), a rolling update's surge of 1 replica per model (1) and the headroom's nodes (1), in whole nodes "
        "(llama-3-1-8b: 1 per g6.xlarge). Each model with its surge fits the limit, and so does the headroom, so the limit "
        "binds only when they all peak together: the headroom's placeholders then give way to replicas, and what is left "
        "waits for capacity. Fix: nothing, if they do not peak together; else raise gpuLimit to at least 5",
    ],
    "second-model-on-a-shared-pool": [
        f"{POOL}.gpuLimit: gpuLimit (4) is below the combined peak of 6 GPUs of its models at once: maximum replicas (4) and a "
        "rolling update's surge of 1 replica per model (2), in whole nodes (llama-3-1-8b: 1 per g6.xlarge; "
        "llama-3-1-8b-batch: 1 per g6.xlarge). Each model with its surge fits the limit, so the limit binds only when they "
        "all peak together: a scale-out or rollout then waits for capacity another gives back. Fix: nothing, if they do not "
        "peak together; else raise gpuLimit to at least 6",
    ],
    "one-model-alone-above-the-limit": [
        f"{POOL}.gpuLimit: gpuLimit (3) is below the 4 GPUs of the nodes llama-3-1-8b alone needs at maximum replicas (3) "
        "plus a rolling update's surge of 1 replica (1), in whole nodes (1 per g6.xlarge); Karpenter would stop at the limit "
        "and its scale-out or rollout would stall. Fix: raise gpuLimit to at least 4, or lower models[llama-3-1-8b].replicas.max",
    ],
    "headroom-alone-above-the-limit": [
        f"{POOL}.headroom: headroom (5 GPUs) is more than the pool's gpuLimit (4); Karpenter could never launch it, let alone "
        "the replicas. Fix: lower headroom or raise gpuLimit",
    ],
    "headroom-at-minimum-above-the-limit": [
        f"{POOL}.gpuLimit: gpuLimit (4) is below the 5 GPUs of the nodes its models need at minimum replicas (3) with the 2 "
        "GPUs of nodes for the headroom of 2: even at rest part of the headroom could never launch. Fix: raise gpuLimit to "
        "at least 5, or lower headroom",
    ],
    "family-pool-narrowing-is-cheaper": [
        f"{POOL}.gpuLimit: gpuLimit (4) is below the 8 GPUs of the nodes llama-3-1-8b alone needs at maximum replicas (8) "
        "plus a rolling update's surge of 1 replica (0), in whole nodes (8 per g6e.48xlarge); Karpenter would stop at the "
        "limit and its scale-out or rollout would stall. Fix: set gpuCounts: [1, 4], within the limit at a ceiling of "
        "$7,660 a month at maximum replicas, against $21,996 a month to raise gpuLimit to at least 8 and keep the 8-GPU "
        "g6e.48xlarge; or lower models[llama-3-1-8b].replicas.max",
    ],
    "family-pool-no-narrowing-holds": [
        f"{POOL}.gpuLimit: gpuLimit (3) is below the 8 GPUs of the nodes llama-3-1-8b alone needs at maximum replicas (8) "
        "plus a rolling update's surge of 1 replica (0), in whole nodes (8 per g6e.48xlarge); Karpenter would stop at the "
        "limit and its scale-out or rollout would stall. Fix: raise gpuLimit to at least 8, or lower "
        "models[llama-3-1-8b].replicas.max",
    ],
}


def test_every_case_has_its_message() -> None:
    assert sorted(CASES) == sorted(EXPECTED)


@pytest.mark.parametrize("case", sorted(CASES))
def test_pool_limit_message(case: str) -> None:
    assert [p for p in new_problems_after(CASES[case]) if p.startswith("gpuPools[")] == EXPECTED[case]


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_combined_peak_is_a_warning_and_the_others_errors(case: str) -> None:
    data = stack_data(DEV)
    CASES[case](data)
    try:
        _, warnings = parse_stack_config(data)
    except ConfigError as err:
        errors = [str(p) for p in err.problems if p.severity == "error"]
        assert case not in WARNINGS
        assert set(EXPECTED[case]) <= set(errors)
    else:
        assert case in WARNINGS
        assert set(EXPECTED[case]) <= {str(w) for w in warnings}


WARNINGS = {"dev-headroom-one", "second-model-on-a-shared-pool"}


def test_a_zone_listed_twice_is_refused_not_counted_as_two() -> None:
    from tests.conftest import problems_after

    found = problems_after(lambda d: d["gpuPools"][0].update(zones=["us-east-1a", "us-east-1a"]), "full-prod")
    assert any("lists us-east-1a more than once" in p and "Fix: list each zone once" in p for p in found), found
    assert not any(
        "more than once" in p for p in problems_after(lambda d: d["gpuPools"][0].update(zones=["us-east-1a", "us-east-1b"]), "full-prod")
    )


def _sliced(replicas: int, utilization: float) -> Any:
    def mutate(d: dict[str, Any]) -> None:
        pool_named(d, "gpu-l40s-shared")["sharing"] = {"timeSlicing": {"replicas": replicas}}
        model_named(d, "llama-3-2-3b")["gpuMemoryUtilization"] = utilization

    return mutate


def test_too_many_time_slices_for_any_utilization_are_told_to_slice_less() -> None:
    """16 slices at the smallest settable share (0.06) overcommit the GPU; no gpuMemoryUtilization can fix it (the
    field's floor is above 0.05), so the fix names the slices: 15 at 0.06 fit (0.90), and are not refused."""
    from tests.conftest import problems_after

    found = [p for p in problems_after(_sliced(16, 0.06), "full-prod") if ".gpuMemoryUtilization:" in p]
    assert len(found) == 1, found
    assert "Fix: lower gpuPools[gpu-l40s-shared].sharing.timeSlicing.replicas to at most 15" in found[0]
    assert [p for p in problems_after(_sliced(15, 0.06), "full-prod") if ".gpuMemoryUtilization:" in p] == []
    # at the limit exactly (5 x 0.19 = 0.95) is not over it
    assert [p for p in problems_after(_sliced(5, 0.19), "full-prod") if ".gpuMemoryUtilization:" in p] == []
