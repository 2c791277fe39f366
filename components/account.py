"""Preflight: read the target account and check the stack against it, before anything is created.

At `pulumi preview`/`up` the answers come from pulumi-aws data sources (read-only calls with the
deploy credentials); in the offline render they come from an account file the harness names
(config/load.py OfflineAccount, handed to `check`). Either way the same pure checks (config/checks/preflight/) run on
them. Data sources run as plain invokes here, so the program stops before registering anything.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import pulumi
import pulumi_aws as aws
from cryptography import x509

from config.checks import account as account_file
from config.checks import preflight
from config.checks.account import CERTIFICATE_STATUSES, AccountFile, AnswerKey, Certificate, Subnet, Vpc
from config.checks.preflight import SPOT_ROLE, quota_codes
from config.derived import state
from config.facts import versions
from config.facts.conventions import ami_parameter, principal_kind_and_name
from config.load import OfflineAccount
from config.sections.network import ExistingVpc
from config.sections.stack import StackConfig

KEY_TYPES = ("RSA_1024", "RSA_2048", "RSA_3072", "RSA_4096", "EC_prime256v1", "EC_secp384r1", "EC_secp521r1")
# What a data source says when the thing is not there; anything else (no permission, throttling)
# proves nothing, so the fact counts as there and a warning says it could not be checked.
NOT_FOUND = ("NoSuchEntity", "ParameterNotFound", "NotFound", "not found", "no matching", "couldn't find", "does not exist")


@dataclass(frozen=True)
class Answers:
    """What the account says, and how far that can be trusted."""

    account: AccountFile
    authoritative: bool
    addon_versions_complete: bool
    certificates_complete: bool
    """False online: ACM is searched by domain (the most recent match), not by the configured ARN."""


# What a data source says when the identity lacks a permission (the provider passes the AWS error on).
DENIED = ("AccessDenied", "UnauthorizedOperation", "not authorized to perform", "StatusCode: 403")
T = TypeVar("T")


def _denied(error: Exception, permission: str) -> str | None:
    """The reason a read was refused for lack of a permission (None: it was not): the action the error
    names, else the permissions the read needs."""
    text = str(error)
    code = next((m for m in DENIED if m in text), None)
    if code is None:
        return None
    named = re.search(r"perform:? ([a-z0-9-]+:[A-Za-z]+)", text)
    return f"the deploy credentials lack {named.group(1) if named else permission} ({code})"


class _Reader:
    """Runs each read; a read refused for lack of a permission is recorded (its checks are "not checked",
    with the reason), never raised: preflight must not stop a stack on a missing read permission."""

    def __init__(self) -> None:
        self.unread: dict[AnswerKey, str] = {}

    def read(self, key: AnswerKey, permission: str, call: Callable[[], T], default: T) -> T:
        try:
            return call()
        except Exception as error:
            reason = _denied(error, permission)
            if reason is None:
                raise
            self.unread.setdefault(key, reason)
            return default

    def exists(self, key: AnswerKey, permission: str, call: Callable[[], object], what: str) -> bool:
        """Whether a data source finds the thing: not-found is False; refused counts as found and is recorded;
        any other failure cannot tell either, so it counts as found, with a warning."""
        try:
            call()
        except Exception as error:
            text = str(error)
            if any(marker in text for marker in NOT_FOUND):
                return False
            reason = _denied(error, permission)
            if reason is not None:
                self.unread.setdefault(key, reason)
                return True
            pulumi.log.warn(f"preflight: could not check {what} ({text.splitlines()[0][:200]}); it is assumed to exist")
        return True


def read_account(cfg: StackConfig) -> AccountFile:
    """The account's answers through pulumi-aws data sources (read-only); a refused read is recorded in `unread`.
    The answers are read in the order written here."""
    r = _Reader()
    types = sorted({t.name for p in cfg.gpu_pools for t in p.resolved_instance_types()})
    return AccountFile(
        zones=r.read("zones", "ec2:DescribeAvailabilityZones", _zones, dict[str, str]()),
        offerings=r.read("offerings", "ec2:DescribeInstanceTypeOfferings", functools.partial(_offerings, types), dict[str, list[str]]()),
        quotas=_quotas(r),
        ami_releases=_ami_releases(r, cfg),
        addon_versions=_addon_versions(r, cfg),
        roles=[arn for arn in cfg.cluster.principal_arns() if _principal_exists(r, arn)],
        certificates=_certificates(r, cfg),
        cluster_exists=r.read("clusterExists", "eks:DescribeCluster", functools.partial(_cluster_exists, cfg.cluster.name), None),
        spot_service_linked_role=r.exists(
            "spotServiceLinkedRole", "iam:GetRole", lambda: aws.iam.get_role(name=SPOT_ROLE), f"role {SPOT_ROLE}"
        ),
        vpcs=_existing_vpcs(r, cfg),
        subnets=_existing_subnets(r, cfg),
        caller=aws.get_caller_identity().arn,  # sts:GetCallerIdentity needs no permission
        region=cfg.region,
        unread=r.unread,
    )


def _quotas(r: _Reader) -> dict[str, float]:
    """The EC2 quotas preflight checks, by code (one refused or missing is left out)."""
    quotas: dict[str, float] = {}
    for code in quota_codes():
        value = r.read(
            "quotas",
            QUOTA_READS,
            functools.partial(lambda c: aws.servicequotas.get_service_quota(service_code="ec2", quota_code=c).value, code),
            None,
        )
        if value is not None:
            quotas[code] = value
    return quotas


def _ami_releases(r: _Reader, cfg: StackConfig) -> dict[str, list[str]]:
    """By AMI family of the pools, the pinned release when its SSM parameter exists (else none)."""
    ami_releases: dict[str, list[str]] = {}
    for family in sorted({p.ami_family for p in state.of(cfg).pools.values()}):
        release = str(getattr(cfg.karpenter.ami_versions, family))
        name = ami_parameter(family, cfg.cluster.kubernetes_version, release)
        found = r.exists("amiReleases", "ssm:GetParameter", functools.partial(aws.ssm.get_parameter, name=name), f"AMI parameter {name}")
        ami_releases[family] = [release] if found else []
    return ami_releases


def _addon_versions(r: _Reader, cfg: StackConfig) -> dict[str, list[str]]:
    """By pinned EKS add-on, the version EKS offers for the cluster's Kubernetes version (one refused is left out)."""
    addon_versions: dict[str, list[str]] = {}
    for addon in versions.EKS_ADDON_VERSIONS:
        version = r.read(
            "addonVersions",
            "eks:DescribeAddonVersions",
            functools.partial(
                lambda a: aws.eks.get_addon_version(addon_name=a, kubernetes_version=cfg.cluster.kubernetes_version).version, addon
            ),
            None,
        )
        if version is not None:
            addon_versions[addon] = [version]
    return addon_versions


def _existing_vpcs(r: _Reader, cfg: StackConfig) -> list[Vpc]:
    """The existing VPC a stack names, when it exists (none for a new VPC)."""
    if not isinstance(cfg.network, ExistingVpc):
        return []
    described = r.read("vpcs", "ec2:DescribeVpcs", functools.partial(_vpc, cfg.network.vpc_id), None)
    return [] if described is None else [described]


def _existing_subnets(r: _Reader, cfg: StackConfig) -> list[Subnet]:
    """The existing subnets a stack names that exist (none for a new VPC)."""
    if not isinstance(cfg.network, ExistingVpc):
        return []
    subnet_ids = [*cfg.network.private_subnet_ids, *cfg.network.public_subnet_ids]
    found = [r.read("subnets", "ec2:DescribeSubnets", functools.partial(_subnet, subnet_id), None) for subnet_id in subnet_ids]
    return [subnet for subnet in found if subnet is not None]


# The quota data source asks for AWS's default first (GetAWSDefaultServiceQuota), then the account's value, and
# fails the read when either is refused (terraform-provider-aws service_quota_data_source.go).
QUOTA_READS = "servicequotas:GetAWSDefaultServiceQuota, servicequotas:GetServiceQuota"


def _unless_missing(call: Callable[[], T]) -> T | None:
    """What a data source read, or None when it says the thing does not exist (any other failure is raised)."""
    try:
        return call()
    except Exception as error:
        if any(marker in str(error) for marker in NOT_FOUND):
            return None
        raise


def _cluster_exists(name: str) -> bool:
    """Whether the stack's cluster exists: not-found means this `up` creates it."""
    return _unless_missing(lambda: aws.eks.get_cluster(name=name)) is not None


def _zones() -> dict[str, str]:
    """The region's regular zones: Local and Wavelength zones an account opted into are left out (their
    names sort first, and the default zone choice takes the first by name)."""
    found = aws.get_availability_zones(state="available", filters=[{"name": "zone-type", "values": ["availability-zone"]}])
    return dict(zip(found.zone_ids, found.names, strict=True))


def _offerings(types: list[str]) -> dict[str, list[str]]:
    offers = aws.ec2.get_instance_type_offerings(
        filters=[aws.ec2.GetInstanceTypeOfferingsFilterArgs(name="instance-type", values=types)], location_type="availability-zone"
    )
    offerings: dict[str, list[str]] = {}
    for instance_type, zone in zip(offers.instance_types, offers.locations, strict=True):
        offerings.setdefault(zone, []).append(instance_type)
    return offerings


def _vpc(vpc_id: str) -> Vpc | None:
    """The VPC, or None when it does not exist."""
    described = _unless_missing(lambda: aws.ec2.get_vpc(id=vpc_id))
    if described is None:
        return None
    primary = described.cidr_block
    associated = [a.cidr_block for a in described.cidr_block_associations or [] if a.state == "associated"]
    return Vpc(id=vpc_id, cidr=primary, secondary_cidrs=[b for b in associated if b != primary])


def _subnet(subnet_id: str) -> Subnet | None:
    """The subnet, or None when it does not exist."""
    s = _unless_missing(lambda: aws.ec2.get_subnet(id=subnet_id))
    if s is None:
        return None
    return Subnet(id=subnet_id, vpc_id=s.vpc_id, zone=s.availability_zone, cidr=s.cidr_block, tags=dict(s.tags or {}))


def _principal_exists(r: _Reader, arn: str) -> bool:
    kind, name = principal_kind_and_name(arn)
    if kind == "user":
        return r.exists("roles", "iam:GetUser", lambda: aws.iam.get_user(user_name=name), arn)
    return r.exists("roles", "iam:GetRole", lambda: aws.iam.get_role(name=name), arn)


# The ACM data source lists certificates (ListCertificates), describes each whose domain name equals the
# one asked (DescribeCertificate), fetches an ISSUED one's PEM (GetCertificate) and lists its tags
# (ListTagsForCertificate). It matches the domain name only and returns no alternative names.
ACM_READS = "acm:ListCertificates, acm:DescribeCertificate, acm:GetCertificate, acm:ListTagsForCertificate"


def _certificates(r: _Reader, cfg: StackConfig) -> list[Certificate]:
    arn, domain = cfg.ingress.certificate_arn, cfg.ingress.domain
    if arn is None or arn.split(":")[3] != cfg.region:
        return []
    lookups = [f"*.{domain}", domain] if domain else []
    found = []
    for name in lookups:
        cert = r.read("certificates", ACM_READS, functools.partial(_certificate, name), None)
        if cert is None:
            continue
        # The data source returns no alternative names, but an issued certificate's PEM carries them.
        names = alternative_names(getattr(cert, "certificate", None))
        found.append(
            Certificate(
                arn=cert.arn,
                domain=cert.domain,
                status=cert.status,  # type: ignore[arg-type]
                region=cfg.region,
                alternative_names=names or [],
                alternative_names_visible=names is not None,
            )
        )
    return found


def alternative_names(pem: str | None) -> list[str] | None:
    """The DNS subject alternative names of a PEM certificate; None when there is no PEM (a certificate
    not yet issued) or it does not parse: then preflight says it cannot see them, never that they are absent."""
    if not pem:
        return None
    try:
        certificate = x509.load_pem_x509_certificate(pem.encode())
    except ValueError:
        return None
    try:
        extension = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    except x509.ExtensionNotFound:
        return []
    return [str(name) for name in extension.value.get_values_for_type(x509.DNSName)]


def _certificate(name: str) -> aws.acm.AwaitableGetCertificateResult | None:
    """The most recent certificate whose domain name is `name`, or None (none, or several the data source refuses)."""
    try:
        return aws.acm.get_certificate(domain=name, statuses=list(CERTIFICATE_STATUSES), key_types=list(KEY_TYPES), most_recent=True)
    except Exception as error:
        if _denied(error, ACM_READS) is not None:
            raise
        return None


def answers(cfg: StackConfig, offline: OfflineAccount | None = None) -> Answers:
    """The answers this run checks against: the account itself, or the harness's account file."""
    if offline is None:
        return Answers(read_account(cfg), authoritative=True, addon_versions_complete=False, certificates_complete=False)
    loaded = account_file.load(offline.path)
    if not offline.authoritative:
        loaded = account_file.in_region(loaded, cfg.region)
    return Answers(loaded, authoritative=offline.authoritative, addon_versions_complete=True, certificates_complete=True)


def check(cfg: StackConfig, offline: OfflineAccount | None = None) -> list[preflight.Check]:
    """Every preflight check of the stack against its account (offline: the harness's answers)."""
    found = answers(cfg, offline)
    return preflight.run(
        cfg,
        found.account,
        authoritative=found.authoritative,
        addon_versions_complete=found.addon_versions_complete,
        certificates_complete=found.certificates_complete,
    )
