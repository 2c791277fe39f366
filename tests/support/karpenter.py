"""Karpenter's upstream IAM template, read for the pinned version, with the names our stacks use."""

from __future__ import annotations

from typing import Any

from builders.karpenter import iam
from tests.conftest import shared_path
from tests.validators import cloudformation

SCOPE = iam.Scope("llm-prod", "us-east-1", "123456789012")


NODE_ROLE = "arn:aws:iam::123456789012:role/karpenter-node"


QUEUE = "arn:aws:sqs:us-east-1:123456789012:llm-prod"


def upstream_karpenter() -> dict[str, Any]:
    return cloudformation.load(shared_path("iam", "karpenter_cloudformation.yaml"))


def upstream_names() -> dict[str, str]:
    return {
        "ClusterName": SCOPE.cluster_name,
        "AWS::Partition": SCOPE.partition,
        "AWS::Region": SCOPE.region,
        "AWS::AccountId": SCOPE.account_id,
        "AWS::URLSuffix": "amazonaws.com",
        "KarpenterNodeRole.Arn": NODE_ROLE,
        "KarpenterInterruptionQueue.Arn": QUEUE,
    }
