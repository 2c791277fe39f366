"""GPU node failures in the replay (issue 33, item 4): a failed node's replicas stop at once (what they
ran or queued is cut, each a miss), it holds nothing new and keeps costing; with karpenter.nodeRepair
Karpenter deletes it after 10 minutes and its replicas come back through a new node (a miss); without,
it stays failed. Fixture stacks only."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest

from config.facts import speed
from offline import golden
from planner import plan, traffic
from planner.simulate import MINUTE, Options, Result, simulate
from tests.conftest import DEV, parse, stack_data

HOURS = 6
SECONDS = HOURS * 3600
NAME = "llama-3-1-8b"


def _cfg(low: int = 2, repair: bool = False) -> object:
    data = copy.deepcopy(stack_data(DEV))
    data["models"][0]["replicas"] = {**data["models"][0].get("replicas", {}), "min": low, "max": 3}
    data.setdefault("karpenter", {})["nodeRepair"] = repair
    return parse(data)


def _requests() -> dict[str, traffic.Requests]:
    profile = traffic.ModelTraffic.model_validate(
        {"ratePerMinute": [[0, 40], [24, 40]], "promptTokens": {"mean": 512}, "outputTokens": {"mean": 128}}
    )
    return {NAME: traffic.generate(profile, SECONDS, traffic.stream(3, "gpu-failures"))}


def _replay(rate: float, repair: bool | None = None, seed: int = 0, low: int = 2) -> Result:
    return simulate(_cfg(low), _requests(), Options(SECONDS, seed=seed, gpu_failures=rate, node_repair=repair))


def test_no_failure_rate_replays_as_before() -> None:
    quiet = _replay(0.0)
    assert quiet.failures == {"gpu-l4-a10g": []}
    assert quiet.models[NAME].cut_by_failures == 0
    again = simulate(_cfg(), _requests(), Options(SECONDS))
    np.testing.assert_array_equal(quiet.models[NAME].ttft, again.models[NAME].ttft)


def test_a_failed_node_cuts_its_requests_and_a_repair_brings_its_replicas_back() -> None:
    repaired = _replay(4.0, repair=True)
    kept = _replay(4.0, repair=False)
    failures = repaired.failures["gpu-l4-a10g"]
    assert failures, "a rate of 4 per node-day over 6 hours fails some node"
    delay = speed.NODE_REPAIR_ACCELERATED.value
    for failed_at, repaired_at in failures:
        if failed_at + delay < SECONDS:
            assert repaired_at == pytest.approx(failed_at + delay, abs=1.0)  # deleted 10 minutes after (1.14.1)
    s = repaired.models[NAME]
    assert 0 < s.cut_by_failures <= s.unanswered  # every cut request is a miss
    assert all(r is None for _, r in kept.failures["gpu-l4-a10g"])
    # without a repair the failed node stays (billed) with its replicas bound and never ready again; with one,
    # its replicas started again elsewhere and the model ends with its minimum ready
    (node,) = [n for n in kept.pools["gpu-l4-a10g"].nodes if n.failed_at is not None][:1]
    assert node.gone_at is None
    stuck = [r for r in kept.models[NAME].replicas if r.node is node]
    assert stuck
    assert not any(r.ready(SECONDS) for r in stuck)
    assert all(
        n.gone_at is not None for n in repaired.pools["gpu-l4-a10g"].nodes if n.failed_at is not None and n.failed_at + delay < SECONDS
    )
    assert sum(r.ready(SECONDS) for r in repaired.models[NAME].replicas) >= 2


def test_a_failed_node_costs_until_it_is_deleted_and_holds_nothing_new() -> None:
    result = _replay(4.0, repair=True)
    failed = [n for n in result.pools["gpu-l4-a10g"].nodes if n.failed_at is not None]
    assert failed
    for node in failed:
        assert node.pods == 0 or node.gone_at is None  # its pods left with the repair
        if node.gone_at is not None:
            assert node.gone_at - node.failed_at == pytest.approx(speed.NODE_REPAIR_ACCELERATED.value, abs=1.0)
    # the failed node is a live node (billed) while it waits for its repair
    nodes = result.series["pool:gpu-l4-a10g"]["nodes"]
    first = failed[0]
    minute = int(first.failed_at // MINUTE) + 2
    if first.gone_at is None or first.gone_at > (minute + 1) * MINUTE:
        assert nodes[minute] >= 1


def test_failures_are_the_seeds() -> None:
    a, b, c = _replay(4.0, seed=5), _replay(4.0, seed=5), _replay(4.0, seed=6)
    assert a.failures == b.failures
    assert a.failures != c.failures


def test_the_plan_counts_and_says_the_failures(tmp_path: Path) -> None:
    profile = tmp_path / "day.yaml"
    profile.write_text(
        "models:\n  any:\n    ratePerMinute: [[0, 30], [24, 30]]\n    promptTokens: {mean: 512}\n    outputTokens: {mean: 128}\n"
    )
    args = [DEV, "--file", str(golden.fixtures()[DEV]), "--traffic", str(profile), "--days", "0.25", "--out", str(tmp_path)]
    assert plan.main([*args, "--gpu-failures", "6"]) == 0
    data = json.loads((tmp_path / DEV / "plan" / "plan.json").read_text())
    assert data["gpuFailuresPerNodeDay"] == 6
    assert data["pools"]["gpu-l4-a10g"]["gpuFailures"]["failed"] >= 1
    assert "cutByGpuFailures" in data["models"][NAME]
    report = (tmp_path / DEV / "plan" / "report.md").read_text()
    assert "GPU node failures at 6 per node-day" in report
    assert "karpenter.nodeRepair is off" in report
    assert plan.main(args) == 0
    assert "GPU node failures: none replayed" in (tmp_path / DEV / "plan" / "report.md").read_text()


def test_without_the_node_monitoring_agent_nothing_is_repaired() -> None:
    data = copy.deepcopy(stack_data(DEV))
    data["models"][0]["replicas"] = {**data["models"][0].get("replicas", {}), "min": 2, "max": 3}
    data.setdefault("karpenter", {})["nodeRepair"] = True
    data["nodeMonitoring"] = {"enabled": False}
    result = simulate(parse(data), _requests(), Options(SECONDS, gpu_failures=4.0))
    assert result.failures["gpu-l4-a10g"]
    assert all(repaired is None for _, repaired in result.failures["gpu-l4-a10g"])


def test_a_node_consolidation_removed_first_is_not_repaired() -> None:
    for seed in range(6):
        result = _replay(8.0, repair=True, seed=seed)
        for node in result.pools["gpu-l4-a10g"].nodes:
            if node.failed_at is not None and node.gone_at is not None:
                repaired = [r for f, r in result.failures["gpu-l4-a10g"] if f == node.failed_at]
                if repaired and repaired[0] is not None:
                    assert node.gone_at == repaired[0]  # a repaired node went at its repair, not overwritten
