"""IAM over the whole render of every fixture stack: what no single-role test can see.

- write actions on every resource (`Resource: *`) appear only in the policies the upstream
  projects document that way, listed by name in the policy pack (`iam-no-wildcard-writes`);
- every role EC2 assumes (a node role) carries exactly the node-role managed policies, and no
  inline right but the image cache's import (`iam-node-roles`).

The checks are the policy pack's, so `pulumi preview --policy-pack policy` enforces the same;
here they run on the captured resources of every fixture, and a broken copy shows each fails.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from offline import harness
from tests.conftest import FIXTURES, PROD, edited, fixture_run
from tests.support.iam import node_role_findings, node_roles, wildcard_writes


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
