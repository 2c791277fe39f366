"""`network`: a new VPC, or an existing one the platform only reads."""

from __future__ import annotations

import ipaddress
from typing import Annotated, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from config.facts.conventions import DISCOVERY_TAG, INTERNAL_ELB_TAG, PUBLIC_ELB_TAG
from config.sections.base import ConfigModel
from config.sections.types import NetworkCidr, SubnetId, VpcCidr, VpcId, Zone, config_error, is_zone_id


class NewVpc(ConfigModel):
    """Create a VPC with public and private subnets in each AZ."""

    mode: Literal["new"] = Field(description="`new`: the stack creates and owns the VPC.")
    cidr: VpcCidr = Field(default="10.0.0.0/16", description="IPv4 CIDR of the VPC (/16 to /20).")
    az_count: int = Field(
        default=3,
        ge=2,
        le=6,
        description="Availability zones to spread subnets over (at least 2; EKS requires two).",
    )
    availability_zones: list[Zone] | None = Field(
        default=None,
        description="The zones of the subnets, by name (us-east-1a) or by zone id (use1-az4, the same physical zone "
        "in every account), one per azCount; GPU NodePools launch only there. Unset: the region's first azCount "
        "zones by name (GPU instance types are not offered in every zone: name zones that have them).",
    )
    nat_gateways: Literal["single", "perAz"] = Field(
        default="perAz",
        description="`perAz`: one NAT gateway per AZ (survives an AZ outage); `single`: one shared NAT gateway (cheaper, for dev).",
    )
    s3_gateway_endpoint: bool = Field(
        default=True,
        description="Create an S3 gateway endpoint so images and model weights from S3 bypass NAT (no hourly cost, no NAT data charges).",
    )

    @model_validator(mode="after")
    def _zones(self) -> NewVpc:
        zones = self.availability_zones
        if zones is None:
            return self
        if len(zones) != self.az_count:
            raise config_error(
                f"availabilityZones lists {len(zones)} zone{'s' if len(zones) != 1 else ''} but azCount is {self.az_count}; "
                "each zone gets one public "
                "and one private subnet",
                f"list {self.az_count} zones" + (f", or set azCount to {len(zones)}" if len(zones) >= 2 else ""),
            )
        if len(set(zones)) != len(zones):
            raise config_error("availabilityZones lists a zone twice", "list each zone once")
        if len({is_zone_id(z) for z in zones}) > 1:
            raise config_error("availabilityZones mixes zone names and zone ids", "use names only or ids only")
        return self


def _listed_once(ids: list[str], field: str) -> None:
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise config_error(
            f"{', '.join(repeated)} {'is' if len(repeated) == 1 else 'are'} listed more than once in {field}; the rule of "
            "subnets in two zones counts distinct subnets",
            "list each subnet once",
        )


class ExistingVpc(ConfigModel):
    """Use an existing VPC and subnets; the stack creates no network resources."""

    mode: Literal["existing"] = Field(description="`existing`: use a VPC created elsewhere.")
    vpc_id: VpcId = Field(description="The VPC id.")
    vpc_cidr: NetworkCidr = Field(description="The VPC's primary IPv4 CIDR.")
    secondary_cidrs: list[NetworkCidr] = Field(
        default_factory=list,
        description="The VPC's secondary IPv4 CIDR blocks (e.g. 100.64.0.0/16 for pod subnets). NetworkPolicies treat "
        "every block as the VPC: the control plane, nodes and load balancers may sit in any of them.",
    )
    private_subnet_ids: list[SubnetId] = Field(
        description="Private subnets (two or more AZs) for nodes and internal load balancers. "
        f"They must carry the tags `{INTERNAL_ELB_TAG}=1` and `{DISCOVERY_TAG}=<cluster>`.",
    )
    public_subnet_ids: list[SubnetId] = Field(
        default_factory=list,
        description=f"Public subnets for internet-facing load balancers (tag `{PUBLIC_ELB_TAG}=1`); "
        "may be empty when every endpoint is internal.",
    )

    load_balancer_subnet_cidrs: list[NetworkCidr] = Field(
        default_factory=list,
        description="IPv4 CIDRs of the subnets the shared ALB uses (the public subnets for an internet-facing "
        "scheme, the private ones for internal). vLLM's port admits the ALB from these only; empty: from the "
        "whole VPC (a warning when models are exposed).",
    )
    interface_endpoint_cidrs: list[NetworkCidr] = Field(
        default_factory=list,
        description="IPv4 CIDRs of the subnets that hold the VPC's interface endpoints, when S3 resolves to an "
        "interface endpoint rather than a gateway endpoint: models and weight jobs may reach them on 443 (their "
        "HTTPS egress otherwise excludes every address in the VPC).",
    )

    @field_validator("private_subnet_ids")
    @classmethod
    def _private(cls, value: list[str]) -> list[str]:
        _listed_once(value, "privateSubnetIds")
        if len(value) < 2:
            raise config_error(
                "lists one subnet; EKS places the control plane's network interfaces in at least two zones and refuses "
                "a cluster with fewer",
                "list private subnets of at least two zones",
            )
        return value

    @field_validator("public_subnet_ids")
    @classmethod
    def _public(cls, value: list[str]) -> list[str]:
        _listed_once(value, "publicSubnetIds")
        return value

    @field_validator("load_balancer_subnet_cidrs", "interface_endpoint_cidrs")
    @classmethod
    def _inside_the_vpc(cls, value: list[str], info: ValidationInfo) -> list[str]:
        if "vpc_cidr" not in info.data:
            return value  # the VPC's own CIDR is wrong: reported there
        blocks = [ipaddress.IPv4Network(c, strict=False) for c in [info.data["vpc_cidr"], *info.data.get("secondary_cidrs", [])]]
        outside = [c for c in value if not any(ipaddress.IPv4Network(c, strict=False).subnet_of(b) for b in blocks)]
        if outside:
            raise config_error(
                f"lists {', '.join(outside)}, outside the VPC's {', '.join(map(str, blocks))}; every subnet is inside one "
                "of the VPC's CIDR blocks, so the NetworkPolicies would admit addresses no subnet of it has",
                "list the subnets' CIDRs, each inside vpcCidr or one of secondaryCidrs",
            )
        return value

    @model_validator(mode="after")
    def _distinct(self) -> ExistingVpc:
        both = sorted(set(self.private_subnet_ids) & set(self.public_subnet_ids))
        if both:
            raise config_error(
                f"{', '.join(both)} {'is' if len(both) == 1 else 'are'} listed as both private and public; nodes and "
                "internet-facing load balancers must not share subnets",
                "list each subnet under one of privateSubnetIds or publicSubnetIds",
            )
        return self


NetworkConfig = Annotated[NewVpc | ExistingVpc, Field(discriminator="mode")]
