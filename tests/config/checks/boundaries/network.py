"""Boundary pairs of config/checks/network.py (see __init__).

The stacks: minimal-dev (us-east-1, a new VPC 10.40.0.0/16 without named zones, a public+private endpoint, an
internal ALB, one exposed model), internet-facing-tls (a new VPC 10.70.0.0/16 in us-east-1a and us-east-1c, an
internet-facing ALB for 198.51.100.0/24 and 203.0.113.0/24), full-prod (a new VPC 10.50.0.0/16 in three zone ids, a
private-only endpoint reached from 192.0.2.0/24, an internal ALB for 10.0.0.0/8, a route to each of the two) and
existing-vpc-irsa-bottlerocket (an existing VPC)."""

from __future__ import annotations

from typing import Any

from tests.config.checks.boundaries import Mutation, Pair
from tests.support.mutations import EXISTING_VPC, m0, p0

TLS = "internet-facing-tls"
PROD = "full-prod"
EXISTING = "existing-vpc-irsa-bottlerocket"

ACCOUNT = "123456789012"
OTHER_ACCOUNT = "123456789013"
ADMIN = f"arn:aws:iam::{ACCOUNT}:role/platform-admin"
"""minimal-dev's (and full-prod's) adminRoleArns[0]."""
DEPLOY = f"arn:aws:iam::{ACCOUNT}:role/llm-platform-deploy"
"""full-prod's cluster.deployRoleArn."""
ONCALL = f"arn:aws:iam::{ACCOUNT}:role/ml-oncall"
"""full-prod's cluster.access[0]."""
TGW = "tgw-0a1b2c3d4e5f60718"
VGW = "vgw-0a1b2c3d"
SUBNET = "subnet-0a1b2c3d4e5f60799"
SG = "sg-0a1b2c3d4e5f60718"


def _cert(region: str) -> str:
    return f"arn:aws:acm:{region}:{ACCOUNT}:certificate/1b2c3d4e-5f6a-4b7c-8d9e-0f1a2b3c4d5e"


def _both(*mutations: Mutation) -> Mutation:
    def mutate(d: dict[str, Any]) -> None:
        for m in mutations:
            m(d)

    return mutate


# --- network, ingress and models ---------------------------------------------------------------------------------


def _existing(**extra: Any) -> Mutation:
    """The valid existing VPC of tests/support/mutations.py, with `extra` keys replaced."""
    return lambda d: d.update(network={**EXISTING_VPC, **extra})


def _unexposed(namespaces: list[str]) -> Mutation:
    """The first model kept off the ALB, called from these namespaces."""
    return lambda d: m0(d).update(expose=False, clientNamespaces=namespaces)


def _exposed_without_callers(d: dict[str, Any]) -> None:
    m0(d).update(expose=True, clientNamespaces=[])


def _scheme(scheme: str) -> Mutation:
    return lambda d: d["ingress"].update(scheme=scheme)


def _allowed(cidr: str, at: int = 0) -> Mutation:
    """ingress.allowedCidrs[at] replaced by `cidr`."""

    def mutate(d: dict[str, Any]) -> None:
        d["ingress"]["allowedCidrs"][at] = cidr

    return mutate


def _internal_clients(cidr: str) -> Mutation:
    """minimal-dev's internal ALB admits one client range (its default is the VPC)."""
    return lambda d: d.setdefault("ingress", {}).update(allowedCidrs=[cidr])


def _certificate(arn: str | None) -> Mutation:
    def mutate(d: dict[str, Any]) -> None:
        d.setdefault("ingress", {}).pop("certificateArn", None)
        if arn is not None:
            d["ingress"]["certificateArn"] = arn

    return mutate


# --- zones ---------------------------------------------------------------------------------------------------------


def _pool_zones(*zones: str, single: bool = False) -> Mutation:
    return lambda d: p0(d).update(zones=list(zones), singleZone=single)


def _vpc_zones(*zones: str) -> Mutation:
    return lambda d: d["network"].update(azCount=len(zones), availabilityZones=list(zones))


# --- endpoint, routes ------------------------------------------------------------------------------------------------


def _private_only(**endpoint: Any) -> Mutation:
    """A private-only API endpoint, with the access lists given."""
    return lambda d: d["cluster"].update(endpoint={"private": True, "public": False, **endpoint})


def _routes(*destinations: str) -> Mutation:
    """network.routes: one per destination, through the transit gateway."""
    return lambda d: d["network"].update(routes=[{"destinationCidr": c, "transitGatewayId": TGW} for c in destinations])


# --- principals ----------------------------------------------------------------------------------------------------


def _deploy(role: str | None) -> Mutation:
    def mutate(d: dict[str, Any]) -> None:
        d["cluster"].pop("deployRoleArn", None)
        if role is not None:
            d["cluster"]["deployRoleArn"] = role

    return mutate


def _admins(*arns: str) -> Mutation:
    return lambda d: d["cluster"].update(adminRoleArns=list(arns))


def _grant(principal: str) -> Mutation:
    """One more access entry (View in one namespace) for `principal`."""
    return lambda d: (
        d["cluster"].setdefault("access", []).append({"principalArn": principal, "policy": "View", "namespaces": ["team-chat"]})
    )


PAIRS = [
    # rule_load_balancer_sources: an existing VPC, no ALB subnet CIDR, and at least one exposed model.
    Pair(
        "network.rule_load_balancer_sources",
        "an existing VPC exposing a model: no ALB subnet CIDR vs one",
        bad=_existing(loadBalancerSubnetCidrs=[]),
        good=_existing(loadBalancerSubnetCidrs=["10.60.0.0/18"]),
        path="network.loadBalancerSubnetCidrs",
        fix="list the CIDRs of the subnets the ALB uses (private subnets for the internal scheme)",
        severity="warning",
    ),
    Pair(
        "network.rule_load_balancer_sources",
        "an internet-facing ALB's existing VPC without ALB subnet CIDRs names the public subnets",
        bad=_existing(loadBalancerSubnetCidrs=[], publicSubnetIds=[SUBNET]),
        good=_existing(loadBalancerSubnetCidrs=["10.60.0.0/18"], publicSubnetIds=[SUBNET]),
        path="network.loadBalancerSubnetCidrs",
        fix="(public subnets for the internet-facing scheme)",
        stack=TLS,
        severity="warning",
    ),
    Pair(
        "network.rule_load_balancer_sources",
        "an existing VPC without ALB subnet CIDRs: one exposed model vs none",
        bad=_existing(loadBalancerSubnetCidrs=[]),
        good=_both(_existing(loadBalancerSubnetCidrs=[]), _unexposed(["app"])),
        path="network.loadBalancerSubnetCidrs",
        fix="list the CIDRs of the subnets the ALB uses",
        severity="warning",
    ),
    # rule_model_callers: not exposed and no caller namespace.
    Pair(
        "network.rule_model_callers",
        "an unexposed model: no caller namespace vs one",
        bad=_unexposed([]),
        good=_unexposed(["app"]),
        path="models[llama-3-1-8b].clientNamespaces",
        fix="list the namespaces of the pods that call it, or set expose: true",
        severity="warning",
    ),
    Pair(
        "network.rule_model_callers",
        "no caller namespace: an unexposed model vs an exposed one",
        bad=_unexposed([]),
        good=_exposed_without_callers,
        path="models[llama-3-1-8b].clientNamespaces",
        fix="or set expose: true",
        severity="warning",
    ),
    # rule_internet_facing_subnets: exposed, internet-facing, existing VPC, no public subnet: one step off each.
    Pair(
        "network.rule_internet_facing_subnets",
        "an internet-facing ALB in an existing VPC: no public subnet vs one",
        bad=_existing(publicSubnetIds=[]),
        good=_existing(publicSubnetIds=[SUBNET]),
        path="network.publicSubnetIds",
        fix="list the VPC's public subnets, or use ingress.scheme internal",
        stack=TLS,
    ),
    Pair(
        "network.rule_internet_facing_subnets",
        "an existing VPC without public subnets: scheme internet-facing vs internal",
        bad=_existing(publicSubnetIds=[]),
        good=_both(_existing(publicSubnetIds=[]), _scheme("internal")),
        path="network.publicSubnetIds",
        fix="list the VPC's public subnets",
        stack=TLS,
    ),
    Pair(
        "network.rule_internet_facing_subnets",
        "an internet-facing scheme in an existing VPC without public subnets: one exposed model vs none",
        bad=_existing(publicSubnetIds=[]),
        good=_both(_existing(publicSubnetIds=[]), _unexposed(["app"])),  # mistral-7b is unexposed already
        path="network.publicSubnetIds",
        fix="list the VPC's public subnets",
        stack=TLS,
    ),
    # rule_certificate: the region is the ARN's fourth field; the missing certificate is an error in prod only.
    Pair(
        "network.rule_certificate",
        "a certificate of us-east-2 vs of the stack's us-east-1",
        bad=_certificate(_cert("us-east-2")),
        good=_certificate(_cert("us-east-1")),
        path="ingress.certificateArn",
        fix="request or import the certificate in us-east-1",
        stack=TLS,
    ),
    Pair(
        "network.rule_certificate",
        "a dev certificate of eu-west-1 vs of the stack's us-east-1",
        bad=_certificate(_cert("eu-west-1")),
        good=_certificate(_cert("us-east-1")),
        path="ingress.certificateArn",
        fix="request or import the certificate in us-east-1",
    ),
    Pair(
        "network.rule_certificate",
        "prod exposing models: no certificate vs one",
        bad=_certificate(None),
        good=_certificate(_cert("us-east-1")),
        path="ingress.certificateArn",
        fix="set an ACM certificate ARN for the endpoints' domain",
        stack=PROD,
    ),
    Pair(
        "network.rule_certificate",
        "dev without a certificate: one exposed model (a warning) vs none",
        bad=_certificate(None),
        good=_both(_certificate(None), _unexposed(["app"])),
        path="ingress.certificateArn",
        fix="certificate ARN to serve HTTPS (HTTP then redirects)",
        severity="warning",
    ),
    # rule_allowed_cidrs: an internet-facing ALB's client ranges must lie outside every non-public block.
    Pair(
        "network.rule_allowed_cidrs",
        "the last /24 of 10.0.0.0/8 vs the first /24 past it",
        bad=_allowed("10.255.255.0/24"),
        good=_allowed("11.0.0.0/24"),
        path="ingress.allowedCidrs[0]",
        fix="list the public egress CIDR that this network leaves through",
        stack=TLS,
    ),
    Pair(
        "network.rule_allowed_cidrs",
        "the last /24 of 172.16.0.0/12 vs the first /24 past it (second entry)",
        bad=_allowed("172.31.255.0/24", at=1),
        good=_allowed("172.32.0.0/24", at=1),
        path="ingress.allowedCidrs[1]",
        fix="inside the non-public range 172.16.0.0/12",
        stack=TLS,
    ),
    Pair(
        "network.rule_allowed_cidrs",
        "the last /24 of 192.168.0.0/16 vs the first /24 past it",
        bad=_allowed("192.168.255.0/24"),
        good=_allowed("192.169.0.0/24"),
        path="ingress.allowedCidrs[0]",
        fix="inside the non-public range 192.168.0.0/16",
        stack=TLS,
    ),
    Pair(
        "network.rule_allowed_cidrs",
        "the last /24 of the shared range 100.64.0.0/10 vs the first /24 past it",
        bad=_allowed("100.127.255.0/24"),
        good=_allowed("100.128.0.0/24"),
        path="ingress.allowedCidrs[0]",
        fix="inside the non-public range 100.64.0.0/10",
        stack=TLS,
    ),
    Pair(
        "network.rule_allowed_cidrs",
        "one address without a prefix length vs with /32",
        # AllowedCidr parses a bare address (as a /32); only the rule asks for the prefix.
        bad=_allowed("203.0.113.7"),
        good=_allowed("203.0.113.7/32"),
        path="ingress.allowedCidrs[0]",
        fix="write 203.0.113.7/32",
        stack=TLS,
    ),
    Pair(
        "network.rule_allowed_cidrs",
        "a private client range: scheme internet-facing vs internal",
        bad=_allowed("10.0.0.0/8"),
        good=_both(_allowed("10.0.0.0/8"), _scheme("internal")),
        path="ingress.allowedCidrs[0]",
        fix="list the public egress CIDR that this network leaves through",
        stack=TLS,
    ),
    # rule_zones
    Pair(
        "network.rule_zones",
        "a pool zone of us-east-2 vs of the stack's us-east-1",
        bad=_pool_zones("us-east-2a"),
        good=_pool_zones("us-east-1a"),
        path="gpuPools[gpu-l4-a10g].zones[0]",
        fix="use a zone of us-east-1",
    ),
    Pair(
        "network.rule_zones",
        "a pool zone written as a zone id vs as a name",
        bad=_pool_zones("us-east-1a", "use1-az1"),
        good=_pool_zones("us-east-1a", "us-east-1b"),
        path="gpuPools[gpu-l4-a10g].zones[1]",
        fix="write the zone's name (e.g. us-east-1a)",
    ),
    Pair(
        "network.rule_zones",
        "a VPC zone name of us-east-2 vs of us-east-1",
        bad=_vpc_zones("us-east-1a", "us-east-2b"),
        good=_vpc_zones("us-east-1a", "us-east-1b"),
        path="network.availabilityZones[1]",
        fix="use a zone of us-east-1, or correct aws:region",
    ),
    Pair(
        "network.rule_zones",
        "a VPC zone id of us-east-2 (use2-) vs of us-east-1 (use1-)",
        bad=_vpc_zones("use1-az1", "use1-az2", "use2-az4"),
        good=_vpc_zones("use1-az1", "use1-az2", "use1-az4"),
        path="network.availabilityZones[2]",
        fix="use a zone of us-east-1, or correct aws:region",
        stack=PROD,
    ),
    Pair(
        "network.rule_zones",
        "a pool's second zone outside the VPC's (us-east-1a, us-east-1c) vs inside",
        bad=_pool_zones("us-east-1a", "us-east-1b"),
        good=_pool_zones("us-east-1a", "us-east-1c"),
        path="gpuPools[gpu-l4-a10g].zones",
        fix="list zones of the VPC only, or leave zones unset",
        stack=TLS,
    ),
    # rule_api_reachable: a private-only endpoint needs one CIDR, one security group or the public endpoint.
    Pair(
        "network.rule_api_reachable",
        "a new VPC's private-only endpoint: no access CIDR vs one /32",
        bad=_private_only(),
        good=_private_only(privateAccessCidrs=["192.0.2.10/32"]),
        path="cluster.endpoint",
        fix="in cluster.endpoint.privateAccessCidrs",
    ),
    Pair(
        "network.rule_api_reachable",
        "a new VPC's private-only endpoint: no access security group vs one",
        bad=_private_only(),
        good=_private_only(privateAccessSecurityGroupIds=[SG]),
        path="cluster.endpoint",
        fix="its security group in cluster.endpoint.privateAccessSecurityGroupIds",
    ),
    Pair(
        "network.rule_api_reachable",
        "an existing VPC's endpoint with no access list: private-only (a warning) vs public too",
        bad=_private_only(),
        good=lambda d: d["cluster"].update(endpoint={"private": True, "public": True, "publicCidrs": ["198.51.100.0/24"]}),
        path="cluster.endpoint",
        fix="or turn on cluster.endpoint.public with publicCidrs",
        stack=EXISTING,
        severity="warning",
    ),
    # rule_routes: a destination is refused when it is a subnet of the VPC (a supernet is fine), or repeated.
    Pair(
        "network.rule_routes",
        "a route to the VPC's own /16 vs to the /15 that contains it",
        bad=_routes("10.40.0.0/16"),
        good=_routes("10.40.0.0/15"),
        path="network.routes[0].destinationCidr",
        fix="list only networks outside the VPC",
    ),
    Pair(
        "network.rule_routes",
        "a route to the VPC's last /24 vs to the /24 just past it",
        bad=_routes("192.0.2.0/24", "10.40.255.0/24"),
        good=_routes("192.0.2.0/24", "10.41.0.0/24"),
        path="network.routes[1].destinationCidr",
        fix="list only networks outside the VPC",
    ),
    Pair(
        "network.rule_routes",
        "one destination twice vs the same network and its first half",
        bad=_routes("192.0.2.0/24", "192.0.2.0/24"),
        good=_routes("192.0.2.0/24", "192.0.2.0/25"),
        path="network.routes[1].destinationCidr",
        fix="is already the destination of network.routes[0]",
    ),
    # The warnings: every address of a private-only endpoint's access CIDRs (and of an internal ALB's clients)
    # must be in the VPC or under a route; covers may split a range.
    Pair(
        "network.rule_routes",
        "the deploy network 192.0.2.0/24 under a route to its first half vs to both halves",
        bad=_routes("192.0.2.0/25", "10.0.0.0/8"),
        good=_routes("192.0.2.0/25", "192.0.2.128/25", "10.0.0.0/8"),
        path="network.routes",
        fix="add {destinationCidr: 192.0.2.0/24, transitGatewayId: tgw-<id>}",
        stack=PROD,
        severity="warning",
    ),
    Pair(
        "network.rule_routes",
        "the deploy network without a route: no propagating VPN gateway vs one",
        bad=_routes("10.0.0.0/8"),
        good=_both(_routes("10.0.0.0/8"), lambda d: d["network"].update(propagatingVgws=[VGW])),
        path="network.routes",
        fix="(cluster.endpoint.privateAccessCidrs, outside the VPC)",
        stack=PROD,
        severity="warning",
    ),
    Pair(
        "network.rule_routes",
        "the deploy network without a route: a private-only endpoint vs a public one too",
        bad=_routes("10.0.0.0/8"),
        good=_both(
            _routes("10.0.0.0/8"),
            lambda d: d["cluster"]["endpoint"].update(public=True, publicCidrs=["198.51.100.0/24"]),
        ),
        path="network.routes",
        fix="(cluster.endpoint.privateAccessCidrs, outside the VPC)",
        stack=PROD,
        severity="warning",
    ),
    Pair(
        "network.rule_routes",
        "an internal ALB's clients: the VPC's /16 vs the /15 that spills out of it",
        bad=_internal_clients("10.40.0.0/15"),
        good=_internal_clients("10.40.0.0/16"),
        path="network.routes",
        fix="(ingress.allowedCidrs, the part outside the VPC)",
        severity="warning",
    ),
    Pair(
        "network.rule_routes",
        "an internal ALB's clients outside the VPC without a route: one exposed model vs none",
        bad=_internal_clients("192.0.2.0/24"),
        good=_both(_internal_clients("192.0.2.0/24"), _unexposed(["app"])),
        path="network.routes",
        fix="add {destinationCidr: 192.0.2.0/24",
        severity="warning",
    ),
    # rule_deploy_role: IAM keys a principal by account, kind and name (not path).
    Pair(
        "network.rule_deploy_role",
        "prod without a deploy role vs with one",
        bad=_deploy(None),
        good=_deploy(DEPLOY),
        path="cluster.deployRoleArn",
        fix="set it to the role the workflows assume (vars.AWS_ROLE_ARN)",
        stack=PROD,
    ),
    Pair(
        "network.rule_deploy_role",
        "an admin role that is the deploy role under another path vs the same name in another account",
        bad=_deploy(f"arn:aws:iam::{ACCOUNT}:role/ci/platform-admin"),
        good=_deploy(f"arn:aws:iam::{OTHER_ACCOUNT}:role/platform-admin"),
        path="cluster.adminRoleArns[0]",
        fix="remove it here, and run the first pulumi up as the deploy role",
    ),
    Pair(
        "network.rule_deploy_role",
        "an access entry for the deploy role vs for a user of the same name",
        bad=_grant(DEPLOY),
        good=_grant(f"arn:aws:iam::{ACCOUNT}:user/llm-platform-deploy"),
        path="cluster.access[1]",
        fix="remove it here, and run the first pulumi up as the deploy role",
        stack=PROD,
    ),
    # rule_principals_once
    Pair(
        "network.rule_principals_once",
        "an admin role granted again in access vs a user of the same name",
        bad=_grant(ADMIN),
        good=_grant(f"arn:aws:iam::{ACCOUNT}:user/platform-admin"),
        path="cluster.access[0].principalArn",
        fix="keep it in adminRoleArns (ClusterAdmin covers every other policy) and remove it here",
    ),
    Pair(
        "network.rule_principals_once",
        "two access entries for one role (under two paths) vs for the same name in two accounts",
        bad=_grant(f"arn:aws:iam::{ACCOUNT}:role/oncall/ml-oncall"),
        good=_grant(f"arn:aws:iam::{OTHER_ACCOUNT}:role/ml-oncall"),
        path="cluster.access[1].principalArn",
        fix="merge them into one access item",
        stack=PROD,
    ),
    Pair(
        "network.rule_principals_once",
        "one admin role twice (once with a path) vs two roles one letter apart",
        bad=_admins(ADMIN, f"arn:aws:iam::{ACCOUNT}:role/team/platform-admin"),
        good=_admins(ADMIN, ADMIN + "s"),
        path="cluster.adminRoleArns[1]",
        fix="(first at cluster.adminRoleArns[0])",
    ),
    # rule_prod_pool_zones (prod only): exactly one zone, without singleZone.
    Pair(
        "network.rule_prod_pool_zones",
        "a prod pool in one zone vs two",
        bad=_pool_zones("us-east-1a"),
        good=_pool_zones("us-east-1a", "us-east-1b"),
        path="gpuPools[gpu-l4-a10g].zones",
        fix="name a second zone, or leave zones unset",
        stack=PROD,
    ),
    Pair(
        "network.rule_prod_pool_zones",
        "a prod pool in one zone: without singleZone vs with it",
        bad=_pool_zones("us-east-1a"),
        good=_pool_zones("us-east-1a", single=True),
        path="gpuPools[gpu-l4-a10g].zones",
        fix="set singleZone: true on the pool",
        stack=PROD,
    ),
    # rule_prod_network_ha (prod only)
    Pair(
        "network.rule_prod_network_ha",
        "a prod VPC in two zones vs three",
        bad=_vpc_zones("use1-az1", "use1-az2"),
        good=_vpc_zones("use1-az1", "use1-az2", "use1-az4"),
        path="network.azCount",
        fix="set azCount: 3",
        stack=PROD,
        severity="warning",
    ),
    Pair(
        "network.rule_prod_network_ha",
        "a prod VPC with one NAT gateway vs one per zone",
        bad=lambda d: d["network"].update(natGateways="single"),
        good=lambda d: d["network"].update(natGateways="perAz"),
        path="network.natGateways",
        fix="set natGateways: perAz",
        stack=PROD,
        severity="warning",
    ),
    # rule_deletion_protection (prod only): only an explicit false; unset means on in prod.
    Pair(
        "network.rule_deletion_protection",
        "prod with deletion protection false vs the key unset",
        bad=lambda d: d["cluster"].update(deletionProtection=False),
        good=lambda d: d["cluster"].pop("deletionProtection", None),
        path="cluster.deletionProtection",
        fix="remove the key (prod turns it on)",
        stack=PROD,
        severity="warning",
    ),
    Pair(
        "network.rule_deletion_protection",
        "prod with deletion protection false vs true",
        bad=lambda d: d["cluster"].update(deletionProtection=False),
        good=lambda d: d["cluster"].update(deletionProtection=True),
        path="cluster.deletionProtection",
        fix="deletion protection is off in prod",
        stack=PROD,
        severity="warning",
    ),
]
