"""Every series name in every PromQL expression the program renders is one that exists: an entry of
the tables in builders/observability/metrics.py (vLLM's with their derived _total/_bucket/_sum/_count
names, DCGM's default counters, KEDA, Karpenter, kube-state-metrics, Prometheus' own `up`, the gateway's
Endpoint Picker and Envoy) or a recording rule the same render defines. Read from the render of every fixture: the PrometheusRule's
alert and recording rules, every ScaledObject's Prometheus triggers, every Grafana dashboard's panel
queries and template variables. A query on a series that does not exist returns nothing, which KEDA
reads as 0 and Grafana shows as "No data".

The extractor (metrics.series_names_in) is tested on expressions that trip naive regexes; the check
is shown failing on a broken copy of the render.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator

import pytest

from builders.observability import metrics
from offline import harness
from tests.conftest import FIXTURES, fixture_run, values

PROMETHEUS_RULE = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"
SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
_LABEL_VALUES = re.compile(r"^\s*label_values\((.*),\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)\s*$", re.S)


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        ('sum by (namespace, model_name) (rate(vllm:num_preemptions_total{model_name=~"$model"}[5m]))', {"vllm:num_preemptions_total"}),
        # label lists of by/on/group_left, string arguments of label_replace
        (
            "max by (Hostname, gpu) (DCGM_FI_DEV_FB_USED) * on (Hostname) group_left (label_llm_platform_io_gpu_pool) "
            'label_replace(kube_node_labels{label_x=~"$pool"}, "Hostname", "$1", "node", "(.*)")',
            {"DCGM_FI_DEV_FB_USED", "kube_node_labels"},
        ),
        # aggregation modifier after the call, offset, bool, numbers with exponents, set operators
        ("sum(rate(foo_total[5m] offset 1h)) by (le) > bool 1e3 unless on() up == 0 or vector(0)", {"foo_total", "up"}),
        # subquery, @ modifier, an empty group_left, a recording rule name with colons
        ("rate(x_total[5m:1m] @ start()) * on () group_left () llm:price:sum", {"x_total", "llm:price:sum"}),
        # braces and brackets inside label values, a name given by __name__, spaces before a call
        ('a{b="}{[", c!~"x|y"} + count ({__name__="bar", job="j"}) + absent (baz)', {"a", "bar", "baz"}),
        ("histogram_quantile(0.99, sum without (pod) (rate(h_bucket[$__rate_interval])))", {"h_bucket"}),
        (
            "(vllm:a) or (sum(kube_deployment_status_replicas_available{deployment='d'}) == 0)",
            {"vllm:a", "kube_deployment_status_replicas_available"},
        ),
    ],
)
def test_the_extractor_reads_only_series_names(expr: str, names: set[str]) -> None:
    assert metrics.series_names_in(expr) == names


def rendered_queries(run: harness.RunResult) -> Iterator[tuple[str, str]]:
    """(where, expression) for every PromQL expression of a render."""
    for r in run.of_type(PROMETHEUS_RULE):
        for group in values(r)["spec"]["groups"]:
            for rule in group["rules"]:
                yield f"rule {rule.get('record') or rule.get('alert')}", rule["expr"]
    for r in run.of_type(SCALED_OBJECT):
        for trigger in values(r)["spec"]["triggers"]:
            if trigger["type"] == "prometheus":
                yield f"{r.name} trigger {trigger.get('name', '')}", trigger["metadata"]["query"]
    for r in run.of_type(CONFIG_MAP):
        doc = values(r)
        if not (doc["metadata"].get("labels") or {}).get("grafana_dashboard"):
            continue
        for key, text in doc["data"].items():
            board = json.loads(text)
            for panel in board["panels"]:
                for target in panel.get("targets") or []:
                    yield f"{key} panel {panel.get('title')}", target["expr"]
            for variable in board.get("templating", {}).get("list", []):
                if variable.get("type") == "query":
                    query = variable["query"]["query"] if isinstance(variable["query"], dict) else variable["query"]
                    match = _LABEL_VALUES.match(query)
                    yield f"{key} variable {variable['name']}", match.group(1) if match else query


def recorded(run: harness.RunResult) -> set[str]:
    return {
        rule["record"] for r in run.of_type(PROMETHEUS_RULE) for g in values(r)["spec"]["groups"] for rule in g["rules"] if "record" in rule
    }


def unknown_series(run: harness.RunResult) -> list[str]:
    known = metrics.known_series() | recorded(run)
    return sorted({f"{where}: {name}" for where, expr in rendered_queries(run) for name in metrics.series_names_in(expr) - known})


@pytest.mark.parametrize("stack", FIXTURES)
def test_every_rendered_query_uses_only_known_series(stack: str) -> None:
    run = fixture_run(stack)
    sources = {where.split(" ")[0] for where, _ in rendered_queries(run)}
    assert "rule" in sources
    assert any(s.endswith(".json") for s in sources), sources
    assert unknown_series(run) == []


@pytest.mark.parametrize("stack", FIXTURES)
def test_every_scaled_object_query_is_read(stack: str) -> None:
    """The triggers are among the expressions read (a render with models has their queries)."""
    run = fixture_run(stack)
    triggers = [e for where, e in rendered_queries(run) if " trigger " in where]
    assert len(triggers) >= len(run.of_type(SCALED_OBJECT)) * 2


def test_the_tables_do_not_overlap_and_hold_no_removed_name() -> None:
    tables = [
        metrics.vllm_series(),
        metrics.DCGM_SERIES,
        metrics.KEDA_SERIES,
        metrics.KARPENTER_SERIES,
        metrics.KSM_SERIES,
        metrics.epp_series(),
        metrics.envoy_series(),
    ]
    assert sum(len(t) for t in tables) + len(metrics.PROMETHEUS_SERIES) == len(metrics.known_series())
    assert not metrics.known_series() & (metrics.VLLM_REMOVED | metrics.EPP_DEPRECATED)
    assert all(n.startswith(("DCGM_FI_", "DCGM_EXP_")) for n in metrics.DCGM_SERIES)
    assert all(n.startswith("kube_") for n in metrics.KSM_SERIES)
    assert all(n.startswith("keda_") for n in metrics.KEDA_SERIES)
    # v0.10.0's current names: the `llm_d_epp_` subsystem, counters registered with their `_total`
    assert all(n.startswith("llm_d_epp_") for n in metrics.epp_series())
    assert all(n.endswith("_total") for n in metrics.EPP_COUNTERS)
    # Envoy's Prometheus names: `envoy_` + the tag-extracted stat name, counters without an added `_total`
    assert all(n.startswith("envoy_") for n in metrics.envoy_series())
    assert {"envoy_http_downstream_rq_xx", "envoy_cluster_upstream_rq_xx"} <= metrics.ENVOY_COUNTERS


@pytest.mark.parametrize("stack", FIXTURES)
def test_the_gateway_series_are_read_from_the_tables(stack: str) -> None:
    """Every render queries the picker's and Envoy's series (the dashboard's gateway row at least), only
    current ones."""
    used = {name for _, expr in rendered_queries(fixture_run(stack)) for name in metrics.series_names_in(expr)}
    assert {"llm_d_epp_ready_endpoints", "llm_d_epp_scheduler_attempts_total", "envoy_http_downstream_rq_xx"} <= used
    assert used & metrics.epp_series()
    assert used & metrics.envoy_series()
    assert not used & metrics.EPP_DEPRECATED


def _broken(stack: str, old: str, new: str) -> harness.RunResult:
    """A copy of a render whose dashboards, rules and triggers have one name replaced."""
    run = fixture_run(stack)
    registrations = []
    for r in run.registrations:
        if r.type in (PROMETHEUS_RULE, SCALED_OBJECT, CONFIG_MAP):
            r = dataclasses.replace(r, inputs=json.loads(json.dumps(r.inputs).replace(old, new)))
        registrations.append(r)
    return harness.RunResult(registrations, run.outputs, run.secret_outputs, run.logs)


def test_a_gpu_panel_on_a_non_dcgm_name_is_found() -> None:
    found = unknown_series(_broken("full-prod", "DCGM_FI_DEV_GPU_UTIL)", "DCGM_FI_DEV_GPU_UTILIZATION)"))
    assert "llm-platform-gpus.json panel GPU utilization: DCGM_FI_DEV_GPU_UTILIZATION" in found


def test_a_trigger_on_an_unlisted_kube_state_metric_is_found() -> None:
    found = unknown_series(
        _broken("scale-to-zero-dev", "kube_deployment_status_replicas_available", "kube_deployment_status_replicas_availble")
    )
    assert any("trigger" in f and f.endswith(": kube_deployment_status_replicas_availble") for f in found)
    assert any(f.startswith("rule VllmMetricsAbsent") for f in found)


def test_an_undefined_recording_rule_is_found() -> None:
    found = unknown_series(_broken("minimal-dev", "llm:vllm_kv_cache_usage:avg >", "llm:vllm_kv_cache_usage:max >"))
    assert "rule VllmKvCacheSaturated: llm:vllm_kv_cache_usage:max" in found


def test_a_deprecated_picker_name_is_found() -> None:
    """inference_pool_ready_pods is v0.10.0's deprecated twin of llm_d_epp_ready_endpoints: still emitted, going away."""
    found = unknown_series(_broken("full-prod", "llm_d_epp_ready_endpoints", "inference_pool_ready_pods"))
    assert any(f.startswith("rule EppCannotScrapePod") and f.endswith(": inference_pool_ready_pods") for f in found)
    assert any(" panel Ready endpoints" in f for f in found)


def test_an_envoy_name_with_an_invented_suffix_is_found() -> None:
    found = unknown_series(_broken("full-prod", "envoy_http_downstream_rq_xx", "envoy_http_downstream_rq_xx_total"))
    assert "llm-platform-vllm.json panel Gateway errors per second: envoy_http_downstream_rq_xx_total" in found
