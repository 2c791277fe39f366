"""`make account`: capture an account's answers with read-only boto3 calls (botocore Stubber, no network)."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from config.checks import account, preflight
from config.facts import versions
from config.sections.network import ExistingVpc
from offline import account_capture
from tests.conftest import DEV, parse, stack_data

ROLE = {"Path": "/", "RoleId": "AROAEXAMPLEEXAMPLE01", "CreateDate": datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)}


class Clients:
    """Stubbed clients by service name, each checked to have been fully used."""

    def __init__(self) -> None:
        session = boto3.session.Session(region_name="us-east-1", aws_access_key_id="test", aws_secret_access_key="test")
        self.clients = {s: session.client(s) for s in ("ec2", "service-quotas", "ssm", "eks", "iam", "acm", "sts")}
        self.stubs = {s: Stubber(c) for s, c in self.clients.items()}

    def __call__(self, service: str) -> Any:
        return self.clients[service]

    def __enter__(self) -> Clients:
        for stub in self.stubs.values():
            stub.activate()
        return self

    def __exit__(self, *_: object) -> None:
        for stub in self.stubs.values():
            stub.assert_no_pending_responses()
            stub.deactivate()


def _stub_dev_account(c: Clients, p_quota: float, spot_role: bool, cluster_exists: bool = True) -> None:
    zones = [{"ZoneName": f"us-east-1{z}", "ZoneId": f"use1-az{i}", "State": "available"} for i, z in ((1, "a"), (2, "b"))]
    c.stubs["ec2"].add_response(
        "describe_availability_zones",
        {"AvailabilityZones": zones},
        # Local and Wavelength zones stay out, as in the program's own read (components/account.py)
        {"Filters": [{"Name": "state", "Values": ["available"]}, {"Name": "zone-type", "Values": ["availability-zone"]}]},
    )
    offers = [
        {"InstanceType": t, "LocationType": "availability-zone", "Location": z}
        for z in ("us-east-1a", "us-east-1b")
        for t in ("g5.2xlarge", "g5.xlarge", "g6.2xlarge", "g6.xlarge")
    ]
    c.stubs["ec2"].add_response(
        "describe_instance_type_offerings",
        {"InstanceTypeOfferings": offers},
        {
            "LocationType": "availability-zone",
            "Filters": [{"Name": "instance-type", "Values": ["g5.2xlarge", "g5.xlarge", "g6.2xlarge", "g6.xlarge"]}],
        },
    )
    for code in preflight.quota_codes():
        value = p_quota if code in ("L-417A185B", "L-7212CCBC") else 256.0
        c.stubs["service-quotas"].add_response(
            "get_service_quota", {"Quota": {"QuotaCode": code, "Value": value}}, {"ServiceCode": "ec2", "QuotaCode": code}
        )
    for addon, version in versions.EKS_ADDON_VERSIONS.items():
        c.stubs["eks"].add_response(
            "describe_addon_versions",
            {"addons": [{"addonName": addon, "addonVersions": [{"addonVersion": version}, {"addonVersion": "v0.0.1-eksbuild.1"}]}]},
            {"addonName": addon, "kubernetesVersion": "1.35"},
        )
    c.stubs["iam"].add_response(
        "get_role",
        {"Role": {**ROLE, "RoleName": "platform-admin", "Arn": "arn:aws:iam::123456789012:role/platform-admin"}},
        {"RoleName": "platform-admin"},
    )
    path = "/aws/service/eks/optimized-ami/1.35/amazon-linux-2023/x86_64/nvidia/"
    names = [f"{path}amazon-eks-node-al2023-x86_64-nvidia-1.35-{r}/image_id" for r in ("v20260915", versions.AL2023_AMI_VERSION)]
    names.append(f"{path}recommended/image_id")
    c.stubs["ssm"].add_response(
        "get_parameters_by_path",
        {"Parameters": [{"Name": n, "Type": "String", "Value": "ami-0123456789abcdef0"} for n in names]},
        {"Path": path, "Recursive": True},
    )
    if spot_role:
        c.stubs["iam"].add_response(
            "get_role", {"Role": {**ROLE, "RoleName": "AWSServiceRoleForEC2Spot", "Arn": "arn:aws:iam::123456789012:role/x"}}
        )
    else:
        c.stubs["iam"].add_client_error("get_role", service_error_code="NoSuchEntity", http_status_code=404)
    if cluster_exists:
        c.stubs["eks"].add_response("describe_cluster", {"cluster": {"name": "llm-dev"}}, {"name": "llm-dev"})
    else:
        c.stubs["eks"].add_client_error("describe_cluster", service_error_code="ResourceNotFoundException", http_status_code=404)
    c.stubs["sts"].add_response(
        "get_caller_identity",
        {"UserId": "AROAEXAMPLE:ci", "Account": "123456789012", "Arn": "arn:aws:sts::123456789012:assumed-role/platform-admin/ci"},
    )


def test_capture_writes_answers_the_render_accepts() -> None:
    cfg = parse(stack_data(DEV))
    with Clients() as clients:
        _stub_dev_account(clients, p_quota=0.0, spot_role=True)
        answers = account_capture.capture(cfg, clients)
    parsed = account.parse(answers, "captured")
    assert parsed.zones == {"use1-az1": "us-east-1a", "use1-az2": "us-east-1b"}
    assert parsed.quotas["L-DB2E81BA"] == 256.0
    assert parsed.ami_releases == {"al2023": ["v20260915", versions.AL2023_AMI_VERSION]}
    assert parsed.addon_versions["coredns"] == sorted([versions.EKS_ADDON_VERSIONS["coredns"], "v0.0.1-eksbuild.1"])
    assert parsed.roles == ["arn:aws:iam::123456789012:role/platform-admin"]
    assert parsed.spot_service_linked_role is True
    assert parsed.caller == "arn:aws:sts::123456789012:assumed-role/platform-admin/ci"
    checks = preflight.run(cfg, parsed, authoritative=True)
    assert [c.result for c in checks if c.name == "caller"] == ["ok"]  # an admin role of the stack
    assert [c.path for c in checks if c.result == "failed"] == []


def test_a_missing_spot_role_is_captured_as_missing() -> None:
    cfg = parse(stack_data(DEV))
    with Clients() as clients:
        _stub_dev_account(clients, p_quota=0.0, spot_role=False)
        answers = account_capture.capture(cfg, clients)
    assert answers["spotServiceLinkedRole"] is False
    failed = [c.name for c in preflight.run(cfg, account.parse(answers, "captured"), authoritative=True) if c.result == "failed"]
    assert failed == ["spot-role"]


def test_a_first_up_as_an_admin_is_captured_and_refused() -> None:
    cfg = parse(stack_data(DEV))
    with Clients() as clients:
        _stub_dev_account(clients, p_quota=0.0, spot_role=True, cluster_exists=False)
        answers = account_capture.capture(cfg, clients)
    assert answers["clusterExists"] is False
    (caller,) = [c for c in preflight.run(cfg, account.parse(answers, "captured"), authoritative=True) if c.name == "caller"]
    assert caller.result == "failed"
    assert "409" in caller.message


def test_an_unexpected_aws_error_is_not_read_as_missing() -> None:
    iam = Clients().clients["iam"]
    with Stubber(iam) as stub:
        stub.add_client_error("get_role", service_error_code="AccessDenied", http_status_code=403)
        with pytest.raises(Exception, match="AccessDenied"):
            account_capture._principal_exists(iam, "arn:aws:iam::123456789012:role/platform-admin")


def test_the_capture_command_names_a_bad_stack_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "Pulumi.bad.yaml"
    bad.write_text("config:\n  aws:region: us-east-1\n  llm-platform:environment: qa\n")
    assert account_capture.main(["bad", "--file", str(bad), "--out", str(tmp_path / "out.yaml")]) == 2
    assert "environment: must be one of" in capsys.readouterr().err
    assert not (tmp_path / "out.yaml").exists()


def test_a_quota_never_changed_reads_the_aws_default() -> None:
    quotas = Clients().clients["service-quotas"]
    with Stubber(quotas) as stub:
        stub.add_client_error("get_service_quota", service_error_code="NoSuchResourceException", http_status_code=404)
        stub.add_response("get_aws_default_service_quota", {"Quota": {"QuotaCode": "L-417A185B", "Value": 0.0}})
        assert account_capture._quota(quotas, "L-417A185B") == 0.0


def test_an_existing_vpcs_associated_blocks_are_captured() -> None:
    network = parse(stack_data("existing-vpc-irsa-bottlerocket")).network
    assert isinstance(network, ExistingVpc)
    c = Clients()
    blocks = [
        {"AssociationId": "vpc-cidr-assoc-1", "CidrBlock": "10.60.0.0/16", "CidrBlockState": {"State": "associated"}},
        {"AssociationId": "vpc-cidr-assoc-2", "CidrBlock": "100.64.0.0/16", "CidrBlockState": {"State": "associated"}},
        {"AssociationId": "vpc-cidr-assoc-3", "CidrBlock": "100.65.0.0/16", "CidrBlockState": {"State": "disassociated"}},
    ]
    c.stubs["ec2"].add_response(
        "describe_vpcs",
        {"Vpcs": [{"VpcId": network.vpc_id, "CidrBlock": "10.60.0.0/16", "CidrBlockAssociationSet": blocks}]},
        {"VpcIds": [network.vpc_id]},
    )
    c.stubs["ec2"].add_response("describe_subnets", {"Subnets": []}, {"Filters": [{"Name": "vpc-id", "Values": [network.vpc_id]}]})
    with c:
        captured = account_capture._existing_vpc(c("ec2"), network)
    assert captured["vpcs"] == [{"id": network.vpc_id, "cidr": "10.60.0.0/16", "secondaryCidrs": ["100.64.0.0/16"]}]
