"""PlatformNetworkPolicies: default deny and the named flows of the platform's namespaces and controllers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components import k8s_objects
from components.options import inherited_depends_on


@dataclass(frozen=True, kw_only=True)
class PlatformNetworkPoliciesArgs:
    """Inputs of the PlatformNetworkPolicies component."""

    policies: list[dict[str, Any]]
    """The manifests (builders.network_policies.platform)."""
    provider: k8s.Provider
    """Kubernetes provider of the cluster."""


class PlatformNetworkPolicies(pulumi.ComponentResource):
    """The NetworkPolicies of monitoring, KEDA, the GPU operator and the controllers in kube-system.

    Created after the components whose namespaces they live in (depends_on of the parent)."""

    def __init__(self, name: str, args: PlatformNetworkPoliciesArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmplatform:index:PlatformNetworkPolicies", name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=inherited_depends_on(opts))
        for manifest in args.policies:
            meta = manifest["metadata"]
            k8s_objects.create(f"{name}-{meta['namespace']}-{meta['name']}", manifest, child)
        self.register_outputs({})
