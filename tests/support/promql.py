"""Every PromQL query the program renders (alerts, recording rules, dashboards, KEDA triggers), the
series each one reads, and the series that exist (builders/observability/metrics.py's tables)."""

from __future__ import annotations

import json
from typing import Any

from builders.observability import metrics
from offline.mocks import Registration
from tests.conftest import values

PROMETHEUS_RULE = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"
SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"


def series_in(expr: str) -> set[str]:
    """The series one PromQL expression selects: the metric tables' own extractor."""
    return metrics.series_names_in(expr)


def _dashboard_exprs(doc: Any) -> list[str]:
    if isinstance(doc, dict):
        found = [doc["expr"]] if isinstance(doc.get("expr"), str) else []
        return found + [e for v in doc.values() for e in _dashboard_exprs(v)]
    if isinstance(doc, list):
        return [e for v in doc for e in _dashboard_exprs(v)]
    return []


def rendered_queries(regs: list[Registration]) -> list[tuple[str, str]]:
    """(where, expression) of every query in the render: each alert and recording rule, each
    dashboard panel target, each KEDA Prometheus trigger."""
    found: list[tuple[str, str]] = []
    for r in regs:
        if r.type == PROMETHEUS_RULE:
            for g in values(r)["spec"]["groups"]:
                for rule in g["rules"]:
                    found.append((f"rule {rule.get('alert') or rule.get('record')}", rule["expr"]))
        elif r.type == SCALED_OBJECT:
            doc = values(r)
            for t in doc["spec"]["triggers"]:
                if t["type"] == "prometheus":
                    found.append((f"ScaledObject {doc['metadata']['name']} trigger {t.get('name')}", t["metadata"]["query"]))
        elif r.type == CONFIG_MAP and "grafana_dashboard" in (values(r)["metadata"].get("labels") or {}):
            for key, text in values(r)["data"].items():
                found += [(f"dashboard {key}", e) for e in _dashboard_exprs(json.loads(text))]
    return found


def recorded(regs: list[Registration]) -> set[str]:
    """The series the render's own recording rules define."""
    return {
        rule["record"]
        for r in regs
        if r.type == PROMETHEUS_RULE
        for g in values(r)["spec"]["groups"]
        for rule in g["rules"]
        if "record" in rule
    }


FAMILIES = {
    "vllm:": metrics.vllm_series(),
    "DCGM_": metrics.DCGM_SERIES,
    "keda_": metrics.KEDA_SERIES,
    "karpenter_": metrics.KARPENTER_SERIES,
    "operator_": metrics.KARPENTER_SERIES,
    "kube_": metrics.KSM_SERIES,
}
"""Each metric family and the names of it the pinned versions expose (metrics.py's tables)."""


def unknown_series_findings(regs: list[Registration]) -> list[str]:
    """Every series a rendered query reads is one the pinned versions expose (any family: vllm:*,
    DCGM_*, kube_*, karpenter_*, keda_*, up) or one the render's own rules record. A name no table
    knows is a finding too: a query on it returns nothing."""
    known = metrics.known_series() | recorded(regs)
    out = []
    for where, expr in rendered_queries(regs):
        for name in sorted(series_in(expr) - known):
            family = next((f for f in FAMILIES if name.startswith(f)), None)
            what = f"not a {family.rstrip(':_')} series of the pinned version" if family else "in no metric table"
            if name in metrics.VLLM_REMOVED:
                what = f"removed before vLLM {metrics.VLLM_VERSION}"
            out.append(f"{where} reads {name}: {what}")
    return out
