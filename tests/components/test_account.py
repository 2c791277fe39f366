"""The real account reader (pulumi-aws data sources) under mocks that answer like an account."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest
import yaml

from components import account as reader
from config.checks import account, preflight
from offline.mocks import RecordingMocks
from tests.conftest import DEV, PROD, ROOT, parse, stack_data

DEFAULT = ROOT / "offline" / "account.yaml"


def _answers(**changes: Any) -> account.AccountFile:
    data = yaml.safe_load(DEFAULT.read_text())
    data.update(changes)
    return account.parse(data, "test")


def _read(stack: str, answers: account.AccountFile) -> account.AccountFile:
    pulumi.runtime.set_mocks(RecordingMocks(region=answers.region, account=answers), project="llm-platform", stack="reader", preview=False)
    return reader.read_account(parse(stack_data(stack)))


def test_the_reader_asks_the_data_sources_for_what_the_checks_need() -> None:
    arn = "arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
    answers = _answers(
        roles=["arn:aws:iam::123456789012:role/platform-admin", "arn:aws:iam::123456789012:role/llm-platform-deploy"],
        certificates=[{"arn": arn, "domain": "*.llm.internal.example.com", "status": "ISSUED", "region": "us-east-1"}],
        caller="arn:aws:sts::123456789012:assumed-role/llm-platform-deploy/gha-run",
    )
    found = _read(PROD, answers)
    assert found.caller == "arn:aws:sts::123456789012:assumed-role/llm-platform-deploy/gha-run"
    assert found.zones == answers.zones
    assert found.quotas == answers.quotas
    prod_types = {"p5.48xlarge", "p4d.24xlarge", "g6e.xlarge", "g6e.2xlarge", "g6e.4xlarge"}
    assert prod_types <= set(found.offerings["us-east-1a"])
    assert found.ami_releases == {"al2023": ["v20260930"]}  # the pinned release's SSM parameter exists
    assert found.addon_versions["coredns"] == answers.addon_versions["coredns"][-1:]  # one version: EKS's default
    assert found.roles == ["arn:aws:iam::123456789012:role/platform-admin", "arn:aws:iam::123456789012:role/llm-platform-deploy"]
    assert [c.arn for c in found.certificates] == [arn]
    assert found.spot_service_linked_role is True
    checks = preflight.run(parse(stack_data(PROD)), found, authoritative=True, addon_versions_complete=False)
    failed = [c for c in checks if c.result == "failed"]
    # only the on-call principal is missing from this account
    assert [c.path for c in failed] == ["cluster.access[0].principalArn"]


def test_what_the_account_lacks_reads_as_missing() -> None:
    answers = _answers(amiReleases={"al2023": ["v20261001"]}, spotServiceLinkedRole=False)
    found = _read(DEV, answers)
    assert found.ami_releases == {"al2023": []}
    assert found.spot_service_linked_role is False
    assert found.roles == []
    failed = {c.name for c in preflight.run(parse(stack_data(DEV)), found, authoritative=True) if c.result == "failed"}
    # and pulumi runs as an identity the stack does not declare (the offline caller)
    assert failed == {"ami-release", "spot-role", "principal", "caller"}


@pytest.fixture(autouse=True)
def _restore_mocks() -> Any:
    yield
    pulumi.runtime.set_mocks(RecordingMocks(), project="llm-platform", stack="reader", preview=False)


def test_a_read_that_is_refused_is_not_read_as_missing(caplog: pytest.LogCaptureFixture) -> None:
    data = stack_data(DEV)
    data["cluster"]["adminRoleArns"] = ["arn:aws:iam::123456789012:role/access-denied-admin"]
    answers = _answers()
    pulumi.runtime.set_mocks(RecordingMocks(region=answers.region, account=answers), project="llm-platform", stack="reader", preview=False)
    found = reader.read_account(parse(data))
    # AccessDenied proves nothing: the principal counts as existing (with a warning), never as missing
    assert found.roles == ["arn:aws:iam::123456789012:role/access-denied-admin"]
