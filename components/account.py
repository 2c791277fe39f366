"""Preflight: read the target account and check the stack against it, before anything is created.

At `pulumi preview`/`up` the answers come from pulumi-aws data sources (read-only calls with the
deploy credentials); in the offline render they come from an account file the harness names
(config/load.py OfflineAccount, handed to `check`). Either way the same pure checks (config/checks/preflight/) run on
them. Data sources run as plain invokes here, so the program stops before registering anything.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from config.checks import account as account_file
from config.checks import preflight
from config.checks.account import CERTIFICATE_STATUSES, AccountFile, Certificate, Subnet, Vpc
from config.checks.preflight import QUOTAS, SPOT_ROLE
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


def _exists(read: Callable[[], object], what: str) -> bool:
    """Whether a data source finds the thing: not-found is False; any other failure cannot tell,
    so it counts as found, with a warning (preflight must not fail a stack on a missing permission)."""
    try:
        read()
    except Exception as error:
        text = str(error)
        if any(marker in text for marker in NOT_FOUND):
            return False
        pulumi.log.warn(f"preflight: could not check {what} ({text.splitlines()[0][:200]}); it is assumed to exist")
    return True


def read_account(cfg: StackConfig) -> AccountFile:
    """The account's answers through pulumi-aws data sources (read-only)."""
    zones = aws.get_availability_zones(state="available")
    types = sorted({t.name for p in cfg.gpu_pools for t in p.resolved_instance_types()})
    offers = aws.ec2.get_instance_type_offerings(
        filters=[aws.ec2.GetInstanceTypeOfferingsFilterArgs(name="instance-type", values=types)], location_type="availability-zone"
    )
    offerings: dict[str, list[str]] = {}
    for instance_type, zone in zip(offers.instance_types, offers.locations, strict=True):
        offerings.setdefault(zone, []).append(instance_type)
    quotas = {}
    for code, _name in QUOTAS.values():
        quotas[code] = aws.servicequotas.get_service_quota(service_code="ec2", quota_code=code).value
    families = sorted({p.ami_family for p in state.of(cfg).pools.values()})
    ami_releases: dict[str, list[str]] = {}
    for family in families:
        release = str(getattr(cfg.karpenter.ami_versions, family))
        name = ami_parameter(family, cfg.cluster.kubernetes_version, release)
        found = _exists(functools.partial(aws.ssm.get_parameter, name=name), f"AMI parameter {name}")
        ami_releases[family] = [release] if found else []
    addon_versions = {
        addon: [aws.eks.get_addon_version(addon_name=addon, kubernetes_version=cfg.cluster.kubernetes_version).version]
        for addon in versions.EKS_ADDON_VERSIONS
    }
    roles = [arn for arn in cfg.cluster.principal_arns() if _principal_exists(arn)]
    certificates = _certificates(cfg)
    spot = _exists(lambda: aws.iam.get_role(name=SPOT_ROLE), f"role {SPOT_ROLE}")
    vpcs: list[Vpc] = []
    subnets: list[Subnet] = []
    if isinstance(cfg.network, ExistingVpc):
        net = cfg.network
        if _exists(lambda: aws.ec2.get_vpc(id=net.vpc_id), f"VPC {net.vpc_id}"):
            described = aws.ec2.get_vpc(id=net.vpc_id)
            primary = described.cidr_block
            associated = [a.cidr_block for a in described.cidr_block_associations or [] if a.state == "associated"]
            vpcs.append(Vpc(id=net.vpc_id, cidr=primary, secondary_cidrs=[b for b in associated if b != primary]))
        for subnet_id in [*net.private_subnet_ids, *net.public_subnet_ids]:
            if _exists(functools.partial(aws.ec2.get_subnet, id=subnet_id), f"subnet {subnet_id}"):
                s = aws.ec2.get_subnet(id=subnet_id)
                subnets.append(Subnet(id=subnet_id, vpc_id=s.vpc_id, zone=s.availability_zone, cidr=s.cidr_block, tags=dict(s.tags or {})))
    return AccountFile(
        caller=aws.get_caller_identity().arn,
        region=cfg.region,
        zones=dict(zip(zones.zone_ids, zones.names, strict=True)),
        quotas=quotas,
        offerings=offerings,
        ami_releases=ami_releases,
        addon_versions=addon_versions,
        roles=roles,
        certificates=certificates,
        spot_service_linked_role=spot,
        vpcs=vpcs,
        subnets=subnets,
    )


def _principal_exists(arn: str) -> bool:
    kind, name = principal_kind_and_name(arn)
    if kind == "user":
        return _exists(lambda: aws.iam.get_user(user_name=name), arn)
    return _exists(lambda: aws.iam.get_role(name=name), arn)


def _certificates(cfg: StackConfig) -> list[Certificate]:
    arn, domain = cfg.ingress.certificate_arn, cfg.ingress.domain
    if arn is None or arn.split(":")[3] != cfg.region:
        return []
    lookups = [f"*.{domain}", domain] if domain else []
    found = []
    for name in lookups:
        try:
            cert = aws.acm.get_certificate(domain=name, statuses=list(CERTIFICATE_STATUSES), key_types=list(KEY_TYPES), most_recent=True)
        except Exception:
            continue
        found.append(Certificate(arn=cert.arn, domain=cert.domain, status=cert.status, region=cfg.region))  # type: ignore[arg-type]
    return found


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
