"""Every policy: passes on what the program renders, fails on a broken copy of it."""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Callable
from typing import Any

import pytest

from offline import harness
from offline.mocks import Registration
from policy import checks
from tests.conftest import FIXTURES, edited, fixture_run, values
from tests.support.policy import container, edit_policy, resource_args, stack_of, stack_violations


def _violations(check: Callable[..., None], reg: Registration, props: dict[str, Any] | None = None) -> list[str]:
    found: list[str] = []
    check(resource_args(reg, props), lambda message, urn=None: found.append(message))
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
    "eks-access-entries": (
        "eks:index:Cluster",
        None,
        lambda p: p.update(authenticationMode="CONFIG_MAP"),
        ["The cluster authenticates through CONFIG_MAP: grant access with access entries (authenticationMode API)."],
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
        lambda p: container(p).update(image="vllm/vllm-openai:latest"),
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
        lambda p: container(p)["resources"]["requests"].pop("memory"),
        ["Container vllm has no requests for memory."],
    ),
    "secrets-only-from-secrets": (
        "kubernetes:apps/v1:Deployment",
        "model-llama-3-2-3b-deployment",
        lambda p: (container(p)["env"].append({"name": "HF_TOKEN", "value": "hf_x"}), container(p)["args"].append("--api-key=k")),
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
    "iam-role-rights-visible": (
        "aws:iam/role:Role",
        "karpenter-node",
        lambda p: p.update(
            inlinePolicies=[{"name": "x", "policy": '{"Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}'}]
        ),
        ["Role karpenter-node sets inlinePolicies: grant rights with RolePolicy or RolePolicyAttachment resources."],
    ),
    "iam-no-wildcard-writes": (
        "aws:iam/rolePolicy:RolePolicy",
        "model-llama-3-1-8b-weights-read",
        lambda p: p.update(
            policy=_statement(p["policy"], {"Effect": "Allow", "Action": ["s3:PutObject", "s3:GetObject"], "Resource": "*"})
        ),
        ["Policy model-llama-3-1-8b-weights-read allows s3:PutObject on every resource ('*'): name the resources."],
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
    assert [p.name for p in checks.policies()] == [*checks.CHECKS, *checks.STACK_CHECKS]


@pytest.mark.parametrize("stack", FIXTURES)
@pytest.mark.parametrize("name", sorted(checks.STACK_CHECKS))
def test_every_stack_policy_passes_on_every_fixture(name: str, stack: str) -> None:
    assert stack_violations(name, stack_of(fixture_run(stack))) == []


def _edit_resource(
    type_token: str, name: str, mutate: Callable[[dict[str, Any]], object]
) -> Callable[[list[Registration]], list[Registration]]:
    return lambda regs: edited(regs, type_token, name, mutate)


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        ({"Effect": "Allow", "NotPrincipal": {"AWS": "arn:aws:iam::123456789012:root"}, "Action": "sts:AssumeRole"}, "NotPrincipal"),
        ({"Effect": "Allow", "Principal": {"Service": "*"}, "Action": "sts:AssumeRole"}, "any principal ('*')"),
    ],
)
def test_trusts_open_in_other_spellings_fail(prod_run: harness.RunResult, statement: dict[str, Any], expected: str) -> None:
    role = prod_run.one("aws:iam/role:Role", "karpenter-node")
    props = copy.deepcopy(values(role))
    props["assumeRolePolicy"] = json.dumps({"Version": "2012-10-17", "Statement": [statement]})
    found = _violations(checks.iam_trust_scoped, role, props)
    assert len(found) == 1
    assert expected in found[0]


def test_a_not_resource_write_fails(prod_run: harness.RunResult) -> None:
    policy = prod_run.one("aws:iam/rolePolicy:RolePolicy", "model-llama-3-1-8b-weights-read")
    props = copy.deepcopy(values(policy))
    props["policy"] = _statement(props["policy"], {"Effect": "Allow", "Action": "s3:DeleteObject", "NotResource": "arn:aws:s3:::other/*"})
    assert _violations(checks.iam_no_wildcard_writes, policy, props) == [
        "Policy model-llama-3-1-8b-weights-read allows s3:DeleteObject on every resource ('*'): name the resources."
    ]


def test_an_extra_or_missing_node_role_policy_fails(prod_run: harness.RunResult) -> None:
    swap = _edit_resource(
        "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
        "karpenter-node-amazonssmmanagedinstancecore",
        lambda d: d.update(policyArn="arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess"),
    )
    assert stack_violations("iam-node-roles", stack_of(prod_run, swap)) == [
        "Node role karpenter-node carries AmazonS3ReadOnlyAccess and lacks AmazonSSMManagedInstanceCore."
    ]


def test_an_attachment_naming_a_node_role_without_a_dependency_is_seen(prod_run: harness.RunResult) -> None:
    node_role = prod_run.one("aws:iam/role:Role", "karpenter-node")

    def add(regs: list[Registration]) -> list[Registration]:
        stray = dataclasses.replace(
            regs[0],
            type="aws:iam/rolePolicyAttachment:RolePolicyAttachment",
            name="stray",
            inputs={"role": node_role.id, "policyArn": "arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess"},
            dependencies=[],
        )
        return [*regs, stray]

    assert stack_violations("iam-node-roles", stack_of(prod_run, add)) == [
        "Node role karpenter-node carries AmazonS3ReadOnlyAccess and lacks nothing."
    ]


def test_a_node_role_inline_right_beyond_the_cache_import_fails(prod_run: harness.RunResult) -> None:
    grant = _edit_resource(
        "aws:iam/rolePolicy:RolePolicy",
        "image-cache-node-import-0",
        lambda d: d.update(policy=_statement(d["policy"], {"Effect": "Allow", "Action": "iam:PassRole", "Resource": "*"})),
    )
    found = stack_violations("iam-node-roles", stack_of(prod_run, grant))
    assert len(found) == 1
    assert found[0].endswith("has inline rights beyond the image cache's import: iam:PassRole.")


def test_a_namespace_without_default_deny_fails(dev_run: harness.RunResult) -> None:
    drop = edit_policy("monitoring", "default-deny", lambda d: d["spec"].update(ingress=[{}]))
    assert stack_violations("namespaces-deny-by-default", stack_of(dev_run, drop)) == [
        "Namespace monitoring has no default-deny NetworkPolicy: every pod in it is open both ways."
    ]


def _ns(name: str) -> dict[str, Any]:
    return {"matchLabels": {"kubernetes.io/metadata.name": name}}


@pytest.mark.parametrize(
    ("peer", "expected"),
    [
        # any address range: the load balancer's subnets, the VPC, the internet
        (
            {"ipBlock": {"cidr": "10.40.0.0/18"}},
            "admits vLLM's pods (8000) from the address range 10.40.0.0/18 (the ALB and every caller reach the gateway, never vLLM).",
        ),
        ({"ipBlock": {"cidr": "0.0.0.0/0"}}, "from the address range 0.0.0.0/0"),
        # a client namespace, or namespaces by another selector
        (
            {"namespaceSelector": _ns("chat-app")},
            "admits vLLM's pods (8000) from namespace chat-app (clients call the model's gateway).",
        ),
        ({"namespaceSelector": {"matchExpressions": [{"key": "llm-platform.io/model", "operator": "Exists"}]}}, "from the namespaces {"),
        # the monitoring namespace beyond its Prometheus; KEDA's (its operator queries Prometheus, never vLLM)
        ({"namespaceSelector": _ns("monitoring")}, "from every pod of the monitoring namespace monitoring, not its Prometheus."),
        (
            {"namespaceSelector": _ns("monitoring"), "podSelector": {"matchLabels": {"app.kubernetes.io/name": "grafana"}}},
            "not its Prometheus",
        ),
        (
            {"namespaceSelector": _ns("keda"), "podSelector": {"matchLabels": {"app": "keda-operator"}}},
            "admits vLLM's pods (8000) from namespace keda (clients call the model's gateway).",
        ),
    ],
)
def test_vllm_open_beyond_the_gateway_fails(dev_run: harness.RunResult, peer: dict[str, Any], expected: str) -> None:
    widen = edit_policy("llama-3-1-8b", "llama-3-1-8b", lambda d: d["spec"]["ingress"][0]["from"].append(peer))
    (found,) = stack_violations("vllm-port-sources", stack_of(dev_run, widen))
    assert found.startswith("NetworkPolicy llama-3-1-8b/llama-3-1-8b admits vLLM's pods (8000) from ")
    assert expected in found


def test_vllm_open_to_every_source_fails_on_any_port(dev_run: harness.RunResult) -> None:
    """A rule without peers, and a rule on another port of vLLM's pods (the KV-event port, say), count too."""
    rule = edit_policy(
        "llama-3-1-8b", "llama-3-1-8b", lambda d: d["spec"]["ingress"].append({"ports": [{"protocol": "TCP", "port": 5557}]})
    )
    assert stack_violations("vllm-port-sources", stack_of(dev_run, rule)) == [
        "NetworkPolicy llama-3-1-8b/llama-3-1-8b admits vLLM's pods (5557) from every source."
    ]


def test_another_policy_selecting_vllm_counts_and_the_gateways_own_do_not(dev_run: harness.RunResult) -> None:
    """A namespace-wide policy selects vLLM's pods too; the proxies' policy (the ALB's subnets and the clients
    on the gateway's port) selects no vLLM pod and is not vLLM's."""
    wide = edit_policy(
        "llama-3-1-8b", "default-deny", lambda d: d["spec"].update(ingress=[{"from": [{"ipBlock": {"cidr": "10.40.0.0/16"}}]}])
    )
    assert stack_violations("vllm-port-sources", stack_of(dev_run, wide)) == [
        "NetworkPolicy llama-3-1-8b/default-deny admits vLLM's pods (every port) from the address range 10.40.0.0/16 "
        "(the ALB and every caller reach the gateway, never vLLM)."
    ]
    proxy = next(values(r) for r in dev_run.of_type(checks.NETWORK_POLICY) if values(r)["metadata"]["name"] == "llama-3-1-8b-proxy")
    assert any("ipBlock" in peer for rule in proxy["spec"]["ingress"] for peer in rule["from"])


def test_the_packs_pod_labels_are_the_programs() -> None:
    """The pack runs without the program's modules: its copy of the Prometheus labels must agree."""
    from builders import network_policies as netpol

    assert checks.PROMETHEUS_POD == netpol.PROMETHEUS_POD


@pytest.mark.parametrize(
    ("resource", "change", "expected"),
    [
        ("memory", lambda r: r["limits"].update(memory="64Gi"), "requests 12Gi memory but limits 64Gi"),
        ("gpu", lambda r: (r["requests"].update({"nvidia.com/gpu": "1"}), r["limits"].update({"nvidia.com/gpu": "2"})), "nvidia.com/gpu"),
    ],
)
def test_memory_and_gpus_request_what_they_limit(resource: str, change: Callable[[dict[str, Any]], object], expected: str) -> None:
    run = fixture_run("full-prod")
    reg, props = _broken(run, "kubernetes:apps/v1:Deployment", "model-llama-3-1-8b-deployment", lambda p: change(container(p)["resources"]))
    found = _violations(checks.CHECKS["requests-and-limits"][1], reg, props)
    assert len(found) == 1
    assert expected in found[0]


def test_jobs_are_workloads_the_pack_reads(prod_run: harness.RunResult) -> None:
    jobs = prod_run.of_type("kubernetes:batch/v1:Job")
    assert jobs, "the prod fixture renders populate Jobs"
    reg, props = _broken(prod_run, "kubernetes:batch/v1:Job", jobs[0].name, lambda p: container(p)["resources"].pop("limits"))
    assert _violations(checks.CHECKS["requests-and-limits"][1], reg, props) == [
        f"Container {container(props)['name']} has no limits for cpu, memory."
    ]


def test_equal_amounts_in_other_units_are_equal(prod_run: harness.RunResult) -> None:
    def same_memory_in_mebibytes(p: dict[str, Any]) -> None:
        resources = container(p)["resources"]
        gib = int(str(resources["limits"]["memory"]).removesuffix("Gi"))
        resources["limits"]["memory"] = f"{gib * 1024}Mi"

    reg, props = _broken(prod_run, "kubernetes:apps/v1:Deployment", "model-llama-3-1-8b-deployment", same_memory_in_mebibytes)
    assert _violations(checks.CHECKS["requests-and-limits"][1], reg, props) == []
