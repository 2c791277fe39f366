"""Karpenter IAM and interruption handling, as the upstream getting-started template builds them.

Mirrors the CloudFormation template of Karpenter 1.14.1 (node role, six controller policies,
the SQS interruption queue with its policy, five EventBridge rules), with this stack's names.
Pure: strings in, policy documents out; the tests compare them with the upstream template.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

QUEUE_RETENTION_SECONDS = 300
CONTROLLER_POLICY_STEMS = ("NodeLifecycle", "IAMIntegration", "EKSIntegration", "Interruption", "ZonalShift", "ResourceDiscovery")


@dataclass(frozen=True)
class Scope:
    """Where the controller acts: the values substituted into the upstream template."""

    cluster_name: str
    region: str
    account_id: str
    partition: str = "aws"


def _doc(*statements: dict[str, Any]) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": list(statements)}


def node_lifecycle_policy(s: Scope) -> dict[str, Any]:
    arn = f"arn:{s.partition}:ec2:{s.region}"
    owned = {f"aws:ResourceTag/kubernetes.io/cluster/{s.cluster_name}": "owned"}
    tagged = [
        f"{arn}:*:fleet/*",
        f"{arn}:*:instance/*",
        f"{arn}:*:volume/*",
        f"{arn}:*:network-interface/*",
        f"{arn}:*:launch-template/*",
        f"{arn}:*:spot-instances-request/*",
    ]
    request_tags = {
        f"aws:RequestTag/kubernetes.io/cluster/{s.cluster_name}": "owned",
        "aws:RequestTag/eks:eks-cluster-name": s.cluster_name,
    }
    return _doc(
        {
            "Sid": "AllowScopedEC2InstanceAccessActions",
            "Effect": "Allow",
            "Resource": [
                f"{arn}::image/*",
                f"{arn}::snapshot/*",
                f"{arn}:*:security-group/*",
                f"{arn}:*:subnet/*",
                f"{arn}:*:capacity-reservation/*",
                f"{arn}:*:placement-group/*",
            ],
            "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
        },
        {
            "Sid": "AllowScopedEC2LaunchTemplateAccessActions",
            "Effect": "Allow",
            "Resource": f"{arn}:*:launch-template/*",
            "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
            "Condition": {"StringEquals": owned, "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"}},
        },
        {
            "Sid": "AllowScopedEC2InstanceActionsWithTags",
            "Effect": "Allow",
            "Resource": tagged,
            "Action": ["ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"],
            "Condition": {"StringEquals": request_tags, "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"}},
        },
        {
            "Sid": "AllowScopedResourceCreationTagging",
            "Effect": "Allow",
            "Resource": tagged,
            "Action": "ec2:CreateTags",
            "Condition": {
                "StringEquals": {**request_tags, "ec2:CreateAction": ["RunInstances", "CreateFleet", "CreateLaunchTemplate"]},
                "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"},
            },
        },
        {
            "Sid": "AllowScopedResourceTagging",
            "Effect": "Allow",
            "Resource": f"{arn}:*:instance/*",
            "Action": "ec2:CreateTags",
            "Condition": {
                "StringEquals": owned,
                "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"},
                "StringEqualsIfExists": {"aws:RequestTag/eks:eks-cluster-name": s.cluster_name},
                "ForAllValues:StringEquals": {"aws:TagKeys": ["eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"]},
            },
        },
        {
            "Sid": "AllowScopedDeletion",
            "Effect": "Allow",
            "Resource": [f"{arn}:*:instance/*", f"{arn}:*:launch-template/*"],
            "Action": ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"],
            "Condition": {"StringEquals": owned, "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"}},
        },
    )


def iam_integration_policy(s: Scope, node_role_arn: str) -> dict[str, Any]:
    profiles = f"arn:{s.partition}:iam::{s.account_id}:instance-profile/*"
    owned_resource = {
        f"aws:ResourceTag/kubernetes.io/cluster/{s.cluster_name}": "owned",
        "aws:ResourceTag/topology.kubernetes.io/region": s.region,
    }
    owned_request = {
        f"aws:RequestTag/kubernetes.io/cluster/{s.cluster_name}": "owned",
        "aws:RequestTag/eks:eks-cluster-name": s.cluster_name,
        "aws:RequestTag/topology.kubernetes.io/region": s.region,
    }
    return _doc(
        {
            "Sid": "AllowPassingInstanceRole",
            "Effect": "Allow",
            "Resource": node_role_arn,
            "Action": "iam:PassRole",
            "Condition": {"StringEquals": {"iam:PassedToService": ["ec2.amazonaws.com", "ec2.amazonaws.com.cn"]}},
        },
        {
            "Sid": "AllowScopedInstanceProfileCreationActions",
            "Effect": "Allow",
            "Resource": profiles,
            "Action": ["iam:CreateInstanceProfile"],
            "Condition": {"StringEquals": owned_request, "StringLike": {"aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*"}},
        },
        {
            "Sid": "AllowScopedInstanceProfileTagActions",
            "Effect": "Allow",
            "Resource": profiles,
            "Action": ["iam:TagInstanceProfile"],
            "Condition": {
                "StringEquals": {**owned_resource, **owned_request},
                "StringLike": {
                    "aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*",
                    "aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*",
                },
            },
        },
        {
            "Sid": "AllowScopedInstanceProfileActions",
            "Effect": "Allow",
            "Resource": profiles,
            "Action": ["iam:AddRoleToInstanceProfile", "iam:RemoveRoleFromInstanceProfile", "iam:DeleteInstanceProfile"],
            "Condition": {"StringEquals": owned_resource, "StringLike": {"aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*"}},
        },
    )


def eks_integration_policy(s: Scope) -> dict[str, Any]:
    return _doc(
        {
            "Sid": "AllowAPIServerEndpointDiscovery",
            "Effect": "Allow",
            "Resource": f"arn:{s.partition}:eks:{s.region}:{s.account_id}:cluster/{s.cluster_name}",
            "Action": "eks:DescribeCluster",
        }
    )


def interruption_policy(queue_arn: str) -> dict[str, Any]:
    return _doc(
        {
            "Sid": "AllowInterruptionQueueActions",
            "Effect": "Allow",
            "Resource": queue_arn,
            "Action": ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"],
        }
    )


def zonal_shift_policy(s: Scope) -> dict[str, Any]:
    return _doc(
        {
            "Sid": "AllowZonalShiftStatusReadOnly",
            "Effect": "Allow",
            "Resource": "*",
            "Action": ["arc-zonal-shift:GetManagedResource"],
            "Condition": {
                "StringEquals": {
                    "arc-zonal-shift:ResourceIdentifier": f"arn:{s.partition}:eks:{s.region}:{s.account_id}:cluster/{s.cluster_name}"
                }
            },
        }
    )


def resource_discovery_policy(s: Scope) -> dict[str, Any]:
    return _doc(
        {
            "Sid": "AllowRegionalReadActions",
            "Effect": "Allow",
            "Resource": "*",
            "Action": [
                "ec2:DescribeCapacityReservations",
                "ec2:DescribeImages",
                "ec2:DescribeInstances",
                "ec2:DescribeInstanceStatus",
                "ec2:DescribeInstanceTypeOfferings",
                "ec2:DescribeInstanceTypes",
                "ec2:DescribeLaunchTemplates",
                "ec2:DescribePlacementGroups",
                "ec2:DescribeSecurityGroups",
                "ec2:DescribeSpotPriceHistory",
                "ec2:DescribeSubnets",
            ],
            "Condition": {"StringEquals": {"aws:RequestedRegion": s.region}},
        },
        {
            "Sid": "AllowSSMReadActions",
            "Effect": "Allow",
            "Resource": f"arn:{s.partition}:ssm:{s.region}::parameter/aws/service/*",
            "Action": "ssm:GetParameter",
        },
        {"Sid": "AllowPricingReadActions", "Effect": "Allow", "Resource": "*", "Action": "pricing:GetProducts"},
        {"Sid": "AllowUnscopedInstanceProfileListAction", "Effect": "Allow", "Resource": "*", "Action": "iam:ListInstanceProfiles"},
        {
            "Sid": "AllowInstanceProfileReadActions",
            "Effect": "Allow",
            "Resource": f"arn:{s.partition}:iam::{s.account_id}:instance-profile/*",
            "Action": "iam:GetInstanceProfile",
        },
    )


def controller_policies(s: Scope, node_role_arn: str, queue_arn: str) -> dict[str, dict[str, Any]]:
    """The six controller policies, keyed by the upstream name stem."""
    return {
        "NodeLifecycle": node_lifecycle_policy(s),
        "IAMIntegration": iam_integration_policy(s, node_role_arn),
        "EKSIntegration": eks_integration_policy(s),
        "Interruption": interruption_policy(queue_arn),
        "ZonalShift": zonal_shift_policy(s),
        "ResourceDiscovery": resource_discovery_policy(s),
    }


def queue_policy(queue_arn: str) -> dict[str, Any]:
    """EventBridge and SQS may send; nothing may use the queue over plain HTTP."""
    return {
        "Version": "2012-10-17",
        "Id": "EC2InterruptionPolicy",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": ["events.amazonaws.com", "sqs.amazonaws.com"]},
                "Action": "sqs:SendMessage",
                "Resource": queue_arn,
            },
            {
                "Sid": "DenyHTTP",
                "Effect": "Deny",
                "Action": "sqs:*",
                "Resource": queue_arn,
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                "Principal": "*",
            },
        ],
    }


# The five EventBridge rules that feed the interruption queue: (resource name stem, source, detail-type).
INTERRUPTION_RULES = (
    ("scheduled-change", "aws.health", "AWS Health Event"),
    ("spot-interruption", "aws.ec2", "EC2 Spot Instance Interruption Warning"),
    ("rebalance", "aws.ec2", "EC2 Instance Rebalance Recommendation"),
    ("instance-state-change", "aws.ec2", "EC2 Instance State-change Notification"),
    ("capacity-reservation-interruption", "aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning"),
)


def event_pattern(source: str, detail_type: str) -> dict[str, list[str]]:
    return {"source": [source], "detail-type": [detail_type]}
