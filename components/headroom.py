"""Headroom: placeholder pods that keep each pool's warm GPUs (config/derived/headroom.py says why and how many)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from builders import headroom as builders
from components import k8s_objects
from components.options import inherited_depends_on
from config.derived.headroom import Placeholders
from config.derived.state import PoolState
from config.sections.gpu_pools import GpuPool


@dataclass(frozen=True, kw_only=True)
class HeadroomArgs:
    """Inputs of the Headroom component."""

    pools: list[GpuPool]
    """The `gpuPools` section; pools with headroom get placeholders."""
    derived: Mapping[str, PoolState]
    """Each pool's derived state (config/derived/state.py), by pool name: the placeholders' shape
    (PoolState.headroom, None without headroom) and the models they make room for."""
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
            derived = args.derived[pool.name]
            shape = derived.headroom
            if shape is None:
                continue
            images = pulumi.Output.all(*(args.images[m] for m in derived.models)).apply(list)
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
