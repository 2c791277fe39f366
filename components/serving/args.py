"""The VllmModel component's inputs: the model, where it runs, and its modes (an endpoint, S3 weights)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from builders.serving import workload as builders
from config.derived.state import ModelState
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
    facts: ModelState
    """The model's derived state: whether it scales to zero, its scale-up budget, its request path (the hold, the
    ALB's idle timeout its keep-alives follow), the GPU types that get a compile cache and a warm-up Job each."""

    def __post_init__(self) -> None:
        # The modes must be the model's own: a model streaming from S3 without its roles and populate
        # Job would start and find no weights.
        if (self.weights is not None) != self.model.streams_from_s3:
            raise ValueError(f"{self.model.name}: weights (S3) must be given exactly when the model streams from S3")


# Launching a GPU node, initializing its GPUs and pulling the vLLM image (about 10 GB).
NODE_AND_IMAGE_SECONDS = 900
SAMPLE_SOURCES = builders.Sources(image="sample", bucket="sample", region="sample")
"""Stands in for the deploy-time values when only an object's identity is built."""
