"""GpuOperator: the NVIDIA GPU operator with drivers from the AMI, time-slicing, MIG and DCGM."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from builders import gpu_operator as builders
from builders.k8s import namespace_manifest
from components import k8s_objects
from components.helm import release
from components.options import inherited_depends_on
from config.facts import versions
from config.sections.gpu_operator import GpuOperatorConfig
from config.sections.gpu_pools import GpuPool

RELEASE = "gpu-operator"


@dataclass(frozen=True, kw_only=True)
class GpuOperatorArgs:
    """Inputs of the GpuOperator component."""

    config: GpuOperatorConfig
    """The `gpuOperator` section."""
    pools: list[GpuPool]
    """GPU pools: their taints are tolerated, their time-slicing configs are rendered."""
    provider: k8s.Provider
    """Kubernetes provider of the cluster."""
    host_engine: str | None = None
    """The node's DCGM host engine the exporter reads (the node monitoring agent's); None: its own."""


class GpuOperator(pulumi.ComponentResource):
    """Device plugin, GPU feature discovery, MIG manager and DCGM exporter on every GPU node."""

    namespace: str
    release: k8s.helm.v3.Release

    def __init__(self, name: str, args: GpuOperatorArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmplatform:index:GpuOperator", name, None, opts)
        cfg = args.config
        after = inherited_depends_on(opts)
        k8s_opts = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=after)
        self.namespace = cfg.namespace
        # Operands need host access (device nodes, /run/nvidia, hostPath), so privileged.
        namespace = k8s_objects.create(f"{name}-namespace", namespace_manifest(cfg.namespace, "privileged"), k8s_opts)
        config_map = k8s.core.v1.ConfigMap(
            f"{name}-device-plugin-config",
            metadata={"name": builders.DEVICE_PLUGIN_CONFIGMAP, "namespace": cfg.namespace},
            data=builders.device_plugin_configs(args.pools),
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[*after, namespace]),
        )
        self.release = release(
            f"{name}-release",
            release_name=RELEASE,
            chart=versions.GPU_OPERATOR,
            namespace=cfg.namespace,
            values=builders.gpu_operator_values(cfg, args.pools, args.host_engine),
            timeout=900,
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[*after, namespace, config_map]),
        )
        self.register_outputs({"namespace": cfg.namespace})
