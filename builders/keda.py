"""KEDA's desired state: its namespace and chart values."""

from __future__ import annotations

from typing import Any

from builders.helm import deep_merge
from builders.k8s import namespace_manifest
from config.facts.conventions import INGRESS_GROUP_MEMBER, KEDA_NAMESPACE, SYSTEM_NODE_SELECTOR
from config.sections.keda import KedaConfig

RELEASE = "keda"


def namespace() -> dict[str, Any]:
    """KEDA's namespace. No ALB target lives here any more (the KEDA HTTP add-on's interceptors are gone:
    every model's gateway holds its own requests), so no readiness gate. It stays a member of the model
    IngressGroup for now: the `pulumi up` that removes the add-on deletes the Ingresses it had here only at
    its end, and until then a member in a namespace the group refuses would block the whole group
    (builders/ingress/endpoints.py ingress_class_params). A later release may drop the label."""
    return namespace_manifest(KEDA_NAMESPACE, "baseline", audit="restricted", labels=dict(INGRESS_GROUP_MEMBER))


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
