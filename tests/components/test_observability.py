"""Observability: the release values, the monitors and rules against the CRDs, the dashboards."""

from __future__ import annotations

import json
from typing import Any

import kubernetes_validate
import pytest
import yaml

from builders.helm import deep_merge
from builders.observability import dashboards
from builders.observability import values as builders
from offline import harness
from tests.conftest import FIXTURES, fixture_run, shared_path, values
from tests.support.alerts import GATEWAY_PANELS
from tests.validators import crds, helm_values

MON = "kubernetes:monitoring.coreos.com/v1"


def _kps(run: harness.RunResult) -> dict[str, Any]:
    return values(run.one("kubernetes:helm.sh/v3:Release", "observability-release"))


def test_release_is_pinned_and_named_for_a_stable_prometheus_address(prod_run: harness.RunResult) -> None:
    release = _kps(prod_run)
    assert release["name"] == "kube-prometheus-stack"
    assert release["chart"] == "kube-prometheus-stack"
    assert release["version"] == "88.5.3"
    assert release["repositoryOpts"] == {"repo": "https://prometheus-community.github.io/helm-charts"}
    assert release["namespace"] == "monitoring"
    assert release["values"]["fullnameOverride"] == "kube-prometheus-stack"
    assert prod_run.outputs["prometheusUrl"] == "http://kube-prometheus-stack-prometheus.monitoring.svc.cluster.local:9090"


def test_monitors_and_rules_in_any_namespace_are_selected(prod_run: harness.RunResult) -> None:
    spec = _kps(prod_run)["values"]["prometheus"]["prometheusSpec"]
    for key in ("serviceMonitor", "podMonitor", "rule", "probe", "scrapeConfig"):
        assert spec[f"{key}SelectorNilUsesHelmValues"] is False


def test_retention_and_storage_from_config(prod_run: harness.RunResult, dev_run: harness.RunResult) -> None:
    prod = _kps(prod_run)["values"]["prometheus"]["prometheusSpec"]
    assert prod["retention"] == "30d"
    assert prod["storageSpec"]["volumeClaimTemplate"]["spec"] == {
        "storageClassName": "gp3",
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "200Gi"}},
    }
    assert _kps(dev_run)["values"]["prometheus"]["prometheusSpec"]["retention"] == "7d"


def test_nothing_is_exposed_and_grafana_uses_the_secret(prod_run: harness.RunResult) -> None:
    v = _kps(prod_run)["values"]
    assert v["prometheus"]["service"]["type"] == "ClusterIP"
    assert v["alertmanager"]["service"]["type"] == "ClusterIP"
    assert v["grafana"]["service"]["type"] == "ClusterIP"
    assert v["grafana"]["ingress"] == {"enabled": False}
    assert v["grafana"]["admin"] == {"existingSecret": "grafana-admin", "userKey": "admin-user", "passwordKey": "admin-password"}
    assert "adminPassword" not in v["grafana"]
    secret = prod_run.one("kubernetes:core/v1:Secret", "observability-grafana-admin")
    assert secret.redacted()["inputs"]["stringData"] == {"admin-user": "[secret]", "admin-password": "[secret]"}
    assert values(secret)["stringData"] == {"admin-user": "admin", "admin-password": harness.PLACEHOLDER}
    assert (
        "kubernetes:core/v1:Secret::observability-grafana-admin"
        in prod_run.one("kubernetes:helm.sh/v3:Release", "observability-release").dependencies
    )


# Keys valid in a subchart whose values file is not among the saved upstream data.
SUBCHART_KEYS = ("kube-state-metrics.metricLabelsAllowlist",)


def _upstream_kps() -> dict[str, Any]:
    kps = helm_values.load(shared_path("helm-values", "kube-prometheus-stack-88.5.3.values.yaml"))
    grafana = helm_values.load(shared_path("helm-values", "grafana-12.11.1.values.yaml"))
    # Valid grafana.* keys are the union of both files (docs/upstream-facts.md#helm-values-keys, rule 5).
    merged = dict(kps)
    merged["grafana"] = deep_merge(grafana, kps["grafana"])
    return merged


@pytest.mark.parametrize("stack", FIXTURES)
def test_no_alert_for_what_eks_does_not_expose_and_no_volume_left_after_destroy(stack: str) -> None:
    values_ = _kps(fixture_run(stack))["values"]
    upstream = _upstream_kps()
    for component in ("kubeControllerManager", "kubeScheduler", "kubeEtcd", "kubeProxy"):
        # the chart defaults them on, and renders their `absent(up{...})` Down alerts only when on
        assert upstream[component]["enabled"] is True
        assert values_[component] == {"enabled": False}
    assert values_["prometheus"]["prometheusSpec"]["persistentVolumeClaimRetentionPolicy"] == {
        "whenDeleted": "Delete",
        "whenScaled": "Retain",
    }
    assert "persistentVolumeClaimRetentionPolicy" in upstream["prometheus"]["prometheusSpec"]


def test_values_keys_exist_upstream(dev_run: harness.RunResult, prod_run: harness.RunResult) -> None:
    upstream = _upstream_kps()
    for run in (dev_run, prod_run):
        assert helm_values.unknown_keys(_kps(run)["values"], upstream, allowed=SUBCHART_KEYS) == []
    assert helm_values.unknown_keys(
        {"grafana": {"adminPasword": "x"}, "prometheus": {"prometheusSpec": {"retension": "1d"}}}, upstream
    ) == [
        "grafana.adminPasword",
        "prometheus.prometheusSpec.retension",
    ]


@pytest.mark.parametrize(
    ("kind", "crd"),
    [
        ("PodMonitor", "monitoring.coreos.com_podmonitors.yaml"),
        ("ServiceMonitor", "monitoring.coreos.com_servicemonitors.yaml"),
        ("PrometheusRule", "monitoring.coreos.com_prometheusrules.yaml"),
    ],
)
def test_monitors_and_rules_validate_against_the_crds(kind: str, crd: str, prod_run: harness.RunResult) -> None:
    found = prod_run.of_type(f"{MON}:{kind}")
    assert found
    for r in found:
        assert crds.errors(values(r), shared_path("crds", crd)) == [], r.name
        assert "kubernetes:helm.sh/v3:Release::observability-release" in r.dependencies


def test_vllm_pod_monitor(prod_run: harness.RunResult) -> None:
    monitor = values(prod_run.one(f"{MON}:PodMonitor", "observability-vllm"))
    assert monitor["spec"] == {
        "jobLabel": "app.kubernetes.io/name",
        "namespaceSelector": {"any": True},
        "selector": {"matchLabels": {"app.kubernetes.io/name": "vllm"}},
        "podMetricsEndpoints": [{"port": "http", "path": "/metrics", "interval": "5s", "scrapeTimeout": "5s"}],
    }


def test_gateway_pod_monitors(prod_run: harness.RunResult) -> None:
    """Every model's pickers and proxies, at the vLLM interval, their job fixed for the gateway alerts
    (tests/builders/test_gateway_observability.py ties selectors, ports and jobs to the router and policies)."""
    picker = values(prod_run.one(f"{MON}:PodMonitor", "observability-gateway-epp"))
    proxy = values(prod_run.one(f"{MON}:PodMonitor", "observability-gateway-proxy"))
    assert picker["metadata"] == {"name": "gateway-epp", "namespace": "monitoring"}
    assert picker["spec"] == {
        "namespaceSelector": {"any": True},
        "selector": {"matchLabels": {"llm-d.ai/igw-mode": "llm-d-router-gateway"}},
        "podMetricsEndpoints": [
            {
                "port": "metrics",
                "path": "/metrics",
                "interval": "5s",
                "scrapeTimeout": "5s",
                "relabelings": [{"targetLabel": "job", "replacement": "gateway-epp"}],
            }
        ],
    }
    assert proxy["metadata"] == {"name": "gateway-proxy", "namespace": "monitoring"}
    assert proxy["spec"] == {
        "namespaceSelector": {"any": True},
        "selector": {"matchExpressions": [{"key": "llm-d-router-proxy", "operator": "Exists"}]},
        "podMetricsEndpoints": [
            {
                "port": "envoy-metrics",
                "path": "/stats/prometheus",
                "interval": "5s",
                "scrapeTimeout": "5s",
                "relabelings": [{"targetLabel": "job", "replacement": "gateway-proxy"}],
            }
        ],
    }


def test_a_stack_at_zero_still_monitors_its_gateway() -> None:
    """scale-to-zero-dev: its one model idles at zero behind its gateway, whose proxies' series wake it."""
    run = fixture_run("scale-to-zero-dev")
    assert sorted(r.name for r in run.of_type(f"{MON}:PodMonitor")) == [
        "observability-gateway-epp",
        "observability-gateway-proxy",
        "observability-vllm",
    ]
    assert [values(r)["chart"] for r in run.of_type("kubernetes:helm.sh/v3:Release") if "llm-d-router" in values(r)["chart"]]


def test_dcgm_and_karpenter_monitors(prod_run: harness.RunResult) -> None:
    monitors = {r.name: values(r)["spec"] for r in prod_run.of_type(f"{MON}:ServiceMonitor")}
    assert monitors["observability-dcgm"]["namespaceSelector"] == {"matchNames": ["gpu-operator"]}
    # every DCGM series carries its node's name as `node`, whatever the exporter calls its host label
    relabel = {"action": "replace", "sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node"}
    assert monitors["observability-dcgm"]["endpoints"] == [
        {"port": "gpu-metrics", "path": "/metrics", "interval": "15s", "relabelings": [relabel]}
    ]
    assert monitors["observability-karpenter"]["namespaceSelector"] == {"matchNames": ["kube-system"]}


def test_three_dashboards_for_the_sidecar(prod_run: harness.RunResult) -> None:
    maps = [values(r) for r in prod_run.of_type("kubernetes:core/v1:ConfigMap") if r.name.startswith("observability-dashboard-")]
    assert sorted(m["metadata"]["name"] for m in maps) == [
        "dashboard-llm-platform-capacity",
        "dashboard-llm-platform-gpus",
        "dashboard-llm-platform-vllm",
    ]
    for m in maps:
        assert m["metadata"]["labels"] == {"grafana_dashboard": "1"}
        assert m["metadata"]["namespace"] == "monitoring"
        (body,) = m["data"].values()
        dashboard = json.loads(body)
        assert dashboard["panels"]
        assert all(p["targets"] for p in dashboard["panels"] if p["type"] != "row")
        kubernetes_validate.validate(m, "1.35", strict=True)


def test_vllm_dashboard_has_the_panels_operators_need() -> None:
    titles = [p.title for p in dashboards.VLLM.panels]
    assert titles == [
        "Requests running and waiting",
        "KV-cache usage",
        "Time to first token",
        "Inter-token latency",
        "End-to-end request latency",
        "Tokens per second",
        "Preemptions per second",
        "Replicas: desired vs ready",
        "Gateway: $model",
        *GATEWAY_PANELS,
    ]
    ttft = dashboards.VLLM.panels[2]
    assert [legend.split()[0] for _, legend in ttft.queries] == ["p50", "p95", "p99"]


def test_capacity_dashboard_costs_come_from_the_catalog_prices() -> None:
    exprs = dashboards.expressions(dashboards.CAPACITY)
    assert any("llm:ec2_on_demand_price_per_hour" in e for e in exprs)
    assert any("karpenter_interruption_received_messages_total" in e for e in exprs)


def test_core_objects_validate(prod_run: harness.RunResult) -> None:
    for r in prod_run.registrations:
        if r.type in ("kubernetes:core/v1:Namespace", "kubernetes:core/v1:Secret", "kubernetes:core/v1:ConfigMap"):
            kubernetes_validate.validate(values(r), "1.35", strict=True)


def test_rendered_rule_file_round_trips() -> None:
    rule = builders.prometheus_rule(
        "monitoring", [{"name": "g", "rules": [{"record": "a:b", "expr": "up"}]}, {"name": "empty", "rules": []}]
    )
    assert [g["name"] for g in rule["spec"]["groups"]] == ["g"]
    assert yaml.safe_load(yaml.safe_dump(rule)) == rule
