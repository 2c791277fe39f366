"""The planner replays a model whose replicas span nodes (issue 34): a replica is a group of whole nodes,
launched, priced and counted against gpuLimit together."""

from __future__ import annotations

from pathlib import Path

import pytest

from config.facts import catalog
from planner import plan
from tests.conftest import parse, stack_data

STACK = "multi-node-405b"
MODEL = "llama-3-1-405b"
P5 = catalog.INSTANCE_TYPES["p5.48xlarge"].price_per_hour


def _profile(tmp_path: Path, rate: int) -> Path:
    path = tmp_path / "day.yaml"
    path.write_text(
        f"models:\n  {MODEL}:\n    ratePerMinute: [[0, {rate}], [24, {rate}]]\n"
        "    promptTokens: {mean: 512}\n    outputTokens: {mean: 256}\n"
    )
    return path


def test_one_replica_costs_its_two_nodes(tmp_path: Path) -> None:
    data, _, _ = plan.run(parse(stack_data(STACK)), _profile(tmp_path, 30), days=0.05)
    cost = data["cost"]
    # min = max = 1: one group of two p5.48xlarge on demand, the whole time, in every fleet that keeps it
    assert cost["static"]["perHour"] == pytest.approx(2 * P5, rel=1e-6)
    assert cost["autoscaled"]["perHour"] == pytest.approx(2 * P5, rel=1e-6)
    assert cost["sloOracle"]["perHour"] == pytest.approx(2 * P5, rel=1e-6)
    assert data["models"][MODEL]["served"] == data["models"][MODEL]["requests"] > 0


def test_a_second_group_launches_two_nodes_within_the_gpu_limit(tmp_path: Path) -> None:
    raw = stack_data(STACK)
    raw["models"][0]["replicas"] = {"min": 1, "max": 2}
    raw["gpuPools"][0]["gpuLimit"] = 48  # two groups and a surge group
    cfg = parse(raw)
    data, result, _ = plan.run(cfg, _profile(tmp_path, 2000), days=0.05)
    # more traffic than a group holds: a second group, whole nodes only, launched and counted as two nodes each
    per_hour = data["cost"]["autoscaled"]["perHour"]
    assert 2 * P5 < per_hour <= 4 * P5 + 1e-6
    assert data["models"][MODEL]["replicas"]["max"] == 2
    pool = data["pools"]["gpu-h100-efa"]
    assert pool["maxNodes"] == 4
    assert {n.nodes for n in result.pools["gpu-h100-efa"].nodes} == {2}
    assert 0 < pool["utilization"] <= 1.0


def test_one_group_counts_both_nodes_busy(tmp_path: Path) -> None:
    data, _, _ = plan.run(parse(stack_data(STACK)), _profile(tmp_path, 30), days=0.05)
    pool = data["pools"]["gpu-h100-efa"]
    assert (pool["avgNodes"], pool["maxNodes"], pool["utilization"]) == (2.0, 2, 1.0)
