"""Boundary pairs of config/checks/network.py (see __init__)."""

from __future__ import annotations

from typing import Any

from tests.config.checks.boundaries import Mutation, Pair
from tests.support.mutations import EXISTING_VPC, m0, p0

TLS = "internet-facing-tls"
PROD = "full-prod"
ROLE = "arn:aws:iam::123456789012:role/platform-admin"
CERT = "arn:aws:acm:{region}:123456789012:certificate/1b2c3d4e-5f6a-4b7c-8d9e-0f1a2b3c4d5e"


def _set(**values: Any) -> Mutation:
    """Top-level keys of the model input replaced (or, for a dict of dicts, merged one level)."""

    def mutate(d: dict[str, Any]) -> None:
        for key, value in values.items():
            if isinstance(value, dict) and isinstance(d.get(key), dict):
                d[key].update(value)
            else:
                d[key] = value

    return mutate


def _existing(**extra: Any) -> Mutation:
    return lambda d: d.update(network={**EXISTING_VPC, **extra})


def _callers(namespaces: list[str]) -> Mutation:
    return lambda d: m0(d).update(expose=False, clientNamespaces=namespaces)


def _allowed(cidr: str) -> Mutation:
    return lambda d: d["ingress"].update(allowedCidrs=[cidr])


def _pool_zones(*zones: str, single: bool | None = None) -> Mutation:
    def mutate(d: dict[str, Any]) -> None:
        p0(d)["zones"] = list(zones)
        if single is not None:
            p0(d)["singleZone"] = single

    return mutate


def _endpoint(**endpoint: Any) -> Mutation:
    return lambda d: d["cluster"].update(endpoint={"private": True, "public": False, **endpoint})


def _admins(*arns: str) -> Mutation:
    return lambda d: d["cluster"].update(adminRoleArns=list(arns))


def _deploy(role: str | None, admins: list[str] | None = None) -> Mutation:
    def mutate(d: dict[str, Any]) -> None:
        d["cluster"].pop("deployRoleArn", None)
        if role is not None:
            d["cluster"]["deployRoleArn"] = role
        if admins is not None:
            d["cluster"]["adminRoleArns"] = admins

    return mutate


def _routes(*destinations: str) -> Mutation:
    return lambda d: d["network"].update(routes=[{"destinationCidr": c, "transitGatewayId": "tgw-0a1b2c3d4e5f60718"} for c in destinations])


PAIRS = [
    Pair(
        "network.rule_load_balancer_sources",
        "an existing VPC exposing models with no ALB subnet CIDR vs one",
        bad=_existing(loadBalancerSubnetCidrs=[]),
        good=_existing(loadBalancerSubnetCidrs=["10.60.0.0/18"]),
        path="network.loadBalancerSubnetCidrs",
        fix="list the CIDRs of the subnets the ALB uses",
        severity="warning",
    ),
    Pair(
        "network.rule_model_callers",
        "an unexposed model with no caller namespace vs one",
        bad=_callers([]),
        good=_callers(["app"]),
        path="models[llama-3-1-8b].clientNamespaces",
        fix="list the namespaces of the pods that call it",
        severity="warning",
    ),
    Pair(
        "network.rule_internet_facing_subnets",
        "an internet-facing ALB in an existing VPC with no public subnet vs one",
        bad=_existing(publicSubnetIds=[]),
        good=_existing(publicSubnetIds=["subnet-0a1b2c3d4e5f60799"]),
        path="network.publicSubnetIds",
        fix="list the VPC's public subnets",
        stack=TLS,
    ),
    Pair(
        "network.rule_certificate",
        "a certificate of another region vs of the stack's",
        bad=lambda d: d["ingress"].update(certificateArn=CERT.format(region="us-east-2")),
        good=lambda d: d["ingress"].update(certificateArn=CERT.format(region="us-east-1")),
        path="ingress.certificateArn",
        fix="request or import the certificate in us-east-1",
        stack=TLS,
    ),
    Pair(
        "network.rule_certificate",
        "prod exposing a model without a certificate vs with one",
        bad=lambda d: d["ingress"].pop("certificateArn", None),
        good=lambda d: d["ingress"].update(certificateArn=CERT.format(region="us-east-1")),
        path="ingress.certificateArn",
        fix="set an ACM certificate ARN for the endpoints' domain",
        stack=PROD,
    ),
    Pair(
        "network.rule_allowed_cidrs",
        "the first private block (172.16.0.0/12) vs the public range just below it",
        bad=_allowed("172.16.0.0/24"),
        good=_allowed("172.15.255.0/24"),
        path="ingress.allowedCidrs[0]",
        fix="list the public egress CIDR that this network leaves through",
        stack=TLS,
    ),
    Pair(
        "network.rule_zones",
        "a pool zone of another region vs of the stack's",
        bad=_pool_zones("us-east-2a"),
        good=_pool_zones("us-east-1a"),
        path="gpuPools[gpu-l4-a10g].zones[0]",
        fix="use a zone of us-east-1",
    ),
    Pair(
        "network.rule_zones",
        "a pool zone outside the VPC's named zones vs inside",
        bad=_pool_zones("us-east-1b"),
        good=_pool_zones("us-east-1c"),
        path="gpuPools[gpu-l4-a10g].zones",
        fix="list zones of the VPC only",
        stack=TLS,
    ),
    Pair(
        "network.rule_prod_pool_zones",
        "one zone without singleZone vs with it",
        bad=_pool_zones("us-east-1a"),
        good=_pool_zones("us-east-1a", single=True),
        path="gpuPools[gpu-l4-a10g].zones",
        fix="set singleZone: true on the pool",
        stack=PROD,
    ),
    Pair(
        "network.rule_prod_network_ha",
        "two zones vs three",
        bad=lambda d: d["network"].update(azCount=2, availabilityZones=d["network"]["availabilityZones"][:2]),
        good=lambda d: d["network"].update(azCount=3),
        path="network.azCount",
        fix="set azCount: 3",
        stack=PROD,
        severity="warning",
    ),
    Pair(
        "network.rule_prod_network_ha",
        "one NAT gateway vs one per zone",
        bad=lambda d: d["network"].update(natGateways="single"),
        good=lambda d: d["network"].update(natGateways="perAz"),
        path="network.natGateways",
        fix="set natGateways: perAz",
        stack=PROD,
        severity="warning",
    ),
    Pair(
        "network.rule_api_reachable",
        "a private-only endpoint of a new VPC nothing may reach vs one network allowed",
        bad=_endpoint(),
        good=_endpoint(privateAccessCidrs=["10.99.0.0/16"]),
        path="cluster.endpoint",
        fix="cluster.endpoint.privateAccessCidrs",
    ),
    Pair(
        "network.rule_deploy_role",
        "prod without a deploy role vs with one",
        bad=_deploy(None),
        good=_deploy("arn:aws:iam::123456789012:role/llm-platform-deploy"),
        path="cluster.deployRoleArn",
        fix="set it to the role the workflows assume",
        stack=PROD,
    ),
    Pair(
        "network.rule_deploy_role",
        "the deploy role also an admin entry vs another role",
        bad=_deploy(ROLE, [ROLE]),
        good=_deploy(ROLE, [ROLE + "s"]),
        path="cluster.adminRoleArns[0]",
        fix="remove it here",
    ),
    Pair(
        "network.rule_principals_once",
        "one role twice (once with a path) vs two roles",
        bad=_admins(ROLE, "arn:aws:iam::123456789012:role/team/platform-admin"),
        good=_admins(ROLE, ROLE + "s"),
        path="cluster.adminRoleArns[1]",
        fix="keep it in adminRoleArns",
    ),
    Pair(
        "network.rule_deletion_protection",
        "prod with deletion protection off vs on",
        bad=lambda d: d["cluster"].update(deletionProtection=False),
        good=lambda d: d["cluster"].update(deletionProtection=True),
        path="cluster.deletionProtection",
        fix="remove the key",
        stack=PROD,
        severity="warning",
    ),
    Pair(
        "network.rule_routes",
        "a route to the VPC's last /24 vs to the /24 just past the VPC",
        bad=_routes("10.40.255.0/24"),
        good=_routes("10.41.0.0/24"),
        path="network.routes[0].destinationCidr",
        fix="list only networks outside the VPC",
    ),
    Pair(
        "network.rule_routes",
        "a private-only endpoint's deploy network without a route back vs with one",
        bad=lambda d: (_endpoint(privateAccessCidrs=["10.99.0.0/16"])(d), _routes()(d)),
        good=lambda d: (_endpoint(privateAccessCidrs=["10.99.0.0/16"])(d), _routes("10.99.0.0/16")(d)),
        path="network.routes",
        fix="add {destinationCidr: 10.99.0.0/16",
        severity="warning",
    ),
]
