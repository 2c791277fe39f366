"""Placeholder values a stack file may still carry: documentation accounts, ranges and domains.

The shipped stacks and the examples use values no real deployment has (AWS's documentation
account 123456789012, the RFC 5737 TEST-NET ranges, RFC 2606 example domains). The offline render
works with them (they are reported as warnings); a real `pulumi preview`/`up` stops on them before
anything is created, naming each one and what belongs there. Pure.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

from config.errors import Problem
from config.sections.stack import StackConfig

DOCUMENTATION_ACCOUNT = "123456789012"
DOCUMENTATION_RANGES = tuple(ipaddress.IPv4Network(n) for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24"))
EXAMPLE_DOMAINS = ("example.com", "example.net", "example.org")
DOCKER_HUB_USER_PLACEHOLDER = "your-docker-hub-user"
IMAGE_DIGEST_PLACEHOLDER = "sha256:" + "0" * 64
"""Stands for a prod image's digest in the shipped stack: nothing here can read a registry, and a
digest typed from memory would pin bytes nobody checked."""


def _arn(path: str, arn: str | None, what: str) -> Iterator[Problem]:
    if arn is not None and f":{DOCUMENTATION_ACCOUNT}:" in arn:
        yield Problem(
            path,
            f"'{arn}' is in AWS's documentation account {DOCUMENTATION_ACCOUNT}, a placeholder; a real deploy would point "
            f"at something that is not yours. Fix: put the ARN of {what} in your account",
        )


def _cidrs(path: str, cidrs: list[str], what: str) -> Iterator[Problem]:
    for i, cidr in enumerate(cidrs):
        net = ipaddress.IPv4Network(cidr, strict=False)
        if any(net.subnet_of(r) for r in DOCUMENTATION_RANGES):
            yield Problem(
                f"{path}[{i}]",
                f"'{cidr}' is a documentation range (RFC 5737), a placeholder; nobody could connect from it. Fix: list {what}",
            )


def _domain(path: str, domain: str | None) -> Iterator[Problem]:
    if domain is not None and any(domain == d or domain.endswith(f".{d}") for d in EXAMPLE_DOMAINS):
        yield Problem(
            path,
            f"'{domain}' is a reserved example domain (RFC 2606), a placeholder; no client could resolve the model "
            "endpoints under it. Fix: use a domain you own, with a wildcard record for the ALB",
        )


def find(cfg: StackConfig) -> list[Problem]:
    """Every placeholder in the config, with the path and what belongs there."""
    cluster, endpoint, ingress = cfg.cluster, cfg.cluster.endpoint, cfg.ingress
    found: list[Problem] = []
    for i, arn in enumerate(cluster.admin_role_arns):
        found += _arn(f"cluster.adminRoleArns[{i}]", arn, "the role your platform administrators assume")
    found += _arn("cluster.deployRoleArn", cluster.deploy_role_arn, "the role the deploy workflow assumes (vars.AWS_ROLE_ARN)")
    for i, grant in enumerate(cluster.access):
        found += _arn(f"cluster.access[{i}].principalArn", grant.principal_arn, "the role or user to grant access")
    found += _cidrs("cluster.endpoint.publicCidrs", endpoint.public_cidrs, "the egress CIDRs of your offices, VPN or CI runners")
    found += _cidrs(
        "cluster.endpoint.privateAccessCidrs", endpoint.private_access_cidrs, "the range of the network pulumi up runs from (VPN, CI)"
    )
    found += _cidrs("ingress.allowedCidrs", ingress.allowed_cidrs, "the CIDRs your model clients call from")
    found += _arn("ingress.certificateArn", ingress.certificate_arn, "your issued ACM certificate for the endpoints' domain")
    found += _domain("ingress.domain", ingress.domain)
    for index, model in enumerate(cfg.models):
        if model.image.digest == IMAGE_DIGEST_PLACEHOLDER:
            tagged = f"{model.image.repository}:{model.image.tag}"
            found.append(
                Problem(
                    f"models[{model.name}].image.digest",
                    f"'{IMAGE_DIGEST_PLACEHOLDER[:15]}...' is a placeholder; no image has it, so every pull would fail. Fix: "
                    f"read the digest with `docker buildx imagetools inspect {tagged}` (the `Digest:` line) and set it: "
                    f"`pulumi config set --path 'models[{index}].image.digest' sha256:<64 hex>`",
                )
            )
    if cfg.image_cache.docker_hub_username == DOCKER_HUB_USER_PLACEHOLDER:
        found.append(
            Problem(
                "imageCache.dockerHubUsername",
                f"'{DOCKER_HUB_USER_PLACEHOLDER}' is a placeholder; the cache's first pull from Docker Hub would fail to "
                "authenticate. Fix: set the Docker Hub user whose access token is the dockerHubAccessToken secret",
            )
        )
    return found
