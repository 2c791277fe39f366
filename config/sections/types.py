"""Constrained scalar types shared by the config sections.

Each type carries its own check and an error message in the house format
(`problem; why. Fix: ...`); the path is added by the error formatter.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated

from pydantic import AfterValidator, Field
from pydantic_core import PydanticCustomError

# DNS-1123 label: the name rule for namespaces, Services, NodePools and most objects.
_DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
# Kubernetes quantity, as the NodePool CRD spells it (reliability checklist MV-3).
_QUANTITY = re.compile(
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
# Go duration as Karpenter accepts it: one or more <n>s|m|h, or Never where allowed.
_DURATION = re.compile(r"^([0-9]+(s|m|h))+$")
# Prometheus duration for retention and alert `for:`.
_PROM_DURATION = re.compile(r"^([0-9]+(ms|s|m|h|d|w|y))+$")
_ZONE_NAME = re.compile(r"^[a-z]{2}(-[a-z]+)+-[0-9][a-z]$")
_ZONE_ID = re.compile(r"^[a-z]{3,4}[0-9]-az[0-9]+$")


def config_error(problem: str, fix: str) -> PydanticCustomError:
    """A validation error in the house format: `<problem>. Fix: <fix>` (the path is added later)."""
    # Without a context pydantic-core formats nothing: braces in the text stay as written (doubling them, as a
    # format string would need, showed them doubled).
    return PydanticCustomError("llm_config", f"{problem}. Fix: {fix}")


def _dns_label(value: str) -> str:
    if len(value) > 63 or not _DNS_LABEL.match(value):
        raise config_error(
            f"'{value}' is not a valid Kubernetes name; it becomes a namespace, Service and NodePool name, which must be a DNS-1123 label",
            "use lowercase letters, digits and '-', start with a letter, end with a letter or digit, at most 63 characters",
        )
    return value


_UNIT_TYPOS = {"KB": "Ki", "MB": "Mi", "GB": "Gi", "TB": "Ti", "gb": "Gi", "mb": "Mi", "gi": "Gi", "mi": "Mi"}


def _quantity(value: str) -> str:
    if not _QUANTITY.match(value):
        hint = ""
        m = re.match(r"^([0-9.]+)\s*([A-Za-z]+)$", value)
        if m and m.group(2) in _UNIT_TYPOS:
            hint = f" (did you mean '{m.group(1)}{_UNIT_TYPOS[m.group(2)]}'?)"
        raise config_error(
            f"'{value}' is not a Kubernetes quantity{hint}; the API server would reject the "
            "object at apply time, after the preview looked fine",
            "write a quantity such as 24Gi, 512Mi, 4 or 500m",
        )
    return value


def _duration(value: str) -> str:
    if not _DURATION.match(value):
        days = re.fullmatch(r"([0-9]+)d", value)
        fix = f"write {int(days.group(1)) * 24}h instead of {value}" if days else "write hours, minutes or seconds, e.g. 24h, 90m or 45s"
        raise config_error(f"'{value}' is not a duration Karpenter accepts (pattern <n>s|m|h, e.g. 90s, 10m, 24h)", fix)
    return value


def _duration_or_never(value: str) -> str:
    return value if value == "Never" else _duration(value)


def _prom_duration(value: str) -> str:
    if not _PROM_DURATION.match(value):
        raise config_error(
            f"'{value}' is not a Prometheus duration",
            "write e.g. 15d, 12h or 90m",
        )
    return value


def _prom_size(value: str) -> str:
    if not re.match(r"^[0-9]+(B|KB|MB|GB|TB|PB|EB)$", value):
        raise config_error(f"'{value}' is not a Prometheus size", "write e.g. 90GB or 500MB (Prometheus units, not Kubernetes Gi)")
    return value


def _not_every_address(value: str, fix: str) -> None:
    """The one check of every allow-list entry: no /0 (0.0.0.0/0, 10.0.0.0/0, ::/0), however written."""
    try:
        net = ipaddress.ip_network(value, strict=False)
    except ValueError:
        return  # not a CIDR at all: the caller's own parse says so
    if net.prefixlen == 0:
        raise config_error(f"'{value}' allows every address on the internet, which defeats the allow-list", fix)


def public_cidr(value: str) -> str:
    """A public IPv4 CIDR for an allow-list: no host bits, not RFC 1918, not 0.0.0.0/0.

    ipaddress.is_private is deliberately not used: it also rejects the TEST-NET ranges that
    documentation and tests use. The reserved sets are listed explicitly instead.
    """
    _not_every_address(value, "list the egress CIDRs of your offices, VPN or CI runners")
    try:
        net = ipaddress.IPv4Network(value, strict=False)
    except ValueError:
        raise config_error(f"'{value}' is not an IPv4 CIDR", "write it as a.b.c.d/n, e.g. 203.0.113.0/24") from None
    if "/" not in value:
        raise config_error(f"'{value}' has no prefix length", f"write {value}/32 for a single address")
    if str(net) != value:
        raise config_error(
            f"'{value}' has host bits set (did you mean {net}?); AWS rejects such ranges",
            f"use {net}",
        )
    for reserved in _NON_PUBLIC:
        if net.subnet_of(reserved):
            raise config_error(
                f"'{value}' is inside the non-public range {reserved}; public "
                "allow-lists take public CIDRs (traffic from inside the VPC uses private paths)",
                "remove it, or list the public egress CIDR that this network leaves through",
            )
        if net.overlaps(reserved):
            # a range around a reserved block (0.0.0.0/1 with 128.0.0.0/1 is every address, past the /0 ban)
            raise config_error(
                f"'{value}' contains the non-public range {reserved}: a public allow-list of this width admits "
                "much of the internet with it",
                "list the public egress CIDRs of your offices, VPN or CI runners (a few /24 to /32 ranges)",
            )
    return value


_NON_PUBLIC = [
    ipaddress.IPv4Network(n)
    for n in (
        "10.0.0.0/8",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "100.64.0.0/10",
        "0.0.0.0/8",
        "224.0.0.0/4",
        "240.0.0.0/4",
    )
]


def _network(value: str, example: str) -> ipaddress.IPv4Network:
    try:
        return ipaddress.IPv4Network(value, strict=True)
    except ValueError:
        raise config_error(f"'{value}' is not a network CIDR (or has host bits set)", f"write e.g. {example}") from None


def _vpc_cidr(value: str) -> str:
    """A new VPC's CIDR: /16 to /20."""
    net = _network(value, "10.0.0.0/16")
    if not 16 <= net.prefixlen <= 20:
        raise config_error(
            f"'{value}' has prefix /{net.prefixlen}; a VPC CIDR must be /16 to /20 here so that "
            "every AZ gets public and private subnets with room for pod IPs",
            "use a /16 (recommended: GPU pods take VPC IPs through the VPC CNI) up to /20",
        )
    return value


def _network_cidr(value: str) -> str:
    """Any network CIDR (an existing VPC's)."""
    _network(value, "10.0.0.0/16")
    return value


def _allowed_cidr(value: str) -> str:
    """A client range of an allow-list: a network CIDR that is not every address."""
    _not_every_address(value, "list the client CIDRs that may call the models")
    _network(value, "10.20.0.0/16")
    return value


def _private_access_cidr(value: str) -> str:
    """A network that may reach the private API endpoint: a network CIDR that is not every address."""
    _not_every_address(value, "list the networks `pulumi up` and kubectl run from (the VPN or transit range, a CI runner's subnet)")
    _network(value, "192.0.2.0/24")
    return value


_REGION = re.compile(r"^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-[0-9]$")


def _region(value: str) -> str:
    if not _REGION.match(value):
        zone = re.fullmatch(r"([a-z]{2}(?:-gov)?-[a-z]+-[0-9])[a-z]", value)
        problem = f"'{value}' is an availability zone, not a region" if zone else f"'{value}' is not an AWS region"
        fix = f"set aws:region to {zone.group(1)}" if zone else "set aws:region to a region such as us-east-1"
        raise config_error(problem, fix)
    return value


def _matching(pattern: str, problem: str, fix: str) -> AfterValidator:
    """A string type checked by one regular expression, with the house message."""
    compiled = re.compile(pattern)

    def check(value: str) -> str:
        if not compiled.match(value):
            raise config_error(problem.format(value=value), fix)
        return value

    return AfterValidator(check)


HuggingFaceId = Annotated[
    str,
    _matching(
        r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$", "'{value}' is not a Hugging Face repository id", "write <org>/<name>"
    ),
]
CommitRevision = Annotated[
    str,
    _matching(
        r"^[0-9a-f]{40}$",
        "'{value}' is not a pinned commit; a branch such as main can change the weights under a running fleet",
        "use the 40-hex commit id shown on the model's Hugging Face 'Files' history",
    ),
]
ImageDigest = Annotated[str, _matching(r"^sha256:[0-9a-f]{64}$", "'{value}' is not an image digest", "write sha256:<64 lowercase hex>")]


def is_zone_id(zone: str) -> bool:
    return bool(_ZONE_ID.match(zone))


def zone_id_prefix(region: str) -> str:
    """The prefix of a region's zone ids: us-east-1 -> use1, ap-northeast-2 -> apne2, us-gov-west-1 -> usgw1."""
    geo, *middle, number = region.split("-")
    letters = "".join(p[0] + p[5] if p.startswith(("north", "south")) and len(p) > 5 else p[0] for p in middle)
    return f"{geo}{letters}{number}"


def zone_in_region(zone: str, region: str) -> bool:
    if is_zone_id(zone):
        return zone.startswith(f"{zone_id_prefix(region)}-az")
    return zone[:-1] == region


K8sName = Annotated[str, AfterValidator(_dns_label)]
Quantity = Annotated[str, AfterValidator(_quantity)]
Duration = Annotated[str, AfterValidator(_duration)]
DurationOrNever = Annotated[str, AfterValidator(_duration_or_never)]
PromDuration = Annotated[str, AfterValidator(_prom_duration)]
PromSize = Annotated[str, AfterValidator(_prom_size)]
PublicCidr = Annotated[str, AfterValidator(public_cidr)]
VpcCidr = Annotated[str, AfterValidator(_vpc_cidr)]
NetworkCidr = Annotated[str, AfterValidator(_network_cidr)]
AllowedCidr = Annotated[str, AfterValidator(_allowed_cidr)]
PrivateAccessCidr = Annotated[str, AfterValidator(_private_access_cidr)]
Region = Annotated[str, AfterValidator(_region)]
VpcId = Annotated[str, _matching(r"^vpc-[0-9a-f]{8,17}$", "'{value}' is not a VPC id", "write vpc-<8 or 17 hex digits>")]
SubnetId = Annotated[str, _matching(r"^subnet-[0-9a-f]{8,17}$", "'{value}' is not a subnet id", "write subnet-<8 or 17 hex digits>")]
SecurityGroupId = Annotated[str, _matching(r"^sg-[0-9a-f]{8,17}$", "'{value}' is not a security group id", "write sg-<8 or 17 hex digits>")]
Zone = Annotated[
    str,
    _matching(
        f"{_ZONE_NAME.pattern}|{_ZONE_ID.pattern}",
        "'{value}' is neither an availability zone name nor a zone id",
        "write a name such as us-east-1a, or a zone id such as use1-az4 (the same physical zone in every account)",
    ),
]
DnsDomain = Annotated[
    str,
    _matching(
        r"^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$",
        "'{value}' is not a DNS domain",
        "write e.g. llm.example.com (lowercase, no scheme, no trailing dot)",
    ),
]
RoleArn = Annotated[
    str,
    _matching(
        r"^arn:aws[a-zA-Z-]*:iam::[0-9]{12}:role/[\w+=,.@/-]{1,512}$",
        "'{value}' is not an IAM role ARN",
        "write arn:aws:iam::<12-digit account>:role/<name>",
    ),
]
PrincipalArn = Annotated[
    str,
    _matching(
        r"^arn:aws[a-zA-Z-]*:(iam|sts)::[0-9]{12}:(role|user|assumed-role)/[\w+=,.@/-]+$",
        "'{value}' is not an IAM role or user ARN",
        "write arn:aws:iam::<12-digit account>:role/<name> (or :user/<name>)",
    ),
]
AcmCertificateArn = Annotated[
    str,
    _matching(
        r"^arn:aws[a-zA-Z-]*:acm:[a-z0-9-]+:[0-9]{12}:certificate/[0-9a-f-]{36}$",
        "'{value}' is not an ACM certificate ARN",
        "write arn:aws:acm:<region>:<account>:certificate/<uuid>",
    ),
]
Fraction = Annotated[float, Field(gt=0, le=1)]


def parse_quantity(value: str) -> float:
    """The numeric value of a Kubernetes quantity in base units (bytes, cores)."""
    m = re.match(r"^([+-]?[0-9.]+)([a-zA-Z]*)$", value)
    if not m:
        raise ValueError(f"not a simple quantity: {value}")
    number, suffix = float(m.group(1)), m.group(2)
    factors = {
        "": 1,
        "m": 1e-3,
        "k": 1e3,
        "M": 1e6,
        "G": 1e9,
        "T": 1e12,
        "P": 1e15,
        "E": 1e18,
        "Ki": 2**10,
        "Mi": 2**20,
        "Gi": 2**30,
        "Ti": 2**40,
        "Pi": 2**50,
        "Ei": 2**60,
    }
    if suffix not in factors:
        raise ValueError(f"unsupported quantity suffix: {value}")
    return number * factors[suffix]


def duration_seconds(value: str) -> int:
    """Seconds in a Go-style duration such as 1h30m (Never is not accepted here)."""
    total = 0
    for amount, unit in re.findall(r"([0-9]+)(ms|s|m|h|d|w|y)", value):
        total += int(amount) * {"ms": 0, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}[unit]
    return total
