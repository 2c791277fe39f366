"""StackConfig: the whole stack config of one environment."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from config.facts.conventions import RESERVED_TAG_KEYS, RESERVED_TAG_PREFIXES
from config.sections.base import ConfigModel
from config.sections.cluster import ClusterConfig
from config.sections.gateway import GatewayConfig
from config.sections.gpu_operator import GpuOperatorConfig
from config.sections.gpu_pools import GpuPool
from config.sections.images import ImageCacheConfig
from config.sections.ingress import IngressConfig
from config.sections.karpenter import KarpenterConfig
from config.sections.keda import KedaConfig
from config.sections.models import ModelConfig
from config.sections.network import ExistingVpc, NetworkConfig
from config.sections.node_monitoring import NodeMonitoringConfig
from config.sections.observability import ObservabilityConfig
from config.sections.types import Region, config_error
from config.sections.weights import WeightsConfig, default_source

Environment = Literal["dev", "staging", "prod"]


class StackConfig(ConfigModel):
    """Everything one stack (environment) builds, validated before any resource exists."""

    environment: Environment = Field(description="dev, staging or prod; prod turns on stricter checks and safer defaults.")
    region: Region = Field(description="AWS region (from aws:region).")
    tags: dict[str, str] = Field(default_factory=dict, description="Tags on every AWS resource the stack creates.")
    network: NetworkConfig = Field(description="A new VPC (mode new) or an existing one (mode existing).")
    cluster: ClusterConfig = Field(description="The EKS cluster.")
    karpenter: KarpenterConfig = Field(default_factory=KarpenterConfig, description="Karpenter controller and node defaults.")
    gpu_pools: list[GpuPool] = Field(min_length=1, description="GPU NodePools.")
    gpu_operator: GpuOperatorConfig = Field(default_factory=GpuOperatorConfig, description="NVIDIA GPU operator.")
    node_monitoring: NodeMonitoringConfig = Field(
        default_factory=NodeMonitoringConfig, description="The EKS node monitoring agent: node conditions for GPU and node faults."
    )
    observability: ObservabilityConfig = Field(default_factory=ObservabilityConfig, description="Monitoring stack.")
    keda: KedaConfig = Field(default_factory=KedaConfig, description="KEDA.")
    ingress: IngressConfig = Field(default_factory=IngressConfig, description="Model endpoints.")
    gateway: GatewayConfig = Field(
        default_factory=GatewayConfig, description="The inference gateway in front of every model, those at replicas.min 0 included."
    )
    models: list[ModelConfig] = Field(default_factory=list, description="Models to serve.")
    weights: WeightsConfig = Field(default_factory=WeightsConfig, description="The weights bucket of models that stream from S3.")
    image_cache: ImageCacheConfig = Field(default_factory=ImageCacheConfig, description="ECR pull-through cache for model images.")

    @field_validator("tags")
    @classmethod
    def _tags(cls, value: dict[str, str]) -> dict[str, str]:
        for key in value:
            if key.startswith(RESERVED_TAG_PREFIXES) or key in RESERVED_TAG_KEYS:
                raise config_error(
                    f"tag '{key}' is reserved: EKS and Karpenter set it themselves, and the EC2NodeClass CRD rejects it",
                    "remove it from tags",
                )
        return value

    @model_validator(mode="after")
    def _environment_defaults(self) -> StackConfig:
        """Fill the defaults that depend on the environment (S3 weights, the image cache and a standby Endpoint Picker in prod)."""
        models = [
            m
            if m.weights.source is not None
            else m.model_copy(update={"weights": m.weights.model_copy(update={"source": default_source(self.is_prod)})})
            for m in self.models
        ]
        cache = self.image_cache
        if cache.enabled is None:
            cache = cache.model_copy(update={"enabled": self.is_prod})
        gateway = self.gateway
        if gateway.epp_replicas is None:
            gateway = gateway.model_copy(update={"epp_replicas": 2 if self.is_prod else 1})
        if models == self.models and cache is self.image_cache and gateway is self.gateway:
            return self
        return self.model_copy(update={"models": models, "image_cache": cache, "gateway": gateway})

    @property
    def uses_s3_weights(self) -> bool:
        return any(m.streams_from_s3 for m in self.models)

    @property
    def is_prod(self) -> bool:
        return self.environment == "prod"

    def pool(self, name: str) -> GpuPool | None:
        return next((p for p in self.gpu_pools if p.name == name), None)

    @property
    def deletion_protection(self) -> bool:
        if self.cluster.deletion_protection is not None:
            return self.cluster.deletion_protection
        return self.is_prod

    @property
    def vpc_cidr(self) -> str:
        """The VPC's primary CIDR, new or existing."""
        return self.network.vpc_cidr if isinstance(self.network, ExistingVpc) else self.network.cidr

    @property
    def vpc_cidrs(self) -> list[str]:
        """Every CIDR block of the VPC: the primary, then an existing VPC's secondary blocks."""
        return [self.vpc_cidr, *(self.network.secondary_cidrs if isinstance(self.network, ExistingVpc) else [])]
