"""Network: a VPC with public and private subnets per AZ, or an existing VPC used as is."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws

from builders.network import (
    private_subnet_tags,
    public_subnet_tags,
    subnet_plan,
)
from config.sections.network import ExistingVpc, NewVpc, Route, nat_gateway_count
from config.sections.types import is_zone_id


@dataclass(frozen=True, kw_only=True)
class NetworkArgs:
    """Inputs of the Network component."""

    config: NewVpc | ExistingVpc
    """The `network` section of the stack config."""
    cluster_name: str
    """Cluster name, for subnet discovery tags and resource names."""
    region: str
    """AWS region (for the S3 gateway endpoint service name)."""
    tags: dict[str, str]
    """Tags for every resource."""


def _nth(i: int) -> Callable[[list[str]], str]:
    return lambda names: names[i]


def _declared_route(route: Route) -> aws.ec2.RouteTableRouteArgs:
    """A route of `network.routes` as an inline route of a private route table (a VPN gateway is a gateway_id)."""
    return aws.ec2.RouteTableRouteArgs(
        cidr_block=route.destination_cidr,
        transit_gateway_id=route.transit_gateway_id,
        vpc_peering_connection_id=route.vpc_peering_connection_id,
        gateway_id=route.vpn_gateway_id,
    )


class Network(pulumi.ComponentResource):
    """A VPC across the configured AZs with NAT, or an existing VPC (then it creates nothing)."""

    vpc_id: pulumi.Output[str]
    private_subnet_ids: pulumi.Output[list[str]]
    public_subnet_ids: pulumi.Output[list[str]]

    def __init__(self, name: str, args: NetworkArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmplatform:index:Network", name, None, opts)
        if isinstance(args.config, ExistingVpc):
            self.vpc_id = pulumi.Output.from_input(args.config.vpc_id)
            self.private_subnet_ids = pulumi.Output.from_input(list(args.config.private_subnet_ids))
            self.public_subnet_ids = pulumi.Output.from_input(list(args.config.public_subnet_ids))
        else:
            self._create(name, args, args.config)
        self.register_outputs(
            {"vpcId": self.vpc_id, "privateSubnetIds": self.private_subnet_ids, "publicSubnetIds": self.public_subnet_ids}
        )

    def _zones(self, cfg: NewVpc) -> list[pulumi.Output[str]]:
        """The subnets' zones: the ones the stack names, or the region's first azCount by name."""
        if cfg.availability_zones:
            return [pulumi.Output.from_input(z) for z in cfg.availability_zones]
        azs = aws.get_availability_zones_output(  # regular zones only: no Local or Wavelength zone (they sort first by name)
            state="available",
            filters=[{"name": "zone-type", "values": ["availability-zone"]}],
            opts=pulumi.InvokeOutputOptions(parent=self),
        )
        return [azs.names.apply(_nth(i)) for i in range(cfg.az_count)]

    def _create(self, name: str, args: NetworkArgs, cfg: NewVpc) -> None:
        child = pulumi.ResourceOptions(parent=self)
        cluster, tags = args.cluster_name, args.tags
        vpc = aws.ec2.Vpc(
            f"{name}-vpc",
            cidr_block=cfg.cidr,
            enable_dns_hostnames=True,
            enable_dns_support=True,
            tags={**tags, "Name": cluster},
            opts=child,
        )
        igw = aws.ec2.InternetGateway(f"{name}-igw", vpc_id=vpc.id, tags={**tags, "Name": cluster}, opts=child)
        public_rt = aws.ec2.RouteTable(
            f"{name}-public",
            vpc_id=vpc.id,
            routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", gateway_id=igw.id)],
            tags={**tags, "Name": f"{cluster}-public"},
            opts=child,
        )
        nats = nat_gateway_count(cfg.nat_gateways, cfg.az_count)
        public_ids: list[pulumi.Output[str]] = []
        private_ids: list[pulumi.Output[str]] = []
        private_rts: list[pulumi.Output[str]] = []
        nat_ids: list[pulumi.Output[str]] = []
        zones = self._zones(cfg)
        for plan in subnet_plan(cfg.cidr, cfg.az_count):
            i = plan.index
            az = zones[i]
            by_id = cfg.availability_zones is not None and is_zone_id(cfg.availability_zones[i])
            suffix = chr(ord("a") + i)
            public = _zone_subnet(
                f"{name}-public-{suffix}",
                vpc.id,
                plan.public_cidr,
                az,
                by_id,
                lambda z: public_subnet_tags(cluster, z, tags),
                child,
                map_public_ip_on_launch=False,
            )
            aws.ec2.RouteTableAssociation(f"{name}-public-{suffix}", subnet_id=public.id, route_table_id=public_rt.id, opts=child)
            public_ids.append(public.id)
            if i < nats:
                eip = aws.ec2.Eip(f"{name}-nat-{suffix}", domain="vpc", tags={**tags, "Name": f"{cluster}-nat-{suffix}"}, opts=child)
                nat = aws.ec2.NatGateway(
                    f"{name}-nat-{suffix}",
                    allocation_id=eip.id,
                    subnet_id=public.id,
                    tags={**tags, "Name": f"{cluster}-nat-{suffix}"},
                    opts=pulumi.ResourceOptions(parent=self, depends_on=[igw]),
                )
                nat_ids.append(nat.id)
            private = _zone_subnet(
                f"{name}-private-{suffix}", vpc.id, plan.private_cidr, az, by_id, lambda z: private_subnet_tags(cluster, z, tags), child
            )
            # Inline routes only (never aws.ec2.Route on these tables): the table owns its whole route set, so the
            # routes back to the deploy network and the clients are declared here, and an update keeps them.
            rt = aws.ec2.RouteTable(
                f"{name}-private-{suffix}",
                vpc_id=vpc.id,
                routes=[
                    aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", nat_gateway_id=nat_ids[min(i, nats - 1)]),
                    *(_declared_route(r) for r in cfg.routes),
                ],
                propagating_vgws=list(cfg.propagating_vgws) or None,
                tags={**tags, "Name": f"{cluster}-private-{suffix}"},
                opts=child,
            )
            aws.ec2.RouteTableAssociation(f"{name}-private-{suffix}", subnet_id=private.id, route_table_id=rt.id, opts=child)
            private_ids.append(private.id)
            private_rts.append(rt.id)
        if cfg.s3_gateway_endpoint:
            aws.ec2.VpcEndpoint(
                f"{name}-s3",
                vpc_id=vpc.id,
                service_name=f"com.amazonaws.{args.region}.s3",
                vpc_endpoint_type="Gateway",
                route_table_ids=private_rts,
                tags={**tags, "Name": f"{cluster}-s3"},
                opts=child,
            )
        self.vpc_id = vpc.id
        self.private_subnet_ids = pulumi.Output.all(*private_ids).apply(list)
        self.public_subnet_ids = pulumi.Output.all(*public_ids).apply(list)


def _zone_subnet(
    name: str,
    vpc_id: pulumi.Input[str],
    cidr: str,
    zone: pulumi.Output[str],
    by_id: bool,
    tagged: Callable[[str], dict[str, str]],
    opts: pulumi.ResourceOptions,
    **extra: Any,
) -> aws.ec2.Subnet:
    """A subnet in one zone, tagged for it: placed by the zone's id when the stack names ids (the same physical
    zone in every account), else by its name."""
    return aws.ec2.Subnet(
        name,
        vpc_id=vpc_id,
        cidr_block=cidr,
        availability_zone=None if by_id else zone,
        availability_zone_id=zone if by_id else None,
        **extra,
        tags=zone.apply(tagged),
        opts=opts,
    )
