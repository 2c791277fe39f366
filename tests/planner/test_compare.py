"""The pull-request comment's plan diff (planner/compare.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from planner import compare


def _plan(per_month: float, p99: float, models: tuple[str, ...] = ("chat",)) -> dict[str, Any]:
    model = {"ttftSeconds": {"p99": p99}, "sloAttainment": 0.99, "replicas": {"avg": 2.0}}
    return {"cost": {"autoscaled": {"perMonth": per_month}}, "models": dict.fromkeys(models, model)}


def test_the_diff_says_what_the_change_costs_and_does_to_latency() -> None:
    text = compare.markdown(_plan(10_000, 0.9), _plan(11_230, 1.4))
    assert "**+$1,230 a month** autoscaled ($10,000 -> $11,230)." in text
    assert "| chat | 0.90 -> 1.40 s |" in text


def test_savings_are_negative_and_new_or_removed_models_are_named() -> None:
    text = compare.markdown(_plan(10_000, 0.9, ("chat", "old")), _plan(9_000, 0.9, ("chat", "new")))
    assert "**-$1,000 a month**" in text
    assert "| new (new) |" in text
    assert "Removed: old" in text


def test_a_base_without_a_plan_shows_the_head(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    head = tmp_path / "head.json"
    head.write_text(json.dumps(_plan(5_000, 1.0)))
    assert compare.main([str(tmp_path / "missing.json"), str(head)]) == 0
    assert "no plan on the base" in capsys.readouterr().out


def test_a_model_without_traffic_is_not_planned_not_removed() -> None:
    base = _plan(100.0, 0.5, ("a", "b"))
    head = {**_plan(90.0, 0.5, ("a",)), "notPlanned": ["b"]}
    text = compare.markdown(base, head)
    assert "Removed" not in text
    assert "Not planned (no traffic; their floors are not in the cost): b" in text
    assert "Removed: b" in compare.markdown(base, _plan(90.0, 0.5, ("a",)))


def test_a_change_that_moves_a_model_off_the_objective_says_so() -> None:
    met = _plan(100.0, 0.5)
    met["days"] = 1.0
    missed = json.loads(json.dumps(met))
    missed["models"]["chat"] = {**missed["models"]["chat"], "minutesOverSlo": 15}  # 1 % of 1,440 minutes is 14
    text = compare.markdown(met, missed)
    assert "| 0 -> 15 |" in text
    assert "**chat no longer meets its objective**" in text
    # the other way round, or still within the 1 %, nothing is said
    assert "no longer meets" not in compare.markdown(missed, met)
    within = json.loads(json.dumps(met))
    within["models"]["chat"]["minutesOverSlo"] = 14
    assert "no longer meets" not in compare.markdown(met, within)
    lower = json.loads(json.dumps(met))
    lower["models"]["chat"]["sloAttainment"] = 0.989
    assert "no longer meets" in compare.markdown(met, lower)
