"""What the target AWS account says, as the preflight checks read it. Pure.

The same shape serves three sources: the real account read through pulumi-aws data sources at
preview (components/account.py), an account file for the offline render (`offline/account.yaml`
by default, or `make render ACCOUNT=<file>`), and the file `make account` captures from a real
account. Keys are camelCase, as in the stack files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, get_args

import yaml
from pydantic import Field, ValidationError

from config.errors import ConfigError, Problem, problems_from_validation_error
from config.sections.base import ConfigModel
from config.sections.types import NetworkCidr, SubnetId, VpcId, zone_id_prefix

CertificateStatus = Literal["ISSUED", "PENDING_VALIDATION", "EXPIRED", "REVOKED", "FAILED", "INACTIVE", "VALIDATION_TIMED_OUT"]
CERTIFICATE_STATUSES: tuple[str, ...] = get_args(CertificateStatus)
AnswerKey = Literal[
    "zones",
    "quotas",
    "offerings",
    "amiReleases",
    "addonVersions",
    "roles",
    "certificates",
    "spotServiceLinkedRole",
    "vpcs",
    "subnets",
    "clusterExists",
]


class Certificate(ConfigModel):
    """An ACM certificate."""

    arn: str = Field(description="Certificate ARN.")
    domain: str = Field(description="Its domain name, e.g. *.llm.example.com.")
    alternative_names: list[str] = Field(default_factory=list, description="Its subject alternative names.")
    alternative_names_visible: bool = Field(
        default=True,
        description="Whether alternativeNames is the full list. False when the reader could not see them (the ACM data "
        "source returns only the domain name): a name they might cover is a warning, never a failure.",
    )
    status: CertificateStatus = Field(description="ACM status.")
    region: str = Field(description="The region the certificate lives in.")


class Vpc(ConfigModel):
    """An existing VPC."""

    id: VpcId = Field(description="VPC id.")
    cidr: NetworkCidr = Field(description="Its primary IPv4 CIDR.")
    secondary_cidrs: list[NetworkCidr] = Field(default_factory=list, description="Its other associated IPv4 CIDR blocks.")


class Subnet(ConfigModel):
    """An existing subnet."""

    id: SubnetId = Field(description="Subnet id.")
    vpc_id: VpcId = Field(description="Its VPC.")
    zone: str = Field(description="Its availability zone name.")
    cidr: NetworkCidr = Field(description="Its IPv4 CIDR.")
    tags: dict[str, str] = Field(default_factory=dict, description="Its tags.")


class AccountFile(ConfigModel):
    """The answers of one AWS account and region."""

    region: str = Field(description="The region these answers are for.")
    zones: dict[str, str] = Field(description="Availability zones: zone id -> zone name.")
    quotas: dict[str, float] = Field(description="EC2 Service Quotas by code (L-...), in vCPUs.")
    offerings: dict[str, list[str]] = Field(description="Instance types offered, by zone name.")
    ami_releases: dict[str, list[str]] = Field(
        description="EKS AMI releases published for the cluster's Kubernetes version, by AMI family (al2023, bottlerocket)."
    )
    addon_versions: dict[str, list[str]] = Field(description="EKS add-on versions for the cluster's Kubernetes version, by add-on.")
    roles: list[str] = Field(default_factory=list, description="IAM role and user ARNs that exist.")
    certificates: list[Certificate] = Field(default_factory=list, description="ACM certificates.")
    spot_service_linked_role: bool = Field(description="AWSServiceRoleForEC2Spot exists.")
    vpcs: list[Vpc] = Field(default_factory=list, description="Existing VPCs (for stacks in an existing VPC).")
    subnets: list[Subnet] = Field(default_factory=list, description="Existing subnets (for stacks in an existing VPC).")
    caller: str | None = Field(default=None, description="ARN of the identity running pulumi (STS GetCallerIdentity); unset: not checked.")
    cluster_exists: bool | None = Field(
        default=None,
        description="Whether the stack's EKS cluster exists (EKS DescribeCluster): false on the first `pulumi up`, which "
        "must run as the deploy role. Unset: not known, the caller is judged as on a later up.",
    )
    unread: dict[AnswerKey, str] = Field(
        default_factory=dict,
        description="Answers the reader was refused (a missing read permission), by key, with the reason: the checks "
        "that need them are 'not checked', and preflight warns once per key.",
    )


def parse(data: Any, source: str) -> AccountFile:
    """Validate account answers; every problem at once, with its path, as for a stack file."""
    if not isinstance(data, dict):
        raise ConfigError([Problem(source, "is not a mapping of account answers. Fix: see the account file format in docs/preflight.md")])
    try:
        return AccountFile.model_validate(data)
    except ValidationError as exc:
        found = problems_from_validation_error(AccountFile, exc, data)
        # the account file's keys are described with the preflight, not in the stack's config reference
        where = ("the config reference, docs/config-reference.md", "the account file format, docs/preflight.md")
        raise ConfigError([Problem(f"{source}: {p.path}", p.message.replace(*where)) for p in found]) from None


def load(path: Path) -> AccountFile:
    if not path.is_file():
        raise ConfigError([Problem(str(path), "does not exist. Fix: name an account file (make account captures one)")])
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise ConfigError([Problem(path.name, f"is not valid YAML{where}. Fix: correct the file")]) from None
    return parse(data, path.name)


def in_region(account: AccountFile, region: str) -> AccountFile:
    """The same answers, moved to another region (for the default file: any stack's region)."""
    if account.region == region:
        return account
    old_ids, new_ids = zone_id_prefix(account.region), zone_id_prefix(region)

    def name(zone: str) -> str:
        return region + zone[len(account.region) :] if zone.startswith(account.region) else zone

    return account.model_copy(
        update={
            "region": region,
            "zones": {new_ids + i[len(old_ids) :] if i.startswith(old_ids) else i: name(z) for i, z in account.zones.items()},
            "offerings": {name(z): types for z, types in account.offerings.items()},
        }
    )
