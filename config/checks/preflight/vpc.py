"""Preflight of an existing VPC: its CIDR blocks, subnets, tags and endpoints as the stack declares them."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

from config.checks.account import AccountFile
from config.checks.preflight.result import Check, Result
from config.facts.conventions import INTERNAL_ELB_TAG, PUBLIC_ELB_TAG
from config.sections.network import ExistingVpc
from config.sections.stack import StackConfig


# -- an existing VPC --------------------------------------------------------------------------------
def existing_vpc(cfg: StackConfig, account: AccountFile, authoritative: bool) -> Iterator[Check]:
    network = cfg.network
    if not isinstance(network, ExistingVpc):
        return
    vpc = next((v for v in account.vpcs if v.id == network.vpc_id), None)
    if vpc is None:
        result: Result = "failed" if authoritative else "not checked"
        message = (
            f"{network.vpc_id} does not exist in {cfg.region}. Fix: correct network.vpcId"
            if authoritative
            else "not described by the default account answers"
        )
        yield Check("vpc", "network.vpcId", result, message, {"vpcId": network.vpc_id})
        return
    if vpc.cidr != network.vpc_cidr:
        yield Check(
            "vpc",
            "network.vpcCidr",
            "failed",
            f"is {network.vpc_cidr}, but {vpc.id}'s CIDR is {vpc.cidr}: the NetworkPolicies would admit the wrong range. "
            f"Fix: set network.vpcCidr to {vpc.cidr}",
            {"vpcId": vpc.id, "cidr": vpc.cidr},
        )
    for i, block in enumerate(network.secondary_cidrs):
        if block not in vpc.secondary_cidrs:
            yield Check(
                "vpc",
                f"network.secondaryCidrs[{i}]",
                "failed",
                f"{block} is not a CIDR block of {vpc.id} (its blocks: {', '.join([vpc.cidr, *vpc.secondary_cidrs])}): the "
                "NetworkPolicies would admit a range the VPC does not have. Fix: list the VPC's associated blocks",
                {"vpcId": vpc.id, "cidr": block},
            )
    undeclared = [b for b in vpc.secondary_cidrs if b not in network.secondary_cidrs]
    if undeclared:
        yield Check(
            "vpc",
            "network.secondaryCidrs",
            "failed",
            f"omits {', '.join(undeclared)}, associated with {vpc.id}: pods, nodes or the control plane there would be "
            "treated as outside the VPC and refused by the NetworkPolicies. Fix: list every associated block",
            {"vpcId": vpc.id, "secondaryCidrs": vpc.secondary_cidrs},
        )
    blocks = [ipaddress.IPv4Network(b) for b in [vpc.cidr, *vpc.secondary_cidrs]]
    subnets = {s.id: s for s in account.subnets}
    zones: set[str] = set()
    for i, subnet_id in enumerate(network.private_subnet_ids):
        path = f"network.privateSubnetIds[{i}]"
        subnet = subnets.get(subnet_id)
        if subnet is None or subnet.vpc_id != network.vpc_id:
            yield Check(
                "subnet",
                path,
                "failed",
                f"{subnet_id} is not a subnet of {network.vpc_id}. Fix: list the VPC's private subnets",
                {"subnetId": subnet_id},
            )
            continue
        zones.add(subnet.zone)
        inputs = {"subnetId": subnet_id, "zone": subnet.zone, "cidr": subnet.cidr, "tags": subnet.tags}
        if not any(ipaddress.IPv4Network(subnet.cidr).subnet_of(b) for b in blocks):
            yield Check(
                "subnet", path, "failed", f"{subnet_id} ({subnet.cidr}) is outside {vpc.cidr}. Fix: correct network.vpcCidr", inputs
            )
        # (Karpenter selects an existing VPC's subnets by id, so the discovery tag is not needed here.)
        missing = [f"{INTERNAL_ELB_TAG}=1"] if subnet.tags.get(INTERNAL_ELB_TAG) != "1" else []
        if missing:
            yield Check(
                "subnet",
                path,
                "failed",
                f"{subnet_id} lacks the tag {', '.join(missing)}: internal load balancers would not find it. Fix: tag the subnet",
                inputs,
            )
        else:
            yield Check("subnet", path, "ok", f"{subnet.zone}, {subnet.cidr}, tagged", inputs)
    internet_facing = cfg.ingress.scheme == "internet-facing"
    for i, subnet_id in enumerate(network.public_subnet_ids):
        path = f"network.publicSubnetIds[{i}]"
        subnet = subnets.get(subnet_id)
        if subnet is None or subnet.vpc_id != network.vpc_id:
            yield Check(
                "subnet", path, "failed", f"{subnet_id} is not a subnet of {network.vpc_id}. Fix: list the VPC's public subnets", {}
            )
        elif subnet.tags.get(PUBLIC_ELB_TAG) != "1":
            yield Check(
                "subnet",
                path,
                "failed" if internet_facing else "warning",
                f"{subnet_id} lacks the tag {PUBLIC_ELB_TAG}=1: an internet-facing ALB would find no subnet for it. Fix: tag the subnet",
                {"subnetId": subnet_id, "tags": subnet.tags},
            )
        else:
            yield Check("subnet", path, "ok", f"{subnet.zone}, tagged for internet-facing load balancers", {"subnetId": subnet_id})
    if len(zones) == 1:
        yield Check(
            "subnet",
            "network.privateSubnetIds",
            "failed",
            f"every listed subnet is in {zones.pop()}; EKS needs subnets in at least two zones. Fix: add a private subnet in another zone",
            {"subnets": list(network.private_subnet_ids)},
        )
