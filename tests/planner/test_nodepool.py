"""The replay's NodePool settings come from the NodePool and NodeOverlays the program renders."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

from builders.karpenter import nodepools
from config.derived import state
from config.facts import catalog
from config.facts.conventions import CAPACITY_TYPE_LABEL
from config.sections.stack import StackConfig
from planner import nodepool
from planner.fleet import Pool
from tests.conftest import DEV, PROD, parse, stack_data


def _manifest(cfg: StackConfig, name: str) -> dict[str, Any]:
    pool = cfg.pool(name)
    assert pool is not None
    return nodepools.node_pool(pool, state.of(cfg).pool(name))


def test_every_setting_is_the_rendered_nodepools() -> None:
    cfg = parse(stack_data(PROD))
    settings = nodepool.of_stack(cfg)
    assert sorted(settings) == sorted(p.name for p in cfg.gpu_pools)
    h100 = settings["gpu-h100"]
    assert h100.capacity_types == ("on-demand",)
    assert h100.gpu_limit == 24
    assert h100.consolidate_after == 30 * 60
    assert h100.budgets == (nodepool.Budget("1", scheduled=False, reasons=()),)
    assert settings["gpu-l4-a10g"].capacity_types == ("spot", "on-demand")
    assert settings["gpu-l4-a10g"].consolidate_after == 10 * 60  # the default consolidateAfter


def test_gpus_count_in_the_units_of_the_limit() -> None:
    settings = nodepool.of_stack(parse(stack_data(PROD)))
    # time-sliced in 2: the NodeOverlay advertises 2 GPUs per L40S, and the limit counts them so
    shared = settings["gpu-l40s-shared"]
    assert shared.gpu_limit == 4 * 2
    assert shared.gpus(catalog.INSTANCE_TYPES["g6e.xlarge"]) == 2
    # MIG: the overlay advertises slices, not GPUs; a p4d counts its 8 physical GPUs
    mig = settings["gpu-a100-mig"]
    assert mig.gpu_limit == 8
    assert mig.gpus(catalog.INSTANCE_TYPES["p4d.24xlarge"]) == 8


def test_the_disruption_block_is_read_as_rendered() -> None:
    cfg = parse(stack_data(DEV))
    manifest = copy.deepcopy(_manifest(cfg, "gpu-l4-a10g"))
    disruption = manifest["spec"]["disruption"]
    disruption["consolidateAfter"] = "Never"
    disruption["budgets"] = [
        {"nodes": "50%"},
        {"nodes": "0", "schedule": "0 9 * * 1-5", "duration": "8h"},
        {"nodes": "0", "reasons": ["Drifted"]},
    ]
    settings = nodepool.read(manifest)
    assert settings.consolidate_after is None
    assert [b.covers_empty() for b in settings.budgets] == [True, False, False]
    assert settings.budgets[0].allowed(3) == 2  # a percentage rounds up


def test_the_replay_obeys_the_manifest_not_the_config(monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = parse(stack_data(DEV))
    assert "spot" in cfg.gpu_pools[0].capacity_types
    rendered = nodepools.node_pool

    def on_demand_only(*args: Any, **kwargs: Any) -> dict[str, Any]:
        manifest = copy.deepcopy(rendered(*args, **kwargs))
        for r in manifest["spec"]["template"]["spec"]["requirements"]:
            if r["key"] == CAPACITY_TYPE_LABEL:
                r["values"] = ["on-demand"]
        return manifest

    monkeypatch.setattr(nodepool.nodepools, "node_pool", on_demand_only)
    pool = Pool.of(cfg, "gpu-l4-a10g", 1.0, np.random.default_rng(0))
    node = pool.launch(state.of(cfg).model(cfg.models[0].name), 0.0)
    assert node is not None
    assert node.capacity_type == "on-demand"
