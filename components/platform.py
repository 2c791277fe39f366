"""build_platform: wire the components together in dependency order."""

from __future__ import annotations

from typing import Any

from components.cluster import Cluster, ClusterArgs
from components.network import Network, NetworkArgs
from config.load import Secrets
from config.stack import StackConfig


def build_platform(cfg: StackConfig, secrets: Secrets) -> dict[str, Any]:
    """Create every component of the platform; return the stack outputs (the contract)."""
    del secrets  # used by the serving and observability components
    tags = {"llm-platform/cluster": cfg.cluster.name, "llm-platform/environment": cfg.environment, **cfg.tags}
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
            public_subnet_ids=network.public_subnet_ids,
            tags=tags,
        ),
    )
    return {
        "region": cfg.region,
        "clusterName": cluster.cluster_name,
        "clusterEndpoint": cluster.endpoint,
        "kubeconfig": cluster.kubeconfig,
        "oidcProviderArn": cluster.oidc_provider_arn,
        "vpcId": network.vpc_id,
        "privateSubnetIds": network.private_subnet_ids,
    }
