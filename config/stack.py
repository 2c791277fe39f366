"""StackConfig: the whole stack config of one environment."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from config.base import ConfigModel
from config.cluster import ClusterConfig
from config.conventions import RESERVED_TAG_KEYS, RESERVED_TAG_PREFIXES
from config.gpu_operator import GpuOperatorConfig
from config.gpu_pools import GpuPool
from config.ingress import IngressConfig
from config.karpenter import KarpenterConfig
from config.keda import KedaConfig
from config.models import ModelConfig
from config.network import ExistingVpc, NetworkConfig
from config.observability import ObservabilityConfig
from config.types import Region, config_error

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
    observability: ObservabilityConfig = Field(default_factory=ObservabilityConfig, description="Monitoring stack.")
    keda: KedaConfig = Field(default_factory=KedaConfig, description="KEDA.")
    ingress: IngressConfig = Field(default_factory=IngressConfig, description="Model endpoints.")
    models: list[ModelConfig] = Field(default_factory=list, description="Models to serve.")

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
        """The VPC's CIDR, new or existing."""
        return self.network.vpc_cidr if isinstance(self.network, ExistingVpc) else self.network.cidr
