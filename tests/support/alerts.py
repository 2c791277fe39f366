"""The alert rules of one model (`chat` in namespace `chat`), every PromQL expression the program renders,
the gateway row's dashboard panels, and the promtool unit tests of an alert, written as cases."""

from __future__ import annotations

from typing import Any, NamedTuple

from builders.observability import dashboards, rules
from config.sections.observability import AlertTuning, Slo
from tests.validators import promtool

NS = "chat"
MODELS = [rules.ModelWatch("chat", NS, Slo(ttft_p99_seconds=2.0, end_to_end_p99_seconds=60.0))]
GROUPS = rules.rule_groups(MODELS, AlertTuning())


GATEWAY_PANELS = [
    "Requests picked per replica",
    "Prefix-cache hit rate",
    "Endpoint Picker scheduling latency",
    "Request latency at the gateway",
    "Gateway errors per second",
    "Ready endpoints: the picker's view and vLLM's",
    "Held by the gateway (flow control)",
    "Flow control outcomes per second",
    "Gateway replicas ready",
]
"""The vLLM dashboard's panels under its gateway row (which repeats per model), in order."""


def all_expressions() -> list[str]:
    """Every alert, recording-rule and dashboard query."""
    exprs = [r["expr"] for g in GROUPS for r in g["rules"]]
    exprs += [e for d in dashboards.DASHBOARDS for e in dashboards.expressions(d)]
    return exprs


class AlertCase(NamedTuple):
    """One promtool test of an alert: these input series, scraped at this interval, and by evaluation time
    the alerts it raises then ([]: it is silent)."""

    series: list[dict[str, str]]
    raises: dict[str, list[dict[str, Any]]]
    interval: str = "15s"


def series(selector: str, values: str) -> dict[str, str]:
    """An input series: its name and labels, and its values in promtool's expanding notation."""
    return {"series": selector, "values": values}


def raised(labels: dict[str, str], summary: str, description: str) -> dict[str, Any]:
    """An alert as promtool must see it: its labels and annotations."""
    return {"exp_labels": labels, "exp_annotations": {"summary": summary, "description": description}}


def promtool_tests(alert: str, cases: list[AlertCase]) -> list[dict[str, Any]]:
    """The cases as promtool's `tests` entries."""
    return [
        {
            "interval": case.interval,
            "input_series": case.series,
            "alert_rule_test": [{"eval_time": at, "alertname": alert, "exp_alerts": exp} for at, exp in case.raises.items()],
        }
        for case in cases
    ]


def check_alert(alert: str, cases: list[AlertCase], groups: list[dict[str, Any]] = GROUPS) -> None:
    """promtool runs the cases against the rule groups (by default model `chat`'s) and passes them all."""
    result = promtool.test_rules(groups, promtool_tests(alert, cases))
    assert result.returncode == 0, result.stdout + result.stderr
