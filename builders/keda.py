"""KEDA's desired state: its namespace and chart values."""

from __future__ import annotations

from typing import Any

from builders.helm import deep_merge
from builders.k8s import namespace_manifest
from config.facts.conventions import INGRESS_GROUP_MEMBER, KEDA_NAMESPACE, READINESS_GATE_LABEL, SYSTEM_NODE_SELECTOR
from config.sections.keda import KedaConfig

RELEASE = "keda"


def namespace(*, readiness_gate: bool = False) -> dict[str, Any]:
    """KEDA's namespace; with models at zero the interceptors are ALB targets here, and the load
    balancer controller holds their rollouts until the new pods pass the ALB's health checks. It is
    always a member of the model IngressGroup (the HTTP add-on's Ingresses live here), so a model
    moving between min 0 and min 1 never leaves an Ingress in a namespace the group refuses."""
    labels = {**INGRESS_GROUP_MEMBER, **({READINESS_GATE_LABEL: "enabled"} if readiness_gate else {})}
    return namespace_manifest(KEDA_NAMESPACE, "baseline", audit="restricted", labels=labels)


def keda_values(cfg: KedaConfig) -> dict[str, Any]:
    values: dict[str, Any] = {
        "operator": {"replicaCount": cfg.operator_replicas},
        "nodeSelector": dict(SYSTEM_NODE_SELECTOR),
        # KEDA needs no AWS role: the Prometheus scaler talks to the in-cluster Prometheus.
        "prometheus": {
            "operator": {"enabled": True, "serviceMonitor": {"enabled": True}},
            "metricServer": {"enabled": True, "serviceMonitor": {"enabled": True}},
        },
    }
    return deep_merge(values, cfg.extra_values)
