"""`network`: a new VPC, or an existing one the platform only reads."""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, ValidationInfo, field_validator, model_validator

from config.facts.conventions import DISCOVERY_TAG, INTERNAL_ELB_TAG, PUBLIC_ELB_TAG
from config.sections.base import ConfigModel
from config.sections.types import NetworkCidr, SubnetId, VpcCidr, VpcId, Zone, config_error, is_zone_id

# The route targets a stack may name, by id prefix: (field, what it is). AWS ids are <prefix>-<8 or 17 hex>.
_TARGETS = {
    "tgw": ("transitGatewayId", "a transit gateway"),
    "pcx": ("vpcPeeringConnectionId", "a VPC peering connection"),
    "vgw": ("vpnGatewayId", "a virtual private (VPN) gateway"),
}
# Ids users paste in their place, and what the route wants instead.
_LOOKALIKES = {
    "tgw-attach": "a transit gateway attachment id; a VPC route targets the transit gateway itself",
    "tgw-rtb": "a transit gateway route table id; a VPC route targets the transit gateway itself",
    "vpn": "a Site-to-Site VPN connection id; a VPC route targets the virtual private gateway (vgw-) the connection ends on",
    "cgw": "a customer gateway id (your side of the VPN); a VPC route targets the virtual private gateway (vgw-) on the AWS side",
}


def _gateway_id(prefix: str) -> AfterValidator:
    """An id of the route target kind `prefix`, with a hint when it is another kind's id."""
    field, what = _TARGETS[prefix]

    def check(value: str) -> str:
        if re.fullmatch(rf"{prefix}-([0-9a-f]{{8}}|[0-9a-f]{{17}})", value):
            return value
        kind = re.match(r"^([a-z]+(?:-(?:attach|rtb))?)-", value)
        found = kind.group(1) if kind else ""
        if found in _LOOKALIKES:
            problem = f"'{value}' is {_LOOKALIKES[found]}"
            fix = f"write the {prefix}- id of {what}"
        elif found in _TARGETS and found != prefix:
            other, other_what = _TARGETS[found]
            problem = f"'{value}' is the id of {other_what}, not of {what}"
            fix = f"set it as {other} instead of {field}"
        else:
            problem = f"'{value}' is not the id of {what}"
            fix = f"write {prefix}-<8 or 17 hex digits>"
        raise config_error(problem, fix)

    return AfterValidator(check)


TransitGatewayId = Annotated[str, _gateway_id("tgw")]
VpcPeeringConnectionId = Annotated[str, _gateway_id("pcx")]
VpnGatewayId = Annotated[str, _gateway_id("vgw")]


class Route(ConfigModel):
    """A route from every private subnet of the new VPC to a network outside it, through one gateway."""

    destination_cidr: NetworkCidr = Field(
        description="The network outside the VPC the route leads to (the VPN or transit range in "
        "cluster.endpoint.privateAccessCidrs, the internal ALB's clients in ingress.allowedCidrs). A range that "
        "contains the VPC, such as 10.0.0.0/8, is fine: traffic inside the VPC keeps its more specific local route.",
    )
    transit_gateway_id: TransitGatewayId | None = Field(
        default=None,
        description="Send it to this transit gateway (tgw-…). The VPC must be attached to it, with a subnet in every zone.",
    )
    vpc_peering_connection_id: VpcPeeringConnectionId | None = Field(
        default=None, description="Send it over this VPC peering connection (pcx-…), once it is active."
    )
    vpn_gateway_id: VpnGatewayId | None = Field(
        default=None,
        description="Send it to this virtual private gateway (vgw-…) attached to the VPC: a static route. For routes "
        "the VPN learns (BGP or the connection's static routes), use network.propagatingVgws instead.",
    )

    @field_validator("destination_cidr")
    @classmethod
    def _not_the_default_route(cls, value: str) -> str:
        if ipaddress.IPv4Network(value).prefixlen == 0:
            raise config_error(
                f"'{value}' is the default route, which the private subnets already send to the NAT gateway (their "
                "internet egress); a route table holds one route per destination",
                "list the network the replies must reach, e.g. the VPN range 192.0.2.0/24",
            )
        return value

    @model_validator(mode="after")
    def _one_target(self) -> Route:
        named = [
            alias
            for alias, value in (
                ("transitGatewayId", self.transit_gateway_id),
                ("vpcPeeringConnectionId", self.vpc_peering_connection_id),
                ("vpnGatewayId", self.vpn_gateway_id),
            )
            if value is not None
        ]
        if not named:
            raise config_error(
                "names no target; a route sends its destination's traffic to one gateway",
                "set one of transitGatewayId, vpcPeeringConnectionId or vpnGatewayId",
            )
        if len(named) > 1:
            raise config_error(
                f"names {' and '.join(named)}; a route has exactly one target",
                "keep one (a destination has one route; the other gateway needs a destination of its own)",
            )
        return self

    @property
    def target(self) -> str:
        """The one gateway the route names."""
        return next(t for t in (self.transit_gateway_id, self.vpc_peering_connection_id, self.vpn_gateway_id) if t)


def nat_gateway_count(mode: str, az_count: int) -> int:
    """NAT gateways of a new VPC: one per zone (`perAz`), else one."""
    return az_count if mode == "perAz" else 1


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
    routes: list[Route] = Field(
        default_factory=list,
        description="Routes from every private subnet to networks outside the VPC: the VPN or transit network "
        "`pulumi up` runs from (cluster.endpoint.privateAccessCidrs) and the internal ALB's clients "
        "(ingress.allowedCidrs). Without one, replies to them go to the NAT gateway and are lost. The stack owns "
        "the private route tables: a route added there by hand is removed by the next update, so declare it here. "
        "Add them once the VPC is attached to the gateway (after the first pulumi up creates it). "
        "An existing VPC's route tables are its owner's: add the routes there.",
    )
    propagating_vgws: list[VpnGatewayId] = Field(
        default_factory=list,
        description="Virtual private gateways (vgw-…) attached to the VPC whose Site-to-Site VPN routes are "
        "propagated into every private route table. The stack then owns propagation on those tables: one enabled "
        "by hand for another gateway is turned off by the next update.",
    )

    @field_validator("propagating_vgws")
    @classmethod
    def _vgws_once(cls, value: list[str]) -> list[str]:
        repeated = sorted({v for v in value if value.count(v) > 1})
        if repeated:
            raise config_error(f"{', '.join(repeated)} is listed more than once", "list each gateway once")
        return value

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

    @model_validator(mode="before")
    @classmethod
    def _no_routes(cls, data: Any) -> Any:
        keys = [k for k in ("routes", "propagatingVgws") if isinstance(data, dict) and k in data]
        if keys:
            raise config_error(
                f"{' and '.join(keys)} {'are' if len(keys) > 1 else 'is'} for a VPC this stack creates; an existing "
                "VPC's route tables belong to its owner, and the stack never changes them",
                "remove it, and add the routes back to the deploy network and the clients in the VPC's own route "
                "tables (those of the private subnets)",
            )
        return data

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
