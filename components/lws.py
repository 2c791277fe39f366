"""LeaderWorkerSet: the controller of the groups that serve a model spanning nodes, and its CRDs."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from builders import lws as builders
from components import k8s_objects
from components.gateway import keep_on_delete
from components.helm import release
from components.options import inherited_depends_on
from config.facts import versions


@dataclass(frozen=True, kw_only=True)
class LeaderWorkerSetsArgs:
    """Inputs of the LeaderWorkerSets component."""

    provider: k8s.Provider
    """Kubernetes provider of the cluster."""


class LeaderWorkerSets(pulumi.ComponentResource):
    """The LeaderWorkerSet v0.10.0 controller on the system nodes. Its CRDs are applied from the pinned tag
    (versions.LWS_CRDS), owned by no chart, and retained when the stack stops declaring them: deleting the CRD
    deletes every LeaderWorkerSet, so every serving group, with it (kubernetes-sigs/lws#880)."""

    release: k8s.helm.v3.Release

    def __init__(self, name: str, args: LeaderWorkerSetsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmplatform:index:LeaderWorkerSets", name, None, opts)
        after = inherited_depends_on(opts)
        crds = [
            k8s.yaml.v2.ConfigFile(
                f"{name}-{crd}",
                file=url,
                opts=pulumi.ResourceOptions(parent=self, provider=args.provider, retain_on_delete=True, transforms=[keep_on_delete]),
            )
            for crd, url in versions.LWS_CRDS
        ]
        namespace = k8s_objects.create(
            f"{name}-namespace", builders.namespace(), pulumi.ResourceOptions(parent=self, provider=args.provider)
        )
        self.release = release(
            f"{name}-release",
            release_name=builders.RELEASE,
            chart=versions.LWS,
            namespace=builders.NAMESPACE,
            values=builders.values(),
            skip_crds=True,
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[*after, namespace, *crds]),
        )
        self.register_outputs({"crds": [url for _, url in versions.LWS_CRDS]})
