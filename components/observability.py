"""Observability: kube-prometheus-stack, the platform's monitors, rules and dashboards."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from builders.k8s import namespace_manifest
from builders.observability import rules
from builders.observability import values as builders
from components import k8s_objects
from components.helm import release
from components.options import inherited_depends_on
from config.facts import versions
from config.sections.observability import ObservabilityConfig


@dataclass(frozen=True, kw_only=True)
class ObservabilityArgs:
    """Inputs of the Observability component."""

    config: ObservabilityConfig
    """The `observability` section."""
    models: list[rules.ModelWatch]
    """Served models: their metrics-absent and gateway alerts, SLO thresholds, and whether any has a gateway to scrape."""
    grafana_admin_password: pulumi.Input[str]
    """Grafana admin password (a secret Output)."""
    gpu_operator_namespace: str
    """Where the DCGM exporter runs."""
    provider: k8s.Provider
    """Kubernetes provider of the cluster."""


class Observability(pulumi.ComponentResource):
    """Prometheus, Alertmanager and Grafana (all ClusterIP), with vLLM, gateway, GPU and Karpenter monitoring."""

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
        # node-exporter needs the host network, PID namespace and filesystem: privileged.
        namespace = k8s_objects.create(f"{name}-namespace", namespace_manifest(ns, "privileged"), k8s_opts)
        after_namespace = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[*after, namespace])
        secret = k8s.core.v1.Secret(
            f"{name}-grafana-admin",
            metadata={"name": builders.GRAFANA_ADMIN_SECRET, "namespace": ns},
            type="Opaque",
            string_data={"admin-user": "admin", "admin-password": args.grafana_admin_password},
            opts=after_namespace,
        )
        self.release = release(
            f"{name}-release",
            release_name=builders.RELEASE,
            chart=versions.KUBE_PROMETHEUS_STACK,
            namespace=ns,
            values=builders.kube_prometheus_stack_values(cfg),
            timeout=900,
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[*after, namespace, secret]),
        )
        crds = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[self.release])
        k8s_objects.create(f"{name}-vllm", builders.vllm_pod_monitor(ns, cfg.vllm_scrape_interval), crds)
        # The gateways' monitors (every model has one; a model at zero wakes on what the proxies report).
        if args.models:
            k8s_objects.create(f"{name}-gateway-epp", builders.gateway_picker_pod_monitor(ns, cfg.vllm_scrape_interval), crds)
            k8s_objects.create(f"{name}-gateway-proxy", builders.gateway_proxy_pod_monitor(ns, cfg.vllm_scrape_interval), crds)
        k8s_objects.create(f"{name}-dcgm", builders.dcgm_service_monitor(ns, args.gpu_operator_namespace), crds)
        k8s_objects.create(f"{name}-karpenter", builders.karpenter_service_monitor(ns), crds)
        k8s_objects.create(f"{name}-rules", builders.prometheus_rule(ns, rules.rule_groups(args.models, cfg.alerts)), crds)
        for cm in builders.dashboard_config_maps(ns):
            k8s_objects.create(f"{name}-{cm['metadata']['name']}", cm, after_namespace)
        self.register_outputs({"prometheusUrl": self.prometheus_url})
