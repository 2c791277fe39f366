"""VllmModel: one model's serving stack, scaled by KEDA on vLLM's own metrics."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from builders.ingress import endpoints as ingress_builders
from builders.serving import scaling
from builders.serving import workload as builders
from components import k8s_objects
from components.options import inherited_depends_on
from config import capacity
from config.gpu_pools import GpuPool
from config.ingress import IngressConfig
from config.models import ModelConfig


@dataclass(frozen=True, kw_only=True)
class VllmModelArgs:
    """Inputs of the VllmModel component."""

    model: ModelConfig
    """The model's entry of `models`."""
    pool: GpuPool
    """The GPU pool it runs on."""
    prometheus_url: str
    """In-cluster Prometheus address (from the Observability component) for KEDA's triggers."""
    hf_token: pulumi.Input[str] | None
    """Hugging Face token (secret), mounted as a file; None when not configured."""
    vpc_cidr: str
    """VPC CIDR: the load balancer's addresses, admitted by the NetworkPolicy."""
    alb_idle_timeout_seconds: int
    """The shared ALB's idle timeout, which vLLM's keep-alives are derived from."""
    monitoring_namespace: str
    """Namespace of Prometheus, admitted by the NetworkPolicy."""
    provider: k8s.Provider
    """Kubernetes provider of the cluster."""
    api_key: pulumi.Input[str] | None = None
    """API key (secret) vLLM requires on /v1 requests; None for none."""
    ingress: IngressConfig | None = None
    """Endpoint settings; None when the model is not exposed."""
    ingress_after: list[pulumi.Resource] = field(default_factory=list)
    """What the Ingress waits for (the load balancer controller's release and webhook)."""


# Launching a GPU node, initializing its GPUs and pulling the vLLM image (about 10 GB).
NODE_AND_IMAGE_SECONDS = 900


def _hostname(status: Any) -> str:
    """The ALB's DNS name from the Ingress status (what the controller writes back)."""
    try:
        return str(status["load_balancer"]["ingress"][0]["hostname"])
    except (KeyError, IndexError, TypeError):
        try:
            return str(status.load_balancer.ingress[0].hostname)
        except (AttributeError, IndexError, TypeError):
            return "<pending>"


class VllmModel(pulumi.ComponentResource):
    """Namespace, service account, Deployment, Service, PDB, NetworkPolicies and ScaledObject of one model."""

    namespace: str
    service_name: str
    url: str
    base_url: pulumi.Output[str] | None

    def __init__(self, name: str, args: VllmModelArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmplatform:index:VllmModel", name, None, opts)
        model = args.model
        after = inherited_depends_on(opts)
        base = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=after)
        namespace = self._object(f"{name}-namespace", builders.namespace(model), base)
        inside = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[*after, namespace])
        self._object(f"{name}-service-account", builders.service_account(model), inside)
        needs: list[pulumi.Resource] = []
        for suffix, secret_name, key, value in (
            ("hf-token", builders.HF_TOKEN_SECRET, "token", args.hf_token),
            ("api-key", builders.API_KEY_SECRET, "api-key", args.api_key),
        ):
            if value is not None:
                needs.append(
                    k8s.core.v1.Secret(
                        f"{name}-{suffix}",
                        metadata={"name": secret_name, "namespace": model.name, "labels": builders.labels(model)},
                        type="Opaque",
                        string_data={key: value},
                        opts=inside,
                    )
                )
        for policy in builders.network_policies(model, args.vpc_cidr, args.monitoring_namespace):
            self._object(f"{name}-netpol-{policy['metadata']['name']}", policy, inside)
        # Readiness can take long: a GPU node launch, the image pull and the model download and load.
        # Pulumi's default 10-minute wait would give up first. The load balancer controller's
        # webhook must be up before exposed pods are admitted, or they miss their readiness gate.
        ready_minutes = f"{math.ceil((capacity.startup_budget_seconds(model) + NODE_AND_IMAGE_SECONDS) / 60)}m"
        deployment = self._object(
            f"{name}-deployment",
            builders.deployment(
                model,
                args.pool,
                alb_idle_timeout_seconds=args.alb_idle_timeout_seconds,
                hf_token=args.hf_token is not None,
                api_key=args.api_key is not None,
            ),
            pulumi.ResourceOptions(
                parent=self,
                provider=args.provider,
                depends_on=[*after, namespace, *needs, *args.ingress_after],
                custom_timeouts=pulumi.CustomTimeouts(create=ready_minutes, update=ready_minutes),
            ),
        )
        self._object(f"{name}-service", builders.service(model), inside)
        self._object(f"{name}-pdb", builders.pod_disruption_budget(model), inside)
        self._object(
            f"{name}-scaledobject",
            scaling.scaled_object(model, args.prometheus_url),
            pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[deployment]),
        )
        self.base_url = None
        if args.ingress is not None:
            manifest = ingress_builders.ingress(model, args.ingress, args.vpc_cidr)
            ingress = self._object(
                f"{name}-ingress",
                manifest,
                pulumi.ResourceOptions(
                    parent=self,
                    provider=args.provider,
                    depends_on=[*after, namespace, *args.ingress_after],
                    custom_timeouts=pulumi.CustomTimeouts(create=ingress_builders.READY_TIMEOUT, update=ingress_builders.READY_TIMEOUT),
                ),
            )
            settings = args.ingress
            status = ingress.status  # type: ignore[attr-defined]
            self.base_url = status.apply(lambda s: ingress_builders.base_url(model, settings, _hostname(s)))
        self.namespace = model.name
        self.service_name = model.name
        self.url = f"http://{model.name}.{model.name}.svc.cluster.local:{builders.PORT}/v1"
        self.register_outputs({"namespace": self.namespace, "url": self.url, "baseUrl": self.base_url})

    def _object(self, name: str, manifest: dict[str, Any], opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
        return k8s_objects.create(name, manifest, opts)
