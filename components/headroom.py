"""Headroom: placeholder pods that keep each pool's warm GPUs (config/derived/headroom.py says why and how many)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from builders import headroom as builders
from components import k8s_objects
from components.options import inherited_depends_on
from config.derived import headroom
from config.derived.headroom import Placeholders
from config.sections.gpu_pools import GpuPool
from config.sections.models import ModelConfig


@dataclass(frozen=True, kw_only=True)
class HeadroomArgs:
    """Inputs of the Headroom component."""

    pools: list[GpuPool]
    """The `gpuPools` section; pools with headroom get placeholders."""
    models: list[ModelConfig]
    """The `models` section: what the placeholders make room for."""
    images: dict[str, pulumi.Output[str]]
    """The image each model's pods pull (the cache's or the upstream's), by model name."""
    provider: k8s.Provider
    """Kubernetes provider of the cluster."""


class Headroom(pulumi.ComponentResource):
    """PriorityClass, namespace and one placeholder Deployment per pool with headroom."""

    def __init__(self, name: str, args: HeadroomArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmplatform:index:Headroom", name, None, opts)
        after = inherited_depends_on(opts)
        base = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=after)
        priority = k8s_objects.create(f"{name}-priority-class", builders.priority_class(), base)
        namespace = k8s_objects.create(f"{name}-namespace", builders.namespace(), base)
        inside = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[*after, namespace, priority])
        k8s_objects.create(f"{name}-netpol-default-deny", builders.network_policy(), inside)
        account = k8s_objects.create(f"{name}-service-account", builders.service_account(), inside)
        inside = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[*after, namespace, priority, account])
        for pool in args.pools:
            on_pool = [m for m in args.models if m.pool == pool.name]
            shape = headroom.placeholders(pool, on_pool)
            if shape is None:
                continue
            images = pulumi.Output.all(*(args.images[m.name] for m in on_pool)).apply(list)
            k8s_objects.create_resolved(
                f"{name}-{pool.name}",
                images,
                functools.partial(_deployment, pool=pool, shape=shape),
                ["sample"],
                inside,
            )
        self.register_outputs({})


def _deployment(images: list[str], pool: GpuPool, shape: Placeholders) -> dict[str, object]:
    return builders.deployment(pool, shape, images)
