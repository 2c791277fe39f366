"""Pinned upstream versions: charts, images, add-ons, AMIs.

One place to bump. Each pin names where it was checked; see also
docs/upstream-facts.md. Re-check before bumping.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True)
class Chart:
    """A pinned Helm chart: its name (or OCI reference), version and repository."""

    name: str
    version: str
    repository: str | None = None


# Kubernetes minor versions this program supports: the EKS add-ons below are pinned builds for
# 1.35 (kube-proxy must match the minor version). Karpenter 1.14 supports 1.35/1.36; KEDA 2.20 is
# tested on 1.33-1.35, so 1.35 is the newest version every component supports.
KUBERNETES_VERSIONS: Final = ("1.35",)
KUBERNETES_DEFAULT: Final = "1.35"

KARPENTER_VERSION: Final = "1.14.1"  # oci chart, no "v" (aws/karpenter-provider-aws charts/karpenter)
KARPENTER_CHART: Final = "oci://public.ecr.aws/karpenter/karpenter"

KEDA_VERSION: Final = "2.20.2"
KEDA_REPOSITORY: Final = "https://kedacore.github.io/charts"

KUBE_PROMETHEUS_STACK_VERSION: Final = "88.5.3"
KUBE_PROMETHEUS_STACK_REPOSITORY: Final = "https://prometheus-community.github.io/helm-charts"

GPU_OPERATOR_VERSION: Final = "v26.7.0"  # chart version keeps the "v"
GPU_OPERATOR_REPOSITORY: Final = "https://helm.ngc.nvidia.com/nvidia"

NODE_MONITORING_AGENT_VERSION: Final = "1.7.0"  # aws/eks-node-monitoring-agent tag v1.7.0 (image v1.7.0-eksbuild.1, DCGM 4.6.1)
NODE_MONITORING_AGENT_REPOSITORY: Final = "https://aws.github.io/eks-node-monitoring-agent"

AWS_LOAD_BALANCER_CONTROLLER_VERSION: Final = "3.5.0"  # chart and app versions aligned since 3.0.0
AWS_LOAD_BALANCER_CONTROLLER_REPOSITORY: Final = "https://aws.github.io/eks-charts"

KARPENTER: Final = Chart(KARPENTER_CHART, KARPENTER_VERSION)
KEDA: Final = Chart("keda", KEDA_VERSION, KEDA_REPOSITORY)
KUBE_PROMETHEUS_STACK: Final = Chart("kube-prometheus-stack", KUBE_PROMETHEUS_STACK_VERSION, KUBE_PROMETHEUS_STACK_REPOSITORY)
GPU_OPERATOR: Final = Chart("gpu-operator", GPU_OPERATOR_VERSION, GPU_OPERATOR_REPOSITORY)
NODE_MONITORING_AGENT: Final = Chart("eks-node-monitoring-agent", NODE_MONITORING_AGENT_VERSION, NODE_MONITORING_AGENT_REPOSITORY)
AWS_LOAD_BALANCER_CONTROLLER: Final = Chart(
    "aws-load-balancer-controller", AWS_LOAD_BALANCER_CONTROLLER_VERSION, AWS_LOAD_BALANCER_CONTROLLER_REPOSITORY
)

# The inference gateway (docs: ../shared/reference/wave3-facts.md Part A 2.1-2.2). The router's
# charts are published as OCI artifacts with the "v"; their git values default the EPP image to
# `main` / Always (the release rewrites it), so the image is pinned here, never left to the chart.
LLM_D_ROUTER_VERSION: Final = "v0.10.0"
LLM_D_ROUTER: Final = Chart("oci://ghcr.io/llm-d/charts/llm-d-router-standalone", LLM_D_ROUTER_VERSION)
EPP_IMAGE: Final = ("ghcr.io/llm-d", "llm-d-router-endpoint-picker", LLM_D_ROUTER_VERSION)
"""(registry, repository, tag) of the Endpoint Picker (GitHub's registry: no ECR pull-through rule without a GitHub token)."""
ENVOY_IMAGE: Final = "docker.io/envoyproxy/envoy:distroless-v1.33.2"
"""The standalone chart's Envoy preset at v0.10.0; through the image cache's Docker Hub rule where the stack has one."""
GATEWAY_API_INFERENCE_EXTENSION_VERSION: Final = "v1.6.0"
GATEWAY_CRDS: Final = (
    (
        "inferencepools",
        "https://raw.githubusercontent.com/kubernetes-sigs/gateway-api-inference-extension/"
        f"{GATEWAY_API_INFERENCE_EXTENSION_VERSION}/config/crd/bases/inference.networking.k8s.io_inferencepools.yaml",
    ),
    (
        "inferenceobjectives",
        f"https://raw.githubusercontent.com/llm-d/llm-d-router/{LLM_D_ROUTER_VERSION}/config/crd/bases/llm-d.ai_inferenceobjectives.yaml",
    ),
    (
        "inferencemodelrewrites",
        f"https://raw.githubusercontent.com/llm-d/llm-d-router/{LLM_D_ROUTER_VERSION}/config/crd/bases/llm-d.ai_inferencemodelrewrites.yaml",
    ),
)
"""The CRDs the router needs, read at deploy time from the pinned tags (the chart ships none): the
Endpoint Picker watches InferencePools and the llm-d.ai objectives and rewrites."""

# Replicas that span nodes (../shared/reference/wave3-facts.md Part A 4.1, 4.3). LeaderWorkerSet's chart is an OCI
# artifact versioned without the "v"; its git values default the image to `main` / Always, so the tag is pinned here.
# Its CRDs are read from the tag (as the router's): Helm never upgrades a chart's crds/, and an upgrade across the
# release that moved them deleted them with every LeaderWorkerSet (kubernetes-sigs/lws#880, #883).
LWS_VERSION: Final = "v0.10.0"
LWS: Final = Chart("oci://registry.k8s.io/lws/charts/lws", LWS_VERSION.removeprefix("v"))
LWS_IMAGE_TAG: Final = LWS_VERSION
LWS_CRDS: Final = tuple(
    (
        crd,
        f"https://raw.githubusercontent.com/kubernetes-sigs/lws/{LWS_VERSION}/config/crd/bases/{group}_{crd}.yaml",
    )
    for group, crd in (
        ("leaderworkerset.x-k8s.io", "leaderworkersets"),
        # the controller of v0.10.0 always runs the DisaggregatedSet controller too (chart values enableDisaggregatedSet)
        ("disaggregatedset.x-k8s.io", "disaggregatedsets"),
        ("disaggregatedset.x-k8s.io", "disaggregatedsetrolescalers"),
    )
)
EFA_DEVICE_PLUGIN_VERSION: Final = "0.5.30"  # aws/eks-charts stable/aws-efa-k8s-device-plugin
EFA_DEVICE_PLUGIN: Final = Chart("aws-efa-k8s-device-plugin", EFA_DEVICE_PLUGIN_VERSION, AWS_LOAD_BALANCER_CONTROLLER_REPOSITORY)

VLLM_IMAGE_REPOSITORY: Final = "vllm/vllm-openai"
VLLM_IMAGE_TAG: Final = "v0.33.0"  # metric vllm:kv_cache_usage_perc; entrypoint `vllm serve`
# The oldest vLLM release known to support every flag and metric the program uses:
# vllm:kv_cache_usage_perc since 0.9.2, --shutdown-timeout since 0.18.0, --sse-keep-alive-interval
# verified in 0.33.0 (its first release is not confirmed), so 0.33.0.
VLLM_MIN_VERSION: Final = (0, 33, 0)

# EKS AMI releases (awslabs/amazon-eks-ami tags vYYYYMMDD; Bottlerocket vX.Y.Z). Karpenter
# resolves the standard and NVIDIA variants of the alias from SSM.
AL2023_AMI_VERSION: Final = "v20260930"  # 1.35.8-20260930, seen in node groups on 2026-10-06
BOTTLEROCKET_AMI_VERSION: Final = "v1.65.0"  # bottlerocket-os/bottlerocket CHANGELOG 2026-09-03

# EKS managed add-ons for Kubernetes 1.35, as seen in public cluster configs in Sept 2026.
# Confirm with `aws eks describe-addon-versions --kubernetes-version 1.35` before bumping.
EKS_ADDON_VERSIONS: Final = {
    "vpc-cni": "v1.23.1-eksbuild.1",
    "coredns": "v1.13.2-eksbuild.21",
    "kube-proxy": "v1.35.3-eksbuild.21",
    "eks-pod-identity-agent": "v1.3.10-eksbuild.3",
    "aws-ebs-csi-driver": "v1.56.0-eksbuild.1",
}
