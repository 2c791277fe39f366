"""Whole-render IAM findings, from the policy pack's own checks, and what one S3 policy allows."""

from __future__ import annotations

import json
import re
from typing import Any

from config.facts.conventions import KUBE_SYSTEM
from offline.mocks import ACCOUNT_ID, Registration
from policy import checks
from tests.conftest import values
from tests.support.policy import resource_args, stack_args


def wildcard_writes(registrations: list[Registration]) -> list[str]:
    found: list[str] = []
    for r in registrations:
        checks.iam_no_wildcard_writes(resource_args(r), lambda message, urn=None: found.append(message))
    return found


def node_role_findings(registrations: list[Registration]) -> list[str]:
    found: list[str] = []
    checks.iam_node_roles(stack_args(registrations), lambda message, urn=None: found.append(message))
    return found


def node_roles(registrations: list[Registration]) -> list[str]:
    return sorted(
        r.name
        for r in registrations
        if r.type == "aws:iam/role:Role" and "ec2.amazonaws.com" in json.dumps(json.loads(values(r)["assumeRolePolicy"]))
    )


def _like(pattern: str, value: str) -> bool:
    """IAM's wildcard match: `*` any run of characters (none too), `?` one character."""
    regex = re.escape(pattern).replace(r"\*", ".*").replace(r"\?", ".")
    return re.fullmatch(regex, value) is not None


def _listed(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else value


def s3_allows(document: dict[str, Any], action: str, resource: str, prefix: str | None = None) -> bool:
    """Whether an identity policy of Allow statements grants one S3 request: `action` on the
    `resource` ARN, with the request's `s3:prefix` for a listing. Knows only what the weights roles
    use (Allow, Action, Resource, StringLike/StringEquals on s3:prefix) and refuses anything else,
    so a new kind of statement cannot pass unread."""
    for statement in document["Statement"]:
        unknown = set(statement) - {"Sid", "Effect", "Action", "Resource", "Condition"}
        assert statement["Effect"] == "Allow", f"s3_allows cannot read {statement}"
        assert not unknown, f"s3_allows cannot read {statement}"
        if not any(_like(a.lower(), action.lower()) for a in _listed(statement["Action"])):
            continue
        if not any(_like(r, resource) for r in _listed(statement["Resource"])):
            continue
        matched = True
        for operator, keys in statement.get("Condition", {}).items():
            assert operator in {"StringLike", "StringEquals"}, f"s3_allows cannot read {operator}"
            assert set(keys) == {"s3:prefix"}, f"s3_allows cannot read {keys}"
            patterns = _listed(keys["s3:prefix"])
            like = operator == "StringLike"
            matched = matched and prefix is not None and any(_like(p, prefix) if like else p == prefix for p in patterns)
        if matched:
            return True
    return False


POD_IDENTITY = "pods.eks.amazonaws.com"
POD_IDENTITY_KEYS = {
    "aws:RequestTag/eks-cluster-name": "cluster",
    "aws:RequestTag/kubernetes-namespace": "namespace",
    "aws:RequestTag/kubernetes-service-account": "service account",
}
"""The session tags a Pod Identity trust must pin (EKS user guide, pod-id-role), and what each names."""
PIN = "build it with builders.iam.pod_identity_trust_policy(cluster, namespace, service account)"


def _exact(value: Any) -> bool:
    return isinstance(value, str) and value != "" and not any(c in value for c in "*?$")


def _cluster_names(registrations: list[Registration]) -> set[str]:
    return {values(r)["name"] for r in registrations if r.type == "eks:index:Cluster"}


def _associations(registrations: list[Registration]) -> dict[str, list[tuple[str, str, str, str]]]:
    """Every Pod Identity association by the role ARN it lends: (what, cluster, namespace, service
    account). An add-on's own associations are in its add-on's namespace, kube-system."""
    found: dict[str, list[tuple[str, str, str, str]]] = {}
    for r in registrations:
        v = values(r)
        if r.type == "aws:eks/podIdentityAssociation:PodIdentityAssociation":
            found.setdefault(v["roleArn"], []).append((r.name, v["clusterName"], v["namespace"], v["serviceAccount"]))
        elif r.type == "aws:eks/addon:Addon":
            for a in v.get("podIdentityAssociations") or []:
                found.setdefault(a["roleArn"], []).append((r.name, v["clusterName"], KUBE_SYSTEM, a["serviceAccount"]))
    return found


def _role_arn(r: Registration) -> str:
    return f"arn:aws:iam::{ACCOUNT_ID}:role/{r.id}"


def pod_identity_trust_findings(registrations: list[Registration]) -> list[str]:
    """Every role EKS Pod Identity assumes pins, with StringEquals on one exact value each, the
    cluster (the render's own EKS cluster), the namespace and the service account; and every
    association of that role lends it to exactly that cluster, namespace and service account (a
    trust that names another one would lock the pods out)."""
    found: list[str] = []
    clusters = _cluster_names(registrations)
    associations = _associations(registrations)
    for r in registrations:
        if r.type != "aws:iam/role:Role":
            continue
        for s in json.loads(values(r)["assumeRolePolicy"])["Statement"]:
            principal = s.get("Principal")
            services = _listed(principal.get("Service", [])) if isinstance(principal, dict) else []
            if POD_IDENTITY not in services:
                continue
            condition = s.get("Condition") or {}
            pinned = condition.get("StringEquals") or {}
            others = sorted(set(condition) - {"StringEquals"})
            if others:
                found.append(f"Role {r.name}: its Pod Identity trust uses {', '.join(others)}: pin exact values with StringEquals; {PIN}.")
            missing = [what for key, what in POD_IDENTITY_KEYS.items() if not _exact(pinned.get(key))]
            if missing:
                found.append(f"Role {r.name}: its Pod Identity trust does not pin the {' and the '.join(missing)}: {PIN}.")
                continue
            cluster, namespace, account = (pinned[key] for key in POD_IDENTITY_KEYS)
            if cluster not in clusters:
                found.append(
                    f"Role {r.name}: its Pod Identity trust names cluster {cluster!r}, not this stack's {sorted(clusters)}: {PIN}."
                )
            for what, *lent in associations.get(_role_arn(r), []):
                if tuple(lent) != (cluster, namespace, account):
                    found.append(
                        f"Role {r.name}: {what} lends it to {'/'.join(lent)} but its trust admits only "
                        f"{cluster}/{namespace}/{account}: give both the same cluster, namespace and service account."
                    )
    return found


SERVICE_ACCOUNT_SUB = re.compile(r"system:serviceaccount:[a-z0-9]([-a-z0-9]*[a-z0-9])?:[a-z0-9]([-.a-z0-9]*[a-z0-9])?")


def irsa_trust_findings(registrations: list[Registration]) -> list[str]:
    """Every web-identity (IRSA) trust pins, with StringEquals, one service account (`sub` equal to
    `system:serviceaccount:<namespace>:<name>`, no wildcard) and the STS audience, both keyed by
    the issuer of the OIDC provider it trusts."""
    found: list[str] = []
    for r in registrations:
        if r.type != "aws:iam/role:Role":
            continue
        for s in json.loads(values(r)["assumeRolePolicy"])["Statement"]:
            principal = s.get("Principal")
            federated = principal.get("Federated") if isinstance(principal, dict) else None
            if not federated:
                continue
            issuer = str(federated).split(":oidc-provider/", 1)[-1]
            condition = s.get("Condition") or {}
            pinned = condition.get("StringEquals") or {}
            sub, aud = pinned.get(f"{issuer}:sub"), pinned.get(f"{issuer}:aud")
            if set(condition) != {"StringEquals"} or not (isinstance(sub, str) and SERVICE_ACCOUNT_SUB.fullmatch(sub)):
                found.append(
                    f"Role {r.name}: its IRSA trust does not pin one service account ({issuer}:sub, StringEquals "
                    "system:serviceaccount:<namespace>:<name>): build it with builders.iam.irsa_trust_policy."
                )
            if aud != "sts.amazonaws.com":
                found.append(
                    f"Role {r.name}: its IRSA trust does not pin {issuer}:aud to sts.amazonaws.com: build it with builders.iam.irsa_trust_policy."
                )
    return found


def trust_scoped_findings(registrations: list[Registration]) -> list[str]:
    """IAM-1 on every role of a render: the policy pack's iam-trust-scoped on each role, the Pod
    Identity and IRSA trusts pinned to one cluster, namespace and service account, and one role per
    controller (no role lent to two service accounts)."""
    found: list[str] = []

    def report(message: str, urn: str | None = None) -> None:
        found.append(message)

    for r in registrations:
        checks.iam_trust_scoped(resource_args(r), report)
    found += pod_identity_trust_findings(registrations)
    found += irsa_trust_findings(registrations)
    roles = {_role_arn(r): r.name for r in registrations if r.type == "aws:iam/role:Role"}
    for arn, lent in _associations(registrations).items():
        accounts = sorted({f"{ns}/{sa}" for _, _, ns, sa in lent})
        if len(accounts) > 1:
            found.append(
                f"Role {roles.get(arn, arn)} is lent to {len(accounts)} service accounts ({', '.join(accounts)}): one role per controller."
            )
    return found
