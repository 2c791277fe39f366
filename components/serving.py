"""VllmModel: one model's serving stack, scaled by KEDA on vLLM's own metrics."""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from builders import scale_to_zero
from builders import weights as weights_builders
from builders.iam import pod_identity_trust_policy
from builders.ingress import endpoints as ingress_builders
from builders.serving import populate, scaling
from builders.serving import workload as builders
from components import k8s_objects
from components.options import inherited_depends_on
from config.derived import capacity
from config.facts.conventions import populate_service_account
from config.sections.gpu_pools import GpuPool
from config.sections.ingress import IngressConfig
from config.sections.models import ModelConfig


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
    vpc_cidrs: list[str]
    """Every CIDR block of the VPC: the Ingress' default client range, never 'the internet' in egress rules."""
    alb_idle_timeout_seconds: int
    """The shared ALB's idle timeout, which vLLM's keep-alives are derived from."""
    monitoring_namespace: str
    """Namespace of Prometheus, admitted by the NetworkPolicy."""
    load_balancer_sources: list[str] = field(default_factory=list)
    """The ALB's subnets, admitted on vLLM's port when the model is exposed (empty when it is not)."""
    interface_endpoints: list[str] = field(default_factory=list)
    """Subnets of an existing VPC's interface endpoints (S3 inside the VPC), reachable on 443."""
    provider: k8s.Provider
    """Kubernetes provider of the cluster."""
    api_key: pulumi.Input[str] | None = None
    """API key (secret) vLLM requires on /v1 requests; None for none."""
    ingress: IngressConfig | None = None
    """Endpoint settings; None when the model is not exposed."""
    ingress_after: list[pulumi.Resource] = field(default_factory=list)
    """What the Ingress waits for (the load balancer controller's release and webhook)."""
    sources: pulumi.Output[builders.Sources] | None = None
    """Image reference, weights bucket and region, resolved at deploy time; None: the upstream image."""
    weights_bucket_arn: pulumi.Input[str] | None = None
    """ARN of the weights bucket, for the model's read and populate roles (S3 weights only)."""
    cluster_name: pulumi.Input[str] | None = None
    """The cluster, for the Pod Identity associations (S3 weights only)."""
    models: list[ModelConfig] = field(default_factory=list)
    """Every model of the stack: revisions of a shared repository that stay in the bucket."""
    scale_up_miss_seconds: int | None = None
    """The model's scale-up budget on a new node: the floor of the default scale-down window."""
    tags: dict[str, str] = field(default_factory=dict)
    """Tags on the model's AWS resources (its roles)."""
    retired_revision_days: int = 7
    """Days a revision no model uses stays in the weights bucket (weights.retiredRevisionDays)."""


# Launching a GPU node, initializing its GPUs and pulling the vLLM image (about 10 GB).
NODE_AND_IMAGE_SECONDS = 900
SAMPLE_SOURCES = builders.Sources(image="sample", bucket="sample", region="sample")
"""Stands in for the deploy-time values when only an object's identity is built."""


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
        flows = builders.ModelFlows(args.load_balancer_sources, args.monitoring_namespace, args.vpc_cidrs, args.interface_endpoints)
        # the allow rules first: a running pod never sees the deny alone
        deny, *allows = builders.network_policies(model, flows)
        allowed = [self._object(f"{name}-netpol-{p['metadata']['name']}", p, inside) for p in allows]
        self._object(
            f"{name}-netpol-{deny['metadata']['name']}",
            deny,
            pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[*after, namespace, *allowed]),
        )
        # Readiness can take long: a GPU node launch, the image pull and the model download and load.
        # Pulumi's default 10-minute wait would give up first. The load balancer controller's
        # webhook must be up before exposed pods are admitted, or they miss their readiness gate.
        ready_minutes = f"{math.ceil((capacity.startup_budget_seconds(model) + NODE_AND_IMAGE_SECONDS) / 60)}m"
        sources = args.sources or pulumi.Output.from_input(builders.upstream_sources(model))
        if model.streams_from_s3:
            needs += self._weights(name, args, sources, inside, list(needs))
        build = functools.partial(
            builders.deployment,
            model,
            args.pool,
            alb_idle_timeout_seconds=args.alb_idle_timeout_seconds,
            hf_token=args.hf_token is not None,
            api_key=args.api_key is not None,
            weights_wait_seconds=populate.populate_seconds(model),
        )
        deployment = k8s_objects.create_resolved(
            f"{name}-deployment",
            sources,
            lambda src: build(sources=src),
            SAMPLE_SOURCES,
            pulumi.ResourceOptions(
                parent=self,
                provider=args.provider,
                depends_on=[*after, namespace, *needs, *args.ingress_after],
                custom_timeouts=pulumi.CustomTimeouts(create=ready_minutes, update=ready_minutes),
            ),
        )
        self._object(f"{name}-service", builders.service(model), inside)
        self._object(f"{name}-pdb", builders.pod_disruption_budget(model), inside)
        scaled_after: list[pulumi.Resource] = [deployment]
        if model.replicas.min == 0:
            # KEDA must find the route when it first reads the ScaledObject, or it falls back to CPU (W2.5.3).
            assert args.ingress is not None  # validated: min 0 needs the exposed route
            assert args.scale_up_miss_seconds is not None  # wired by the platform
            scaled_after.append(
                self._object(
                    f"{name}-interceptor-route",
                    scale_to_zero.interceptor_route(model, args.ingress, args.scale_up_miss_seconds),
                    pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[*after, namespace, *args.ingress_after]),
                )
            )
        self._object(
            f"{name}-scaledobject",
            scaling.scaled_object(model, args.prometheus_url, args.scale_up_miss_seconds),
            pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=scaled_after),
        )
        self.base_url = None
        if args.ingress is not None:
            manifest = (
                scale_to_zero.ingress(model, args.ingress, args.vpc_cidrs)
                if model.replicas.min == 0
                else ingress_builders.ingress(model, args.ingress, args.vpc_cidrs)
            )
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

    def _weights(
        self,
        name: str,
        args: VllmModelArgs,
        sources: pulumi.Output[builders.Sources],
        inside: pulumi.ResourceOptions,
        secrets: list[pulumi.Resource],
    ) -> list[pulumi.Resource]:
        """S3 weights: read and populate roles through Pod Identity, the script, and the populate Job."""
        model = args.model
        before = inherited_depends_on(inside)
        assert args.weights_bucket_arn is not None  # wired by the platform
        assert args.cluster_name is not None
        bucket_arn = pulumi.Output.from_input(args.weights_bucket_arn)
        aws_child = pulumi.ResourceOptions(parent=self)
        identities: list[pulumi.Resource] = []
        for suffix, service_account, document in (
            ("weights-read", model.name, weights_builders.reader_policy),
            ("weights-populate", populate_service_account(model.name), weights_builders.populate_policy),
        ):
            role = aws.iam.Role(
                f"{name}-{suffix}",
                description=f"{model.name}: {suffix.replace('-', ' ')} ({model.hugging_face_id}@{model.revision[:12]})",
                assume_role_policy=json.dumps(pod_identity_trust_policy(model.name, service_account)),
                tags=args.tags,
                opts=aws_child,
            )
            policy = aws.iam.RolePolicy(
                f"{name}-{suffix}",
                role=role.name,
                policy=bucket_arn.apply(
                    functools.partial(_policy_json, document=document, repo=model.hugging_face_id, revision=model.revision)
                ),
                opts=aws_child,
            )
            identities.append(
                aws.eks.PodIdentityAssociation(
                    f"{name}-{suffix}",
                    cluster_name=args.cluster_name,
                    namespace=model.name,
                    service_account=service_account,
                    role_arn=role.arn,
                    tags=args.tags,
                    opts=pulumi.ResourceOptions(parent=self, depends_on=[policy]),
                )
            )
        script = self._object(f"{name}-weights-script", populate.script_config_map(model), inside)
        account = self._object(f"{name}-weights-service-account", populate.service_account(model), inside)
        self._object(f"{name}-netpol-weights", populate.network_policy(model, args.vpc_cidrs, args.interface_endpoints), inside)
        timeout = f"{math.ceil(populate.populate_seconds(model) / 60)}m"
        job = k8s_objects.create_resolved(
            f"{name}-weights-job",
            sources,
            functools.partial(
                _populate_job,
                model=model,
                pool=args.pool,
                hf_token=args.hf_token is not None,
                models=args.models,
                retire_days=args.retired_revision_days,
            ),
            SAMPLE_SOURCES,
            pulumi.ResourceOptions(
                parent=self,
                provider=args.provider,
                depends_on=[*before, *secrets, script, account, *identities],
                custom_timeouts=pulumi.CustomTimeouts(create=timeout, update=timeout),
            ),
        )
        return [script, *identities, job]

    def _object(self, name: str, manifest: dict[str, Any], opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
        return k8s_objects.create(name, manifest, opts)


def _policy_json(bucket_arn: str, document: Any, repo: str, revision: str) -> str:
    return json.dumps(document(bucket_arn, repo, revision))


def _populate_job(
    sources: builders.Sources, model: ModelConfig, pool: GpuPool, hf_token: bool, models: list[ModelConfig], retire_days: int
) -> dict[str, Any]:
    return populate.job(model, pool, sources, hf_token=hf_token, models=models, retire_days=retire_days)
