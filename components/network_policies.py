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
        after = inherited_depends_on(opts)
        child = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=after)
        allows = [m for m in args.policies if m["metadata"]["name"] != "default-deny"]
        allowed = [k8s_objects.create(f"{name}-{m['metadata']['namespace']}-{m['metadata']['name']}", m, child) for m in allows]
        # each namespace's default deny after its allow rules: a running pod never sees the deny alone
        deny = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[*after, *allowed])
        for m in args.policies:
            if m["metadata"]["name"] == "default-deny":
                k8s_objects.create(f"{name}-{m['metadata']['namespace']}-{m['metadata']['name']}", m, deny)
        self.register_outputs({})
