"""Pure builders for the monitoring stack: Helm values, monitors, rule and dashboard objects."""

from __future__ import annotations

from typing import Any

from builders.gateway import envoy, router
from builders.helm import deep_merge
from builders.observability import dashboards, rules
from config.facts.conventions import (
    CAPACITY_TYPE_LABEL,
    INSTANCE_TYPE_LABEL,
    KARPENTER_NAMESPACE,
    POOL_LABEL,
    PROJECT,
    SYSTEM_NODE_SELECTOR,
    VLLM_APP_LABEL,
    VLLM_PORT_NAME,
)
from config.facts.system_capacity import PROMETHEUS
from config.sections.observability import EKS_UNREACHABLE_COMPONENTS, ObservabilityConfig

RELEASE = "kube-prometheus-stack"
FULLNAME = "kube-prometheus-stack"
GRAFANA_ADMIN_SECRET = "grafana-admin"
DASHBOARD_LABEL = {"grafana_dashboard": "1"}
NODE_LABELS_FOR_METRICS = (POOL_LABEL, CAPACITY_TYPE_LABEL, INSTANCE_TYPE_LABEL)


def prometheus_url(namespace: str) -> str:
    """In-cluster address of Prometheus: the chart's `<fullname>-prometheus` Service on 9090."""
    return f"http://{FULLNAME}-prometheus.{namespace}.svc.cluster.local:9090"


def kube_prometheus_stack_values(cfg: ObservabilityConfig) -> dict[str, Any]:
    system = dict(SYSTEM_NODE_SELECTOR)
    prometheus_spec: dict[str, Any] = {
        # Select monitors and rules in every namespace, not only those labelled with the release.
        "serviceMonitorSelectorNilUsesHelmValues": False,
        "podMonitorSelectorNilUsesHelmValues": False,
        "ruleSelectorNilUsesHelmValues": False,
        "probeSelectorNilUsesHelmValues": False,
        "scrapeConfigSelectorNilUsesHelmValues": False,
        "retention": cfg.retention,
        "storageSpec": {
            "volumeClaimTemplate": {
                "spec": {
                    "storageClassName": "gp3",
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": cfg.storage_size}},
                }
            }
        },
        # The StatefulSet's volume goes with the stack: `pulumi destroy` leaves no EBS volume behind;
        # scaling down keeps it.
        "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete", "whenScaled": "Retain"},
        "resources": {"requests": PROMETHEUS.as_values(), "limits": {"memory": "4Gi"}},
        "nodeSelector": system,
    }
    if cfg.retention_size:
        prometheus_spec["retentionSize"] = cfg.retention_size
    values: dict[str, Any] = {
        "fullnameOverride": FULLNAME,
        "crds": {"enabled": True},
        "prometheus": {"service": {"type": "ClusterIP"}, "prometheusSpec": prometheus_spec},
        "alertmanager": {"service": {"type": "ClusterIP"}, "alertmanagerSpec": {"nodeSelector": system}},
        "prometheusOperator": {"nodeSelector": system},
        "grafana": {
            "admin": {"existingSecret": GRAFANA_ADMIN_SECRET, "userKey": "admin-user", "passwordKey": "admin-password"},
            "service": {"type": "ClusterIP"},
            "ingress": {"enabled": False},
            "persistence": {"enabled": True, "size": cfg.grafana_storage_size},
            "nodeSelector": system,
            "sidecar": {"dashboards": {"enabled": True, "label": "grafana_dashboard", "labelValue": "1", "searchNamespace": "ALL"}},
        },
        **{component: {"enabled": False} for component in EKS_UNREACHABLE_COMPONENTS},
        "kube-state-metrics": {
            # Node labels as kube_node_labels{label_llm_platform_io_gpu_pool=...} for the GPU and cost dashboards.
            "metricLabelsAllowlist": [f"nodes=[{','.join(NODE_LABELS_FOR_METRICS)}]"],
        },
    }
    return deep_merge(values, cfg.extra_values)


def vllm_pod_monitor(namespace: str, interval: str) -> dict[str, Any]:
    """One PodMonitor for every model: pods labelled app.kubernetes.io/name=vllm in any namespace."""
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": {"name": "vllm", "namespace": namespace},
        "spec": {
            "jobLabel": "app.kubernetes.io/name",
            "namespaceSelector": {"any": True},
            "selector": {"matchLabels": dict(VLLM_APP_LABEL)},
            "podMetricsEndpoints": [{"port": VLLM_PORT_NAME, "path": "/metrics", "interval": interval, "scrapeTimeout": "5s"}],
        },
    }


ENVOY_METRICS_PORT_NAME = "envoy-metrics"
"""The proxies' container port for /stats/prometheus (builders/gateway/router.py envoy_preset; a test ties the two)."""


def _gateway_pod_monitor(job: str, namespace: str, selector: dict[str, Any], port: str, path: str, interval: str) -> dict[str, Any]:
    """A PodMonitor named after its job, of the pods the selector picks in any namespace, scraped at one port and
    path. Every target's `job` is relabelled to that one name (the operator's own relabelings, which set `job`
    to `<namespace>/<monitor>`, run first): the gateway's alerts select their targets by it."""
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": {"name": job, "namespace": namespace},
        "spec": {
            "namespaceSelector": {"any": True},
            "selector": selector,
            "podMetricsEndpoints": [
                {
                    "port": port,
                    "path": path,
                    "interval": interval,
                    "scrapeTimeout": "5s",
                    "relabelings": [{"targetLabel": "job", "replacement": job}],
                }
            ],
        },
    }


def gateway_picker_pod_monitor(namespace: str, interval: str) -> dict[str, Any]:
    """One PodMonitor for every model's Endpoint Pickers: the mode label the router chart puts on every
    picker pod, in any namespace; their `metrics` port serves /metrics without auth
    (`router.monitoring.prometheus.auth.enabled: false`, builders/gateway/router.py), so no token is sent.
    At the vLLM interval: the picker's endpoint count is compared with vLLM's readiness (EppCannotScrapePod)
    and its panels sit beside vLLM's."""
    key, value = router.MODE_LABEL
    return _gateway_pod_monitor(
        rules.GATEWAY_PICKER_JOB, namespace, {"matchLabels": {key: value}}, router.EPP_METRICS_PORT_NAME, "/metrics", interval
    )


def gateway_proxy_pod_monitor(namespace: str, interval: str) -> dict[str, Any]:
    """One PodMonitor for every model's Envoy proxies: pods that carry the chart's proxy selector key (its
    value is the release's proxy name), in any namespace; /stats/prometheus on the metrics listener, the
    only path it serves (builders/gateway/envoy.py)."""
    selector = {"matchExpressions": [{"key": router.PROXY_SELECTOR_KEY, "operator": "Exists"}]}
    return _gateway_pod_monitor(rules.GATEWAY_PROXY_JOB, namespace, selector, ENVOY_METRICS_PORT_NAME, envoy.METRICS_PATH, interval)


def _service_monitor(
    name: str, namespace: str, target_namespace: str, match_labels: dict[str, str], port: str, interval: str
) -> dict[str, Any]:
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "namespaceSelector": {"matchNames": [target_namespace]},
            "selector": {"matchLabels": match_labels},
            "endpoints": [{"port": port, "path": "/metrics", "interval": interval}],
        },
    }


GPU_NODE_LABEL = "node"
"""The label every DCGM series carries for its node: the exporter pod's node name, as kube-state-metrics names it."""


def dcgm_service_monitor(namespace: str, gpu_operator_namespace: str) -> dict[str, Any]:
    """The GPU operator's DCGM exporter (its chart's own ServiceMonitor is off). Each series gets its node's
    name as `node` (the pod's, which Prometheus attaches to every pod-backed endpoint), so alerts and
    panels join kube_node_labels on it: the exporter's own host label is `Hostname` up to 4.5.3-4.8.2 and
    `hostname` from 4.6.0-4.8.3 on (NVIDIA/dcgm-exporter#655), the pinned GPU operator's default."""
    monitor = _service_monitor("dcgm-exporter", namespace, gpu_operator_namespace, {"app": "nvidia-dcgm-exporter"}, "gpu-metrics", "15s")
    monitor["spec"]["endpoints"][0]["relabelings"] = [
        {"action": "replace", "sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": GPU_NODE_LABEL}
    ]
    return monitor


def karpenter_service_monitor(namespace: str) -> dict[str, Any]:
    """The Karpenter controller's metrics."""
    labels = {"app.kubernetes.io/name": "karpenter", "app.kubernetes.io/instance": "karpenter"}
    return _service_monitor("karpenter", namespace, KARPENTER_NAMESPACE, labels, "http-metrics", "30s")


def prometheus_rule(namespace: str, groups: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": PROJECT, "namespace": namespace},
        "spec": {"groups": [g for g in groups if g["rules"]]},
    }


def dashboard_config_maps(namespace: str) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": f"dashboard-{d.uid}",
                "namespace": namespace,
                "labels": dict(DASHBOARD_LABEL),
            },
            "data": dashboards.config_map_data(d),
        }
        for d in dashboards.DASHBOARDS
    ]
