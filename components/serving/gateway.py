"""A model's gateway: its proxies (the platform's, drained), its router release (Endpoint Pickers, the
InferencePool) and the budgets `pulumi up` waits on."""

from __future__ import annotations

import functools
from typing import Any

import pulumi

from builders.gateway import policies as gateway_policies
from builders.gateway import prefix
from builders.gateway import proxies as gateway_proxies
from builders.gateway import router as gateway_router
from builders.ingress import endpoints as ingress_builders
from builders.serving import workload as builders
from components import k8s_objects
from components.helm import release
from components.serving.args import Gateway, VllmModelArgs
from config.facts import versions
from config.sections.gateway import GatewayConfig
from config.sections.models import ModelConfig


def build(
    parent: pulumi.Resource, name: str, args: VllmModelArgs, gateway: Gateway, before: list[pulumi.Resource]
) -> list[pulumi.Resource]:
    """The model's router release (Envoy proxies, Endpoint Pickers, the InferencePool) and the budget
    that keeps a proxy up through a node drain, which `pulumi up` also waits on until every proxy is
    ready (the release itself is not awaited: see below). Returns both: what the Ingress waits for."""
    model = args.model
    held = args.facts.hold
    alb_idle = args.facts.path.chain.alb_idle
    opts = pulumi.ResourceOptions(parent=parent, provider=args.provider, depends_on=[*before, *gateway.after])
    # the budget's await (every proxy ready) ends within the proxies' start on a system node
    wait = pulumi.CustomTimeouts(create="10m", update="10m")
    awaited = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(custom_timeouts=wait))
    budgets = [k8s_objects.create(f"{name}-pdb-{b['metadata']['name']}", b, awaited) for b in gateway_policies.disruption_budgets(model)]
    # The platform's proxies (the chart's own are kept at zero: builders/gateway/proxies.py), started and awaited
    # before the release, so an upgrade starts them before the chart's stop and the front door never empties.
    bootstrap = gateway_router.envoy_bootstrap(model, alb_idle, hold_seconds=held.ttl_seconds)
    envoy_config = k8s_objects.create(f"{name}-proxy-config", gateway_proxies.config_map(model, bootstrap), opts)
    envoy_account = k8s_objects.create(f"{name}-proxy-service-account", gateway_proxies.service_account(model), opts)
    proxies = k8s_objects.create_resolved(
        f"{name}-proxies",
        pulumi.Output.from_input(gateway.envoy_image),
        functools.partial(
            _proxies,
            model=model,
            cfg=gateway.config,
            text=bootstrap,
            drain_seconds=ingress_builders.deregistration_delay(model),
        ),
        "sample",
        pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[envoy_config, envoy_account])),
    )
    hf_secret = (builders.HF_TOKEN_SECRET, "token") if args.hf_token is not None and prefix.precise(model) else None
    values = pulumi.Output.from_input(gateway.envoy_image).apply(
        lambda image: gateway_router.values(
            model,
            gateway.config,
            alb_idle_timeout_seconds=alb_idle,
            envoy_image=image,
            hf_token_secret=hf_secret,
            hold=held,
        )
    )
    router = release(
        f"{name}-router",
        release_name=gateway_router.release_name(model),
        chart=versions.LLM_D_ROUTER,
        namespace=model.name,
        values=values,  # type: ignore[arg-type]
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[proxies])),
        # Helm's wait counts every picker of a Recreate Deployment, and with a standby only the leader is
        # ever ready: it would wait out its timeout on every up. The proxies' budget waits for them instead,
        # and the pickers' for one ready picker, after the release (builders/gateway/policies.py picker_budget).
        skip_await=True,
    )
    picker_hash = gateway_router.config_hash(gateway_router.picker_config_text(model, held))
    picker = k8s_objects.create(
        f"{name}-pdb-{gateway_router.picker_name(model)}",
        gateway_policies.picker_budget(model, picker_hash),
        pulumi.ResourceOptions.merge(awaited, pulumi.ResourceOptions(depends_on=[router])),
    )
    return [router, proxies, *budgets, picker]


def _proxies(image: str, model: ModelConfig, cfg: GatewayConfig, text: str, drain_seconds: int) -> dict[str, Any]:
    return gateway_proxies.deployment(model, cfg, image=image, text=text, drain_seconds=drain_seconds)
