"""Pure builders for the EKS node monitoring agent: Helm values, and where its DCGM host engine runs.

One DCGM host engine per GPU node (wave3-facts Part A 5; aws/containers-roadmap#2763): the agent
connects to an nv-hostengine at localhost:5555 (its `DCGM_ADDRESS` default, not settable through chart
1.7.0), and the chart's `dcgm-server` DaemonSet serves one there (host port 5555; the agent image's own
DCGM 4.6.1). A second engine on the node (dcgm-exporter's embedded one, the GPU operator's default)
makes the agent report DCGMError, which sets AcceleratedHardwareReady=False on a healthy node and, with
karpenter.nodeRepair, replaces it. So `dcgm-server` is the engine: it tolerates every GPU pool's taints
(its default tolerates none) and runs on exactly the GPU pools' nodes, and the GPU operator's exporter
reads it (builders/gpu_operator.py: DCGM_REMOTE_HOSTENGINE_INFO=localhost:5555 with the exporter on the
host network, where the node's localhost is; the operator's own `nvidia-dcgm` stays off). Until
dcgm-server answers on a new node the exporter restarts (a few minutes without GPU metrics there). The agent
itself keeps the chart's toleration of every taint: it watches system and GPU nodes alike.
"""

from __future__ import annotations

from typing import Any

from builders.gpu_operator import tolerations
from builders.helm import deep_merge
from config.facts.conventions import POOL_LABEL
from config.sections.stack import StackConfig

RELEASE = "eks-node-monitoring-agent"
DCGM_HOST_ENGINE = "localhost:5555"
"""Where the agent (host network) and the GPU operator's exporter reach the node's nv-hostengine."""
DCGM_SERVER = "dcgm-server"
"""The chart's DaemonSet that runs nv-hostengine (templates/dcgm-daemonset.yaml at v1.7.0)."""

EKS_REGISTRY_ACCOUNT = "602401143452"
SAME_ACCOUNT_REGIONS = frozenset(
    {
        "us-east-1",
        "us-east-2",
        "us-west-1",
        "us-west-2",
        "ca-central-1",
        "sa-east-1",
        "eu-central-1",
        "eu-north-1",
        "eu-west-1",
        "eu-west-2",
        "eu-west-3",
        "ap-northeast-1",
        "ap-northeast-2",
        "ap-northeast-3",
        "ap-south-1",
        "ap-southeast-1",
        "ap-southeast-2",
    }
)
"""Regions whose EKS image registry is account 602401143452 in the region itself (EKS user guide,
"View Amazon container image registries for Amazon EKS add-ons", add-ons-images). Elsewhere the
registry is another account (af-south-1, ap-east-1, ap-southeast-3 to 7, the China regions, ...): the
image is pulled from the chart's default, us-west-2, across regions."""


def image_region(region: str) -> str:
    """The region whose EKS registry serves the agent's image to a stack in `region`."""
    return region if region in SAME_ACCOUNT_REGIONS else "us-west-2"


def gpu_nodes_affinity(cfg: StackConfig) -> dict[str, Any]:
    """Exactly the nodes of the stack's GPU pools (each NodePool labels its nodes with POOL_LABEL), on
    amd64 as the chart's own default requires."""
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": POOL_LABEL, "operator": "In", "values": sorted(p.name for p in cfg.gpu_pools)},
                            {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                        ]
                    }
                ]
            }
        }
    }


def values(cfg: StackConfig) -> dict[str, Any]:
    """The chart's values: the agent on every node, its DCGM host engine on every GPU pool's node."""
    region = image_region(cfg.region)
    base: dict[str, Any] = {
        # dcgm-server runs this image too (the chart's dcgmAgent.image applies only with its own tag)
        "nodeAgent": {"image": {"region": region, "account": EKS_REGISTRY_ACCOUNT}},
        "dcgmAgent": {
            "tolerations": tolerations(list(cfg.gpu_pools)),
            "affinity": gpu_nodes_affinity(cfg),
        },
    }
    return deep_merge(base, cfg.node_monitoring.extra_values)
