"""Whole-render IAM findings, from the policy pack's own checks."""

from __future__ import annotations

import json

from offline.mocks import Registration
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
