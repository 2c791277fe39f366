"""Efa: what the EFA pools' nodes need on AWS and in the cluster, for models whose replicas span nodes."""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from builders import efa as builders
from builders.karpenter.nodepools import EfaPlacement
from components.helm import release
from components.options import inherited_depends_on
from config.facts import versions
from config.sections.gpu_pools import GpuPool

ALL_TRAFFIC = "-1"


@dataclass(frozen=True, kw_only=True)
class EfaArgs:
    """Inputs of the Efa component."""

    pools: list[GpuPool]
    """The `gpuPools` section; the pools with `efa: true` get a placement group each."""
    vpc_id: pulumi.Input[str]
    """The VPC the EFA security group is in."""
    provider: k8s.Provider
    """Kubernetes provider of the cluster."""
    tags: dict[str, str] = field(default_factory=dict)
    """Tags for the security group, its rules and the placement groups."""


class Efa(pulumi.ComponentResource):
    """A security group open to itself both ways, a cluster placement group per EFA pool, and the EFA device plugin.

    EFA's traffic needs all traffic in from the group and out to it: a 0.0.0.0/0 egress rule does not cover the
    SRD protocol, and NCCL fails with "Error 4126: Unresponsive receiver" without the self-referencing egress
    (EC2 user guide, "Prepare an EFA-enabled security group"; ../shared/reference/wave3-facts.md Part A 4.3). The EFA
    pools' node classes add the group beside the cluster's (builders/karpenter/nodepools.py)."""

    placements: dict[str, EfaPlacement]
    """By pool name: what the pool's EC2NodeClass selects."""

    def __init__(self, name: str, args: EfaArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmplatform:index:Efa", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        after = inherited_depends_on(opts)
        group = aws.ec2.SecurityGroup(
            f"{name}-security-group",
            vpc_id=args.vpc_id,
            description="EFA: all traffic between the nodes of the EFA pools",
            tags=args.tags,
            opts=child,
        )
        for direction, rule, towards in (
            ("ingress", aws.vpc.SecurityGroupIngressRule, "from"),
            ("egress", aws.vpc.SecurityGroupEgressRule, "to"),
        ):
            rule(
                f"{name}-self-{direction}",
                security_group_id=group.id,
                referenced_security_group_id=group.id,
                ip_protocol=ALL_TRAFFIC,
                description=f"EFA: all traffic {towards} the EFA pools' nodes",
                tags=args.tags,
                opts=child,
            )
        self.placements = {}
        for pool in sorted((p for p in args.pools if p.efa), key=lambda p: p.name):
            placement = aws.ec2.PlacementGroup(f"{name}-{pool.name}", strategy="cluster", tags=args.tags, opts=child)
            self.placements[pool.name] = EfaPlacement(placement_group_id=placement.placement_group_id, security_group_id=group.id)
        self.release = release(
            f"{name}-device-plugin",
            release_name=builders.RELEASE,
            chart=versions.EFA_DEVICE_PLUGIN,
            namespace=builders.NAMESPACE,
            values=builders.values(args.pools),
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=after),
        )
        self.register_outputs({"securityGroupId": group.id})
