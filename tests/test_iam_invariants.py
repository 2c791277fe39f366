"""IAM over the whole render of every fixture stack: what no single-role test can see.

- write actions on every resource (`Resource: *`) appear only in the policies the upstream
  projects document that way, listed here by name;
- every role EC2 assumes (a node role) carries exactly the node-role managed policies, and no
  inline policy but the image cache's import right.

Each invariant is a function over the captured resources; a broken copy shows it fails.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from config.conventions import NODE_ROLE_POLICIES
from offline import harness
from offline.mocks import Registration
from tests.conftest import FIXTURES, PROD, fixture_run, values

UPSTREAM_WILDCARD_WRITERS = ("alb-controller-policy",)
"""aws-load-balancer-controller's published iam_policy.json (compared with the upstream file in
tests/components/test_ingress.py) grants security-group and load-balancer writes on `*`, scoped by
tag conditions."""
NODE_INLINE_POLICIES = ("image-cache-node-import-",)
READ_ONLY = ("Describe", "Get", "List")


def _statements(document: Any) -> list[dict[str, Any]]:
    doc = json.loads(document) if isinstance(document, str) else document
    found = doc.get("Statement") or []
    return [found] if isinstance(found, dict) else list(found)


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def wildcard_writes(registrations: list[Registration]) -> list[str]:
    findings = []
    for r in registrations:
        if r.type not in ("aws:iam/policy:Policy", "aws:iam/rolePolicy:RolePolicy") or r.name in UPSTREAM_WILDCARD_WRITERS:
            continue
        for s in _statements(values(r)["policy"]):
            if s.get("Effect") != "Allow" or "*" not in _listed(s.get("Resource")):
                continue
            writes = [a for a in _listed(s.get("Action")) if not str(a).split(":")[-1].startswith(READ_ONLY)]
            if writes:
                findings.append(f"{r.name} allows {', '.join(writes)} on every resource")
    return findings


def node_roles(registrations: list[Registration]) -> dict[str | None, str]:
    """Roles EC2 instances assume, by physical name."""
    return {
        r.id: r.name
        for r in registrations
        if r.type == "aws:iam/role:Role"
        and any(
            "ec2.amazonaws.com" in _listed((s.get("Principal") or {}).get("Service", []))
            for s in _statements(values(r)["assumeRolePolicy"])
        )
    }


def node_role_findings(registrations: list[Registration]) -> list[str]:
    roles = node_roles(registrations)
    managed: dict[str, set[str]] = {name: set() for name in roles.values()}
    findings = []
    for r in registrations:
        role = values(r).get("role")
        if role not in roles:
            continue
        if r.type == "aws:iam/rolePolicyAttachment:RolePolicyAttachment":
            managed[roles[role]].add(str(values(r)["policyArn"]).rsplit("/", 1)[-1])
        elif r.type == "aws:iam/rolePolicy:RolePolicy" and not r.name.startswith(NODE_INLINE_POLICIES):
            findings.append(f"node role {roles[role]} has the inline policy {r.name}")
    for name, policies in managed.items():
        if policies != set(NODE_ROLE_POLICIES):
            findings.append(f"node role {name} carries {sorted(policies)}, not {sorted(NODE_ROLE_POLICIES)}")
    return findings


@pytest.mark.parametrize("stack", FIXTURES)
def test_no_wildcard_writes_beyond_the_upstream_policies(stack: str) -> None:
    assert wildcard_writes(fixture_run(stack).registrations) == []


@pytest.mark.parametrize("stack", FIXTURES)
def test_node_roles_carry_exactly_the_node_policies(stack: str) -> None:
    run = fixture_run(stack)
    assert node_role_findings(run.registrations) == []
    assert sorted(node_roles(run.registrations).values()) == ["cluster-system-nodes", "karpenter-node"]


def _with(run: harness.RunResult, name: str, type_token: str, mutate: Any) -> list[Registration]:
    out = []
    for r in run.registrations:
        if r.type == type_token and r.name == name:
            r = copy.deepcopy(r)
            mutate(r.inputs)
        out.append(r)
    return out


def test_a_wildcard_write_is_found(prod_run: harness.RunResult) -> None:
    def grant(inputs: dict[str, Any]) -> None:
        doc = json.loads(inputs["policy"])
        doc["Statement"].append({"Effect": "Allow", "Action": ["s3:PutObject", "s3:GetObject"], "Resource": "*"})
        inputs["policy"] = json.dumps(doc)

    broken = _with(prod_run, "model-llama-3-1-8b-weights-read", "aws:iam/rolePolicy:RolePolicy", grant)
    assert wildcard_writes(broken) == ["model-llama-3-1-8b-weights-read allows s3:PutObject on every resource"]


def test_an_extra_node_policy_is_found() -> None:
    run = fixture_run(PROD)
    broken = _with(
        run,
        "karpenter-node-amazonssmmanagedinstancecore",
        "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
        lambda inputs: inputs.update(policyArn="arn:aws:iam::aws:policy/AmazonS3FullAccess"),
    )
    findings = node_role_findings(broken)
    assert len(findings) == 1
    assert "AmazonS3FullAccess" in findings[0]
