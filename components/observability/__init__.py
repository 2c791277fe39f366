"""Observability: kube-prometheus-stack, the platform's monitors, rules and dashboards."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.observability import builders, rules
from components.options import inherited_depends_on
from config import versions
from config.observability import ObservabilityConfig


@dataclass(frozen=True, kw_only=True)
class ObservabilityArgs:
    """Inputs of the Observability component."""

    config: ObservabilityConfig
    """The `observability` section."""
    models: list[rules.ModelWatch]
    """Served models: their metrics-absent alerts and SLO thresholds."""
    grafana_admin_password: pulumi.Input[str]
    """Grafana admin password (a secret Output)."""
    gpu_operator_namespace: str
    """Where the DCGM exporter runs."""
    provider: k8s.Provider
    """Kubernetes provider of the cluster."""


class Observability(pulumi.ComponentResource):
    """Prometheus, Alertmanager and Grafana (all ClusterIP), with vLLM, GPU and Karpenter monitoring."""

    namespace: str
    prometheus_url: str
    release: k8s.helm.v3.Release

    def __init__(self, name: str, args: ObservabilityArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmplatform:index:Observability", name, None, opts)
        cfg = args.config
        ns = cfg.namespace
        self.namespace = ns
        self.prometheus_url = builders.prometheus_url(ns)
        after = inherited_depends_on(opts)
        k8s_opts = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=after)
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata={
                "name": ns,
                # node-exporter needs the host network, PID namespace and filesystem.
                "labels": {
                    "pod-security.kubernetes.io/enforce": "privileged",
                    "pod-security.kubernetes.io/audit": "privileged",
                    "pod-security.kubernetes.io/warn": "privileged",
                },
            },
            opts=k8s_opts,
        )
        after_namespace = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[*after, namespace])
        secret = k8s.core.v1.Secret(
            f"{name}-grafana-admin",
            metadata={"name": builders.GRAFANA_ADMIN_SECRET, "namespace": ns},
            type="Opaque",
            string_data={"admin-user": "admin", "admin-password": args.grafana_admin_password},
            opts=after_namespace,
        )
        self.release = k8s.helm.v3.Release(
            f"{name}-release",
            name=builders.RELEASE,
            chart="kube-prometheus-stack",
            repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=versions.KUBE_PROMETHEUS_STACK_REPOSITORY),
            version=cfg.version,
            namespace=ns,
            values=builders.kube_prometheus_stack_values(cfg),
            max_history=10,
            timeout=900,
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[namespace, secret]),
        )
        crds = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[self.release])
        self._custom(f"{name}-vllm", builders.vllm_pod_monitor(ns, cfg.vllm_scrape_interval), crds)
        self._custom(f"{name}-dcgm", builders.dcgm_service_monitor(ns, args.gpu_operator_namespace), crds)
        self._custom(f"{name}-karpenter", builders.karpenter_service_monitor(ns), crds)
        self._custom(f"{name}-rules", builders.prometheus_rule(ns, rules.rule_groups(args.models, cfg.alerts)), crds)
        for cm in builders.dashboard_config_maps(ns):
            k8s.core.v1.ConfigMap(f"{name}-{cm['metadata']['name']}", metadata=cm["metadata"], data=cm["data"], opts=after_namespace)
        self.register_outputs({"prometheusUrl": self.prometheus_url})

    def _custom(self, name: str, manifest: dict[str, Any], opts: pulumi.ResourceOptions) -> k8s.apiextensions.CustomResource:
        return k8s.apiextensions.CustomResource(
            name,
            api_version=manifest["apiVersion"],
            kind=manifest["kind"],
            metadata=manifest["metadata"],
            spec=manifest["spec"],
            opts=opts,
        )
