"""The recording mocks: parents, dependencies, secrets, plausible outputs."""

from __future__ import annotations

import json

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s
import pytest

from offline import harness
from offline.mocks import REDACTED, RecordingMocks, RecordingMonitor, redact, unwrap_secrets
from tests.conftest import DEV, fixture_input


class _Parent(pulumi.ComponentResource):
    def __init__(self, name: str) -> None:
        super().__init__("llmplatform:index:TestParent", name)
        role = aws.iam.Role(f"{name}-role", assume_role_policy="{}", opts=pulumi.ResourceOptions(parent=self))
        self.secret = k8s.core.v1.Secret(
            f"{name}-secret",
            metadata={"name": "s", "namespace": "ns"},
            string_data={"token": pulumi.Output.secret("s3cr3t-value")},
            opts=pulumi.ResourceOptions(parent=self, depends_on=[role]),
        )
        self.role_arn = role.arn
        self.register_outputs({})


@pytest.fixture(scope="module")
def recorded() -> tuple[RecordingMonitor, dict[str, str]]:
    from pulumi.runtime.stack import run_pulumi_func
    from pulumi.runtime.sync_await import _sync_await

    mocks = RecordingMocks(region="eu-west-1")
    monitor = RecordingMonitor(mocks)
    harness.reset_runtime()
    pulumi.runtime.set_mocks(mocks, project="llm-platform", stack="test", preview=False, monitor=monitor)
    values: dict[str, str] = {}

    def program() -> None:
        parent = _Parent("p")
        parent.role_arn.apply(lambda v: values.__setitem__("arn", v))
        aws.get_availability_zones_output().names.apply(lambda v: values.__setitem__("azs", json.dumps(v)))

    _sync_await(run_pulumi_func(program))
    return monitor, values


def test_records_parent_and_dependencies(recorded: tuple[RecordingMonitor, dict[str, str]]) -> None:
    monitor, _ = recorded
    by_name = {r.name: r for r in monitor.registrations}
    assert by_name["p"].parent is None or by_name["p"].parent.startswith("pulumi:pulumi:Stack::")
    assert by_name["p-role"].parent == "llmplatform:index:TestParent::p"
    assert by_name["p-secret"].parent == "llmplatform:index:TestParent::p"
    assert "aws:iam/role:Role::p-role" in by_name["p-secret"].dependencies


def test_secrets_are_redacted_but_readable_for_tests(recorded: tuple[RecordingMonitor, dict[str, str]]) -> None:
    monitor, _ = recorded
    secret = next(r for r in monitor.registrations if r.name == "p-secret")
    assert redact(secret.inputs)["stringData"] == {"token": REDACTED}
    assert unwrap_secrets(secret.inputs)["stringData"] == {"token": "s3cr3t-value"}
    assert "s3cr3t-value" not in json.dumps(secret.redacted())


def test_computed_outputs_are_plausible_and_deterministic(recorded: tuple[RecordingMonitor, dict[str, str]]) -> None:
    _, values = recorded
    assert values["arn"].startswith("arn:aws:iam::123456789012:role/p-role-")
    assert json.loads(values["azs"])[:3] == ["eu-west-1a", "eu-west-1b", "eu-west-1c"]
    again = RecordingMocks("eu-west-1")._aws("aws:iam/role:Role", "p-role", {})
    assert again[1]["arn"] == values["arn"]


def test_numbers_come_back_as_ints_when_integral() -> None:
    assert redact({"a": 2.0, "b": [1.5, 3.0]}) == {"a": 2, "b": [1.5, 3]}


def test_eks_cluster_outputs_are_camel_case() -> None:
    _, state = RecordingMocks("us-east-1").new_resource(
        pulumi.runtime.MockResourceArgs("eks:index:Cluster", "c", {"name": "llm-dev", "createOidcProvider": True}, None, None, False)
    )
    assert json.loads(state["kubeconfigJson"])["current-context"] == "llm-dev"
    assert state["oidcProviderArn"].startswith("arn:aws:iam::123456789012:oidc-provider/oidc.eks.us-east-1.amazonaws.com/id/")
    assert state["clusterSecurityGroupId"].startswith("sg-")


def test_harness_runs_are_independent() -> None:
    first = harness.run(fixture_input(DEV))
    second = harness.run(fixture_input(DEV))
    assert sorted(r.ref for r in first.registrations) == sorted(r.ref for r in second.registrations)
    assert first.outputs == second.outputs
