"""Network: subnet plan, tags, NAT per environment, S3 endpoint, and bring-your-own VPC."""

from __future__ import annotations

import pytest

from builders.network import subnet_plan
from config.sections.network import nat_gateway_count
from offline import harness
from tests.conftest import fixture_input, fixture_run, stack_data, values

SUBNET = "aws:ec2/subnet:Subnet"
NAT = "aws:ec2/natGateway:NatGateway"


def test_subnet_plan_for_three_azs() -> None:
    plan = subnet_plan("10.50.0.0/16", 3)
    assert [(p.private_cidr, p.public_cidr) for p in plan] == [
        ("10.50.0.0/18", "10.50.192.0/22"),
        ("10.50.64.0/18", "10.50.196.0/22"),
        ("10.50.128.0/18", "10.50.200.0/22"),
    ]


def test_subnet_plan_for_two_and_six_azs() -> None:
    assert [(p.private_cidr, p.public_cidr) for p in subnet_plan("10.40.0.0/16", 2)] == [
        ("10.40.0.0/18", "10.40.192.0/22"),
        ("10.40.64.0/18", "10.40.196.0/22"),
    ]
    six = subnet_plan("10.0.0.0/20", 6)
    assert [p.private_cidr for p in six] == [f"10.0.{i * 2}.0/23" for i in range(6)]
    assert six[-1].public_cidr == "10.0.14.160/27"


@pytest.mark.parametrize(("mode", "azs", "expected"), [("single", 3, 1), ("perAz", 3, 3), ("perAz", 2, 2)])
def test_nat_gateway_count(mode: str, azs: int, expected: int) -> None:
    assert nat_gateway_count(mode, azs) == expected


def test_dev_has_one_nat_and_every_private_route_uses_it(dev_run: harness.RunResult) -> None:
    nats = dev_run.of_type(NAT)
    assert [n.name for n in nats] == ["network-nat-a"]
    private_rts = [r for r in dev_run.of_type("aws:ec2/routeTable:RouteTable") if "private" in r.name]
    assert len(private_rts) == 2
    nat_ids = {values(rt)["routes"][0]["natGatewayId"] for rt in private_rts}
    assert len(nat_ids) == 1
    assert nat_ids.pop().startswith("nat-")


def test_prod_has_a_nat_per_az_each_in_its_own_public_subnet(prod_run: harness.RunResult) -> None:
    nats = prod_run.of_type(NAT)
    assert sorted(n.name for n in nats) == ["network-nat-a", "network-nat-b", "network-nat-c"]
    assert len({values(n)["subnetId"] for n in nats}) == 3
    private_rts = [r for r in prod_run.of_type("aws:ec2/routeTable:RouteTable") if "private" in r.name]
    assert len({values(rt)["routes"][0]["natGatewayId"] for rt in private_rts}) == 3


def test_subnet_tags(prod_run: harness.RunResult) -> None:
    subnets = {s.name: values(s) for s in prod_run.of_type(SUBNET)}
    assert subnets["network-private-a"]["tags"] == {
        "Name": "llm-prod-private-use1-az1",  # named by the zone the stack names (an id here)
        "kubernetes.io/role/internal-elb": "1",
        "karpenter.sh/discovery": "llm-prod",
        "llm-platform/cluster": "llm-prod",
        "llm-platform/environment": "prod",
        "project": "llm-platform",
        "environment": "prod",
    }
    assert subnets["network-public-b"]["tags"] == {
        "Name": "llm-prod-public-use1-az2",
        "kubernetes.io/role/elb": "1",
        "llm-platform/cluster": "llm-prod",
        "llm-platform/environment": "prod",
        "project": "llm-platform",
        "environment": "prod",
    }
    # public subnets never hand out public IPs to instances; nodes live in private subnets only
    assert all(s["mapPublicIpOnLaunch"] is False for n, s in subnets.items() if "public" in n)
    assert {s["availabilityZoneId"] for n, s in subnets.items() if "private" in n} == {"use1-az1", "use1-az2", "use1-az4"}


def test_s3_gateway_endpoint_on_private_route_tables(prod_run: harness.RunResult) -> None:
    endpoint = values(prod_run.one("aws:ec2/vpcEndpoint:VpcEndpoint"))
    assert endpoint["serviceName"] == "com.amazonaws.us-east-1.s3"
    assert endpoint["vpcEndpointType"] == "Gateway"
    private_rt_ids = sorted(r.id or "" for r in prod_run.of_type("aws:ec2/routeTable:RouteTable") if "private" in r.name)
    assert sorted(endpoint["routeTableIds"]) == private_rt_ids
    assert len(private_rt_ids) == 3


def test_existing_vpc_creates_no_network_resources(dev_in_an_existing_vpc_run: harness.RunResult) -> None:
    run = dev_in_an_existing_vpc_run
    network_types = {"Vpc", "Subnet", "InternetGateway", "NatGateway", "Eip", "RouteTable", "RouteTableAssociation", "VpcEndpoint"}
    assert [r.ref for r in run.registrations if r.type.startswith("aws:ec2/") and r.type.split(":")[-1] in network_types] == []
    assert [r.ref for r in run.registrations if r.parent == "llmplatform:index:Network::network"] == []
    assert run.outputs["vpcId"] == "vpc-0123456789abcdef0"
    assert run.outputs["privateSubnetIds"] == ["subnet-0123456789abcdef0", "subnet-0123456789abcdef1"]
    cluster = values(run.one("eks:index:Cluster"))
    assert cluster["vpcId"] == "vpc-0123456789abcdef0"
    assert cluster["privateSubnetIds"] == ["subnet-0123456789abcdef0", "subnet-0123456789abcdef1"]


# -- named zones ---------------------------------------------------------------------------------------


def test_zone_ids_place_the_subnets_and_bound_the_node_pools(prod_run: harness.RunResult) -> None:
    subnets = {r.name: values(r) for r in prod_run.of_type("aws:ec2/subnet:Subnet")}
    assert {s["availabilityZoneId"] for s in subnets.values()} == {"use1-az1", "use1-az2", "use1-az4"}
    assert all("availabilityZone" not in s for s in subnets.values())
    assert values(prod_run.one("aws:ec2/subnet:Subnet", "network-private-c"))["availabilityZoneId"] == "use1-az4"
    for r in prod_run.of_type("kubernetes:karpenter.sh/v1:NodePool"):
        reqs = values(r)["spec"]["template"]["spec"]["requirements"]
        assert {"key": "topology.k8s.aws/zone-id", "operator": "In", "values": ["use1-az1", "use1-az2", "use1-az4"]} in reqs


def test_zone_names_place_the_subnets_and_bound_the_node_pools() -> None:
    run = fixture_run("internet-facing-tls")
    zones = [values(run.one("aws:ec2/subnet:Subnet", f"network-private-{s}"))["availabilityZone"] for s in "ab"]
    assert zones == ["us-east-1a", "us-east-1c"]
    reqs = values(run.one("kubernetes:karpenter.sh/v1:NodePool"))["spec"]["template"]["spec"]["requirements"]
    assert {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1a", "us-east-1c"]} in reqs


def test_unnamed_zones_keep_todays_selection(dev_run: harness.RunResult) -> None:
    # the region's first zones by name, as before the key existed: existing subnets are not replaced
    zones = [values(r)["availabilityZone"] for r in dev_run.of_type("aws:ec2/subnet:Subnet")]
    assert sorted(set(zones)) == ["us-east-1a", "us-east-1b"]
    for r in dev_run.of_type("kubernetes:karpenter.sh/v1:NodePool"):
        keys = {req["key"] for req in values(r)["spec"]["template"]["spec"]["requirements"]}
        assert not keys & {"topology.kubernetes.io/zone", "topology.k8s.aws/zone-id"}


def test_a_pool_may_narrow_the_named_zones() -> None:
    data = stack_data("internet-facing-tls")
    data["gpuPools"][0]["zones"] = ["us-east-1c"]
    run = harness.run(fixture_input("internet-facing-tls", overrides={"llm-platform:gpuPools": data["gpuPools"]}))
    reqs = values(run.one("kubernetes:karpenter.sh/v1:NodePool"))["spec"]["template"]["spec"]["requirements"]
    zone_reqs = [r for r in reqs if r["key"].startswith("topology.")]
    assert zone_reqs == [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1c"]}]


def test_zone_id_prefixes() -> None:
    from config.sections.types import zone_id_prefix

    assert [zone_id_prefix(r) for r in ("us-east-1", "eu-central-1", "ap-northeast-2", "ap-southeast-1", "us-gov-west-1")] == [
        "use1",
        "euc1",
        "apne2",
        "apse1",
        "usgw1",
    ]
