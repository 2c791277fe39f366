"""Whole-render IAM findings, from the policy pack's own checks, and what one S3 policy allows."""

from __future__ import annotations

import json
import re
from typing import Any

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
