"""Keda: the KEDA operator and metrics server, on the system nodes, monitored by Prometheus."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from builders import keda as builders
from components import k8s_objects
from components.helm import release
from components.options import inherited_depends_on
from config.facts import versions
from config.facts.conventions import KEDA_NAMESPACE
from config.sections.keda import KedaConfig


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
            builders.namespace(),
            pulumi.ResourceOptions(parent=self, provider=args.provider),
        )
        self.release = release(
            f"{name}-release",
            release_name=builders.RELEASE,
            chart=versions.KEDA,
            namespace=KEDA_NAMESPACE,
            values=builders.keda_values(args.config),
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[*after, namespace]),
        )
        self.register_outputs({})
