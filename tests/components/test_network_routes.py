"""network.routes and network.propagatingVgws: the routes back to the deploy network and the ALB's clients,
inline on every private route table of a new VPC, under the same resource names."""

from __future__ import annotations

from typing import Any

from offline import harness
from tests.conftest import PROD, fixture_input, stack_data, values

ROUTE_TABLE = "aws:ec2/routeTable:RouteTable"
TGW = "tgw-0a1b2c3d4e5f60718"
PCX = "pcx-0a1b2c3d4e5f60719"
VGW = "vgw-0a1b2c3d"
ROUTES = [
    {"destinationCidr": "192.0.2.0/24", "transitGatewayId": TGW},
    {"destinationCidr": "10.0.0.0/8", "transitGatewayId": TGW},
    {"destinationCidr": "172.20.0.0/16", "vpcPeeringConnectionId": PCX},
    {"destinationCidr": "198.51.100.0/24", "vpnGatewayId": VGW},
]


def _prod_with(**network: Any) -> harness.RunResult:
    data = stack_data(PROD)["network"]
    return harness.run(fixture_input(PROD, overrides={"llm-platform:network": {**data, **network}}))


def _tables(run: harness.RunResult) -> dict[str, dict[str, Any]]:
    return {r.name: values(r) for r in run.of_type(ROUTE_TABLE)}


def test_declared_routes_are_inline_on_every_private_route_table_beside_the_nat_route() -> None:
    run = _prod_with(routes=ROUTES)
    tables = _tables(run)
    assert sorted(tables) == ["network-private-a", "network-private-b", "network-private-c", "network-public"]
    for name in ("network-private-a", "network-private-b", "network-private-c"):
        routes = tables[name]["routes"]
        assert routes[0]["cidrBlock"] == "0.0.0.0/0"
        assert routes[0]["natGatewayId"].startswith("nat-")
        assert routes[1:] == [
            {"cidrBlock": "192.0.2.0/24", "transitGatewayId": TGW},
            {"cidrBlock": "10.0.0.0/8", "transitGatewayId": TGW},
            {"cidrBlock": "172.20.0.0/16", "vpcPeeringConnectionId": PCX},
            {"cidrBlock": "198.51.100.0/24", "gatewayId": VGW},  # a VPN gateway is a gateway_id target
        ]
        assert "propagatingVgws" not in tables[name]
    # the public table keeps only its internet route: the ALB's internet-facing side and the NAT gateways
    assert [r["cidrBlock"] for r in tables["network-public"]["routes"]] == ["0.0.0.0/0"]
    # no separate Route resources: mixing them with inline routes on one table overwrites one or the other
    assert run.of_type("aws:ec2/route:Route") == []


def test_propagating_vgws_on_every_private_route_table_only() -> None:
    tables = _tables(_prod_with(propagatingVgws=[VGW]))
    assert {n: t.get("propagatingVgws") for n, t in tables.items()} == {
        "network-private-a": [VGW],
        "network-private-b": [VGW],
        "network-private-c": [VGW],
        "network-public": None,
    }


def test_the_prod_fixture_routes_its_deploy_network_and_clients(prod_run: harness.RunResult) -> None:
    for name, table in _tables(prod_run).items():
        if name != "network-public":
            assert table["routes"][1:] == [
                {"cidrBlock": "192.0.2.0/24", "transitGatewayId": TGW},
                {"cidrBlock": "10.0.0.0/8", "transitGatewayId": TGW},
            ]


def test_routes_change_the_tables_in_place_under_the_same_names(prod_run: harness.RunResult) -> None:
    # adding or removing routes is an update of the existing RouteTables (routes and propagating_vgws are not
    # replace-on-change in the provider), so every network identity stays what it was
    without = _prod_with(routes=[])
    with_more = _prod_with(routes=ROUTES, propagatingVgws=[VGW])
    identities = [
        sorted((r.type, r.name, r.parent) for r in run.registrations if r.type.startswith("aws:ec2/"))
        for run in (prod_run, without, with_more)
    ]
    assert identities[0] == identities[1] == identities[2]
    # without routes the tables are what they were before the key existed: the NAT route only, no propagation list
    for name, table in _tables(without).items():
        assert "propagatingVgws" not in table
        assert len(table["routes"]) == 1, name


def test_the_s3_endpoint_still_serves_every_private_table() -> None:
    run = _prod_with(routes=ROUTES)
    endpoint = values(run.one("aws:ec2/vpcEndpoint:VpcEndpoint"))
    assert sorted(endpoint["routeTableIds"]) == sorted(r.id or "" for r in run.of_type(ROUTE_TABLE) if "private" in r.name)
