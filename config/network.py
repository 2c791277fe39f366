"""`network`: a new VPC, or an existing one the platform only reads."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from config.base import ConfigModel
from config.types import VpcCidr, _err

_VPC_ID = re.compile(r"^vpc-[0-9a-f]{8,17}$")
_SUBNET_ID = re.compile(r"^subnet-[0-9a-f]{8,17}$")


def _vpc_id(value: str) -> str:
    if not _VPC_ID.match(value):
        raise _err(f"'{value}' is not a VPC id", "write vpc-<8 or 17 hex digits>")
    return value


def _subnet_id(value: str) -> str:
    if not _SUBNET_ID.match(value):
        raise _err(f"'{value}' is not a subnet id", "write subnet-<8 or 17 hex digits>")
    return value


def _cidr(value: str) -> str:
    import ipaddress

    try:
        ipaddress.IPv4Network(value, strict=True)
    except ValueError:
        raise _err(f"'{value}' is not a network CIDR (or has host bits set)", "write e.g. 10.0.0.0/16") from None
    return value


VpcId = Annotated[str, AfterValidator(_vpc_id)]
VpcCidrAny = Annotated[str, AfterValidator(_cidr)]
SubnetId = Annotated[str, AfterValidator(_subnet_id)]


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
    vpc_cidr: VpcCidrAny = Field(description="The VPC's IPv4 CIDR (model NetworkPolicies admit the load balancer from it).")
    private_subnet_ids: list[SubnetId] = Field(
        min_length=2,
        description="Private subnets (two or more AZs) for nodes and internal load balancers. "
        "They must carry the tags `kubernetes.io/role/internal-elb=1` and `karpenter.sh/discovery=<cluster>`.",
    )
    public_subnet_ids: list[SubnetId] = Field(
        default_factory=list,
        description="Public subnets for internet-facing load balancers (tag `kubernetes.io/role/elb=1`); "
        "may be empty when every endpoint is internal.",
    )


NetworkConfig = Annotated[NewVpc | ExistingVpc, Field(discriminator="mode")]
