"""An exposed model's Ingress on the shared ALB, and what its status says: the base URL and the ALB's name."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi

from builders.ingress import endpoints as ingress_builders
from components import k8s_objects
from components.serving.args import Endpoint, VllmModelArgs


@dataclass(frozen=True)
class Route:
    """The Ingress and what its status gives the outputs."""

    ingress: pulumi.Resource
    base_url: pulumi.Output[str]
    load_balancer_hostname: pulumi.Output[str]


def build(parent: pulumi.Resource, name: str, args: VllmModelArgs, endpoint: Endpoint, depends_on: list[pulumi.Resource]) -> Route:
    """After the gateway's proxies are ready (their budget waits for them, builders/gateway/policies.py).
    A replacement (a change of namespace: the `up` that removes the HTTP add-on moves a model at zero's
    Ingress out of KEDA's namespace) creates the new Ingress before it deletes the old: the new one's
    group.order puts its rule first meanwhile, and the group is never empty (the controller deletes an
    empty group's ALB: dev's model at zero is the only member of its group)."""
    model = args.model
    ingress = k8s_objects.create(
        f"{name}-ingress",
        ingress_builders.ingress(model, endpoint.ingress, args.vpc_cidrs),
        pulumi.ResourceOptions(
            parent=parent,
            provider=args.provider,
            depends_on=depends_on,
            custom_timeouts=pulumi.CustomTimeouts(create=ingress_builders.READY_TIMEOUT, update=ingress_builders.READY_TIMEOUT),
        ),
    )
    settings = endpoint.ingress
    status = ingress.status  # type: ignore[attr-defined]
    return Route(
        ingress=ingress,
        base_url=status.apply(lambda s: ingress_builders.base_url(model, settings, hostname(s))),
        load_balancer_hostname=status.apply(hostname),
    )


def hostname(status: Any) -> str:
    """The ALB's DNS name from the Ingress status (what the controller writes back)."""
    try:
        return str(status["load_balancer"]["ingress"][0]["hostname"])
    except (KeyError, IndexError, TypeError):
        try:
            return str(status.load_balancer.ingress[0].hostname)
        except (AttributeError, IndexError, TypeError):
            return "<pending>"
