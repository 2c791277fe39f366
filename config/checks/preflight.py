"""Preflight: the stack config checked against what the target account says. Pure.

Every check returns a result (ok, failed, warning, not checked) with its inputs, so the render can
write them all (`build/<stack>/preflight.json`) and the program can stop with every failure at
once, before any resource exists. `authoritative` says whether the answers describe everything:
answers read from the real account (or an explicit account file) are; the default offline file
is not, so what it does not describe (a principal, a certificate, a subnet) is "not checked".
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from config.checks.account import AccountFile
from config.checks.rules import pool_path
from config.derived import capacity
from config.errors import Problem
from config.facts import catalog, versions
from config.facts.conventions import INTERNAL_ELB_TAG, PUBLIC_ELB_TAG, principal_kind_and_name
from config.sections.gpu_pools import GpuPool
from config.sections.karpenter import KarpenterConfig
from config.sections.network import ExistingVpc, NewVpc
from config.sections.stack import StackConfig
from config.sections.types import is_zone_id

Result = Literal["ok", "failed", "warning", "not checked"]

# EC2 vCPU quotas (service ec2), by purchase option and instance class (upstream-facts W2.7).
QUOTAS = {
    ("on-demand", "G"): ("L-DB2E81BA", "Running On-Demand G and VT instances"),
    ("on-demand", "P"): ("L-417A185B", "Running On-Demand P instances"),
    ("spot", "G"): ("L-3819A6DF", "All G and VT Spot Instance Requests"),
    ("spot", "P"): ("L-7212CCBC", "All P Spot Instance Requests"),
}
SPOT_ROLE = "AWSServiceRoleForEC2Spot"


@dataclass(frozen=True)
class Check:
    """One preflight check and what it found."""

    name: str
    path: str
    result: Result
    message: str
    inputs: dict[str, Any] = field(default_factory=dict)

    def problem(self) -> Problem | None:
        if self.result == "failed":
            return Problem(self.path, self.message)
        if self.result == "warning":
            return Problem(self.path, self.message, "warning")
        return None


def _instance_class(instance: catalog.InstanceType) -> str:
    return "P" if instance.family.startswith("p") else "G"


def _ami_family(pool: GpuPool, karpenter: KarpenterConfig) -> str:
    return pool.ami_family or karpenter.default_ami_family


# -- quotas -----------------------------------------------------------------------------------------
@dataclass
class _Need:
    at_min: int = 0
    at_limit: int = 0
    pools: list[str] = field(default_factory=list)


def _vcpu_needs(cfg: StackConfig) -> dict[tuple[str, str], _Need]:
    """vCPUs per (purchase option, instance class): at the models' minimum replicas, and at each
    pool's GPU limit (whole nodes of its largest-vCPU type per GPU)."""
    needs: dict[tuple[str, str], _Need] = {}
    for pool in cfg.gpu_pools:
        types = pool.resolved_instance_types()
        if not types:
            continue
        classes = sorted({_instance_class(t) for t in types})
        at_limit = max(math.ceil(pool.gpu_limit / t.gpu_count) * t.vcpus for t in types)
        at_min = 0
        for model in (m for m in cfg.models if m.pool == pool.name):
            hosts = capacity.packing_hosts(model, pool)
            if hosts:
                at_min += capacity.nodes_for(model, pool, hosts[0], model.replicas.min) * hosts[0].vcpus
        for option in ("on-demand", "spot"):
            if option not in pool.capacity_types:
                continue
            for cls in classes:
                need = needs.setdefault((option, cls), _Need())
                need.at_limit += at_limit
                need.at_min += at_min
                need.pools.append(pool.name)
    return needs


def _quotas(cfg: StackConfig, account: AccountFile) -> Iterator[Check]:
    for (option, cls), need in sorted(_vcpu_needs(cfg).items()):
        code, name = QUOTAS[(option, cls)]
        path = f"gpuPools[{need.pools[0]}].gpuLimit" if len(need.pools) == 1 else "gpuPools"
        inputs = {"quotaCode": code, "pools": need.pools, "vcpusAtMin": need.at_min, "vcpusAtLimit": need.at_limit}
        have = account.quotas.get(code)
        if have is None:
            yield Check("quota", path, "not checked", f"{code} ({name}) is not in the account answers", inputs)
            continue
        inputs["quota"] = have
        pools = ", ".join(need.pools)
        # With on-demand beside it, a spot shortfall only means more on-demand nodes.
        fallback = option == "spot" and all("on-demand" in p.capacity_types for p in cfg.gpu_pools if p.name in need.pools)
        if have < need.at_min and not fallback:
            yield Check(
                "quota",
                path,
                "failed",
                f"the account's {code} quota ({name}) is {have:g} vCPUs, below the {need.at_min} vCPUs the minimum replicas "
                f"of {pools} need: Karpenter's launches would fail and the pods stay Pending. Fix: request {need.at_min:g} "
                f"or more in Service Quotas (ec2, {code}), or lower the pools' minimum replicas",
                inputs,
            )
        elif have < need.at_limit:
            yield Check(
                "quota",
                path,
                "warning",
                f"the account's {code} quota ({name}) is {have:g} vCPUs: enough for the minimum replicas ({need.at_min}) "
                f"but not for {pools} at their gpuLimit ({need.at_limit} vCPUs), where scale-out stops early. "
                f"Fix: request {need.at_limit:g} in Service Quotas (ec2, {code}), or lower gpuLimit",
                inputs,
            )
        else:
            yield Check("quota", path, "ok", f"{code}: {have:g} vCPUs cover {need.at_limit}", inputs)


# -- zones and offerings ----------------------------------------------------------------------------
def _stack_zones(cfg: StackConfig, account: AccountFile) -> list[str]:
    """Zone names the stack's nodes can use."""
    if isinstance(cfg.network, NewVpc) and cfg.network.availability_zones:
        zones = cfg.network.availability_zones
        return [account.zones.get(z, z) if is_zone_id(z) else z for z in zones]
    if isinstance(cfg.network, NewVpc):
        return sorted(account.zones.values())[: cfg.network.az_count]
    subnets = {s.id: s for s in account.subnets}
    return sorted({subnets[s].zone for s in cfg.network.private_subnet_ids if s in subnets})


def _offerings(cfg: StackConfig, account: AccountFile) -> Iterator[Check]:
    zones = _stack_zones(cfg, account)
    for pool in cfg.gpu_pools:
        types = [t.name for t in pool.resolved_instance_types()]
        pool_zones = list(pool.zones) or zones
        offered = {z: sorted(set(types) & set(account.offerings.get(z, []))) for z in pool_zones}
        usable = sorted(z for z, t in offered.items() if t)
        inputs = {"instanceTypes": types, "zones": pool_zones, "offered": offered}
        need = 2 if cfg.is_prod else 1
        if not pool_zones:
            yield Check("offerings", f"{pool_path(pool)}.instanceTypes", "not checked", "the stack's zones are not known", inputs)
        elif not usable:
            yield Check(
                "offerings",
                f"{pool_path(pool)}.instanceTypes",
                "failed",
                f"none of {', '.join(types)} is offered in {', '.join(pool_zones)}: Karpenter could never launch a node of "
                "this pool. Fix: name zones that offer them (network.availabilityZones, the pool's zones) or choose "
                "instance types offered there",
                inputs,
            )
        elif len(usable) < need:
            yield Check(
                "offerings",
                f"{pool_path(pool)}.instanceTypes",
                "failed",
                f"{', '.join(types)} {'is' if len(types) == 1 else 'are'} offered only in {usable[0]} of "
                f"{', '.join(pool_zones)}; a prod pool needs two zones to survive a zone outage. Fix: name zones that "
                "offer them (network.availabilityZones) or add instance types offered in a second zone",
                inputs,
            )
        else:
            yield Check("offerings", f"{pool_path(pool)}.instanceTypes", "ok", f"offered in {', '.join(usable)}", inputs)


# -- AMI releases and add-ons -----------------------------------------------------------------------
def _pin(kind: str, path: str, what: str, pinned: str, known: list[str] | None, inputs: dict[str, Any]) -> Check | None:
    """The common part of checking a pin against what the account publishes: unknown, or present."""
    if known is None:
        return Check(kind, path, "not checked", f"no {what} in the account answers", inputs)
    if pinned in known:
        return Check(kind, path, "ok", f"{pinned} is published", inputs)
    return None


def _releases(cfg: StackConfig, account: AccountFile, addon_versions_complete: bool, authoritative: bool) -> Iterator[Check]:
    k8s = cfg.cluster.kubernetes_version
    for family in sorted({_ami_family(p, cfg.karpenter) for p in cfg.gpu_pools}):
        pinned = getattr(cfg.karpenter.ami_versions, family)
        published = account.ami_releases.get(family)
        inputs = {"family": family, "pinned": pinned, "kubernetesVersion": k8s, "published": published}
        path = f"karpenter.amiVersions.{family}"
        if published is not None and pinned not in published and not authoritative:
            yield Check("ami-release", path, "not checked", f"{family}@{pinned} is not among the default answers' releases", inputs)
            continue
        yield _pin("ami-release", path, f"{family} releases", pinned, published, inputs) or Check(
            "ami-release",
            path,
            "failed",
            f"{family}@{pinned} is not published for Kubernetes {k8s} in {cfg.region}: Karpenter could not resolve "
            f"the GPU nodes' AMI. Fix: pin a published release, e.g. {', '.join(sorted(published or [])[-3:])}",
            inputs,
        )
    for addon, pinned in sorted(versions.EKS_ADDON_VERSIONS.items()):
        known = account.addon_versions.get(addon)
        inputs = {"addon": addon, "pinned": pinned, "kubernetesVersion": k8s, "available": known}
        path = f"cluster.kubernetesVersion ({addon})"
        found = _pin("addon-version", path, f"{addon} versions", pinned, known, inputs)
        if found is not None:
            yield found
        elif not authoritative:
            yield Check("addon-version", path, "not checked", f"{addon} {pinned} is not among the default answers' versions", inputs)
        elif not addon_versions_complete:
            # Read online, EKS names one version (its default); a different pin may still exist.
            yield Check(
                "addon-version",
                path,
                "warning",
                f"{addon} is pinned to {pinned}, while EKS's default for Kubernetes {k8s} is {', '.join(known or [])}; the "
                "pin could not be confirmed. Fix: check `aws eks describe-addon-versions --addon-name "
                f"{addon} --kubernetes-version {k8s}`, and bump config/facts/versions.py if the pin is gone",
                inputs,
            )
        else:
            yield Check(
                "addon-version",
                path,
                "failed",
                f"{addon} {pinned} (config/facts/versions.py) is not available for Kubernetes {k8s}: the add-on would fail to "
                f"install. Fix: pin one of {', '.join(sorted(known or [])[-3:])} in config/facts/versions.py",
                inputs,
            )


# -- principals, certificate, spot role -------------------------------------------------------------
def _principals(cfg: StackConfig, account: AccountFile, authoritative: bool) -> Iterator[Check]:
    for path, arn in cfg.cluster.principals():
        inputs = {"arn": arn}
        if arn in account.roles:
            yield Check("principal", path, "ok", "exists", inputs)
        elif not authoritative:
            yield Check("principal", path, "not checked", "not described by the default account answers", inputs)
        else:
            yield Check(
                "principal",
                path,
                "failed",
                f"'{arn}' does not exist in the account: EKS rejects an access entry for a missing principal and "
                "pulumi up would stop half-way. Fix: create the role first, or correct the ARN",
                inputs,
            )


def caller_role(arn: str) -> str:
    """The IAM principal behind a caller ARN: an assumed role's role ARN, else the ARN itself."""
    parts = arn.split(":")
    if len(parts) == 6 and parts[2] == "sts" and parts[5].startswith("assumed-role/"):
        return f"arn:{parts[1]}:iam::{parts[4]}:role/{parts[5].split('/')[1]}"
    return arn


def _caller(cfg: StackConfig, account: AccountFile) -> Iterator[Check]:
    """pulumi-eks makes the identity that creates the cluster its admin, and every Kubernetes object is
    created as the identity running pulumi: it must be the declared deploy role (or an admin)."""
    if account.caller is None:
        return
    caller = caller_role(account.caller)
    names = {principal_kind_and_name(a) for a in cfg.cluster.admin_role_arns}
    deploy = cfg.cluster.deploy_role_arn
    inputs = {"caller": caller, "deployRoleArn": deploy}
    kind_name = principal_kind_and_name(caller) if caller.startswith("arn:") and ":iam::" in caller else None
    if deploy is not None and kind_name == principal_kind_and_name(deploy):
        yield Check("caller", "cluster.deployRoleArn", "ok", "pulumi runs as the deploy role", inputs)
    elif kind_name in names:
        yield Check("caller", "cluster.adminRoleArns", "ok", "pulumi runs as a cluster admin", inputs)
    else:
        yield Check(
            "caller",
            "cluster.deployRoleArn",
            "failed",
            f"pulumi runs as {caller}, which is neither cluster.deployRoleArn nor in adminRoleArns: on a first up EKS "
            "would make it the cluster's creator-admin instead of the declared role, and on later ups it could not "
            "create the Kubernetes objects. Fix: run as the deploy role (vars.AWS_ROLE_ARN), or declare this principal",
            inputs,
        )


def _certificate(cfg: StackConfig, account: AccountFile, authoritative: bool, complete: bool = True) -> Iterator[Check]:
    arn = cfg.ingress.certificate_arn
    if arn is None:
        return
    path = "ingress.certificateArn"
    region = arn.split(":")[3]
    inputs: dict[str, Any] = {"arn": arn, "region": region, "domain": cfg.ingress.domain}
    if region != cfg.region:
        yield Check(
            "certificate",
            path,
            "failed",
            f"the certificate is in {region}, but the ALB is in {cfg.region}; an ALB can only use a certificate of its "
            f"own region. Fix: request or import the certificate in {cfg.region} and use its ARN",
            inputs,
        )
        return
    found = next((c for c in account.certificates if c.arn == arn), None)
    if found is None and authoritative and not complete:
        yield Check(
            "certificate",
            path,
            "warning",
            f"no certificate with this ARN was found for *.{cfg.ingress.domain} (ACM is searched by domain); it could not "
            "be confirmed issued. Fix: check it in ACM (`aws acm describe-certificate --certificate-arn <arn>`)",
            inputs,
        )
        return
    if found is None:
        result: Result = "failed" if authoritative else "not checked"
        message = (
            "does not exist in the account: the load balancer controller could not create the HTTPS listener. "
            "Fix: use the ARN of an issued certificate in this account"
            if authoritative
            else "not described by the default account answers"
        )
        yield Check("certificate", path, result, message, inputs)
        return
    inputs |= {"status": found.status, "certificateDomain": found.domain, "certificateRegion": found.region}
    if found.region != cfg.region:
        yield Check(
            "certificate",
            path,
            "failed",
            f"the certificate is in {found.region}, but the ALB is in {cfg.region}; an ALB can only use a certificate of "
            f"its own region. Fix: request or import the certificate in {cfg.region} and use its ARN",
            inputs,
        )
        return
    if found.status != "ISSUED":
        yield Check(
            "certificate",
            path,
            "failed",
            f"the certificate is {found.status}, not ISSUED: the HTTPS listener could not use it. Fix: complete its "
            "validation (DNS records) or use an issued certificate",
            inputs,
        )
        return
    domain = cfg.ingress.domain
    if domain is not None and f"*.{domain}" not in {found.domain, *found.alternative_names}:
        yield Check(
            "certificate",
            path,
            "failed",
            f"the certificate is for {found.domain}, but models are served at <model>.{domain}: clients would get TLS "
            f"errors. Fix: use a certificate for *.{domain}",
            inputs,
        )
        return
    yield Check("certificate", path, "ok", f"issued, {found.domain}", inputs)


def _spot_role(cfg: StackConfig, account: AccountFile) -> Iterator[Check]:
    spot = [p.name for p in cfg.gpu_pools if "spot" in p.capacity_types]
    if not spot:
        return
    inputs = {"role": SPOT_ROLE, "pools": spot}
    if account.spot_service_linked_role:
        yield Check("spot-role", "gpuPools", "ok", f"{SPOT_ROLE} exists", inputs)
    else:
        yield Check(
            "spot-role",
            f"gpuPools[{spot[0]}].capacityTypes",
            "failed",
            f"{', '.join(spot)} may launch spot capacity, but the account has no {SPOT_ROLE}: every spot launch would "
            "fail. Fix: run `aws iam create-service-linked-role --aws-service-name spot.amazonaws.com` once",
            inputs,
        )


# -- an existing VPC --------------------------------------------------------------------------------
def _existing_vpc(cfg: StackConfig, account: AccountFile, authoritative: bool) -> Iterator[Check]:
    network = cfg.network
    if not isinstance(network, ExistingVpc):
        return
    vpc = next((v for v in account.vpcs if v.id == network.vpc_id), None)
    if vpc is None:
        result: Result = "failed" if authoritative else "not checked"
        message = (
            f"{network.vpc_id} does not exist in {cfg.region}. Fix: correct network.vpcId"
            if authoritative
            else "not described by the default account answers"
        )
        yield Check("vpc", "network.vpcId", result, message, {"vpcId": network.vpc_id})
        return
    if vpc.cidr != network.vpc_cidr:
        yield Check(
            "vpc",
            "network.vpcCidr",
            "failed",
            f"is {network.vpc_cidr}, but {vpc.id}'s CIDR is {vpc.cidr}: the NetworkPolicies would admit the wrong range. "
            f"Fix: set network.vpcCidr to {vpc.cidr}",
            {"vpcId": vpc.id, "cidr": vpc.cidr},
        )
    for i, block in enumerate(network.secondary_cidrs):
        if block not in vpc.secondary_cidrs:
            yield Check(
                "vpc",
                f"network.secondaryCidrs[{i}]",
                "failed",
                f"{block} is not a CIDR block of {vpc.id} (its blocks: {', '.join([vpc.cidr, *vpc.secondary_cidrs])}): the "
                "NetworkPolicies would admit a range the VPC does not have. Fix: list the VPC's associated blocks",
                {"vpcId": vpc.id, "cidr": block},
            )
    undeclared = [b for b in vpc.secondary_cidrs if b not in network.secondary_cidrs]
    if undeclared:
        yield Check(
            "vpc",
            "network.secondaryCidrs",
            "failed",
            f"omits {', '.join(undeclared)}, associated with {vpc.id}: pods, nodes or the control plane there would be "
            "treated as outside the VPC and refused by the NetworkPolicies. Fix: list every associated block",
            {"vpcId": vpc.id, "secondaryCidrs": vpc.secondary_cidrs},
        )
    blocks = [ipaddress.IPv4Network(b) for b in [vpc.cidr, *vpc.secondary_cidrs]]
    subnets = {s.id: s for s in account.subnets}
    zones: set[str] = set()
    for i, subnet_id in enumerate(network.private_subnet_ids):
        path = f"network.privateSubnetIds[{i}]"
        subnet = subnets.get(subnet_id)
        if subnet is None or subnet.vpc_id != network.vpc_id:
            yield Check(
                "subnet",
                path,
                "failed",
                f"{subnet_id} is not a subnet of {network.vpc_id}. Fix: list the VPC's private subnets",
                {"subnetId": subnet_id},
            )
            continue
        zones.add(subnet.zone)
        inputs = {"subnetId": subnet_id, "zone": subnet.zone, "cidr": subnet.cidr, "tags": subnet.tags}
        if not any(ipaddress.IPv4Network(subnet.cidr).subnet_of(b) for b in blocks):
            yield Check(
                "subnet", path, "failed", f"{subnet_id} ({subnet.cidr}) is outside {vpc.cidr}. Fix: correct network.vpcCidr", inputs
            )
        # (Karpenter selects an existing VPC's subnets by id, so the discovery tag is not needed here.)
        missing = [f"{INTERNAL_ELB_TAG}=1"] if subnet.tags.get(INTERNAL_ELB_TAG) != "1" else []
        if missing:
            yield Check(
                "subnet",
                path,
                "failed",
                f"{subnet_id} lacks the tag {', '.join(missing)}: internal load balancers would not find it. Fix: tag the subnet",
                inputs,
            )
        else:
            yield Check("subnet", path, "ok", f"{subnet.zone}, {subnet.cidr}, tagged", inputs)
    internet_facing = cfg.ingress.scheme == "internet-facing"
    for i, subnet_id in enumerate(network.public_subnet_ids):
        path = f"network.publicSubnetIds[{i}]"
        subnet = subnets.get(subnet_id)
        if subnet is None or subnet.vpc_id != network.vpc_id:
            yield Check(
                "subnet", path, "failed", f"{subnet_id} is not a subnet of {network.vpc_id}. Fix: list the VPC's public subnets", {}
            )
        elif subnet.tags.get(PUBLIC_ELB_TAG) != "1":
            yield Check(
                "subnet",
                path,
                "failed" if internet_facing else "warning",
                f"{subnet_id} lacks the tag {PUBLIC_ELB_TAG}=1: an internet-facing ALB would find no subnet for it. Fix: tag the subnet",
                {"subnetId": subnet_id, "tags": subnet.tags},
            )
        else:
            yield Check("subnet", path, "ok", f"{subnet.zone}, tagged for internet-facing load balancers", {"subnetId": subnet_id})
    if len(zones) == 1:
        yield Check(
            "subnet",
            "network.privateSubnetIds",
            "failed",
            f"every listed subnet is in {zones.pop()}; EKS needs subnets in at least two zones. Fix: add a private subnet in another zone",
            {"subnets": list(network.private_subnet_ids)},
        )


def run(
    cfg: StackConfig, account: AccountFile, *, authoritative: bool, addon_versions_complete: bool = True, certificates_complete: bool = True
) -> list[Check]:
    """Every preflight check of the stack against the account's answers."""
    checks: list[Check] = []
    if account.region != cfg.region:
        return [
            Check(
                "region",
                "aws:region",
                "failed",
                f"the account answers are for {account.region}, the stack deploys to {cfg.region}. Fix: use answers "
                f"for {cfg.region} (make account STACK=<stack> captures them)",
                {"answers": account.region, "stack": cfg.region},
            )
        ]
    checks += _quotas(cfg, account)
    checks += _offerings(cfg, account)
    checks += _releases(cfg, account, addon_versions_complete, authoritative)
    checks += _principals(cfg, account, authoritative)
    checks += _caller(cfg, account)
    checks += _certificate(cfg, account, authoritative, certificates_complete)
    checks += _spot_role(cfg, account)
    checks += _existing_vpc(cfg, account, authoritative)
    return checks


def problems(checks: list[Check]) -> list[Problem]:
    return [p for c in checks if (p := c.problem()) is not None]
