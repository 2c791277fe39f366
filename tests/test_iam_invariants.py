"""IAM over the whole render of every fixture stack: what no single-role test can see.

- write actions on every resource (`Resource: *`) appear only in the policies the upstream
  projects document that way, listed by name in the policy pack (`iam-no-wildcard-writes`);
- every role EC2 assumes (a node role) carries exactly the node-role managed policies, and no
  inline right but the image cache's import (`iam-node-roles`);
- every role EKS Pod Identity assumes (principal pods.eks.amazonaws.com) pins the cluster, the
  namespace and the service account (session tags `aws:RequestTag/eks-cluster-name`,
  `kubernetes-namespace`, `kubernetes-service-account`, EKS user guide pod-id-role), the cluster
  being the render's own, and each of its associations lends it to exactly those: a dev association
  in the same account (same namespace and service account names) cannot assume a prod role;
- every IRSA role pins one service account (`sub`) and the STS audience.

The first two checks are the policy pack's, so `pulumi preview --policy-pack policy` enforces the same;
here they run on the captured resources of every fixture, and a broken copy shows each fails.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from offline import harness
from tests.conftest import FIXTURES, PROD, edited, fixture_run, values
from tests.support.iam import irsa_trust_findings, node_role_findings, node_roles, pod_identity_trust_findings, wildcard_writes


@pytest.mark.parametrize("stack", FIXTURES)
def test_no_wildcard_writes_beyond_the_upstream_policies(stack: str) -> None:
    assert wildcard_writes(fixture_run(stack).registrations) == []


@pytest.mark.parametrize("stack", FIXTURES)
def test_node_roles_carry_exactly_the_node_policies(stack: str) -> None:
    run = fixture_run(stack)
    assert node_role_findings(run.registrations) == []
    assert node_roles(run.registrations) == ["cluster-system-nodes", "karpenter-node"]


def test_a_wildcard_write_is_found(prod_run: harness.RunResult) -> None:
    def grant(inputs: dict[str, Any]) -> None:
        doc = json.loads(inputs["policy"])
        doc["Statement"].append({"Effect": "Allow", "Action": ["s3:PutObject", "s3:GetObject"], "Resource": "*"})
        inputs["policy"] = json.dumps(doc)

    broken = edited(prod_run.registrations, "aws:iam/rolePolicy:RolePolicy", "model-llama-3-1-8b-weights-read", grant)
    assert wildcard_writes(broken) == [
        "Policy model-llama-3-1-8b-weights-read allows s3:PutObject on every resource ('*'): name the resources."
    ]


def test_an_extra_node_policy_is_found() -> None:
    run = fixture_run(PROD)
    broken = edited(
        run.registrations,
        "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
        "cluster-system-nodes-amazonssmmanagedinstancecore",
        lambda inputs: inputs.update(policyArn="arn:aws:iam::aws:policy/AmazonS3FullAccess"),
    )
    assert node_role_findings(broken) == [
        "Node role cluster-system-nodes carries AmazonS3FullAccess and lacks AmazonSSMManagedInstanceCore."
    ]


@pytest.mark.parametrize("stack", FIXTURES)
def test_pod_identity_roles_trust_one_cluster_namespace_and_service_account(stack: str) -> None:
    registrations = fixture_run(stack).registrations
    assert pod_identity_trust_findings(registrations) == []
    pod_roles = [
        r.name for r in registrations if r.type == "aws:iam/role:Role" and "pods.eks.amazonaws.com" in values(r)["assumeRolePolicy"]
    ]
    # the add-on's, the controllers' (Karpenter's unless it uses IRSA) and the weights roles are all read
    assert {"cluster-ebs-csi", "alb-controller-role"} <= set(pod_roles)


@pytest.mark.parametrize("stack", FIXTURES)
def test_irsa_roles_pin_one_service_account(stack: str) -> None:
    assert irsa_trust_findings(fixture_run(stack).registrations) == []


def test_the_irsa_fixture_has_an_irsa_role_to_check() -> None:
    trust = values(fixture_run("existing-vpc-irsa-bottlerocket").one("aws:iam/role:Role", "karpenter-controller"))["assumeRolePolicy"]
    assert "sts:AssumeRoleWithWebIdentity" in trust


def _trust(change: Callable[[dict[str, Any]], object]) -> Callable[[dict[str, Any]], None]:
    def edit(inputs: dict[str, Any]) -> None:
        doc = json.loads(inputs["assumeRolePolicy"])
        change(doc["Statement"][0])
        inputs["assumeRolePolicy"] = json.dumps(doc)

    return edit


def test_a_pod_identity_trust_without_the_cluster_is_found(prod_run: harness.RunResult) -> None:
    unpinned = _trust(lambda s: s["Condition"]["StringEquals"].pop("aws:RequestTag/eks-cluster-name"))
    broken = edited(prod_run.registrations, "aws:iam/role:Role", "model-llama-3-1-8b-weights-read", unpinned)
    assert pod_identity_trust_findings(broken) == [
        "Role model-llama-3-1-8b-weights-read: its Pod Identity trust does not pin the cluster: "
        "build it with builders.iam.pod_identity_trust_policy(cluster, namespace, service account)."
    ]


def test_an_unscoped_pod_identity_trust_is_found(prod_run: harness.RunResult) -> None:
    broken = edited(prod_run.registrations, "aws:iam/role:Role", "karpenter-controller", _trust(lambda s: s.pop("Condition")))
    assert pod_identity_trust_findings(broken) == [
        "Role karpenter-controller: its Pod Identity trust does not pin the cluster and the namespace and the service account: "
        "build it with builders.iam.pod_identity_trust_policy(cluster, namespace, service account)."
    ]


def test_a_wildcard_or_another_cluster_in_a_pod_identity_trust_is_found(prod_run: harness.RunResult) -> None:
    def like(statement: dict[str, Any]) -> None:
        statement["Condition"] = {"StringLike": {"aws:RequestTag/kubernetes-service-account": "*"}, **statement["Condition"]}

    def dev(statement: dict[str, Any]) -> None:
        statement["Condition"]["StringEquals"]["aws:RequestTag/eks-cluster-name"] = "llm-dev"

    broken = edited(prod_run.registrations, "aws:iam/role:Role", "alb-controller-role", _trust(like))
    broken = edited(broken, "aws:iam/role:Role", "cluster-ebs-csi", _trust(dev))
    assert pod_identity_trust_findings(broken) == [
        "Role cluster-ebs-csi: its Pod Identity trust names cluster 'llm-dev', not this stack's ['llm-prod']: "
        "build it with builders.iam.pod_identity_trust_policy(cluster, namespace, service account).",
        "Role cluster-ebs-csi: cluster-aws-ebs-csi-driver lends it to llm-prod/kube-system/ebs-csi-controller-sa but its trust "
        "admits only llm-dev/kube-system/ebs-csi-controller-sa: give both the same cluster, namespace and service account.",
        "Role alb-controller-role: its Pod Identity trust uses StringLike: pin exact values with StringEquals; "
        "build it with builders.iam.pod_identity_trust_policy(cluster, namespace, service account).",
    ]


def test_a_trust_that_differs_from_its_association_is_found(prod_run: harness.RunResult) -> None:
    def populate(statement: dict[str, Any]) -> None:
        statement["Condition"]["StringEquals"]["aws:RequestTag/kubernetes-service-account"] = "llama-3-1-8b-weights"

    broken = edited(prod_run.registrations, "aws:iam/role:Role", "model-llama-3-1-8b-weights-read", _trust(populate))
    assert pod_identity_trust_findings(broken) == [
        "Role model-llama-3-1-8b-weights-read: model-llama-3-1-8b-weights-read lends it to llm-prod/llama-3-1-8b/llama-3-1-8b "
        "but its trust admits only llm-prod/llama-3-1-8b/llama-3-1-8b-weights: give both the same cluster, namespace and service account."
    ]


def test_an_irsa_trust_for_every_service_account_is_found() -> None:
    run = fixture_run("existing-vpc-irsa-bottlerocket")

    def any_account(statement: dict[str, Any]) -> None:
        pinned = statement["Condition"].pop("StringEquals")
        statement["Condition"]["StringLike"] = pinned
        sub = next(k for k in pinned if k.endswith(":sub"))
        pinned[sub] = "system:serviceaccount:kube-system:*"

    broken = edited(run.registrations, "aws:iam/role:Role", "karpenter-controller", _trust(any_account))
    trust = json.loads(values(run.one("aws:iam/role:Role", "karpenter-controller"))["assumeRolePolicy"])
    issuer = trust["Statement"][0]["Principal"]["Federated"].split(":oidc-provider/")[1]
    assert irsa_trust_findings(broken) == [
        f"Role karpenter-controller: its IRSA trust does not pin one service account ({issuer}:sub, StringEquals "
        "system:serviceaccount:<namespace>:<name>): build it with builders.iam.irsa_trust_policy.",
        f"Role karpenter-controller: its IRSA trust does not pin {issuer}:aud to sts.amazonaws.com: build it with builders.iam.irsa_trust_policy.",
    ]
