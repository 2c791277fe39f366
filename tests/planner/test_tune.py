"""`make tune` (issue 32, item 3): candidates within the config's bounds and the rules, the objective, the search,
and the stack-file edit that keeps comments."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from config.derived import state
from planner import tune
from tests.conftest import DEV, parse, stack_data

FIXTURE = Path(__file__).parents[1] / "fixtures" / "stacks" / f"{DEV}.yaml"
MODEL = "llama-3-1-8b"


def _profile(tmp_path: Path, rate: int) -> Path:
    path = tmp_path / "day.yaml"
    path.write_text(
        f"models:\n  {MODEL}:\n    ratePerMinute: [[0, {rate}], [24, {rate}]]\n    promptTokens: {{mean: 512}}\n    outputTokens: {{mean: 256}}\n"
    )
    return path


def _evaluator(tmp_path: Path, rate: int, data: dict[str, Any] | None = None) -> tune.Evaluator:
    return tune.Evaluator(data or stack_data(DEV), _profile(tmp_path, rate), 0.03, 0, 0.9)


def test_the_knobs_hold_the_shipped_values_and_stay_inside_the_fields_bounds() -> None:
    cfg = parse(stack_data(DEV))
    dials = {k.label: k for k in tune.knobs(cfg)}
    m = cfg.models[0]
    assert m.autoscaling.queue_depth_per_replica in dials[f"models[{MODEL}].autoscaling.queueDepthPerReplica"].candidates
    assert m.autoscaling.kv_cache_usage_target in dials[f"models[{MODEL}].autoscaling.kvCacheUsageTarget"].candidates
    assert all(0 < v <= 1 for v in dials[f"models[{MODEL}].autoscaling.kvCacheUsageTarget"].candidates)
    windows = dials[f"models[{MODEL}].autoscaling.scaleDown.stabilizationWindowSeconds"].candidates
    assert m.autoscaling.scale_down.stabilization_window_seconds in windows
    assert all(0 <= w <= 3600 for w in windows)
    assert dials[f"models[{MODEL}].replicas.max"].limits_pool == 0
    # the pool's gpuLimit follows replicas.max, it is never searched on its own
    assert dials["gpuPools[gpu-l4-a10g].gpuLimit"].candidates == ()
    assert dials["gpuPools[gpu-l4-a10g].headroom"].candidates == (0, 1, 2)


def test_a_raised_max_takes_the_least_gpu_limit_the_checks_accept() -> None:
    data = stack_data(DEV)
    data["models"][0]["replicas"]["max"] = 5
    raised = tune._with_gpu_limit(data, 0)
    assert raised is not None
    limit = raised["gpuPools"][0]["gpuLimit"]
    # the model's peak at max plus its rollout surge, one GPU each (the cheapest host holds one replica)
    assert limit == state.of(parse(raised)).model(MODEL).gpus_at_max + 1
    below = copy.deepcopy(raised)
    below["gpuPools"][0]["gpuLimit"] = limit - 1
    assert tune.Evaluator.parse(below) is None
    assert tune.Evaluator.parse(raised) is not None


def test_a_candidate_the_checks_refuse_is_never_replayed(tmp_path: Path) -> None:
    evaluator = _evaluator(tmp_path, 10)
    bad = stack_data(DEV)
    bad["models"][0]["replicas"] = {"min": 3, "max": 2}
    assert evaluator.outcome(bad) is None


def test_the_objective_and_the_order() -> None:
    ok = tune.Outcome(2.0, {MODEL: 14}, {MODEL: 0.99}, 1440)
    assert ok.meets
    assert not tune.Outcome(2.0, {MODEL: 15}, {MODEL: 0.999}, 1440).meets  # more than 1 % of 1,440 minutes
    assert not tune.Outcome(2.0, {MODEL: 0}, {MODEL: 0.9899}, 1440).meets
    cheaper_but_missing = tune.Outcome(1.0, {MODEL: 15}, {MODEL: 0.999}, 1440)
    assert ok.rank() < cheaper_but_missing.rank()
    assert tune.Outcome(1.0, {MODEL: 0}, {MODEL: 1.0}, 1440).rank() < ok.rank()
    # short of the objective: fewer minutes over first, then cost
    assert tune.Outcome(9.0, {MODEL: 20}, {MODEL: 0.98}, 1440).rank() < tune.Outcome(1.0, {MODEL: 30}, {MODEL: 0.98}, 1440).rank()


def test_the_search_meets_the_objective_at_least_cost_and_is_deterministic(tmp_path: Path) -> None:
    first = tune.search(_evaluator(tmp_path, 200), time_bound=300)
    again = tune.search(_evaluator(tmp_path, 200), time_bound=300)
    # 200 a minute: dev's shipped settings miss; a raised max (with the gpuLimit it needs) and a lower KV target meet it
    assert not first.shipped_outcome.meets
    assert any("replicas.max: 3 -> 4 (gpuLimit 5)" in m for m in first.moves)
    assert first.best == again.best
    assert first.moves == again.moves
    assert first.complete
    assert first.best_outcome.meets
    assert first.best_outcome.rank() <= first.shipped_outcome.rank()
    # no single move from the answer is better (the search stopped at a local optimum, not early)
    cfg = parse(first.best)
    evaluator = _evaluator(tmp_path, 200)
    for candidate, label in tune._neighbours(first.best, tune.knobs(cfg)):
        outcome = evaluator.outcome(candidate)
        assert outcome is None or outcome.rank() >= first.best_outcome.rank(), label


def test_the_time_bound_stops_the_search(tmp_path: Path) -> None:
    found = tune.search(_evaluator(tmp_path, 200), time_bound=0)
    assert not found.complete
    assert found.best == found.shipped


def test_the_edit_keeps_the_files_comments_and_changes_only_the_tuned_values() -> None:
    text = FIXTURE.read_text()
    cfg = parse(stack_data(DEV))
    dials = {k.label: k for k in tune.knobs(cfg)}
    edits = [
        (dials[f"models[{MODEL}].autoscaling.kvCacheUsageTarget"], None, 0.7),
        (dials[f"models[{MODEL}].replicas.max"], 3, 4),
        (dials["gpuPools[gpu-l4-a10g].gpuLimit"], 4, 5),
    ]
    new = tune.edited(text, edits)
    assert [line for line in text.splitlines() if line.lstrip().startswith("#")] == [
        line for line in new.splitlines() if line.lstrip().startswith("#")
    ]
    config = yaml.safe_load(new)["config"]
    model = config["llm-platform:models"][0]
    assert model["autoscaling"]["kvCacheUsageTarget"] == 0.7
    assert model["replicas"]["max"] == 4
    assert config["llm-platform:gpuPools"][0]["gpuLimit"] == 5
    diff = tune.diff(FIXTURE, text, new)
    changed = [line for line in diff.splitlines() if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert len(changed) == 6  # three values: replaced or added, each a removed and an added line but the new key
    assert tune.changes(stack_data(DEV), stack_data(DEV), list(dials.values())) == []


@pytest.mark.parametrize(("before", "after", "expected"), [(100.0, 80.0, "Saving: $20.00 a month (20.0 %)")])
def test_the_verdict_names_the_saving(before: float, after: float, expected: str) -> None:
    meets = tune.Outcome(1.0, {MODEL: 0}, {MODEL: 1.0}, 1440)
    found = tune.Search({}, {}, meets, meets, 1, [], True)
    assert tune.verdict(found, before, after).startswith(expected)
    missing = tune.Outcome(1.0, {MODEL: 48}, {MODEL: 0.98}, 1440)
    assert "miss the objective (48 minutes over)" in tune.verdict(tune.Search({}, {}, missing, meets, 1, [], True), 80.0, 100.0)
    assert "No setting" in tune.verdict(tune.Search({}, {}, missing, missing, 1, [], True), 80.0, 100.0)
