"""Network, exposure and cluster access: who reaches the models and the API server, TLS and its
certificate, zones within the region and the VPC, prod's network redundancy, the deploy role, deletion protection."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

from config.checks.common import models_with_pools, pool_path
from config.derived.exposure import exposed_models, exposure
from config.errors import Problem
from config.facts.conventions import principal_identity
from config.sections.network import ExistingVpc, NewVpc
from config.sections.stack import StackConfig
from config.sections.types import is_zone_id, public_cidr, zone_in_region


def rule_load_balancer_sources(cfg: StackConfig) -> Iterator[Problem]:
    """network.loadBalancerSubnetCidrs: listed for an existing VPC that exposes models."""
    if isinstance(cfg.network, ExistingVpc) and not cfg.network.load_balancer_subnet_cidrs and exposed_models(cfg):
        yield Problem(
            "network.loadBalancerSubnetCidrs",
            "is empty, so vLLM's port admits the load balancer from the whole VPC: any host or pod in it reaches "
            "/metrics and every route vLLM leaves unauthenticated. Fix: list the CIDRs of the subnets the ALB uses "
            f"({'public' if cfg.ingress.scheme == 'internet-facing' else 'private'} subnets for the {cfg.ingress.scheme} scheme)",
            "warning",
        )


def rule_model_callers(cfg: StackConfig) -> Iterator[Problem]:
    """models[].clientNamespaces: set for a model that is not exposed."""
    for path, m, _ in models_with_pools(cfg):
        if not exposure(cfg, m).exposed and not m.client_namespaces:
            yield Problem(
                f"{path}.clientNamespaces",
                "is empty and the model is not exposed, so its NetworkPolicy admits no caller: only Prometheus reaches "
                "it. Fix: list the namespaces of the pods that call it, or set expose: true",
                "warning",
            )


def rule_internet_facing_subnets(cfg: StackConfig) -> Iterator[Problem]:
    """network.publicSubnetIds: listed for an internet-facing ALB in an existing VPC."""
    exposed = exposed_models(cfg)
    if exposed and cfg.ingress.scheme == "internet-facing" and isinstance(cfg.network, ExistingVpc) and not cfg.network.public_subnet_ids:
        yield Problem(
            "network.publicSubnetIds",
            "is empty, but ingress.scheme is internet-facing: the load balancer controller needs public subnets (tag "
            "kubernetes.io/role/elb=1) for an internet-facing ALB and would leave the Ingress without an address. "
            "Fix: list the VPC's public subnets, or use ingress.scheme internal",
        )


def rule_certificate(cfg: StackConfig) -> Iterator[Problem]:
    """ingress.certificateArn: set where endpoints are exposed (prod requires TLS), and in the stack's region."""
    exposed = [m.name for m in exposed_models(cfg)]
    if exposed and cfg.ingress.certificate_arn is None:
        if cfg.is_prod:
            yield Problem(
                "ingress.certificateArn",
                f"is not set, so {', '.join(exposed)} would be served over plain HTTP; prod endpoints must use TLS. "
                "Fix: set an ACM certificate ARN for the endpoints' domain",
            )
        else:
            yield Problem(
                "ingress.certificateArn",
                f"is not set: {', '.join(exposed)} {'is' if len(exposed) == 1 else 'are'} served over plain HTTP inside "
                "the VPC. Fix: set an ACM "
                "certificate ARN to serve HTTPS (HTTP then redirects)",
                "warning",
            )
    arn = cfg.ingress.certificate_arn
    if arn is not None and arn.split(":")[3] != cfg.region:
        yield Problem(
            "ingress.certificateArn",
            f"is a certificate of {arn.split(':')[3]}, but the stack (aws:region) is in {cfg.region}; an ALB can only "
            f"use a certificate of its own region. Fix: request or import the certificate in {cfg.region}",
        )


def rule_allowed_cidrs(cfg: StackConfig) -> Iterator[Problem]:
    """ingress.allowedCidrs: public ranges only for an internet-facing ALB."""
    if cfg.ingress.scheme == "internet-facing":
        for i, cidr in enumerate(cfg.ingress.allowed_cidrs):
            try:
                public_cidr(cidr)
            except Exception as exc:  # pydantic's custom error carries the message
                yield Problem(f"ingress.allowedCidrs[{i}]", str(exc))


def rule_zones(cfg: StackConfig) -> Iterator[Problem]:
    """Named zones must be in the stack's region, and pools may only narrow the VPC's zones."""
    for pool in cfg.gpu_pools:
        for i, zone in enumerate(pool.zones):
            if is_zone_id(zone):
                yield Problem(
                    f"{pool_path(pool)}.zones[{i}]",
                    f"'{zone}' is a zone id; a pool's zones are matched against node zone names. Fix: write the zone's "
                    "name (e.g. us-east-1a), or name zones by id in network.availabilityZones and leave the pool's zones unset",
                )
            elif not zone_in_region(zone, cfg.region):
                yield Problem(
                    f"{pool_path(pool)}.zones[{i}]",
                    f"'{zone}' is not a zone of {cfg.region} (aws:region); no node of the pool could launch there. "
                    f"Fix: use a zone of {cfg.region}",
                )
    zones = cfg.network.availability_zones if isinstance(cfg.network, NewVpc) else None
    if zones is None:
        return
    for i, zone in enumerate(zones):
        if not zone_in_region(zone, cfg.region):
            yield Problem(
                f"network.availabilityZones[{i}]",
                f"'{zone}' is not a zone of {cfg.region} (aws:region); the subnet could not be created there. "
                f"Fix: use a zone of {cfg.region}, or correct aws:region",
            )
    if any(is_zone_id(z) for z in zones):
        return  # pool zones are names: which ids they are is an account fact (checked at preview)
    for pool in cfg.gpu_pools:
        outside = [z for z in pool.zones if z not in zones]
        if outside:
            yield Problem(
                f"{pool_path(pool)}.zones",
                f"{', '.join(outside)} {'is' if len(outside) == 1 else 'are'} not among network.availabilityZones "
                f"({', '.join(zones)}); the VPC has no subnet there, "
                "so Karpenter could never launch those nodes. "
                "Fix: list zones of the VPC only, or leave zones unset",
            )


def rule_prod_pool_zones(cfg: StackConfig) -> Iterator[Problem]:
    """(prod only) A pool narrowed to one zone does not survive that zone's outage: refused unless the pool says
    singleZone (preflight judges the zones that offer its types the same way)."""
    for pool in cfg.gpu_pools:
        if len(pool.zones) == 1 and not pool.single_zone:
            yield Problem(
                f"{pool_path(pool)}.zones",
                f"names one zone ({pool.zones[0]}): in prod a pool needs two zones to survive a zone outage, and its "
                "models would go down with that zone. Fix: name a second zone, or leave zones unset; to accept one zone "
                "(a type offered only there), set singleZone: true on the pool",
            )


def rule_prod_network_ha(cfg: StackConfig) -> Iterator[Problem]:
    """(prod only) A VPC the stack creates spans three zones, with a NAT gateway in each."""
    if not isinstance(cfg.network, NewVpc):
        return
    if cfg.network.az_count < 3:
        yield Problem("network.azCount", "prod spans fewer than 3 AZs; an AZ outage halves capacity. Fix: set azCount: 3", "warning")
    if cfg.network.nat_gateways == "single":
        yield Problem(
            "network.natGateways", "prod with a single NAT gateway loses egress in an AZ outage. Fix: set natGateways: perAz", "warning"
        )


def rule_api_reachable(cfg: StackConfig) -> Iterator[Problem]:
    """`pulumi up` creates every Kubernetes object through the API endpoint: something must reach it."""
    endpoint = cfg.cluster.endpoint
    if endpoint.public or endpoint.private_access_cidrs or endpoint.private_access_security_group_ids:
        return
    fix = (
        "list the network `pulumi up` runs from (VPN, transit gateway, a CI runner's subnet) in "
        "cluster.endpoint.privateAccessCidrs, or its security group in cluster.endpoint.privateAccessSecurityGroupIds; "
        "or turn on cluster.endpoint.public with publicCidrs"
    )
    if isinstance(cfg.network, NewVpc):
        yield Problem(
            "cluster.endpoint",
            "only the private endpoint is on, in a VPC this stack creates, and its security group admits only the "
            "cluster itself: nothing could reach the API server during pulumi up, and every Kubernetes object would "
            f"fail after the cluster is created. Fix: {fix}",
        )
    else:
        yield Problem(
            "cluster.endpoint",
            "only the private endpoint is on and no network or security group is allowed to reach it: pulumi up "
            "reaches the API server only if it runs from inside the cluster's security group (e.g. a runner on a "
            f"cluster node). Fix: {fix}",
            "warning",
        )


def rule_deploy_role(cfg: StackConfig) -> Iterator[Problem]:
    """The role that deploys is the one that creates the cluster: EKS (through pulumi-eks, which
    always asks for it) gives the creator an admin access entry of its own, so the stack must not
    declare a second one for it, or EKS refuses it (409) right after creating the cluster."""
    role = cfg.cluster.deploy_role_arn
    if role is None:
        if cfg.is_prod:
            yield Problem(
                "cluster.deployRoleArn",
                "is not set; prod is deployed by CI, and the Kubernetes objects are created as the principal that "
                "creates the cluster. Fix: set it to the role the workflows assume (vars.AWS_ROLE_ARN), and run the "
                "first pulumi up as that role",
            )
        return
    deploy = principal_identity(role)
    declared = [f"cluster.adminRoleArns[{i}]" for i, arn in enumerate(cfg.cluster.admin_role_arns) if principal_identity(arn) == deploy]
    declared += [f"cluster.access[{i}]" for i, grant in enumerate(cfg.cluster.access) if principal_identity(grant.principal_arn) == deploy]
    for path in declared:
        yield Problem(
            path,
            "is the deploy role (cluster.deployRoleArn): EKS already gives the principal that creates the cluster an "
            "admin access entry, and a second entry for it fails with 409 ResourceInUseException right after the "
            "cluster is created. Fix: remove it here, and run the first pulumi up as the deploy role",
        )


def rule_principals_once(cfg: StackConfig) -> Iterator[Problem]:
    """A principal has one access entry: EKS refuses a second one for it (409, after the cluster exists), and
    two grants to one principal would be one entry with the last grant's policy. So each principal (account,
    kind and name: IAM names are unique whatever the path) appears once across adminRoleArns and access."""
    seen: dict[tuple[str, str, str], str] = {}
    named = [(f"cluster.adminRoleArns[{i}]", arn) for i, arn in enumerate(cfg.cluster.admin_role_arns)]
    named += [(f"cluster.access[{i}].principalArn", g.principal_arn) for i, g in enumerate(cfg.cluster.access)]
    for path, arn in named:
        key = principal_identity(arn)
        first = seen.setdefault(key, path)
        if first == path:
            continue
        both_access = first.startswith("cluster.access") and path.startswith("cluster.access")
        fix = (
            "merge them into one access item with `policies: [{policy: ..., namespaces: [...]}, ...]`"
            if both_access
            else "keep it in adminRoleArns (ClusterAdmin covers every other policy) and remove it here"
        )
        yield Problem(
            path,
            f"names the principal {key[1]}/{key[2]} of account {key[0]} again (first at {first}): EKS gives a principal one "
            f"access entry and refuses a second (409 ResourceInUseException) after the cluster exists. Fix: {fix}",
        )


def rule_deletion_protection(cfg: StackConfig) -> Iterator[Problem]:
    """(prod only) Deletion protection is not switched off."""
    if cfg.cluster.deletion_protection is False:
        yield Problem("cluster.deletionProtection", "deletion protection is off in prod. Fix: remove the key (prod turns it on)", "warning")


def _uncovered(cidr: str, covers: list[ipaddress.IPv4Network]) -> list[ipaddress.IPv4Network]:
    """The parts of `cidr` that none of `covers` contains."""
    remaining = [ipaddress.IPv4Network(cidr, strict=False)]
    for cover in covers:
        left: list[ipaddress.IPv4Network] = []
        for net in remaining:
            if net.subnet_of(cover):
                continue
            left += net.address_exclude(cover) if cover.subnet_of(net) else [net]
        remaining = left
    return list(ipaddress.collapse_addresses(remaining))


def rule_routes(cfg: StackConfig) -> Iterator[Problem]:
    """network.routes (new VPC): each leads out of the VPC, one per destination; and (warnings) the deploy
    network of a private-only endpoint (cluster.endpoint.privateAccessCidrs) and the internal ALB's clients
    (ingress.allowedCidrs) outside the VPC have a route back, unless network.propagatingVgws brings them."""
    net = cfg.network
    if not isinstance(net, NewVpc):
        return  # an existing VPC's route tables are its owner's
    vpc = ipaddress.IPv4Network(net.cidr)
    first: dict[ipaddress.IPv4Network, int] = {}
    for i, route in enumerate(net.routes):
        dest = ipaddress.IPv4Network(route.destination_cidr)
        if dest.subnet_of(vpc):
            where = "the VPC's CIDR" if dest == vpc else f"inside the VPC ({vpc})"
            yield Problem(
                f"network.routes[{i}].destinationCidr",
                f"{dest} is {where}: the VPC's own traffic "
                "(nodes, pods, the control plane) belongs on its local route, and this route would send it out of the "
                "VPC. Fix: list only networks outside the VPC (a range that contains it, such as 10.0.0.0/8, is fine: "
                "the local route is more specific)",
            )
        elif dest in first:
            yield Problem(
                f"network.routes[{i}].destinationCidr",
                f"{dest} is already the destination of network.routes[{first[dest]}]; two routes for one destination "
                "cannot share a route table. Fix: keep one of them",
            )
        else:
            first[dest] = i
    if net.propagating_vgws:
        return  # the routes a VPN gateway propagates are not known before it runs
    covers = [vpc, *first]
    endpoint = cfg.cluster.endpoint
    callers: list[tuple[str, list[str], str]] = []
    if endpoint.private and not endpoint.public:
        callers.append(
            (
                "cluster.endpoint.privateAccessCidrs",
                list(endpoint.private_access_cidrs),
                "the API server's replies to it go to the NAT gateway and are lost, so pulumi up from there stops at "
                "the first Kubernetes object",
            )
        )
    if cfg.ingress.scheme == "internal" and exposed_models(cfg):
        callers.append(
            (
                "ingress.allowedCidrs",
                list(cfg.ingress.allowed_cidrs),
                "the internal load balancer's replies to those clients go to the NAT gateway and are lost",
            )
        )
    for field, cidrs, effect in callers:
        lost = [c for c in cidrs if _uncovered(c, covers)]
        if not lost:
            continue
        outside = [c for c in lost if not ipaddress.IPv4Network(c).overlaps(vpc)]
        example = outside[0] if outside else lost[0]
        where = "outside the VPC" if outside == lost else "the part outside the VPC"
        yield Problem(
            "network.routes",
            f"has no route to {', '.join(lost)} ({field}, {where}): "
            f"{effect}. Fix: once the VPC is attached to your transit or VPN gateway, add "
            f"{{destinationCidr: {example}, transitGatewayId: tgw-<id>}} to network.routes (or vpnGatewayId, "
            "vpcPeeringConnectionId), or propagate the VPN's routes with network.propagatingVgws",
            "warning",
        )
