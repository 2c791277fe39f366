"""Pure network planning: subnet CIDRs and the tags EKS, the load balancer controller and
Karpenter look for."""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass
from typing import Any

from config.facts.conventions import INTERNAL_ELB_TAG, PUBLIC_ELB_TAG, discovery_tags
from config.sections.network import ExistingVpc, NetworkConfig


@dataclass(frozen=True)
class SubnetPlan:
    """CIDRs of one availability zone's subnets."""

    index: int
    public_cidr: str
    private_cidr: str


def subnet_plan(vpc_cidr: str, az_count: int) -> list[SubnetPlan]:
    """Split the VPC: one large private subnet per AZ, small public subnets from the last block.

    Private subnets get most of the space because the VPC CNI gives every pod a VPC address.
    The VPC is cut into 2^k equal blocks (k = ceil(log2(az_count + 1))): blocks 0..n-1 are the
    private subnets, and the last block is cut 16 ways for the public subnets (load balancers and
    NAT gateways only). /16 with 3 AZs: private /18 (16,379 usable IPs each), public /22.
    """
    vpc = ipaddress.IPv4Network(vpc_cidr)
    bits = math.ceil(math.log2(az_count + 1))
    blocks = list(vpc.subnets(prefixlen_diff=bits))
    publics = list(blocks[-1].subnets(prefixlen_diff=4))
    return [SubnetPlan(i, str(publics[i]), str(blocks[i])) for i in range(az_count)]


def public_subnet_tags(cluster_name: str, az: str, base: dict[str, str]) -> dict[str, str]:
    return {**base, "Name": f"{cluster_name}-public-{az}", PUBLIC_ELB_TAG: "1"}


def private_subnet_tags(cluster_name: str, az: str, base: dict[str, str]) -> dict[str, str]:
    return {**base, "Name": f"{cluster_name}-private-{az}", INTERNAL_ELB_TAG: "1", **discovery_tags(cluster_name)}


def node_subnet_selector_terms(network: NetworkConfig, cluster_name: str) -> list[dict[str, Any]]:
    """EC2NodeClass subnet selector: the discovery tag on a new VPC, the listed subnets of an existing one."""
    if isinstance(network, ExistingVpc):
        return [{"id": subnet} for subnet in network.private_subnet_ids]
    return [{"tags": discovery_tags(cluster_name)}]
