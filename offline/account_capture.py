"""`make account STACK=<s> OUT=<file>`: capture a real account's answers for offline preflight.

    python -m offline.account_capture <stack> --out my-account.yaml [--file Pulumi.<stack>.yaml]

With the caller's AWS credentials (read-only calls: describe, get, list), in the stack's region,
it records what the preflight checks read (config/checks/account.py) for this stack: zones, the four
EC2 GPU vCPU quotas, the offerings of the pools' instance types, the published EKS AMI releases
and add-on versions for the cluster's Kubernetes version, which of the stack's principals exist,
its certificate, the EC2 Spot service-linked role, and an existing VPC with its subnets. Then
`make render STACK=<s> ACCOUNT=my-account.yaml` checks the stack against that account offline,
and a pull request can show what a change needs ("96 more P vCPUs").
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from config import stack_file
from config.checks import account
from config.checks.preflight import SPOT_ROLE, quota_codes
from config.derived import state
from config.errors import ConfigError
from config.facts import versions
from config.facts.conventions import ami_parameter_path, principal_kind_and_name
from config.sections.network import ExistingVpc
from config.sections.stack import StackConfig
from config.validate import parse_stack_config
from offline import harness

ClientFactory = Callable[[str], Any]
"""Returns a boto3 client for a service name (tests pass botocore-stubbed clients)."""


MISSING = ("NoSuchEntity", "NoSuchEntityException", "ResourceNotFoundException", "InvalidVpcID.NotFound", "InvalidSubnetID.NotFound")


def _missing(error: Exception) -> bool:
    code = getattr(error, "response", {}).get("Error", {}).get("Code", "")
    return code in (
        "NoSuchEntity",
        "NoSuchEntityException",
        "ResourceNotFoundException",
        "InvalidVpcID.NotFound",
        "InvalidSubnetID.NotFound",
    )


def _ami_releases(ssm: Any, family: str, k8s: str) -> list[str]:
    """Published NVIDIA AMI releases under the SSM paths Karpenter resolves (docs/upstream-facts.md#quotas-and-amis)."""
    path, prefix = ami_parameter_path(family, k8s)
    found: set[str] = set()
    for page in ssm.get_paginator("get_parameters_by_path").paginate(Path=path, Recursive=True):
        for parameter in page["Parameters"]:
            parts = parameter["Name"][len(path) :].split("/")
            if len(parts) == 2 and parts[1] == "image_id" and parts[0].startswith(prefix):
                release = parts[0][len(prefix) :]
                if release not in ("latest", "recommended"):
                    found.add(release if release.startswith("v") else f"v{release}")
    return sorted(found)


def capture(cfg: StackConfig, client: ClientFactory) -> dict[str, Any]:
    """The account answers for this stack, in the account-file shape (camelCase)."""
    ec2, quotas_client, ssm, eks, iam, acm, sts = (client(s) for s in ("ec2", "service-quotas", "ssm", "eks", "iam", "acm", "sts"))
    # regular zones only: opted-in Local and Wavelength zones sort first by name (as the program reads them)
    zone_filters = [{"Name": "state", "Values": ["available"]}, {"Name": "zone-type", "Values": ["availability-zone"]}]
    zones = ec2.describe_availability_zones(Filters=zone_filters)["AvailabilityZones"]
    types = sorted({t.name for p in cfg.gpu_pools for t in p.resolved_instance_types()})
    offerings: dict[str, list[str]] = {}
    for page in ec2.get_paginator("describe_instance_type_offerings").paginate(
        LocationType="availability-zone", Filters=[{"Name": "instance-type", "Values": types}]
    ):
        for offer in page["InstanceTypeOfferings"]:
            offerings.setdefault(offer["Location"], []).append(offer["InstanceType"])
    quotas = {code: _quota(quotas_client, code) for code in quota_codes()}
    k8s = cfg.cluster.kubernetes_version
    families = sorted({p.ami_family for p in state.of(cfg).pools.values()})
    addon_versions = {}
    for addon in versions.EKS_ADDON_VERSIONS:
        listed = eks.describe_addon_versions(addonName=addon, kubernetesVersion=k8s)["addons"]
        addon_versions[addon] = sorted({v["addonVersion"] for a in listed for v in a["addonVersions"]})
    roles = [arn for arn in cfg.cluster.principal_arns() if _principal_exists(iam, arn)]
    answers: dict[str, Any] = {
        "region": cfg.region,
        "zones": {z["ZoneId"]: z["ZoneName"] for z in zones},
        "quotas": quotas,
        "offerings": {z: sorted(t) for z, t in sorted(offerings.items())},
        "amiReleases": {family: _ami_releases(ssm, family, k8s) for family in families},
        "addonVersions": addon_versions,
        "roles": roles,
        "certificates": _certificates(acm, cfg),
        "spotServiceLinkedRole": _role_exists(iam, SPOT_ROLE),
        "caller": sts.get_caller_identity()["Arn"],
        "clusterExists": _found(lambda: eks.describe_cluster(name=cfg.cluster.name)),
    }
    if isinstance(cfg.network, ExistingVpc):
        answers |= _existing_vpc(ec2, cfg.network)
    account.parse(answers, "captured answers")  # the file written is one the render accepts
    return answers


def _found(call: Callable[[], object]) -> bool:
    """Whether a read finds the thing; a not-found error is "no", any other error is raised."""
    try:
        call()
    except Exception as error:
        if _missing(error):
            return False
        raise
    return True


def _quota(client: Any, code: str) -> float:
    """The account's value, or AWS's default for a quota never changed (get_service_quota has none)."""
    try:
        return float(client.get_service_quota(ServiceCode="ec2", QuotaCode=code)["Quota"]["Value"])
    except Exception as error:
        if getattr(error, "response", {}).get("Error", {}).get("Code") != "NoSuchResourceException":
            raise
    return float(client.get_aws_default_service_quota(ServiceCode="ec2", QuotaCode=code)["Quota"]["Value"])


def _role_exists(iam: Any, name: str) -> bool:
    return _found(lambda: iam.get_role(RoleName=name))


def _principal_exists(iam: Any, arn: str) -> bool:
    kind, name = principal_kind_and_name(arn)
    if kind == "user":
        return _found(lambda: iam.get_user(UserName=name))
    return _role_exists(iam, name)


def _certificates(acm: Any, cfg: StackConfig) -> list[dict[str, str]]:
    arn = cfg.ingress.certificate_arn
    if arn is None or arn.split(":")[3] != cfg.region:
        return []
    try:
        cert = acm.describe_certificate(CertificateArn=arn)["Certificate"]
    except Exception as error:
        if _missing(error):
            return []
        raise
    names = [n for n in cert.get("SubjectAlternativeNames", []) if n != cert["DomainName"]]
    return [{"arn": arn, "domain": cert["DomainName"], "alternativeNames": names, "status": cert["Status"], "region": cfg.region}]


def _existing_vpc(ec2: Any, network: ExistingVpc) -> dict[str, Any]:
    try:
        vpcs = ec2.describe_vpcs(VpcIds=[network.vpc_id])["Vpcs"]
    except Exception as error:
        if _missing(error):
            return {"vpcs": [], "subnets": []}
        raise
    subnets = ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [network.vpc_id]}])["Subnets"]
    return {
        "vpcs": [
            {
                "id": v["VpcId"],
                "cidr": v["CidrBlock"],
                "secondaryCidrs": [
                    a["CidrBlock"]
                    for a in v.get("CidrBlockAssociationSet", [])
                    if a["CidrBlock"] != v["CidrBlock"] and a.get("CidrBlockState", {}).get("State") == "associated"
                ],
            }
            for v in vpcs
        ],
        "subnets": [
            {
                "id": s["SubnetId"],
                "vpcId": s["VpcId"],
                "zone": s["AvailabilityZone"],
                "cidr": s["CidrBlock"],
                "tags": {t["Key"]: t["Value"] for t in s.get("Tags", [])},
            }
            for s in subnets
        ],
    }


def stack_config(stack: str, path: Path) -> StackConfig:
    """The stack's validated config, from its file (no secrets needed)."""
    inp = harness.stack_input(stack, path)
    data, _, _ = stack_file.split(inp.config, lambda key: key in inp.secret_keys)
    cfg, _ = parse_stack_config(data)
    return cfg


def read_stack(stack: str, file: str | None) -> tuple[Path, StackConfig | None]:
    """The stack file (`file`, else Pulumi.<stack>.yaml) and its validated config; None when it is not
    valid, its problems printed to stderr."""
    path = Path(file) if file else harness.ROOT / f"Pulumi.{stack}.yaml"
    try:
        return path, stack_config(stack, path)
    except ConfigError as err:
        print(f"{path.name}: {err.report()}", file=sys.stderr)
        return path, None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("stack", help="stack name: reads Pulumi.<stack>.yaml")
    parser.add_argument("--out", required=True, help="account file to write")
    parser.add_argument("--file", help="stack file to read instead of Pulumi.<stack>.yaml")
    args = parser.parse_args(argv)
    _, cfg = read_stack(args.stack, args.file)
    if cfg is None:
        return 2
    import boto3  # type: ignore[import-untyped]

    session = boto3.session.Session(region_name=cfg.region)
    try:
        answers = capture(cfg, session.client)
    except Exception as error:  # no credentials, no permission, throttling: say what, not a traceback
        print(f"Could not read the account: {str(error).splitlines()[0][:300]}. Fix: use credentials with read access", file=sys.stderr)
        return 2
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(
        f"# Account answers for stack {args.stack} ({cfg.region}), captured by `make account`.\n"
        + yaml.safe_dump(answers, sort_keys=False, width=120)
    )
    print(f"Wrote {args.out}: render against it with `make render STACK={args.stack} ACCOUNT={args.out}`")
    return 0


if __name__ == "__main__":
    sys.exit(main())
