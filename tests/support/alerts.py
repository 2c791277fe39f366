"""The alert rules of one model (`chat` in namespace `chat`) and every PromQL expression the program renders."""

from __future__ import annotations

from builders.observability import dashboards, rules
from config.sections.observability import AlertTuning, Slo

NS = "chat"
MODELS = [rules.ModelWatch("chat", NS, Slo(ttft_p99_seconds=2.0, end_to_end_p99_seconds=60.0))]
GROUPS = rules.rule_groups(MODELS, AlertTuning())


def all_expressions() -> list[str]:
    """Every alert, recording-rule and dashboard query."""
    exprs = [r["expr"] for g in GROUPS for r in g["rules"]]
    exprs += [e for d in dashboards.DASHBOARDS for e in dashboards.expressions(d)]
    return exprs
