"""`network`: a new VPC, or an existing one the platform only reads."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from config.base import ConfigModel
from config.conventions import DISCOVERY_TAG, INTERNAL_ELB_TAG, PUBLIC_ELB_TAG
from config.types import NetworkCidr, SubnetId, VpcCidr, VpcId


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
    nat_gateways: Literal["single", "perAz"] = Field(
        default="perAz",
        description="`perAz`: one NAT gateway per AZ (survives an AZ outage); `single`: one shared NAT gateway (cheaper, for dev).",
    )
    s3_gateway_endpoint: bool = Field(
        default=True,
        description="Create an S3 gateway endpoint so images and model weights from S3 bypass NAT (no hourly cost, no NAT data charges).",
    )


class ExistingVpc(ConfigModel):
    """Use an existing VPC and subnets; the stack creates no network resources."""

    mode: Literal["existing"] = Field(description="`existing`: use a VPC created elsewhere.")
    vpc_id: VpcId = Field(description="The VPC id.")
    vpc_cidr: NetworkCidr = Field(description="The VPC's IPv4 CIDR (model NetworkPolicies admit the load balancer from it).")
    private_subnet_ids: list[SubnetId] = Field(
        min_length=2,
        description="Private subnets (two or more AZs) for nodes and internal load balancers. "
        f"They must carry the tags `{INTERNAL_ELB_TAG}=1` and `{DISCOVERY_TAG}=<cluster>`.",
    )
    public_subnet_ids: list[SubnetId] = Field(
        default_factory=list,
        description=f"Public subnets for internet-facing load balancers (tag `{PUBLIC_ELB_TAG}=1`); "
        "may be empty when every endpoint is internal.",
    )


NetworkConfig = Annotated[NewVpc | ExistingVpc, Field(discriminator="mode")]
