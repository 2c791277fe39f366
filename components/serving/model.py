"""VllmModel: one model's serving stack, scaled by KEDA on vLLM's own metrics, behind its own gateway."""

from __future__ import annotations

import functools
import math

import pulumi
import pulumi_kubernetes as k8s

from builders.gateway import policies as gateway_policies
from builders.gateway import prefix
from builders.gateway import router as gateway_router
from builders.serving import multinode, populate, scaling
from builders.serving import workload as builders
from components import k8s_objects
from components.options import inherited_depends_on
from components.serving import gateway as gateway_part
from components.serving import ingress as ingress_part
from components.serving import weights as weights_part
from components.serving.args import NODE_AND_IMAGE_SECONDS, SAMPLE_SOURCES, VllmModelArgs
from config.derived import engine


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
        namespace = k8s_objects.create(f"{name}-namespace", builders.namespace(model), base)
        inside = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[*after, namespace])
        k8s_objects.create(f"{name}-service-account", builders.service_account(model), inside)
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
        gateway_allowed = [k8s_objects.create(f"{name}-netpol-{p['metadata']['name']}", p, inside) for p in gateway_allows]
        front = gateway_part.build(self, name, args, gateway, [*after, namespace, *gateway_allowed, *secrets])
        self.base_url = None
        self.load_balancer_hostname = None
        moved: list[pulumi.Resource] = []
        if endpoint is not None:
            route = ingress_part.build(self, name, args, endpoint, [*after, namespace, *route_after, *front, *gateway_allowed])
            moved.append(route.ingress)
            self.base_url = route.base_url
            self.load_balancer_hostname = route.load_balancer_hostname
        # vLLM's policy changes after the Ingress: on the `up` from the release where the ALB reached vLLM
        # itself, the ALB's rule has moved to the proxies before vLLM stops admitting the load balancer.
        after_front = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[*after, namespace, *front, *moved])
        allowed = [*gateway_allowed, *(k8s_objects.create(f"{name}-netpol-{p['metadata']['name']}", p, after_front) for p in vllm_allows)]
        protected = k8s_objects.create(
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
            needs += weights_part.build(self, name, args, args.weights, inside, list(needs))
        build = functools.partial(
            builders.deployment,
            model,
            args.pool,
            alb_idle_timeout_seconds=args.facts.path.chain.alb_idle,
            hf_token=args.hf_token is not None,
            api_key=args.api_key is not None,
            weights_wait_seconds=populate.populate_seconds(model),
            gpu_labels=args.facts.gpu_labels,
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
        # A model spanning nodes: a LeaderWorkerSet of groups, each a replica, made from the same pod
        # (builders/serving/multinode.py); its CRDs and controller come first (components/lws.py, in depends_on).
        workload = "leaderworkerset" if model.multi_node else "deployment"

        def manifest(resolved: tuple[builders.Sources, str | None]) -> dict[str, object]:
            built = build(sources=resolved[0], api_key_fingerprint=resolved[1])
            return multinode.leader_worker_set(model, args.pool, built) if model.multi_node else built

        deployment = k8s_objects.create_resolved(
            f"{name}-{workload}",
            pulumi.Output.all(sources, fingerprint).apply(lambda v: (v[0], v[1])),
            manifest,
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
        k8s_objects.create(f"{name}-service", builders.service(model), inside)
        k8s_objects.create(f"{name}-pdb", builders.pod_disruption_budget(model), inside)
        k8s_objects.create(
            f"{name}-scaledobject",
            scaling.scaled_object(
                model, args.prometheus_url, args.pool, args.facts.scale_up.miss, scales_to_zero=args.facts.scales_to_zero
            ),
            # after the proxies are ready: at zero its wake reads their series, and a query with none is an
            # error that KEDA's fallback answers with a replica
            pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[deployment, *front]),
        )
        self.namespace = model.name
        # the model's one front door in the cluster too: its gateway's proxies
        self.service_name = gateway_router.proxy_name(model)
        self.url = gateway_router.url(model)
        self.register_outputs({"namespace": self.namespace, "url": self.url, "baseUrl": self.base_url})
