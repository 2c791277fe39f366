"""Preflight of identity and TLS: the declared principals exist, pulumi runs as the deploy role, the
certificate is issued for the endpoints, and the EC2 Spot service-linked role exists."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from config.checks.account import AccountFile
from config.checks.preflight.result import Check, Result
from config.derived.exposure import exposed_models
from config.facts.conventions import principal_identity
from config.sections.stack import StackConfig

SPOT_ROLE = "AWSServiceRoleForEC2Spot"


# -- principals, certificate, spot role -------------------------------------------------------------
def principals(cfg: StackConfig, account: AccountFile, authoritative: bool) -> Iterator[Check]:
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


def _admins(cfg: StackConfig) -> set[tuple[str, str, str]]:
    """The principals the stack makes cluster admins: adminRoleArns, and access grants of ClusterAdmin."""
    names = {principal_identity(a) for a in cfg.cluster.admin_role_arns}
    return names | {principal_identity(g.principal_arn) for g in cfg.cluster.access if "ClusterAdmin" in g.policy_names()}


def caller(cfg: StackConfig, account: AccountFile) -> Iterator[Check]:
    """pulumi-eks makes the identity that creates the cluster its admin (EKS's creator access entry), and every
    Kubernetes object is created as the identity running pulumi. So the first `up` must run as the deploy role
    (without one, as a principal the stack does not declare: a declared one would get a second entry, 409), and
    later ones as the deploy role or an admin."""
    if account.caller is None:
        return
    caller = caller_role(account.caller)
    deploy = cfg.cluster.deploy_role_arn
    inputs = {"caller": caller, "deployRoleArn": deploy, "clusterExists": account.cluster_exists}
    kind_name = principal_identity(caller) if caller.startswith("arn:") and ":iam::" in caller else None
    is_deploy = deploy is not None and kind_name == principal_identity(deploy)
    declared = {principal_identity(arn) for _, arn in cfg.cluster.principals()}
    if account.cluster_exists is False:
        if is_deploy:
            yield Check(
                "caller", "cluster.deployRoleArn", "ok", "the first up runs as the deploy role, which becomes the creator-admin", inputs
            )
        elif deploy is None and kind_name not in declared:
            yield Check(
                "caller",
                "cluster.adminRoleArns",
                "ok",
                "the first up runs as an undeclared principal, which becomes the creator-admin",
                inputs,
            )
        else:
            why = (
                "is declared in adminRoleArns or access, so EKS would refuse its second access entry (409 "
                "ResourceInUseException) right after creating the cluster"
                if kind_name in declared
                else "is not the deploy role"
            )
            role = f"the deploy role {deploy}" if deploy is not None else "a principal the stack does not declare"
            yield Check(
                "caller",
                "cluster.deployRoleArn",
                "failed",
                f"the cluster {cfg.cluster.name} does not exist yet, so this up creates it, and EKS makes the caller its "
                f"creator-admin. The caller, {caller}, {why}; the deploy role would be left without access, and the stack "
                f"cannot declare one for it. Fix: run the first pulumi up as {role} (CI's vars.AWS_ROLE_ARN, or `aws sts "
                "assume-role`); later ups may run as an admin",
                inputs,
            )
        return
    if is_deploy:
        yield Check("caller", "cluster.deployRoleArn", "ok", "pulumi runs as the deploy role", inputs)
    elif kind_name in _admins(cfg):
        known = "" if account.cluster_exists else " (whether the cluster exists was not read: a first up must run as the deploy role)"
        yield Check("caller", "cluster.adminRoleArns", "ok", f"pulumi runs as a cluster admin{known}", inputs)
    elif account.cluster_exists and deploy is None and kind_name not in declared:
        yield Check(
            "caller",
            "cluster.adminRoleArns",
            "warning",
            f"pulumi runs as {caller}, which the stack does not declare: it can create the Kubernetes objects only if it "
            "created the cluster (EKS's creator access entry). Fix: run as the principal that created the cluster, or "
            "declare this one in adminRoleArns",
            inputs,
        )
    else:
        yield Check(
            "caller",
            "cluster.deployRoleArn",
            "failed",
            f"pulumi runs as {caller}, which is neither cluster.deployRoleArn nor a cluster admin (adminRoleArns, or "
            "ClusterAdmin through access): on a first up EKS would make it the cluster's creator-admin instead of the "
            "declared role, and on later ups it could not create the Kubernetes objects. Fix: run as the deploy role "
            "(vars.AWS_ROLE_ARN), or declare this principal",
            inputs,
        )


def certificate(cfg: StackConfig, account: AccountFile, authoritative: bool, complete: bool = True) -> Iterator[Check]:
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
    names = [found.domain, *found.alternative_names]
    inputs |= {"alternativeNames": found.alternative_names if found.alternative_names_visible else None}
    hosts = _hosts(cfg)
    uncovered = [host for host in hosts if not any(covers(name, host) for name in names)]
    if not uncovered:
        yield Check("certificate", path, "ok", f"issued, {', '.join(names)}", inputs)
        return
    domain = cfg.ingress.domain
    what = f"*.{domain}" if len(uncovered) == len(hosts) else ", ".join(uncovered)
    if not found.alternative_names_visible:
        yield Check(
            "certificate",
            path,
            "warning",
            f"the certificate's domain name is {found.domain}; its alternative names are not visible to preflight (the ACM "
            f"lookup returns only the domain name), so whether it covers {what}, where models are served, is not checked. Fix: make "
            f"sure *.{domain} is its domain name or an alternative name (`aws acm describe-certificate --certificate-arn "
            "<arn>` lists SubjectAlternativeNames)",
            inputs,
        )
        return
    yield Check(
        "certificate",
        path,
        "failed",
        f"the certificate covers {', '.join(names)}, not {what}, where models are served: clients would get TLS errors. "
        f"Fix: use a certificate with *.{domain} as its domain name or an alternative name",
        inputs,
    )


def _hosts(cfg: StackConfig) -> list[str]:
    """The names the certificate must cover: each exposed model's host, or *.<domain> when none is exposed."""
    domain = cfg.ingress.domain
    if domain is None:
        return []
    return [f"{m.name}.{domain}" for m in exposed_models(cfg)] or [f"*.{domain}"]


def covers(name: str, host: str) -> bool:
    """Whether a certificate name covers a host: equal, or a wildcard for exactly its first label (RFC 6125 6.4.3)."""
    name, host = name.lower().rstrip("."), host.lower().rstrip(".")
    if name == host:
        return True
    return name.startswith("*.") and "." in host and host.split(".", 1)[1] == name[2:] and not host.startswith("*.")


def spot_role(cfg: StackConfig, account: AccountFile) -> Iterator[Check]:
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
