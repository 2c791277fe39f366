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

from builders import weights as weights_builders
from builders.gateway import policies as gateway_policies
from builders.gateway import prefix
from builders.gateway import proxies as gateway_proxies
from builders.gateway import router as gateway_router
from builders.iam import pod_identity_trust_json
from builders.ingress import endpoints as ingress_builders
from builders.serving import compile_cache, populate, scaling, warmup
from builders.serving import workload as builders
from components import k8s_objects
from components.helm import release
from components.options import inherited_depends_on
from config.derived import engine
from config.derived.hold import Hold
from config.facts import versions
from config.facts.conventions import populate_service_account, warmup_service_account
from config.sections.gateway import GatewayConfig
from config.sections.gpu_pools import GpuPool
from config.sections.ingress import IngressConfig
from config.sections.models import ModelConfig


@dataclass(frozen=True, kw_only=True)
class Endpoint:
    """An exposed model's route: its Ingress on the shared ALB, and what that route needs."""

    ingress: IngressConfig
    """The `ingress` section: host, scheme, certificate, client ranges and idle timeout."""
    load_balancer_sources: list[str]
    """The ALB's subnets, admitted on vLLM's port (the ALB targets pod IPs)."""
    after: list[pulumi.Resource]
    """What the Ingress and the exposed pods wait for: the load balancer controller's release (its
    webhook adds the readiness gate)."""


@dataclass(frozen=True, kw_only=True)
class Gateway:
    """The model's inference gateway: its router release and what it needs."""

    config: GatewayConfig
    """The `gateway` section: replicas and sizes of the proxies and pickers, the escape hatch."""
    envoy_image: pulumi.Input[str]
    """The Envoy image the proxies pull (through the image cache's Docker Hub rule where the stack has one)."""
    after: list[pulumi.Resource]
    """What the release waits for: the router's CRDs (components/gateway.py)."""
    hold: Hold
    """The picker's flow control: thresholds above KEDA's targets, the TTL (config/derived/hold.py)."""


@dataclass(frozen=True, kw_only=True)
class S3Weights:
    """Weights streamed from the stack's bucket: the model's read and populate roles, and the populate Job."""

    bucket_arn: pulumi.Input[str]
    """ARN of the weights bucket, which both roles' policies are scoped to."""
    cluster_name: pulumi.Input[str]
    """The cluster, for the roles' Pod Identity associations."""
    models: list[ModelConfig]
    """Every model of the stack: revisions of a shared repository that stay in the bucket."""
    retired_revision_days: int
    """Days a revision no model uses stays in the bucket (weights.retiredRevisionDays)."""
    tags: dict[str, str]
    """Tags on the roles and their Pod Identity associations."""


@dataclass(frozen=True, kw_only=True)
class VllmModelArgs:
    """Inputs of the VllmModel component. A mode is a sub-object, present or absent as a whole:
    `endpoint` when the model is exposed, `weights` when it streams from S3."""

    model: ModelConfig
    """The model's entry of `models`."""
    pool: GpuPool
    """The GPU pool it runs on."""
    provider: k8s.Provider
    """Kubernetes provider of the cluster."""
    sources: pulumi.Output[builders.Sources]
    """Image reference, weights bucket and region, resolved at deploy time."""
    prometheus_url: str
    """In-cluster Prometheus address (from the Observability component) for KEDA's triggers."""
    monitoring_namespace: str
    """Namespace of Prometheus, admitted by the NetworkPolicy."""
    vpc_cidrs: list[str]
    """Every CIDR block of the VPC: the Ingress' default client range, never 'the internet' in egress rules."""
    interface_endpoints: list[str] = field(default_factory=list)
    """Subnets of an existing VPC's interface endpoints (S3 inside the VPC), reachable on 443."""
    alb_idle_timeout_seconds: int
    """The shared ALB's idle timeout, which vLLM's keep-alives are derived from."""
    hf_token: pulumi.Input[str] | None
    """Hugging Face token (secret), mounted as a file; None when not configured."""
    api_key: pulumi.Input[str] | None = None
    """API key (secret) vLLM requires on /v1 requests; None for none."""
    endpoint: Endpoint | None = None
    """The model's Ingress and what it needs; None when the model is not exposed."""
    gateway: Gateway
    """The model's gateway: every caller reaches the model through it, and it holds requests while no replica can take them."""
    weights: S3Weights | None = None
    """The S3 weights' roles and populate Job; None when the model downloads from Hugging Face."""
    scales_to_zero: bool
    """replicas.min is 0 (config/derived/state.py ModelState.scales_to_zero): KEDA wakes it on the requests
    its gateway holds (builders/serving/scaling.py gateway_requests_query)."""
    scale_up_miss_seconds: int | None = None
    """The model's scale-up budget on a new node: the floor of the default scale-down window."""
    gpu_labels: tuple[str, ...] = ()
    """The GPU types of the pool's hosts that hold a replica (ModelState.gpu_labels): a compile cache and a warm-up Job each."""

    def __post_init__(self) -> None:
        # The modes must be the model's own: a model streaming from S3 without its roles and populate
        # Job would start and find no weights.
        if (self.weights is not None) != self.model.streams_from_s3:
            raise ValueError(f"{self.model.name}: weights (S3) must be given exactly when the model streams from S3")


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
    load_balancer_hostname: pulumi.Output[str] | None

    def __init__(self, name: str, args: VllmModelArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmplatform:index:VllmModel", name, None, opts)
        model = args.model
        after = inherited_depends_on(opts)
        base = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=after)
        gateway = args.gateway
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
        secrets = list(needs)
        endpoint = args.endpoint
        route_after = endpoint.after if endpoint is not None else []
        flows = builders.ModelFlows(
            args.monitoring_namespace,
            args.vpc_cidrs,
            args.interface_endpoints,
            gateway_peers=gateway_policies.gateway_peers(model),
            kv_events=(prefix.KV_EVENTS_PORT, gateway_policies.picker_peers(model)) if prefix.precise(model) else None,
        )
        # The gateway's own policies, then the gateway (the model's front door, at zero too: its picker holds
        # what no replica can take), then the Ingress, then vLLM's policy, which admits the gateway and nothing
        # else a caller sends: vLLM's rule changes only once the ALB's rule has moved to the serving gateway
        # (on the `up` from the pre-gateway release, it dropped the ALB or the interceptor only then). The allow
        # rules come before the deny and the deny before the replicas: a running pod never sees the deny alone,
        # nor no policy.
        deny, *vllm_allows = builders.network_policies(model, flows)
        gateway_allows = gateway_policies.policies(
            model,
            load_balancer_sources=endpoint.load_balancer_sources if endpoint is not None else [],
            monitoring_namespace=args.monitoring_namespace,
            vpc_cidrs=args.vpc_cidrs,
        )
        gateway_allowed = [self._object(f"{name}-netpol-{p['metadata']['name']}", p, inside) for p in gateway_allows]
        front = self._gateway(name, args, gateway, [*after, namespace, *gateway_allowed, *secrets])
        self.base_url = None
        self.load_balancer_hostname = None
        moved: list[pulumi.Resource] = []
        if endpoint is not None:
            # After the gateway's proxies are ready (their budget waits for them, builders/gateway/policies.py).
            # A replacement (a change of namespace: the `up` that removes the HTTP add-on moves a model at zero's
            # Ingress out of KEDA's namespace) creates the new Ingress before it deletes the old: the new one's
            # group.order puts its rule first meanwhile, and the group is never empty (the controller deletes an
            # empty group's ALB: dev's model at zero is the only member of its group).
            ingress = self._object(
                f"{name}-ingress",
                ingress_builders.ingress(model, endpoint.ingress, args.vpc_cidrs),
                pulumi.ResourceOptions(
                    parent=self,
                    provider=args.provider,
                    depends_on=[*after, namespace, *route_after, *front, *gateway_allowed],
                    custom_timeouts=pulumi.CustomTimeouts(create=ingress_builders.READY_TIMEOUT, update=ingress_builders.READY_TIMEOUT),
                ),
            )
            moved.append(ingress)
            settings = endpoint.ingress
            status = ingress.status  # type: ignore[attr-defined]
            self.base_url = status.apply(lambda s: ingress_builders.base_url(model, settings, _hostname(s)))
            self.load_balancer_hostname = status.apply(_hostname)
        # vLLM's policy changes after the Ingress: on the `up` from the release where the ALB reached vLLM
        # itself, the ALB's rule has moved to the proxies before vLLM stops admitting the load balancer.
        after_front = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[*after, namespace, *front, *moved])
        allowed = [*gateway_allowed, *(self._object(f"{name}-netpol-{p['metadata']['name']}", p, after_front) for p in vllm_allows)]
        protected = self._object(
            f"{name}-netpol-{deny['metadata']['name']}",
            deny,
            pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[*after, namespace, *allowed]),
        )
        # Readiness can take long: a GPU node launch, the image pull and the model download and load.
        # Pulumi's default 10-minute wait would give up first. The load balancer controller's
        # webhook must be up before exposed pods are admitted, or they miss their readiness gate.
        ready_seconds = engine.startup_budget_seconds(model, args.pool) + NODE_AND_IMAGE_SECONDS
        ready_minutes = f"{math.ceil(ready_seconds / 60)}m"
        # An update rolls the replicas one at a time (surge 1, none unavailable): the first may need a
        # node, each further one waits for an old replica's drain and its own load.
        step_seconds = engine.startup_budget_seconds(model, args.pool) + model.drain.termination_grace_period_seconds
        rollout_minutes = f"{math.ceil((ready_seconds + (model.replicas.max - 1) * step_seconds) / 60)}m"
        sources = args.sources
        if args.weights is not None:
            needs += self._weights(name, args, args.weights, inside, list(needs))
        build = functools.partial(
            builders.deployment,
            model,
            args.pool,
            alb_idle_timeout_seconds=args.alb_idle_timeout_seconds,
            hf_token=args.hf_token is not None,
            api_key=args.api_key is not None,
            weights_wait_seconds=populate.populate_seconds(model),
            gpu_labels=args.gpu_labels,
        )
        # The key's fingerprint in the pod template rolls the replicas when the key is rotated. It is
        # one-way (builders.api_key_fingerprint), so it leaves the secret: a secret input would make
        # the whole pod spec secret and hide every other change from the preview's diff.
        fingerprint: pulumi.Output[str | None] = (
            pulumi.Output.unsecret(
                pulumi.Output.from_input(args.api_key).apply(
                    functools.partial(builders.api_key_fingerprint, pulumi.get_stack(), model.name)
                )
            )
            if args.api_key is not None
            else pulumi.Output.from_input(None)
        )
        deployment = k8s_objects.create_resolved(
            f"{name}-deployment",
            pulumi.Output.all(sources, fingerprint).apply(lambda v: (v[0], v[1])),
            lambda resolved: build(sources=resolved[0], api_key_fingerprint=resolved[1]),
            (SAMPLE_SOURCES, None),
            pulumi.ResourceOptions(
                parent=self,
                provider=args.provider,
                depends_on=[*after, namespace, *needs, *route_after, *allowed, protected],
                custom_timeouts=pulumi.CustomTimeouts(create=ready_minutes, update=rollout_minutes),
                # spec.replicas is the count at creation only; then KEDA's HPA owns it (builders.deployment)
                ignore_changes=["spec.replicas"],
            ),
        )
        self._object(f"{name}-service", builders.service(model), inside)
        self._object(f"{name}-pdb", builders.pod_disruption_budget(model), inside)
        self._object(
            f"{name}-scaledobject",
            scaling.scaled_object(model, args.prometheus_url, args.pool, args.scale_up_miss_seconds, scales_to_zero=args.scales_to_zero),
            # after the proxies are ready: at zero its wake reads their series, and a query with none is an
            # error that KEDA's fallback answers with a replica
            pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[deployment, *front]),
        )
        self.namespace = model.name
        # the model's one front door in the cluster too: its gateway's proxies
        self.service_name = gateway_router.proxy_name(model)
        self.url = gateway_router.url(model)
        self.register_outputs({"namespace": self.namespace, "url": self.url, "baseUrl": self.base_url})

    def _gateway(self, name: str, args: VllmModelArgs, gateway: Gateway, before: list[pulumi.Resource]) -> list[pulumi.Resource]:
        """The model's router release (Envoy proxies, Endpoint Pickers, the InferencePool) and the budget
        that keeps a proxy up through a node drain, which `pulumi up` also waits on until every proxy is
        ready (the release itself is not awaited: see below). Returns both: what the Ingress waits for."""
        model = args.model
        opts = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[*before, *gateway.after])
        # the budget's await (every proxy ready) ends within the proxies' start on a system node
        wait = pulumi.CustomTimeouts(create="10m", update="10m")
        awaited = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(custom_timeouts=wait))
        budgets = [self._object(f"{name}-pdb-{b['metadata']['name']}", b, awaited) for b in gateway_policies.disruption_budgets(model)]
        # The platform's proxies (the chart's own are kept at zero: builders/gateway/proxies.py), started and awaited
        # before the release, so an upgrade starts them before the chart's stop and the front door never empties.
        bootstrap = gateway_router.envoy_bootstrap(model, args.alb_idle_timeout_seconds, hold_seconds=gateway.hold.ttl_seconds)
        envoy_config = self._object(f"{name}-proxy-config", gateway_proxies.config_map(model, bootstrap), opts)
        envoy_account = self._object(f"{name}-proxy-service-account", gateway_proxies.service_account(model), opts)
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
                alb_idle_timeout_seconds=args.alb_idle_timeout_seconds,
                envoy_image=image,
                hf_token_secret=hf_secret,
                hold=gateway.hold,
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
        picker_hash = gateway_router.config_hash(gateway_router.picker_config_text(model, gateway.hold))
        picker = self._object(
            f"{name}-pdb-{gateway_router.picker_name(model)}",
            gateway_policies.picker_budget(model, picker_hash),
            pulumi.ResourceOptions.merge(awaited, pulumi.ResourceOptions(depends_on=[router])),
        )
        return [router, proxies, *budgets, picker]

    def _weights(
        self,
        name: str,
        args: VllmModelArgs,
        weights: S3Weights,
        inside: pulumi.ResourceOptions,
        secrets: list[pulumi.Resource],
    ) -> list[pulumi.Resource]:
        """S3 weights: read and populate roles through Pod Identity, the script, and the populate Job."""
        model = args.model
        before = inherited_depends_on(inside)
        bucket_arn = pulumi.Output.from_input(weights.bucket_arn)
        aws_child = pulumi.ResourceOptions(parent=self)
        identities: list[pulumi.Resource] = []
        for suffix, service_account, document in (
            ("weights-read", model.name, weights_builders.reader_policy),
            ("weights-populate", populate_service_account(model.name), weights_builders.populate_policy),
            *([("compile-warmup", warmup_service_account(model.name), weights_builders.warmup_policy)] if model.compile_cache_used else []),
        ):
            role = aws.iam.Role(
                f"{name}-{suffix}",
                description=f"{model.name}: {suffix.replace('-', ' ')} ({model.hugging_face_id}@{model.revision[:12]})",
                assume_role_policy=pulumi.Output.from_input(weights.cluster_name).apply(
                    functools.partial(pod_identity_trust_json, namespace=model.name, service_account=service_account)
                ),
                tags=weights.tags,
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
                    cluster_name=weights.cluster_name,
                    namespace=model.name,
                    service_account=service_account,
                    role_arn=role.arn,
                    tags=weights.tags,
                    opts=pulumi.ResourceOptions(parent=self, depends_on=[policy]),
                )
            )
        script = self._object(f"{name}-weights-script", populate.script_config_map(model), inside)
        account = self._object(f"{name}-weights-service-account", populate.service_account(model), inside)
        self._object(f"{name}-netpol-weights", populate.network_policy(model, args.vpc_cidrs, args.interface_endpoints), inside)
        timeout = f"{math.ceil(populate.populate_seconds(model) / 60)}m"
        job = k8s_objects.create_resolved(
            f"{name}-weights-job",
            args.sources,
            functools.partial(
                _populate_job,
                model=model,
                pool=args.pool,
                hf_token=args.hf_token is not None,
                models=weights.models,
                retire_days=weights.retired_revision_days,
            ),
            SAMPLE_SOURCES,
            pulumi.ResourceOptions(
                parent=self,
                provider=args.provider,
                depends_on=[*before, *secrets, script, account, *identities],
                custom_timeouts=pulumi.CustomTimeouts(create=timeout, update=timeout),
            ),
        )
        if model.compile_cache_used:
            self._warmups(name, args, inside, [*before, *secrets, script, job, *identities])
        return [script, *identities, job]

    def _warmups(self, name: str, args: VllmModelArgs, inside: pulumi.ResourceOptions, after: list[pulumi.Resource]) -> None:
        """One compile warm-up Job per GPU type, after the weights are in the bucket; nothing waits for them,
        `pulumi up` included (a replica that starts first compiles, builders/serving/warmup.py)."""
        model = args.model
        account = self._object(f"{name}-warmup-service-account", warmup.service_account(model), inside)
        policy = self._object(
            f"{name}-netpol-compile-warmup", warmup.network_policy(model, args.vpc_cidrs, args.interface_endpoints), inside
        )
        for label in args.gpu_labels:
            k8s_objects.create_resolved(
                f"{name}-warmup-{label}",
                args.sources,
                functools.partial(
                    _warmup_job, model=model, pool=args.pool, gpu_label=label, alb_idle_timeout_seconds=args.alb_idle_timeout_seconds
                ),
                SAMPLE_SOURCES,
                # not awaited (the Job's pulumi.com/skipAwait): `pulumi up` neither waits for the warm-up nor fails with it
                pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[*after, account, policy]),
            )

    def _object(self, name: str, manifest: dict[str, Any], opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
        return k8s_objects.create(name, manifest, opts)


def _policy_json(bucket_arn: str, document: Any, repo: str, revision: str) -> str:
    return json.dumps(document(bucket_arn, repo, revision))


def _proxies(image: str, model: ModelConfig, cfg: GatewayConfig, text: str, drain_seconds: int) -> dict[str, Any]:
    return gateway_proxies.deployment(model, cfg, image=image, text=text, drain_seconds=drain_seconds)


def _warmup_job(
    sources: builders.Sources, model: ModelConfig, pool: GpuPool, gpu_label: str, alb_idle_timeout_seconds: int
) -> dict[str, Any]:
    """The warm-up Job of one GPU type, its key from the replica's own arguments (what the replicas fetch)."""
    key = compile_cache.key(model, gpu_label, builders.vllm_args(model, pool, alb_idle_timeout_seconds, sources))
    return warmup.job(model, pool, sources, gpu_label=gpu_label, key=key)


def _populate_job(
    sources: builders.Sources, model: ModelConfig, pool: GpuPool, hf_token: bool, models: list[ModelConfig], retire_days: int
) -> dict[str, Any]:
    return populate.job(model, pool, sources, hf_token=hf_token, models=models, retire_days=retire_days)
