"""IAM policy documents shared by components (pure: dicts in, dicts out)."""

from __future__ import annotations

from typing import Any

PolicyDocument = dict[str, Any]


def ec2_trust_policy(partition_dns_suffix: str = "amazonaws.com") -> PolicyDocument:
    """Trust policy of a node role: EC2 instances assume it."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": f"ec2.{partition_dns_suffix}"},
                "Action": "sts:AssumeRole",
            }
        ],
    }


def pod_identity_trust_policy(namespace: str | None = None, service_account: str | None = None) -> PolicyDocument:
    """Trust policy of a role assumed through EKS Pod Identity (AssumeRole and TagSession).

    With a namespace and service account, only that service account's pods can assume it, whatever
    association someone adds later: EKS tags each session with both (aws:RequestTag/...).
    """
    statement: dict[str, Any] = {
        "Effect": "Allow",
        "Principal": {"Service": "pods.eks.amazonaws.com"},
        "Action": ["sts:AssumeRole", "sts:TagSession"],
    }
    if namespace is not None and service_account is not None:
        statement["Condition"] = {
            "StringEquals": {
                "aws:RequestTag/kubernetes-namespace": namespace,
                "aws:RequestTag/kubernetes-service-account": service_account,
            }
        }
    return {"Version": "2012-10-17", "Statement": [statement]}


def irsa_trust_policy(oidc_provider_arn: str, oidc_issuer: str, namespace: str, service_account: str) -> PolicyDocument:
    """Trust policy of a role assumed through IRSA, scoped to one service account."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Federated": oidc_provider_arn},
                "Action": "sts:AssumeRoleWithWebIdentity",
                "Condition": {
                    "StringEquals": {
                        f"{oidc_issuer}:sub": f"system:serviceaccount:{namespace}:{service_account}",
                        f"{oidc_issuer}:aud": "sts.amazonaws.com",
                    }
                },
            }
        ],
    }
