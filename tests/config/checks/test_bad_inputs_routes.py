"""Routes back to the deploy network and the ALB's clients (network.routes, network.propagatingVgws): each bad
input with its exact message, and the warning a new VPC with a private-only endpoint gives while they are missing.

The base stack is full-prod: a new VPC (10.50.0.0/16), a private-only endpoint reached from 192.0.2.0/24, and an
internal ALB for 10.0.0.0/8 clients, with a route to each through a transit gateway (routes[0] and routes[1]).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import PROD, new_problems_after, problems_after
from tests.support.mutations import EXISTING_VPC

TGW = "tgw-0a1b2c3d4e5f60718"
VGW = "vgw-0a1b2c3d"
DEPLOY = {"destinationCidr": "192.0.2.0/24", "transitGatewayId": TGW}
CLIENTS = {"destinationCidr": "10.0.0.0/8", "transitGatewayId": TGW}


def _routes(*routes: dict[str, Any]) -> Callable[[dict[str, Any]], object]:
    return lambda d: d["network"].update(routes=list(routes))


def _route(**route: str) -> Callable[[dict[str, Any]], object]:
    """A third route (routes[2]) beside the fixture's two: to 198.51.100.0/24, or to the destinationCidr given."""
    return lambda d: d["network"]["routes"].append({"destinationCidr": "198.51.100.0/24", **route})


CASES: dict[str, Callable[[dict[str, Any]], object]] = {
    "route-default": _route(destinationCidr="0.0.0.0/0", transitGatewayId=TGW),
    "route-host-bits": _route(destinationCidr="192.0.2.1/24", transitGatewayId=TGW),
    "route-no-target": _route(),
    "route-two-targets": _route(transitGatewayId=TGW, vpnGatewayId=VGW),
    "route-tgw-attachment": _route(transitGatewayId="tgw-attach-0a1b2c3d4e5f60718"),
    "route-tgw-route-table": _route(transitGatewayId="tgw-rtb-0a1b2c3d4e5f60718"),
    "route-vpn-connection": _route(vpnGatewayId="vpn-0a1b2c3d"),
    "route-customer-gateway": _route(vpnGatewayId="cgw-0a1b2c3d"),
    "route-tgw-as-peering": _route(vpcPeeringConnectionId=TGW),
    "route-peering-not-an-id": _route(vpcPeeringConnectionId="peer-1"),
    "route-vgw-short": _route(vpnGatewayId="vgw-0a1b"),
    "route-inside-vpc": _route(destinationCidr="10.50.4.0/24", transitGatewayId=TGW),
    "route-is-the-vpc": _route(destinationCidr="10.50.0.0/16", transitGatewayId=TGW),
    "route-twice": _route(destinationCidr="192.0.2.0/24", vpnGatewayId=VGW),
    "propagating-vgw-twice": lambda d: d["network"].update(propagatingVgws=[VGW, VGW]),
    "propagating-not-a-vgw": lambda d: d["network"].update(propagatingVgws=[TGW]),
    "routes-on-existing-vpc": lambda d: d.update(network={**EXISTING_VPC, "routes": [DEPLOY]}),
    "propagation-on-existing-vpc": lambda d: d.update(network={**EXISTING_VPC, "routes": [DEPLOY], "propagatingVgws": [VGW]}),
}

_OUTSIDE = "list only networks outside the VPC (a range that contains it, such as 10.0.0.0/8, is fine: the local route is more specific)"
_OWNER = (
    "an existing VPC's route tables belong to its owner, and the stack never changes them. Fix: remove it, and add the routes "
    "back to the deploy network and the clients in the VPC's own route tables (those of the private subnets)"
)

EXPECTED: dict[str, list[str]] = {
    "route-default": [
        "network.routes[2].destinationCidr: '0.0.0.0/0' is the default route, which the private subnets already send to the NAT "
        "gateway (their internet egress); a route table holds one route per destination. Fix: list the network the replies must "
        "reach, e.g. the VPN range 192.0.2.0/24"
    ],
    "route-host-bits": [
        "network.routes[2].destinationCidr: '192.0.2.1/24' is not a network CIDR (or has host bits set). Fix: write e.g. 10.0.0.0/16"
    ],
    "route-no-target": [
        "network.routes[2]: names no target; a route sends its destination's traffic to one gateway. Fix: set one of "
        "transitGatewayId, vpcPeeringConnectionId or vpnGatewayId"
    ],
    "route-two-targets": [
        "network.routes[2]: names transitGatewayId and vpnGatewayId; a route has exactly one target. Fix: keep one (a destination "
        "has one route; the other gateway needs a destination of its own)"
    ],
    "route-tgw-attachment": [
        "network.routes[2].transitGatewayId: 'tgw-attach-0a1b2c3d4e5f60718' is a transit gateway attachment id; a VPC route "
        "targets the transit gateway itself. Fix: write the tgw- id of a transit gateway"
    ],
    "route-tgw-route-table": [
        "network.routes[2].transitGatewayId: 'tgw-rtb-0a1b2c3d4e5f60718' is a transit gateway route table id; a VPC route "
        "targets the transit gateway itself. Fix: write the tgw- id of a transit gateway"
    ],
    "route-vpn-connection": [
        "network.routes[2].vpnGatewayId: 'vpn-0a1b2c3d' is a Site-to-Site VPN connection id; a VPC route targets the virtual "
        "private gateway (vgw-) the connection ends on. Fix: write the vgw- id of a virtual private (VPN) gateway"
    ],
    "route-customer-gateway": [
        "network.routes[2].vpnGatewayId: 'cgw-0a1b2c3d' is a customer gateway id (your side of the VPN); a VPC route targets "
        "the virtual private gateway (vgw-) on the AWS side. Fix: write the vgw- id of a virtual private (VPN) gateway"
    ],
    "route-tgw-as-peering": [
        "network.routes[2].vpcPeeringConnectionId: 'tgw-0a1b2c3d4e5f60718' is the id of a transit gateway, not of a VPC "
        "peering connection. Fix: set it as transitGatewayId instead of vpcPeeringConnectionId"
    ],
    "route-peering-not-an-id": [
        "network.routes[2].vpcPeeringConnectionId: 'peer-1' is not the id of a VPC peering connection. Fix: write pcx-<8 or 17 hex digits>"
    ],
    "route-vgw-short": [
        "network.routes[2].vpnGatewayId: 'vgw-0a1b' is not the id of a virtual private (VPN) gateway. Fix: write vgw-<8 or 17 hex digits>"
    ],
    "route-inside-vpc": [
        "network.routes[2].destinationCidr: 10.50.4.0/24 is inside the VPC (10.50.0.0/16): the VPC's own traffic (nodes, "
        f"pods, the control plane) belongs on its local route, and this route would send it out of the VPC. Fix: {_OUTSIDE}"
    ],
    "route-is-the-vpc": [
        "network.routes[2].destinationCidr: 10.50.0.0/16 is the VPC's CIDR: the VPC's own traffic (nodes, pods, the control "
        f"plane) belongs on its local route, and this route would send it out of the VPC. Fix: {_OUTSIDE}"
    ],
    "route-twice": [
        "network.routes[2].destinationCidr: 192.0.2.0/24 is already the destination of network.routes[0]; two routes for one "
        "destination cannot share a route table. Fix: keep one of them"
    ],
    "propagating-vgw-twice": ["network.propagatingVgws: vgw-0a1b2c3d is listed more than once. Fix: list each gateway once"],
    "propagating-not-a-vgw": [
        "network.propagatingVgws[0]: 'tgw-0a1b2c3d4e5f60718' is the id of a transit gateway, not of a virtual private (VPN) "
        "gateway. Fix: set it as transitGatewayId instead of vpnGatewayId"
    ],
    "routes-on-existing-vpc": [f"network: routes is for a VPC this stack creates; {_OWNER}"],
    "propagation-on-existing-vpc": [f"network: routes and propagatingVgws are for a VPC this stack creates; {_OWNER}"],
}

NO_ROUTE_TO_DEPLOY = (
    "network.routes: has no route to 192.0.2.0/24 (cluster.endpoint.privateAccessCidrs, outside the VPC): the API server's "
    "replies to it go to the NAT gateway and are lost, so pulumi up from there stops at the first Kubernetes object. Fix: "
    "once the VPC is attached to your transit or VPN gateway, add {destinationCidr: 192.0.2.0/24, transitGatewayId: tgw-<id>} "
    "to network.routes (or vpnGatewayId, vpcPeeringConnectionId), or propagate the VPN's routes with network.propagatingVgws"
)
NO_ROUTE_TO_CLIENTS = (
    "network.routes: has no route to 10.0.0.0/8 (ingress.allowedCidrs, the part outside the VPC): the internal load "
    "balancer's replies to those clients go to the NAT gateway and are lost. Fix: once the VPC is attached to your transit "
    "or VPN gateway, add {destinationCidr: 10.0.0.0/8, transitGatewayId: tgw-<id>} to network.routes (or vpnGatewayId, "
    "vpcPeeringConnectionId), or propagate the VPN's routes with network.propagatingVgws"
)


def test_every_case_has_an_expectation() -> None:
    assert set(CASES) == set(EXPECTED)


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_route_message(case: str) -> None:
    assert new_problems_after(CASES[case], PROD) == EXPECTED[case]


def _route_warnings(mutate: Callable[[dict[str, Any]], object]) -> list[str]:
    return [p for p in problems_after(mutate, PROD) if p.startswith("network.routes:")]


def test_a_private_only_endpoint_and_internal_clients_without_routes_warn() -> None:
    # a warning, not an error: the documented first up runs before any route can exist (it creates the VPC that
    # is then attached to the transit or VPN gateway), and the shipped prod stack is in that state
    assert _route_warnings(_routes()) == [NO_ROUTE_TO_DEPLOY, NO_ROUTE_TO_CLIENTS]
    assert _route_warnings(lambda d: d["network"].pop("routes")) == [NO_ROUTE_TO_DEPLOY, NO_ROUTE_TO_CLIENTS]


def test_routes_that_cover_the_networks_clear_the_warnings() -> None:
    assert _route_warnings(lambda d: None) == []  # the fixture's two routes
    assert _route_warnings(_routes(DEPLOY)) == [NO_ROUTE_TO_CLIENTS]
    assert _route_warnings(_routes(CLIENTS)) == [NO_ROUTE_TO_DEPLOY]
    # a wider route covers a narrower network; several routes together cover what none covers alone
    wide = {"destinationCidr": "192.0.0.0/16", "vpcPeeringConnectionId": "pcx-0a1b2c3d4e5f60719"}
    halves = [{"destinationCidr": c, "transitGatewayId": TGW} for c in ("10.0.0.0/9", "10.128.0.0/9")]
    assert _route_warnings(_routes(wide, *halves)) == []
    # 10.0.0.0/11 leaves most of 10.0.0.0/8 unrouted
    assert _route_warnings(_routes(DEPLOY, {"destinationCidr": "10.0.0.0/11", "transitGatewayId": TGW})) == [NO_ROUTE_TO_CLIENTS]


def test_vpn_route_propagation_clears_the_warnings() -> None:
    # which networks a VPN gateway propagates is only known at run time: no warning then
    assert _route_warnings(lambda d: d["network"].update(routes=[], propagatingVgws=[VGW])) == []


def test_no_warning_where_replies_have_another_path() -> None:
    def without_routes(mutate: Callable[[dict[str, Any]], object]) -> Callable[[dict[str, Any]], object]:
        return lambda d: (d["network"].update(routes=[]), mutate(d))

    # a public endpoint: pulumi up from outside the VPC uses it
    public = {"private": True, "public": True, "publicCidrs": ["203.0.113.0/24"], "privateAccessCidrs": ["192.0.2.0/24"]}
    assert _route_warnings(without_routes(lambda d: d["cluster"].update(endpoint=public))) == [NO_ROUTE_TO_CLIENTS]
    # an internet-facing ALB answers through the internet gateway of the public subnets
    internet = without_routes(lambda d: d["ingress"].update(scheme="internet-facing", allowedCidrs=["198.51.100.0/24"]))
    assert _route_warnings(internet) == [NO_ROUTE_TO_DEPLOY]
    # callers inside the VPC take its local route
    inside = without_routes(
        lambda d: (
            d["cluster"]["endpoint"].update(privateAccessCidrs=["10.50.192.0/24"]),
            d["ingress"].update(allowedCidrs=["10.50.0.0/16"]),
        )
    )
    assert _route_warnings(inside) == []
    # an existing VPC: its routes are its owner's, nothing to check
    assert _route_warnings(lambda d: d.update(network=dict(EXISTING_VPC))) == []
