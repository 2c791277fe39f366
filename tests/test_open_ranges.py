"""Open ranges (`0.0.0.0/0`, `::/0`, any /0) over the whole render of every fixture, judged against the
config: every string of every registration (security group rules, NetworkPolicy ipBlocks, ALB
annotations, the EKS endpoint, Helm values, ...) is read, and a /0 may appear only where the config
or the design says the internet is meant:

- a route table's default route to the internet or NAT gateway (routing; it admits nothing);
- a NetworkPolicy egress rule that is the documented internet HTTPS egress
  (builders/network_policies.internet_https_egress): TCP 443 only, to `0.0.0.0/0` except every
  private, link-local and carrier-grade range and every block of the VPC;
- an ALB allow-list or EKS public access list that the config itself lists (these lists must equal
  the config's, which the validator keeps off /0).

Any other /0 is a finding. Each check is shown failing on a broken copy of the render.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
from collections.abc import Iterator
from typing import Any

import pytest

from builders import network_policies as netpol
from config.sections.stack import StackConfig
from offline import harness
from tests.conftest import FIXTURES, fixture_run, parse, stack_data, values

NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
INGRESS = "kubernetes:networking.k8s.io/v1:Ingress"
ROUTE_TABLE = "aws:ec2/routeTable:RouteTable"
EKS = "eks:index:Cluster"
INBOUND_CIDRS = "alb.ingress.kubernetes.io/inbound-cidrs"
_CIDR = re.compile(r"^[0-9a-fA-F:.]+/\d{1,3}$")

Path = tuple[str | int, ...]


def _open_ranges(value: Any, path: Path = ()) -> Iterator[tuple[Path, str]]:
    """(path, cidr) for every /0 in a value, strings split at commas and spaces (annotations list CIDRs so)."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _open_ranges(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _open_ranges(v, (*path, i))
    elif isinstance(value, str):
        for token in re.split(r"[,\s]+", value):
            if _CIDR.match(token):
                try:
                    network = ipaddress.ip_network(token, strict=False)
                except ValueError:
                    continue
                if network.prefixlen == 0:
                    yield path, token


def _covered(cidr: str, by: list[str]) -> bool:
    net = ipaddress.ip_network(cidr)
    return any(net.version == o.version and net.subnet_of(o) for o in map(ipaddress.ip_network, by))  # type: ignore[arg-type]


def _is_internet_https_egress(rule: dict[str, Any], peer: dict[str, Any], cfg: StackConfig) -> bool:
    excepted = list(peer["ipBlock"].get("except") or [])
    ports = rule.get("ports") or []
    return (
        ports == [{"protocol": "TCP", "port": 443}]
        and all(_covered(c, excepted) for c in [*netpol.NOT_THE_INTERNET, *cfg.vpc_cidrs])
        and peer["ipBlock"]["cidr"] == "0.0.0.0/0"
    )


def _documented(r: Any, doc: dict[str, Any], path: Path, cfg: StackConfig) -> bool:
    if r.type == ROUTE_TABLE and len(path) == 3 and path[0] == "routes" and path[2] in ("cidrBlock", "ipv6CidrBlock"):
        route = doc["routes"][path[1]]
        return bool(route.get("gatewayId") or route.get("natGatewayId"))
    if r.type == NETWORK_POLICY and len(path) == 7 and path[:2] == ("spec", "egress") and path[3:] == ("to", path[4], "ipBlock", "cidr"):
        rule = doc["spec"]["egress"][path[2]]
        return _is_internet_https_egress(rule, rule["to"][path[4]], cfg)
    if r.type == INGRESS and path == ("metadata", "annotations", INBOUND_CIDRS):
        return any(ipaddress.ip_network(c).prefixlen == 0 for c in cfg.ingress.allowed_cidrs)
    if r.type == EKS and path[:1] == ("publicAccessCidrs",):
        return any(ipaddress.ip_network(c).prefixlen == 0 for c in cfg.cluster.endpoint.public_cidrs)
    return False


def open_range_findings(run: harness.RunResult, cfg: StackConfig) -> list[str]:
    findings = []
    for r in run.registrations:
        doc = values(r)
        for path, cidr in _open_ranges(doc):
            if not _documented(r, doc, path, cfg):
                findings.append(f"{r.type} {r.name} {'.'.join(map(str, path))}: {cidr}")
    return findings


@pytest.mark.parametrize("stack", FIXTURES)
def test_no_open_range_but_the_documented_ones(stack: str) -> None:
    assert open_range_findings(fixture_run(stack), parse(stack_data(stack))) == []


@pytest.mark.parametrize("stack", FIXTURES)
def test_the_alb_allow_list_is_the_configs(stack: str) -> None:
    """An internet-facing ALB admits exactly the config's allowedCidrs; an internal one those or the VPC."""
    cfg = parse(stack_data(stack))
    for r in fixture_run(stack).of_type(INGRESS):
        annotations = values(r)["metadata"]["annotations"]
        expected = list(cfg.ingress.allowed_cidrs) or ([] if cfg.ingress.scheme == "internet-facing" else cfg.vpc_cidrs)
        assert annotations[INBOUND_CIDRS].split(",") == expected, r.name


@pytest.mark.parametrize("stack", FIXTURES)
def test_the_public_endpoint_admits_the_configs_cidrs(stack: str) -> None:
    cfg = parse(stack_data(stack))
    cluster = values(fixture_run(stack).one(EKS))
    endpoint = cfg.cluster.endpoint
    assert cluster["endpointPublicAccess"] is endpoint.public
    assert cluster.get("publicAccessCidrs") == (list(endpoint.public_cidrs) if endpoint.public else None)


# -- each shown failing on a broken copy -------------------------------------------------------------------


def _broken(stack: str, type_: str, name: str, change: Any) -> list[str]:
    run = fixture_run(stack)
    registrations = [
        dataclasses.replace(r, inputs=change(values(r))) if (r.type, r.name) == (type_, name) else r for r in run.registrations
    ]
    broken = harness.RunResult(registrations, run.outputs, run.secret_outputs, run.logs)
    return open_range_findings(broken, parse(stack_data(stack)))


def _policy_name(stack: str, namespace: str, name: str) -> str:
    (r,) = [
        r
        for r in fixture_run(stack).of_type(NETWORK_POLICY)
        if (values(r)["metadata"]["namespace"], values(r)["metadata"]["name"]) == (namespace, name)
    ]
    return r.name


def test_the_proxies_of_a_model_at_zero_admitting_the_internet_are_found() -> None:
    """The front door of a model at zero is its gateway's proxies, as for any model: a /0 on their ALB rule is a finding."""

    def change(doc: dict[str, Any]) -> dict[str, Any]:
        doc["spec"]["ingress"][0]["from"].append({"ipBlock": {"cidr": "0.0.0.0/0"}})
        return doc

    name = _policy_name("scale-to-zero-dev", "llama-3-1-8b", "llama-3-1-8b-proxy")
    assert name == "model-llama-3-1-8b-netpol-llama-3-1-8b-proxy"
    found = _broken("scale-to-zero-dev", NETWORK_POLICY, name, change)
    assert found == [f"{NETWORK_POLICY} {name} spec.ingress.0.from.2.ipBlock.cidr: 0.0.0.0/0"]


def test_internet_egress_on_another_port_or_into_the_vpc_is_found() -> None:
    name = _policy_name("full-prod", "monitoring", "alertmanager-notifications")

    def any_port(doc: dict[str, Any]) -> dict[str, Any]:
        doc["spec"]["egress"][0]["ports"] = [{"protocol": "TCP", "port": 10250}]
        return doc

    def into_the_vpc(doc: dict[str, Any]) -> dict[str, Any]:
        doc["spec"]["egress"][0]["to"][0]["ipBlock"]["except"] = ["169.254.0.0/16"]
        return doc

    assert _broken("full-prod", NETWORK_POLICY, name, any_port) == [f"{NETWORK_POLICY} {name} spec.egress.0.to.0.ipBlock.cidr: 0.0.0.0/0"]
    assert _broken("full-prod", NETWORK_POLICY, name, into_the_vpc) == [
        f"{NETWORK_POLICY} {name} spec.egress.0.to.0.ipBlock.cidr: 0.0.0.0/0"
    ]


def test_an_open_security_group_rule_alb_allow_list_or_endpoint_is_found() -> None:
    (rule,) = fixture_run("full-prod").of_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
    found = _broken("full-prod", rule.type, rule.name, lambda d: {**d, "cidrIpv4": "0.0.0.0/0"})
    assert found == [f"{rule.type} {rule.name} cidrIpv4: 0.0.0.0/0"]

    def open_alb(doc: dict[str, Any]) -> dict[str, Any]:
        doc["metadata"]["annotations"][INBOUND_CIDRS] = "203.0.113.0/24,0.0.0.0/0"
        return doc

    ingress = fixture_run("internet-facing-tls").of_type(INGRESS)[0]
    assert _broken("internet-facing-tls", INGRESS, ingress.name, open_alb) == [
        f"{INGRESS} {ingress.name} metadata.annotations.{INBOUND_CIDRS}: 0.0.0.0/0"
    ]
    cluster = fixture_run("minimal-dev").one(EKS)
    found = _broken("minimal-dev", EKS, cluster.name, lambda d: {**d, "publicAccessCidrs": ["::/0"]})
    assert found == [f"{EKS} {cluster.name} publicAccessCidrs.0: ::/0"]


def test_a_default_route_without_a_gateway_is_found() -> None:
    table = next(r for r in fixture_run("minimal-dev").of_type(ROUTE_TABLE) if values(r).get("routes"))

    def no_gateway(doc: dict[str, Any]) -> dict[str, Any]:
        doc["routes"] = [{"cidrBlock": "0.0.0.0/0", "vpcPeeringConnectionId": "pcx-1"}]
        return doc

    assert _broken("minimal-dev", ROUTE_TABLE, table.name, no_gateway) == [f"{ROUTE_TABLE} {table.name} routes.0.cidrBlock: 0.0.0.0/0"]
