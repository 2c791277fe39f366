"""IAM resources more than one component creates the same way."""

from __future__ import annotations

import functools
import json

import pulumi
import pulumi_aws as aws

from builders.iam import ec2_trust_policy
from config.facts.conventions import NODE_ROLE_POLICIES, managed_policy_arn


def node_role(
    name: str, partition: pulumi.Output[str], tags: dict[str, str], parent: pulumi.Resource
) -> tuple[aws.iam.Role, list[aws.iam.RolePolicyAttachment]]:
    """A role EC2 nodes assume, with the managed policies every node role gets.

    The role is named `name`, each attachment `<name>-<policy>` (lowercase, '_' as '-').
    """
    opts = pulumi.ResourceOptions(parent=parent)
    role = aws.iam.Role(name, assume_role_policy=json.dumps(ec2_trust_policy()), tags=tags, opts=opts)
    attachments = [
        aws.iam.RolePolicyAttachment(
            f"{name}-{policy.lower().replace('_', '-')}",
            role=role.name,
            policy_arn=partition.apply(functools.partial(managed_policy_arn, name=policy)),
            opts=opts,
        )
        for policy in NODE_ROLE_POLICIES
    ]
    return role, attachments
