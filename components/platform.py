"""build_platform: wire the components together in dependency order."""

from __future__ import annotations

from typing import Any

import pulumi

from builders import network_policies, node_monitoring
from builders.network import node_subnet_selector_terms
from builders.observability.rules import ModelWatch
from builders.serving.workload import Sources
from components.cluster import Cluster, ClusterArgs
from components.efa import Efa, EfaArgs
from components.gateway import GatewayCrds, GatewayCrdsArgs
from components.gpu_operator import GpuOperator, GpuOperatorArgs
from components.headroom import Headroom, HeadroomArgs
from components.images import ImageCache, ImageCacheArgs
from components.ingress import LoadBalancerController, LoadBalancerControllerArgs
from components.karpenter import Karpenter, KarpenterArgs
from components.keda import Keda, KedaArgs
from components.lws import LeaderWorkerSets, LeaderWorkerSetsArgs
from components.network import Network, NetworkArgs
from components.network_policies import PlatformNetworkPolicies, PlatformNetworkPoliciesArgs
from components.node_monitoring import NodeMonitoring, NodeMonitoringArgs
from components.observability import Observability, ObservabilityArgs
from components.serving import Endpoint, Gateway, S3Weights, VllmModel, VllmModelArgs
from components.weights import WeightsBucket, WeightsBucketArgs
from config.derived import state
from config.derived.exposure import exposed_models
from config.facts import versions
from config.facts.conventions import platform_tags
from config.load import Secrets
from config.sections import images
from config.sections.models import ModelConfig
from config.sections.network import NewVpc
from config.sections.stack import StackConfig


def build_platform(cfg: StackConfig, secrets: Secrets) -> dict[str, Any]:
    """Create every component of the platform; return the stack outputs (the contract)."""
    derived = state.of(cfg)
    tags = platform_tags(cfg.cluster.name, cfg.environment, cfg.tags)
    network = Network(
        "network",
        NetworkArgs(config=cfg.network, cluster_name=cfg.cluster.name, region=cfg.region, tags=tags),
    )
    cluster = Cluster(
        "cluster",
        ClusterArgs(
            config=cfg.cluster,
            deletion_protection=cfg.deletion_protection,
            vpc_id=network.vpc_id,
            private_subnet_ids=network.private_subnet_ids,
            region=cfg.region,
            tags=tags,
        ),
    )
    efa = (
        Efa(
            "efa",
            EfaArgs(pools=list(cfg.gpu_pools), vpc_id=network.vpc_id, provider=cluster.provider, tags=tags),
            opts=pulumi.ResourceOptions(depends_on=[cluster]),
        )
        if any(p.efa for p in cfg.gpu_pools)
        else None
    )
    karpenter = Karpenter(
        "karpenter",
        KarpenterArgs(
            config=cfg.karpenter,
            pools=list(cfg.gpu_pools),
            derived=derived.pools,
            cluster_name=cluster.cluster_name,
            cluster_security_group_id=cluster.cluster_security_group_id,
            subnet_selector_terms=node_subnet_selector_terms(cfg.network, cfg.cluster.name),
            vpc_zones=cfg.network.availability_zones if isinstance(cfg.network, NewVpc) else None,
            oidc_provider_arn=cluster.oidc_provider_arn,
            oidc_issuer=cluster.oidc_issuer,
            region=cfg.region,
            provider=cluster.provider,
            tags=tags,
            efa=efa.placements if efa is not None else {},
        ),
        opts=pulumi.ResourceOptions(depends_on=[cluster]),
    )
    observability = Observability(
        "observability",
        ObservabilityArgs(
            config=cfg.observability,
            models=[ModelWatch(m.name, m.name, m.slo or cfg.observability.slo, derived.model(m.name).scales_to_zero) for m in cfg.models],
            grafana_admin_password=secrets.grafana_admin_password or "",
            gpu_operator_namespace=cfg.gpu_operator.namespace,
            provider=cluster.provider,
        ),
        opts=pulumi.ResourceOptions(depends_on=[cluster]),
    )
    monitoring = cfg.node_monitoring.enabled
    if monitoring:
        NodeMonitoring(
            "node-monitoring", NodeMonitoringArgs(config=cfg, provider=cluster.provider), opts=pulumi.ResourceOptions(depends_on=[cluster])
        )
    gpu_operator = GpuOperator(
        "gpu-operator",
        GpuOperatorArgs(
            config=cfg.gpu_operator,
            pools=list(cfg.gpu_pools),
            provider=cluster.provider,
            host_engine=node_monitoring.DCGM_HOST_ENGINE if monitoring else None,
        ),
        opts=pulumi.ResourceOptions(depends_on=[cluster]),
    )
    keda = Keda("keda", KedaArgs(config=cfg.keda, provider=cluster.provider), opts=pulumi.ResourceOptions(depends_on=[observability]))
    groups: list[pulumi.Resource] = []
    if any(m.multi_node for m in cfg.models):
        # the controller of the multi-node models' groups (their LeaderWorkerSets need its CRDs and webhook)
        groups.append(
            LeaderWorkerSets("lws", LeaderWorkerSetsArgs(provider=cluster.provider), opts=pulumi.ResourceOptions(depends_on=[cluster]))
        )
    controller = None
    if exposed_models(cfg):
        controller = LoadBalancerController(
            "alb-controller",
            LoadBalancerControllerArgs(
                config=cfg.ingress,
                cluster_name=cluster.cluster_name,
                region=cfg.region,
                vpc_id=network.vpc_id,
                provider=cluster.provider,
                tags=tags,
            ),
            opts=pulumi.ResourceOptions(depends_on=[cluster]),
        )
    PlatformNetworkPolicies(
        "network-policies",
        PlatformNetworkPoliciesArgs(policies=network_policies.platform(cfg), provider=cluster.provider),
        opts=pulumi.ResourceOptions(depends_on=[observability, gpu_operator, keda, *([controller] if controller else []), *groups]),
    )
    bucket = (
        WeightsBucket("weights", WeightsBucketArgs(config=cfg.weights, cluster_name=cfg.cluster.name, tags=tags))
        if cfg.uses_s3_weights
        else None
    )
    cache = None
    upstreams = sorted({u for m in cfg.models if (u := images.upstream_for(m.image.repository))}, key=lambda u: u.prefix)
    if cfg.image_cache.enabled and upstreams:
        cache = ImageCache(
            "image-cache",
            ImageCacheArgs(
                upstreams=upstreams,
                cluster_name=cfg.cluster.name,
                region=cfg.region,
                docker_hub_username=cfg.image_cache.docker_hub_username,
                docker_hub_access_token=secrets.docker_hub_access_token,
                node_role_names=[karpenter.node_role_name, cluster.system_node_role_name],
                tags=tags,
            ),
        )
    registry = cache.registry if cache is not None else None
    bucket_name = bucket.name if bucket is not None else None

    def sources_of(model: ModelConfig) -> pulumi.Output[Sources]:
        return pulumi.Output.all(registry, bucket_name).apply(
            lambda a: Sources(
                image=images.image_reference(model.image, a[0], cfg.cluster.name),
                bucket=a[1] if model.streams_from_s3 else None,
                region=cfg.region,
            )
        )

    sources = {m.name: sources_of(m) for m in cfg.models}
    crds = GatewayCrds("gateway-crds", GatewayCrdsArgs(provider=cluster.provider), opts=pulumi.ResourceOptions(depends_on=[cluster]))
    envoy_image: pulumi.Input[str] = versions.ENVOY_IMAGE
    # Envoy through the cache's Docker Hub rule when the stack has one (the models' images made it)
    if registry is not None and images.upstream_for(versions.ENVOY_IMAGE) in upstreams:
        envoy_image = registry.apply(lambda r: images.cached_reference(versions.ENVOY_IMAGE, r, cfg.cluster.name))
    pulls_after: list[pulumi.Resource] = [cache] if cache is not None else []
    if any(p.headroom for p in cfg.gpu_pools):
        Headroom(
            "headroom",
            HeadroomArgs(
                pools=list(cfg.gpu_pools),
                derived=derived.pools,
                images={name: src.apply(lambda s: s.image) for name, src in sources.items()},
                provider=cluster.provider,
            ),
            opts=pulumi.ResourceOptions(depends_on=[gpu_operator, *karpenter.node_pools.values(), *pulls_after]),
        )
    models: dict[str, Any] = {}
    hostname: pulumi.Output[str] | None = None
    for model in cfg.models:
        pool = cfg.pool(model.pool)
        assert pool is not None  # validated
        facts = derived.model(model.name)
        endpoint = None
        if facts.exposure.exposed:
            endpoint = Endpoint(
                ingress=cfg.ingress,
                load_balancer_sources=network_policies.load_balancer_sources(cfg),
                after=[controller.release] if controller is not None else [],
            )
        weights = None
        if bucket is not None and model.streams_from_s3:
            weights = S3Weights(
                bucket_arn=bucket.arn,
                cluster_name=cluster.cluster_name,
                models=list(cfg.models),
                retired_revision_days=cfg.weights.retired_revision_days,
                tags=tags,
            )
        gateway = Gateway(config=cfg.gateway, envoy_image=envoy_image, after=[crds])
        served = VllmModel(
            f"model-{model.name}",
            VllmModelArgs(
                model=model,
                pool=pool,
                provider=cluster.provider,
                sources=sources[model.name],
                prometheus_url=observability.prometheus_url,
                monitoring_namespace=cfg.observability.namespace,
                vpc_cidrs=cfg.vpc_cidrs,
                interface_endpoints=network_policies.interface_endpoints(cfg),
                hf_token=secrets.hf_token if model.gated else None,
                api_key=secrets.api_keys.get(model.name),
                endpoint=endpoint,
                weights=weights,
                gateway=gateway,
                facts=facts,
            ),
            opts=pulumi.ResourceOptions(
                depends_on=[
                    gpu_operator,
                    keda,
                    observability,
                    karpenter.node_pools[pool.name],
                    *pulls_after,
                    *(groups if model.multi_node else []),
                    *([efa] if efa is not None and pool.efa else []),
                ]
            ),
        )
        if hostname is None:
            hostname = served.load_balancer_hostname  # the group's one ALB: every exposed model's Ingress has it
        models[model.name] = {
            "namespace": served.namespace,
            "service": served.service_name,
            "url": served.url,
            "host": None,  # deprecated (config/facts/outputs.py): the interceptor's Host header, gone with it
            "servedModelName": model.name,
            "baseUrl": served.base_url,
            "weightsSource": model.weights.source,
            "scaleUpSeconds": facts.scale_up.as_output(),
        }
    return {
        "region": cfg.region,
        "clusterName": cluster.cluster_name,
        "clusterEndpoint": cluster.endpoint,
        "kubeconfig": cluster.kubeconfig,
        "oidcProviderArn": cluster.oidc_provider_arn,
        "vpcId": network.vpc_id,
        "privateSubnetIds": network.private_subnet_ids,
        "karpenterNodeRoleArn": karpenter.node_role_arn,
        "interruptionQueueName": karpenter.interruption_queue_name,
        "gpuPools": sorted(p.name for p in cfg.gpu_pools),
        "prometheusUrl": observability.prometheus_url,
        "weightsBucket": bucket_name,
        "imageRegistry": registry,
        "loadBalancerHostname": hostname,
        "models": models,
    }
