"""checkov's CloudFormation checks over the AWS resources of every fixture render.

offline/cloudformation.py turns the captured AWS resources into a CloudFormation template; checkov
(an upstream scanner no one here wrote) judges it. Every finding is fixed or explained below, by
check and resource: a new finding fails, and so does an explanation that no longer matches a
finding (it would hide the next one). A broken copy of the prod render shows that the translation
carries each property checkov guards to the scanner: each break is caught by the check named.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

import pytest

from offline import cloudformation
from offline.mocks import Registration
from tests.conftest import FIXTURES, PROD, edited, fixture_run
from tests.validators import checkov

EXPLAINED: dict[tuple[str, str], str] = {
    ("CKV_AWS_111", "alb-controller-policy"): (
        "the load balancer controller's policy is the upstream iam_policy.json of the pinned version "
        "(compared with the upstream file in tests/components/test_ingress.py); its writes on `*` are "
        "scoped by `elbv2.k8s.aws/cluster` tag conditions, which the check does not read"
    ),
    ("CKV_AWS_27", "karpenter-interruption"): (
        "the queue is encrypted with SQS-managed keys (SqsManagedSseEnabled, as in Karpenter's own "
        "CloudFormation template); the check only recognizes KmsMasterKeyId"
    ),
    ("CKV_AWS_149", "image-cache-docker-hub"): (
        "ECR's pull-through cache reads the secret through its service-linked role, whose managed policy "
        "(AWSECRPullThroughCache_ServiceRolePolicy) grants secretsmanager:GetSecretValue and no KMS right: "
        "the secret keeps the Secrets Manager key"
    ),
    ("CKV_AWS_18", "weights"): (
        "the weights bucket holds public model checkpoints read by per-model roles, read-only and scoped to "
        "their own model's repository prefix; "
        "server access logs would need a second bucket per stack, and CloudTrail data events are the "
        "account's choice"
    ),
    ("CKV_AWS_21", "weights"): (
        "objects are copies of pinned Hugging Face revisions that the populate Job can always write again; "
        "versioning would keep every retired revision (tens to hundreds of GB each) billing after the "
        "retirement sweep deletes it"
    ),
}
"""Findings that stay, by (check id, Pulumi resource name), with why."""


def _templates(registrations: list[Registration]) -> dict[str, Any]:
    return cloudformation.template(registrations)


def _pulumi_names(template: dict[str, Any]) -> dict[str, str]:
    return {lid: r["Metadata"]["PulumiName"] for lid, r in template["Resources"].items()}


# A break never assumes the property it breaks is there: were the program to stop setting it, the
# unbroken render's own finding fails test_every_finding_is_fixed_or_explained with its name, instead of
# the break step crashing the module's fixture on a missing key.
def _policy(key: str, change: Callable[[dict[str, Any]], object]) -> Callable[[dict[str, Any]], object]:
    def mutate(inputs: dict[str, Any]) -> None:
        doc = json.loads(inputs.get(key) or '{"Version": "2012-10-17", "Statement": [{}]}')
        change(doc)
        inputs[key] = json.dumps(doc)

    return mutate


BREAKS: list[tuple[str, str, Callable[[dict[str, Any]], object], list[str]]] = [
    # (type, name, break, checks that must fail on that resource)
    (
        "aws:ec2/launchTemplate:LaunchTemplate",
        "cluster-system-nodes",
        lambda i: i.setdefault("metadataOptions", {}).update(httpTokens="optional"),
        ["CKV_AWS_79"],
    ),
    ("eks:index:Cluster", "cluster-eks", lambda i: i.pop("encryptionConfigKeyArn", None), ["CKV_AWS_58"]),
    ("aws:kms/key:Key", "cluster-secrets", lambda i: i.update(enableKeyRotation=False), ["CKV_AWS_7"]),
    (
        "aws:iam/role:Role",
        "karpenter-controller",
        _policy("assumeRolePolicy", lambda d: d.setdefault("Statement", [{}])[0].update(Principal={"AWS": "*"})),
        ["CKV_AWS_60"],
    ),
    (
        "aws:iam/rolePolicy:RolePolicy",
        "model-llama-3-1-8b-weights-read",
        _policy("policy", lambda d: d.setdefault("Statement", []).append({"Effect": "Allow", "Action": "*", "Resource": "*"})),
        ["CKV_AWS_62", "CKV_AWS_107", "CKV_AWS_109", "CKV_AWS_110", "CKV_AWS_111"],
    ),
    ("aws:cloudwatch/logGroup:LogGroup", "cluster-logs", lambda i: i.pop("kmsKeyId", None), ["CKV_AWS_158"]),
    (
        "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
        "weights",
        lambda i: i.update(blockPublicPolicy=False, restrictPublicBuckets=False),
        ["CKV_AWS_54", "CKV_AWS_56"],
    ),
]


@pytest.fixture(scope="module")
def scanned() -> tuple[dict[str, dict[str, Any]], list[checkov.Result]]:
    checkov.require()
    templates = {stack: _templates(fixture_run(stack).registrations) for stack in FIXTURES}
    registrations = fixture_run(PROD).registrations
    for type_token, name, mutate, _ in BREAKS:
        registrations = edited(registrations, type_token, name, mutate)
    templates["broken-prod"] = _templates(registrations)
    return templates, checkov.scan(templates)


def _findings(scanned: tuple[dict[str, dict[str, Any]], list[checkov.Result]], template: str) -> set[tuple[str, str]]:
    templates, results = scanned
    names = _pulumi_names(templates[template])
    return {(r.check_id, names[r.logical_id]) for r in results if r.template == template and not r.passed}


@pytest.mark.parametrize("stack", FIXTURES)
def test_every_finding_is_fixed_or_explained(stack: str, scanned: tuple[dict[str, dict[str, Any]], list[checkov.Result]]) -> None:
    unexplained = sorted(_findings(scanned, stack) - set(EXPLAINED))
    assert unexplained == [], "checkov findings with no fix and no explanation in EXPLAINED"


def test_every_explanation_matches_a_finding(scanned: tuple[dict[str, dict[str, Any]], list[checkov.Result]]) -> None:
    found = set().union(*(_findings(scanned, stack) for stack in FIXTURES))
    assert sorted(set(EXPLAINED) - found) == []


def test_the_checks_that_guard_the_checklist_ran(scanned: tuple[dict[str, dict[str, Any]], list[checkov.Result]]) -> None:
    """The translation feeds the checks the checklist names (a check that never runs guards nothing)."""
    _, results = scanned
    ran = {r.check_id for r in results if r.template == PROD}
    for check_id in (
        "CKV_AWS_7",
        "CKV_AWS_33",
        "CKV_AWS_58",
        "CKV_AWS_60",
        "CKV_AWS_61",
        "CKV_AWS_79",
        "CKV_AWS_107",
        "CKV_AWS_111",
        "CKV_AWS_158",
    ):
        assert check_id in ran, check_id


@pytest.mark.parametrize(
    ("type_token", "name", "checks"), [(t, n, c) for t, n, _, c in BREAKS], ids=[f"{n}-{c[0]}" for _, n, _, c in BREAKS]
)
def test_a_break_is_caught_by_checkov(
    type_token: str, name: str, checks: list[str], scanned: tuple[dict[str, dict[str, Any]], list[checkov.Result]]
) -> None:
    broken = _findings(scanned, "broken-prod") - _findings(scanned, PROD)
    # the break lands on the resource itself, or (S3 companions) on the resource it folds into
    for check_id in checks:
        assert any(c == check_id and n == name for c, n in broken), (check_id, name, sorted(broken))


def test_every_aws_type_has_a_translation() -> None:
    """An AWS resource type with no translation would pass the scanner unseen: it fails instead."""
    run = fixture_run(PROD)
    strange = dataclasses.replace(run.registrations[0], type="aws:ec2/instance:Instance", name="stray", inputs={})
    with pytest.raises(cloudformation.UntranslatedTypeError, match="aws:ec2/instance:Instance"):
        cloudformation.template([*run.registrations, strange])


@pytest.mark.parametrize(("type_token", "name", "mutate"), [(t, n, m) for t, n, m, _ in BREAKS], ids=[n for _, n, _, _ in BREAKS])
def test_a_break_survives_a_render_without_its_property(type_token: str, name: str, mutate: Callable[[dict[str, Any]], object]) -> None:
    """Each break applies to a resource stripped of every input: it adds the bad value, never raises."""
    mutate({})
