"""The real account reader (pulumi-aws data sources) under mocks that answer like an account."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

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
    assert found.cluster_exists is False
    checks = preflight.run(parse(stack_data(DEV)), found, authoritative=True)
    assert {c.name for c in checks if c.result == "failed"} == {"ami-release", "spot-role", "principal"}
    # the first up, as an identity the stack does not declare (the offline caller) and no deploy role: the creator-admin
    assert [(c.result, c.message) for c in checks if c.name == "caller"] == [
        ("ok", "the first up runs as an undeclared principal, which becomes the creator-admin")
    ]


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


class Refusing(RecordingMocks):
    """An account whose deploy credentials lack the named reads: the provider's error, as pulumi raises it."""

    def __init__(self, answers: account.AccountFile, refused: dict[str, tuple[str, str]]) -> None:
        super().__init__(region=answers.region, account=answers)
        self.refused = refused

    def call(self, args: Any) -> Any:
        if args.token in self.refused:
            api, action = self.refused[args.token]
            raise Exception(  # the shape pulumi's invoke raises
                f"invoke of {args.token} failed: operation error {api}, https response error StatusCode: 400, RequestID: "
                f"0a1b, api error AccessDeniedException: User: arn:aws:sts::123456789012:assumed-role/llm-platform-deploy/gha "
                f"is not authorized to perform: {action} because no identity-based policy allows the {action} action"
            )
        return super().call(args)


def test_refused_reads_are_not_checked_and_warn_naming_the_permission() -> None:
    """The README: a read refused for lack of a permission is a warning, never a failure or a raw provider error."""
    answers = _answers(caller="arn:aws:sts::123456789012:assumed-role/platform-admin/alice")
    refused = {
        "aws:index/getAvailabilityZones:getAvailabilityZones": ("EC2: DescribeAvailabilityZones", "ec2:DescribeAvailabilityZones"),
        "aws:ec2/getInstanceTypeOfferings:getInstanceTypeOfferings": ("EC2", "ec2:DescribeInstanceTypeOfferings"),
        "aws:servicequotas/getServiceQuota:getServiceQuota": ("Service Quotas: GetServiceQuota", "servicequotas:GetServiceQuota"),
        "aws:eks/getAddonVersion:getAddonVersion": ("EKS: DescribeAddonVersions", "eks:DescribeAddonVersions"),
        "aws:ssm/getParameter:getParameter": ("SSM: GetParameter", "ssm:GetParameter"),
        "aws:iam/getRole:getRole": ("IAM: GetRole", "iam:GetRole"),
        "aws:acm/getCertificate:getCertificate": ("ACM: ListCertificates", "acm:ListCertificates"),
        "aws:eks/getCluster:getCluster": ("EKS: DescribeCluster", "eks:DescribeCluster"),
    }
    pulumi.runtime.set_mocks(Refusing(answers, refused), project="llm-platform", stack="reader", preview=False)
    cfg = parse(stack_data("internet-facing-tls"))
    found = reader.read_account(cfg)
    assert found.unread == {
        "zones": "the deploy credentials lack ec2:DescribeAvailabilityZones (AccessDenied)",
        "offerings": "the deploy credentials lack ec2:DescribeInstanceTypeOfferings (AccessDenied)",
        "quotas": "the deploy credentials lack servicequotas:GetServiceQuota (AccessDenied)",
        "amiReleases": "the deploy credentials lack ssm:GetParameter (AccessDenied)",
        "addonVersions": "the deploy credentials lack eks:DescribeAddonVersions (AccessDenied)",
        "roles": "the deploy credentials lack iam:GetRole (AccessDenied)",
        "certificates": "the deploy credentials lack acm:ListCertificates (AccessDenied)",
        "spotServiceLinkedRole": "the deploy credentials lack iam:GetRole (AccessDenied)",
        "clusterExists": "the deploy credentials lack eks:DescribeCluster (AccessDenied)",
    }
    assert found.cluster_exists is None
    checks = preflight.run(cfg, found, authoritative=True, addon_versions_complete=False, certificates_complete=False)
    assert [c for c in checks if c.result == "failed"] == []
    assert {c.name for c in checks if c.result == "not checked"} == {
        "quota", "offerings", "ami-release", "addon-version", "principal", "certificate", "spot-role", "caller"
    }  # fmt: skip
    (quota,) = [c for c in checks if c.name == "account-read" and c.inputs["answer"] == "quotas"]
    assert str(quota.problem()) == (
        "cluster.deployRoleArn: preflight could not read the account's quotas: the deploy credentials lack "
        "servicequotas:GetServiceQuota (AccessDenied); the quota checks are not checked. Fix: grant the permission to the "
        "identity that runs pulumi (docs/preflight.md lists every read it needs)"
    )
    assert quota.problem().severity == "warning"  # type: ignore[union-attr]


def test_an_error_without_the_permission_named_names_the_reads_permissions() -> None:
    error = Exception("invoke failed: api error UnauthorizedOperation: You are not authorized to perform this operation.")
    assert reader._denied(error, "ec2:DescribeAvailabilityZones") == (
        "the deploy credentials lack ec2:DescribeAvailabilityZones (UnauthorizedOperation)"
    )
    assert reader._denied(Exception("NotFound: quota L-1 does not exist"), "servicequotas:GetServiceQuota") is None


def test_the_reader_asks_for_regular_availability_zones_only() -> None:
    """Opted-in Local and Wavelength zones sort first by name; the default zone choice must not take them."""
    seen: list[dict[str, Any]] = []

    class Recording(RecordingMocks):
        def call(self, args: Any) -> Any:
            if args.token == "aws:index/getAvailabilityZones:getAvailabilityZones":
                seen.append(dict(args.args))
            return super().call(args)

    answers = _answers()
    pulumi.runtime.set_mocks(Recording(region=answers.region, account=answers), project="llm-platform", stack="reader", preview=False)
    reader.read_account(parse(stack_data(DEV)))
    assert [(a.get("state"), a.get("filters")) for a in seen] == [("available", [{"name": "zone-type", "values": ["availability-zone"]}])]


def _pem(*names: str) -> str:
    """A self-signed certificate with these DNS alternative names, as ACM's GetCertificate returns it."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(x509.oid.NameOID.COMMON_NAME, names[0] if names else "example.org")])
    now = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + dt.timedelta(days=90))
    )
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), critical=False)
    return builder.sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM).decode()


def test_alternative_names_are_read_from_the_certificate_itself() -> None:
    assert reader.alternative_names(_pem("llm.example.com", "*.llm.example.com")) == ["llm.example.com", "*.llm.example.com"]
    assert reader.alternative_names(_pem()) == []  # a certificate without the extension has none
    # no PEM (not issued yet) or one that does not parse: not visible, never "none"
    assert reader.alternative_names(None) is None
    assert reader.alternative_names("-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n") is None


class Issuing(RecordingMocks):
    """ACM as the data source answers for an issued certificate: its domain name and its PEM."""

    def __init__(self, answers: account.AccountFile, arn: str, domain: str, pem: str) -> None:
        super().__init__(region=answers.region, account=answers)
        self.arn, self.domain, self.pem = arn, domain, pem

    def call(self, args: Any) -> Any:
        if args.token == "aws:acm/getCertificate:getCertificate":
            if args.args.get("domain") != self.domain:
                raise Exception(f"invoke of {args.token} failed: no certificate for '{args.args.get('domain')}' found")
            return {"arn": self.arn, "domain": self.domain, "status": "ISSUED", "certificate": self.pem, "id": self.arn}, []
        return super().call(args)


@pytest.mark.parametrize(
    ("names", "result"),
    [
        (("llm.example.com", "*.llm.example.com"), "ok"),  # the usual request: apex as domain name, wildcard as alternative
        (("llm.example.com", "www.llm.example.com"), "failed"),  # seen, and it does not cover the model hosts
    ],
)
def test_an_apex_certificate_is_judged_by_the_names_in_its_pem(names: tuple[str, ...], result: str) -> None:
    cfg = parse(stack_data("internet-facing-tls"))
    answers = _answers()
    assert cfg.ingress.certificate_arn is not None
    issuing = Issuing(answers, cfg.ingress.certificate_arn, "llm.example.com", _pem(*names))
    pulumi.runtime.set_mocks(issuing, project="llm-platform", stack="reader", preview=False)
    found = reader.read_account(cfg)
    (certificate,) = found.certificates
    assert certificate.alternative_names == list(names)
    assert certificate.alternative_names_visible
    checks = preflight.run(cfg, found, authoritative=True, addon_versions_complete=False, certificates_complete=False)
    assert next(c for c in checks if c.name == "certificate").result == result


def _permissions_the_reads_name() -> set[str]:
    """Every permission the reader's reads name (`r.read(key, permission, ...)`, `r.exists(...)`), read from its source."""
    import ast

    tree = ast.parse(Path(reader.__file__).read_text())
    constants = {
        t.id: n.value.value
        for n in tree.body
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)
        for t in n.targets
        if isinstance(t, ast.Name)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("read", "exists"):
            arg = node.args[1]
            text = arg.value if isinstance(arg, ast.Constant) else constants[arg.id]  # type: ignore[attr-defined]
            found |= {p.strip() for p in str(text).split(",")}
    return found


def test_the_docs_list_every_permission_the_reads_need() -> None:
    text = (ROOT / "docs" / "preflight.md").read_text()
    table = text[text.index("The deploy credentials need these read permissions") :].split("\n\n")[1]
    documented = set(re.findall(r"`([a-z0-9-]+:[A-Za-z]+)`", table)) - {"sts:GetCallerIdentity"}
    named = _permissions_the_reads_name()
    assert "servicequotas:GetAWSDefaultServiceQuota" in named  # the quota data source's first call
    assert "eks:DescribeCluster" in named
    assert documented == named
