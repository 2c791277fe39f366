"""NodeMonitoring: the EKS node monitoring agent on every node, and its DCGM host engine on every GPU node."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from builders import node_monitoring as builders
from components.helm import release
from components.options import inherited_depends_on
from config.facts import versions
from config.facts.conventions import KUBE_SYSTEM
from config.sections.stack import StackConfig


@dataclass(frozen=True, kw_only=True)
class NodeMonitoringArgs:
    """Inputs of the NodeMonitoring component."""

    config: StackConfig
    """The stack: the `nodeMonitoring` section, the GPU pools (taints, names) and the region."""
    provider: k8s.Provider
    """Kubernetes provider of the cluster."""


class NodeMonitoring(pulumi.ComponentResource):
    """The agent's release in kube-system, where the EKS add-on would put it (host network, privileged)."""

    release: k8s.helm.v3.Release

    def __init__(self, name: str, args: NodeMonitoringArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmplatform:index:NodeMonitoring", name, None, opts)
        self.release = release(
            f"{name}-release",
            release_name=builders.RELEASE,
            chart=versions.NODE_MONITORING_AGENT,
            namespace=KUBE_SYSTEM,
            values=builders.values(args.config),
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=inherited_depends_on(opts)),
        )
        self.register_outputs({})
