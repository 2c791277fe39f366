"""Keda: the KEDA operator and metrics server, on the system nodes, monitored by Prometheus."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components import k8s_objects
from components.cluster.builders import SYSTEM_NODE_LABEL
from components.helm import deep_merge, release
from components.options import inherited_depends_on
from config import versions
from config.observability import KedaConfig

NAMESPACE = "keda"
RELEASE = "keda"


def keda_values(cfg: KedaConfig) -> dict[str, Any]:
    values: dict[str, Any] = {
        "operator": {"replicaCount": cfg.operator_replicas},
        "nodeSelector": {"kubernetes.io/os": "linux", **SYSTEM_NODE_LABEL},
        # KEDA needs no AWS role: the Prometheus scaler talks to the in-cluster Prometheus.
        "prometheus": {
            "operator": {"enabled": True, "serviceMonitor": {"enabled": True}},
            "metricServer": {"enabled": True, "serviceMonitor": {"enabled": True}},
        },
    }
    return deep_merge(values, cfg.extra_values)


@dataclass(frozen=True, kw_only=True)
class KedaArgs:
    """Inputs of the Keda component."""

    config: KedaConfig
    """The `keda` section."""
    provider: k8s.Provider
    """Kubernetes provider of the cluster."""


class Keda(pulumi.ComponentResource):
    """The KEDA release (its ServiceMonitors need the Prometheus CRDs: create after Observability)."""

    release: k8s.helm.v3.Release

    def __init__(self, name: str, args: KedaArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmplatform:index:Keda", name, None, opts)
        after = inherited_depends_on(opts)
        namespace = k8s_objects.create(
            f"{name}-namespace",
            k8s_objects.namespace_manifest(NAMESPACE, "baseline", audit="restricted"),
            pulumi.ResourceOptions(parent=self, provider=args.provider),
        )
        self.release = release(
            f"{name}-release",
            release_name=RELEASE,
            chart="keda",
            repository=versions.KEDA_REPOSITORY,
            version=args.config.version,
            namespace=NAMESPACE,
            values=keda_values(args.config),
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[*after, namespace]),
        )
        self.register_outputs({})
