"""The compile warm-up Jobs in the pool's limit and in the cost: a deploy takes one replica's worth per GPU type."""

from __future__ import annotations

from typing import Any

import pytest

from config.derived import cost, state
from tests.conftest import PROD, new_problems_after, parse, stack_data

POOL, MODEL = "gpu-l4-a10g", "llama-3-1-8b"
WARNING = "gpuPools[gpu-l4-a10g].gpuLimit: gpuLimit ({limit}) is below the {need} GPUs of the nodes a deploy takes"


def _pool(d: dict[str, Any]) -> dict[str, Any]:
    return next(p for p in d["gpuPools"] if p["name"] == POOL)


def _model(d: dict[str, Any]) -> dict[str, Any]:
    return next(m for m in d["models"] if m["name"] == MODEL)


def _at_deploy(d: dict[str, Any]) -> int:
    cfg = parse(d)
    return sum(state.of(cfg).model(m).gpus_at_deploy for m in cfg.models if m.pool == POOL)


def test_the_deploy_counts_the_replicas_a_surge_and_a_replica_per_gpu_type() -> None:
    cfg = parse(stack_data(PROD))
    ms = state.of(cfg).model(MODEL)
    # 2 replicas at minimum, 1 surge, a warm-up on each of the pool's GPU types (a10g, l4): 5 one-GPU nodes
    assert [t.gpu.label for t in ms.warmup_hosts if t.gpu] == ["a10g", "l4"]
    assert ms.gpus_at_deploy == 2 + 1 + 2
    off = stack_data(PROD)
    _model(off)["engine"] = {"compileCache": False}
    assert state.of(parse(off)).model(MODEL).warmup_hosts == ()
    assert state.of(parse(off)).model(MODEL).gpus_at_deploy == 2 + 1


@pytest.mark.parametrize("short", [0, 1])
def test_a_limit_below_a_deploy_with_its_warmups_is_warned_and_one_at_it_is_not(short: int) -> None:
    data = stack_data(PROD)
    _pool(data).update(headroom=0)
    need = _at_deploy(data)

    def mutate(d: dict[str, Any]) -> None:
        _pool(d).update(headroom=0, gpuLimit=need - short)
        _model(d)["replicas"] = {"min": 2, "max": need - short - 1}  # the model's own peak fits the limit

    found = [p for p in new_problems_after(mutate, PROD) if "a deploy takes" in p]
    if short:
        assert found == [
            WARNING.format(limit=need - 1, need=need) + " at minimum replicas (2): each model's replicas, a rolling update's "
            "surge and a replica's worth per compile warm-up Job (one per GPU type, docs/scale-up.md#the-compile-cache); "
            "Karpenter would hold a warm-up (replicas then compile) or a surge replica (`pulumi up` waits for it) at the "
            "limit. Fix: raise "
            f"gpuLimit to at least {need}, or set engine.compileCache: false on a model of this pool"
        ]
    else:
        assert found == []


def test_a_key_change_costs_each_gpu_types_node_for_a_cold_start() -> None:
    cfg = parse(stack_data(PROD))
    (w,) = [w for w in cost.warmup_costs(cfg) if w.name == MODEL]
    ms = state.of(cfg).model(MODEL)
    assert w.hosts == ("g5.xlarge", "g6.xlarge")
    assert w.seconds == ms.scale_up.pessimistic_budget.miss
    assert w.dollars == pytest.approx(sum(t.price_per_hour for t in ms.warmup_hosts) * w.seconds / 3600)
    dev_like = stack_data(PROD)
    for m in dev_like["models"]:
        m["engine"] = {"compileCache": False}
    assert cost.warmup_costs(parse(dev_like)) == []
