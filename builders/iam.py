"""IAM policy documents shared by components (pure: dicts in, dicts out)."""

from __future__ import annotations

import json
from typing import Any

PolicyDocument = dict[str, Any]


def policy_document(*statements: dict[str, Any]) -> PolicyDocument:
    """An IAM policy document of these statements, in the current policy language (version 2012-10-17)."""
    return {"Version": "2012-10-17", "Statement": list(statements)}


def ec2_trust_policy(partition_dns_suffix: str = "amazonaws.com") -> PolicyDocument:
    """Trust policy of a node role: EC2 instances assume it."""
    return policy_document(
        {
            "Effect": "Allow",
            "Principal": {"Service": f"ec2.{partition_dns_suffix}"},
            "Action": "sts:AssumeRole",
        }
    )


POD_IDENTITY_PRINCIPAL = "pods.eks.amazonaws.com"
"""The service principal EKS Pod Identity assumes roles as."""


def pod_identity_trust_policy(cluster_name: str, namespace: str, service_account: str) -> PolicyDocument:
    """Trust policy of a role assumed through EKS Pod Identity (AssumeRole and TagSession), for one
    service account of one namespace on one cluster: whatever association someone adds later (in
    another cluster of the account, e.g. dev's namespace of the same name), only that service
    account's pods on this cluster can assume it.

    EKS tags every session it opens with `eks-cluster-arn`, `eks-cluster-name`,
    `kubernetes-namespace`, `kubernetes-service-account`, `kubernetes-pod-name` and
    `kubernetes-pod-uid` (EKS user guide, pod-id-role and pod-id-abac), so the trust compares them
    as `aws:RequestTag/...`. `cluster_name` is the EKS cluster's own name (the `name` given to
    eks.Cluster, which is `cluster.name` of the config). All three are required: there is no
    unscoped Pod Identity trust.
    """
    for what, value in (("cluster name", cluster_name), ("namespace", namespace), ("service account", service_account)):
        if not value or any(c in value for c in "*?$"):
            raise ValueError(f"pod_identity_trust_policy: the {what} {value!r} must be one exact name (no wildcard, not empty)")
    return policy_document(
        {
            "Effect": "Allow",
            "Principal": {"Service": POD_IDENTITY_PRINCIPAL},
            "Action": ["sts:AssumeRole", "sts:TagSession"],
            "Condition": {
                "StringEquals": {
                    "aws:RequestTag/eks-cluster-name": cluster_name,
                    "aws:RequestTag/kubernetes-namespace": namespace,
                    "aws:RequestTag/kubernetes-service-account": service_account,
                }
            },
        }
    )


def pod_identity_trust_json(cluster_name: str, namespace: str, service_account: str) -> str:
    """The same document as JSON, for `Output.apply` on a cluster name that is an output."""
    return json.dumps(pod_identity_trust_policy(cluster_name, namespace, service_account))


def irsa_trust_policy(oidc_provider_arn: str, oidc_issuer: str, namespace: str, service_account: str) -> PolicyDocument:
    """Trust policy of a role assumed through IRSA, scoped to one service account (its `sub`) and STS (`aud`)."""
    return policy_document(
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
    )
