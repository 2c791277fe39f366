"""The inference gateway's cluster-wide part: the CRDs the router needs, installed once.

Per model, the router release itself is created by VllmModel (components/serving/gateway.py) in the
model's namespace, from builders/gateway/.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from config.facts import versions


def keep_on_delete(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult:
    """Every object of the CRD files is left in the cluster when the stack stops declaring it: deleting
    a CRD deletes every InferencePool and objective of every release with it."""
    return pulumi.ResourceTransformResult(
        args.props, pulumi.ResourceOptions.merge(args.opts, pulumi.ResourceOptions(retain_on_delete=True))
    )


@dataclass(frozen=True, kw_only=True)
class GatewayCrdsArgs:
    provider: k8s.Provider
    """Kubernetes provider of the cluster."""


class GatewayCrds(pulumi.ComponentResource):
    """InferencePool (Gateway API Inference Extension) and the llm-d.ai objectives and rewrites, read
    from the pinned releases at deploy time (config/facts/versions.py GATEWAY_CRDS): no chart owns
    them, so no chart upgrade deletes them, and they are retained when removed from the program."""

    def __init__(self, name: str, args: GatewayCrdsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmplatform:index:GatewayCrds", name, None, opts)
        self.files = [
            k8s.yaml.v2.ConfigFile(
                f"{name}-{crd}",
                file=url,
                opts=pulumi.ResourceOptions(parent=self, provider=args.provider, retain_on_delete=True, transforms=[keep_on_delete]),
            )
            for crd, url in versions.GATEWAY_CRDS
        ]
        self.register_outputs({"crds": [url for _, url in versions.GATEWAY_CRDS]})
