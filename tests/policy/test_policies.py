"""Every policy: passes on what the program renders, fails on a broken copy of it."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from pulumi_policy import PolicyCustomTimeouts, PolicyResourceOptions, ResourceValidationArgs

from offline import harness
from offline.mocks import Registration
from policy import checks
from tests.conftest import values


def _args(reg: Registration, props: dict[str, Any] | None = None) -> ResourceValidationArgs:
    opts = PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [], reg.parent)
    return ResourceValidationArgs(
        reg.type,
        props if props is not None else values(reg),
        f"urn:pulumi:test::llm-platform::{reg.type}::{reg.name}",
        reg.name,
        opts,
        None,
    )


def _violations(check: Callable[..., None], reg: Registration, props: dict[str, Any] | None = None) -> list[str]:
    found: list[str] = []
    check(_args(reg, props), lambda message, urn=None: found.append(message))
    return found


@pytest.mark.parametrize("name", sorted(checks.CHECKS))
def test_every_policy_passes_on_both_renders(name: str, dev_run: harness.RunResult, prod_run: harness.RunResult) -> None:
    _, check = checks.CHECKS[name]
    for run in (dev_run, prod_run):
        for reg in run.registrations:
            assert _violations(check, reg) == [], (name, reg.ref)


def _broken(
    run: harness.RunResult, type_token: str, name: str | None, mutate: Callable[[dict[str, Any]], object]
) -> tuple[Registration, dict[str, Any]]:
    reg = run.one(type_token, name)
    props = copy.deepcopy(values(reg))
    mutate(props)
    return reg, props


def _container(props: dict[str, Any]) -> dict[str, Any]:
    c: dict[str, Any] = props["spec"]["template"]["spec"]["containers"][0]
    return c


FAILING: dict[str, tuple[str, str | None, Callable[[dict[str, Any]], object], list[str]]] = {
    "eks-endpoint-exposure": (
        "eks:index:Cluster",
        None,
        lambda p: p.update(endpointPublicAccess=True, publicAccessCidrs=["0.0.0.0/0"], endpointPrivateAccess=False),
        [
            "The EKS API endpoint allows 0.0.0.0/0: every address on the internet.",
            "The EKS API endpoint is public but the private endpoint is off: nodes could not join.",
        ],
    ),
    "eks-secrets-encryption": (
        "eks:index:Cluster",
        None,
        lambda p: p.pop("encryptionConfigKeyArn"),
        ["The EKS cluster does not encrypt Secrets with a KMS key (encryptionConfigKeyArn)."],
    ),
    "eks-control-plane-logs": (
        "eks:index:Cluster",
        None,
        lambda p: p.update(enabledClusterLogTypes=["api"]),
        ["Control-plane log types missing: audit, authenticator."],
    ),
    "imdsv2-on-node-paths": (
        "aws:ec2/launchTemplate:LaunchTemplate",
        None,
        lambda p: p["metadataOptions"].update(httpTokens="optional", httpPutResponseHopLimit=2),
        [
            "Launch template: IMDSv2 is not required (httpTokens must be required).",
            "Launch template: the IMDS hop limit is 2 (must be 1, so pods cannot reach the node role).",
        ],
    ),
    "pinned-images": (
        "kubernetes:apps/v1:Deployment",
        "model-llama-3-2-3b-deployment",
        lambda p: _container(p).update(image="vllm/vllm-openai:latest"),
        ["Container vllm uses an unpinned image 'vllm/vllm-openai:latest'; pin a release tag or digest."],
    ),
    "no-direct-load-balancer": (
        "kubernetes:core/v1:Service",
        "model-llama-3-2-3b-service",
        lambda p: p["spec"].update(type="LoadBalancer"),
        ["Service model-llama-3-2-3b-service is of type LoadBalancer; vLLM's /metrics and control endpoints would be exposed."],
    ),
    "requests-and-limits": (
        "kubernetes:apps/v1:Deployment",
        "model-llama-3-2-3b-deployment",
        lambda p: _container(p)["resources"]["requests"].pop("memory"),
        ["Container vllm has no requests for memory."],
    ),
    "secrets-only-from-secrets": (
        "kubernetes:apps/v1:Deployment",
        "model-llama-3-2-3b-deployment",
        lambda p: (_container(p)["env"].append({"name": "HF_TOKEN", "value": "hf_x"}), _container(p)["args"].append("--api-key=k")),
        ["Container vllm sets HF_TOKEN as a literal; use a Secret.", "Container vllm passes --api-key on the command line; use a Secret."],
    ),
}


def _statement(document: str, statement: dict[str, Any]) -> str:
    parsed = json.loads(document)
    parsed["Statement"] = [*parsed["Statement"], statement]
    return json.dumps(parsed)


FAILING |= {
    "iam-trust-scoped": (
        "aws:iam/role:Role",
        "alb-controller-role",
        lambda p: p.update(
            assumeRolePolicy=_statement(p["assumeRolePolicy"], {"Effect": "Allow", "Principal": "*", "Action": "sts:AssumeRole"})
        ),
        ["Role alb-controller-role can be assumed by any principal ('*')."],
    ),
    "iam-no-wildcard-actions": (
        "aws:iam/policy:Policy",
        "alb-controller-policy",
        lambda p: p.update(policy=_statement(p["policy"], {"Effect": "Allow", "Action": ["ec2:*", "s3:GetObject"], "Resource": "*"})),
        ["Policy alb-controller-policy allows ec2:*: grant the actions the workload uses."],
    ),
    "iam-no-broad-managed-policies": (
        "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
        "karpenter-node-amazoneksworkernodepolicy",
        lambda p: p.update(policyArn="arn:aws:iam::aws:policy/AdministratorAccess"),
        ["Attachment karpenter-node-amazoneksworkernodepolicy gives its role AdministratorAccess."],
    ),
}


def test_pod_identity_and_irsa_trusts_are_checked(prod_run: harness.RunResult) -> None:
    pod_identity = prod_run.one("aws:iam/role:Role", "model-llama-3-1-8b-weights-read")
    props = copy.deepcopy(values(pod_identity))
    trust = json.loads(props["assumeRolePolicy"])
    trust["Statement"][0]["Action"] = "sts:AssumeRole"
    props["assumeRolePolicy"] = json.dumps(trust)
    assert _violations(checks.iam_trust_scoped, pod_identity, props) == [
        "Role model-llama-3-1-8b-weights-read: EKS Pod Identity needs exactly sts:AssumeRole and sts:TagSession."
    ]
    federated = {
        "Effect": "Allow",
        "Principal": {"Federated": "arn:aws:iam::123456789012:oidc-provider/x"},
        "Action": "sts:AssumeRoleWithWebIdentity",
    }
    props["assumeRolePolicy"] = json.dumps({"Version": "2012-10-17", "Statement": [federated]})
    assert _violations(checks.iam_trust_scoped, pod_identity, props) == [
        "Role model-llama-3-1-8b-weights-read: a web-identity trust must pin the service account (sub) and audience (aud)."
    ]


@pytest.mark.parametrize("stack", ["existing-vpc-irsa-bottlerocket", "internet-facing-tls", "scale-to-zero-dev"])
def test_the_iam_policies_hold_on_every_fixture(stack: str) -> None:
    from tests.conftest import fixture_run

    run = fixture_run(stack)
    for name in ("iam-trust-scoped", "iam-no-wildcard-actions", "iam-no-broad-managed-policies"):
        for reg in run.registrations:
            assert _violations(checks.CHECKS[name][1], reg) == [], (name, reg.ref)


def test_every_policy_has_a_failing_case() -> None:
    assert set(FAILING) == set(checks.CHECKS)


@pytest.mark.parametrize("name", sorted(FAILING))
def test_policy_fails_on_a_broken_resource(name: str, prod_run: harness.RunResult) -> None:
    type_token, resource, mutate, expected = FAILING[name]
    reg, props = _broken(prod_run, type_token, resource, mutate)
    assert _violations(checks.CHECKS[name][1], reg, props) == expected


def test_ec2_node_class_imds_override_is_caught(prod_run: harness.RunResult) -> None:
    reg, props = _broken(
        prod_run,
        "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass",
        "karpenter-gpu-al2023",
        lambda p: p["spec"]["metadataOptions"].update(httpPutResponseHopLimit=2),
    )
    assert _violations(checks.imdsv2_on_node_paths, reg, props) == [
        "EC2NodeClass: the IMDS hop limit is 2 (must be 1, so pods cannot reach the node role)."
    ]


def test_public_endpoint_without_cidrs_is_caught(dev_run: harness.RunResult) -> None:
    reg, props = _broken(dev_run, "eks:index:Cluster", None, lambda p: p.pop("publicAccessCidrs"))
    assert _violations(checks.eks_endpoint_exposure, reg, props) == [
        "The EKS API endpoint is public with no CIDR allow-list (EKS then allows 0.0.0.0/0)."
    ]


def test_the_pack_builds_its_policies() -> None:
    assert [p.name for p in checks.policies()] == list(checks.CHECKS)
