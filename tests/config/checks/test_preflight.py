"""Preflight: each check passing and failing against account answers, all problems at once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from config.checks import account, preflight
from config.errors import ConfigError
from config.sections.stack import StackConfig
from offline import harness, render
from tests.conftest import DEV, PROD, ROOT, fixture_input, new_problems_after, parse, stack_data

DEFAULT = ROOT / "offline" / "account.yaml"


def _answers(region: str = "us-east-1", **changes: Any) -> account.AccountFile:
    data = yaml.safe_load(DEFAULT.read_text())
    data.update(changes)
    return account.in_region(account.parse(data, "test"), region)


def _run(cfg: StackConfig, answers: account.AccountFile, authoritative: bool = False) -> list[preflight.Check]:
    return preflight.run(cfg, answers, authoritative=authoritative)


def _failed(checks: list[preflight.Check]) -> list[str]:
    return [f"{c.path}: {c.message}" for c in checks if c.result == "failed"]


def test_the_default_answers_pass_every_fixture_stack() -> None:
    for stack in ("minimal-dev", "full-prod", "existing-vpc-irsa-bottlerocket", "internet-facing-tls"):
        cfg = parse(stack_data(stack))
        checks = _run(cfg, account.in_region(account.load(DEFAULT), cfg.region), authoritative=False)
        assert _failed(checks) == [], stack
        assert {c.result for c in checks} <= {"ok", "not checked"}


ZERO_GPU = {"L-DB2E81BA": 0, "L-417A185B": 0, "L-3819A6DF": 0, "L-7212CCBC": 0, "L-1216C47A": 4096}


def test_a_p_quota_of_zero_fails_each_pool_that_could_never_launch_a_node() -> None:
    cfg = parse(stack_data(PROD))
    quotas = {**ZERO_GPU, "L-DB2E81BA": 4096, "L-3819A6DF": 4096}
    assert _failed(_run(cfg, _answers(quotas=quotas))) == [
        "gpuPools[gpu-h100].capacityTypes: no node of this pool can launch: the smallest host of llama-3-3-70b is "
        "p5.48xlarge (192 vCPUs) and the account's quotas are on-demand 0 vCPUs (L-417A185B). No replica of llama-3-3-70b "
        "can ever start, at any minimum or schedule: requests are held by the gateway, then answered 503. Fix: request at "
        "least 192 vCPUs in Service Quotas (ec2, L-417A185B); a new account's GPU quotas are often 0",
        "gpuPools[gpu-a100-mig].capacityTypes: no node of this pool can launch: the smallest host of qwen-2-5-7b is "
        "p4d.24xlarge (96 vCPUs) and the account's quotas are on-demand 0 vCPUs (L-417A185B). No replica of qwen-2-5-7b "
        "can ever start, at any minimum or schedule: requests are held by the gateway, then answered 503. Fix: request at "
        "least 96 vCPUs in Service Quotas (ec2, L-417A185B); a new account's GPU quotas are often 0",
    ]


def test_a_model_at_zero_on_a_pool_without_gpu_quota_fails_though_its_minimum_needs_none() -> None:
    cfg = parse(stack_data("scale-to-zero-dev"))
    assert all(m.replicas.min == 0 for m in cfg.models)
    checks = _run(cfg, _answers(quotas=ZERO_GPU))
    (failed,) = [c for c in checks if c.result == "failed"]
    assert failed.path == "gpuPools[gpu-l4-a10g].capacityTypes"
    assert "No replica of llama-3-1-8b can ever start" in failed.message
    assert "L-DB2E81BA or L-3819A6DF" in failed.message
    # the boundary: a quota of exactly one smallest host launches it
    (host,) = failed.inputs["smallestHosts"].values()
    vcpus = int(host.split("(")[1].split()[0])
    at_floor = _run(cfg, _answers(quotas={**ZERO_GPU, "L-3819A6DF": vcpus}))
    assert [c.result for c in at_floor if c.path == failed.path] == ["ok"]
    below = _run(cfg, _answers(quotas={**ZERO_GPU, "L-3819A6DF": vcpus - 1}))
    assert [c.result for c in below if c.path == failed.path] == ["failed"]


def test_a_spot_first_pool_is_judged_on_spot_and_on_demand_together() -> None:
    data = stack_data(DEV)
    data["models"][0]["replicas"] = {"min": 2, "max": 3}
    cfg = parse(data)
    need_min = next(c for c in _run(cfg, _answers()) if c.path.endswith(".gpuLimit")).inputs["vcpusAtMin"]
    node = cfg.pool("gpu-l4-a10g").resolved_instance_types()[0].vcpus  # type: ignore[union-attr]
    assert need_min == 2 * node
    # neither quota alone holds the minimum, both together do: Karpenter falls back to on-demand
    split = {**ZERO_GPU, "L-DB2E81BA": node, "L-3819A6DF": node}
    assert _failed(_run(cfg, _answers(quotas=split))) == []
    short = {**ZERO_GPU, "L-DB2E81BA": node, "L-3819A6DF": node - 1}
    (failed,) = _failed(_run(cfg, _answers(quotas=short)))
    assert f"hold {need_min - 1} of the {need_min} vCPUs the minimum replicas" in failed
    assert "request 1 more vCPUs" in failed


def test_a_quota_that_covers_min_but_not_the_limit_says_where_scale_out_stops() -> None:
    cfg = parse(stack_data(DEV))
    quotas = {**ZERO_GPU, "L-DB2E81BA": 16}
    (warned,) = [c for c in _run(cfg, _answers(quotas=quotas)) if c.result == "warning"]
    assert warned.inputs["quotaCodes"] == ["L-DB2E81BA", "L-3819A6DF"]
    assert "hold the minimum replicas (4 vCPUs)" in warned.message
    assert "scale-out stops when their nodes reach 16 vCPUs (about 2 nodes of g6.2xlarge: 2 of the 4 GPUs of gpuLimit)" in warned.message


def test_a_short_spot_quota_with_on_demand_fallback_is_covered() -> None:
    cfg = parse(stack_data(DEV))
    checks = _run(cfg, _answers(quotas={**ZERO_GPU, "L-DB2E81BA": 4096}))
    assert [c.result for c in checks if c.name == "quota"] == ["ok", "ok", "ok"]


def test_the_system_node_group_needs_its_standard_quota() -> None:
    cfg = parse(stack_data(DEV))
    group = cfg.cluster.system_node_group
    vcpus = 4  # m7i.xlarge
    assert group.instance_types == ["m7i.xlarge"]

    def result(quota: int) -> str:
        (check,) = [
            c
            for c in _run(cfg, _answers(quotas={**ZERO_GPU, "L-DB2E81BA": 4096, "L-1216C47A": quota}))
            if c.path == "cluster.systemNodeGroup"
        ]
        return check.result

    assert result(group.desired_size * vcpus) == "warning"
    assert result(group.desired_size * vcpus - 1) == "failed"
    assert result((group.max_size + 1) * vcpus) == "ok"
    assert result((group.max_size + 1) * vcpus - 1) == "warning"


def test_no_zone_offering_the_pool_types_fails_naming_them() -> None:
    cfg = parse(stack_data(DEV))
    offerings = {f"us-east-1{z}": ["m7i.xlarge"] for z in "abcdef"}
    assert _failed(_run(cfg, _answers(offerings=offerings))) == [
        "gpuPools[gpu-l4-a10g].instanceTypes: none of g6.xlarge, g6.2xlarge, g5.xlarge, g5.2xlarge is offered in "
        "us-east-1a, us-east-1b: Karpenter could never launch a node of this pool. Fix: name zones that offer them "
        "(network.availabilityZones, the pool's zones) or choose instance types offered there"
    ]


def test_prod_pools_need_two_zones_that_offer_them_unless_they_say_single_zone() -> None:
    data = stack_data(PROD)  # zones named by id: use1-az1, use1-az2, use1-az4 = us-east-1a, b, c
    offerings = {f"us-east-1{z}": ["g6.xlarge", "g5.xlarge", "g6e.xlarge", "g6e.2xlarge", "g6e.4xlarge", "p4d.24xlarge"] for z in "abc"}
    offerings["us-east-1a"] = [*offerings["us-east-1a"], "p5.48xlarge"]
    failed = _failed(_run(parse(data), _answers(offerings=offerings)))
    assert failed == [
        "gpuPools[gpu-h100].instanceTypes: p5.48xlarge is offered only in us-east-1a of us-east-1a, us-east-1b, us-east-1c; "
        "a prod pool needs two zones to survive a zone outage. Fix: name zones that offer them (network.availabilityZones) "
        "or add instance types offered in a second zone; to accept one zone, set singleZone: true on the pool"
    ]
    next(p for p in data["gpuPools"] if p["name"] == "gpu-h100")["singleZone"] = True
    checks = _run(parse(data), _answers(offerings=offerings))
    assert _failed(checks) == []
    (warned,) = [c for c in checks if c.name == "offerings" and c.result == "warning"]
    assert "the pool says singleZone, so its models go down with that zone" in warned.message


def test_a_prod_pool_in_one_zone_is_refused_by_the_config_unless_it_says_single_zone() -> None:
    def zones(names: list[str], single: bool = False) -> Any:
        def mutate(d: dict[str, Any]) -> None:
            d["gpuPools"][0].update(zones=names, singleZone=single)

        return mutate

    (problem,) = new_problems_after(zones(["us-east-1a"]), PROD)
    assert problem.startswith("gpuPools[gpu-l4-a10g].zones: names one zone (us-east-1a): in prod a pool needs two zones")
    assert "set singleZone: true on the pool" in problem
    assert new_problems_after(zones(["us-east-1a", "us-east-1b"]), PROD) == []
    assert new_problems_after(zones(["us-east-1a"], single=True), PROD) == []
    assert new_problems_after(zones(["us-east-1a"]), DEV) == []


def test_a_missing_ami_release_fails_naming_it() -> None:
    cfg = parse(stack_data(DEV))
    answers = _answers(amiReleases={"al2023": ["v20261001", "v20261015"], "bottlerocket": []})
    # with the default answers an unlisted pin is only "not checked" (any valid stack renders)
    assert {c.result for c in _run(cfg, answers) if c.name == "ami-release"} == {"not checked"}
    assert [f for f in _failed(_run(cfg, answers, authoritative=True)) if f.startswith("karpenter.")] == [
        "karpenter.amiVersions.al2023: al2023@v20260930 is not published for Kubernetes 1.35 in us-east-1: Karpenter "
        "could not resolve the GPU nodes' AMI. Fix: pin a published release, e.g. v20261001, v20261015"
    ]


def test_a_missing_addon_version_fails_from_a_full_list_and_warns_from_a_default() -> None:
    cfg = parse(stack_data(DEV))
    versions_ = yaml.safe_load(DEFAULT.read_text())["addonVersions"]
    versions_["coredns"] = ["v1.13.3-eksbuild.1"]
    answers = _answers(addonVersions=versions_)
    assert [f for f in _failed(_run(cfg, answers, authoritative=True)) if f.startswith("cluster.kubernetesVersion")] == [
        "cluster.kubernetesVersion (coredns): coredns v1.13.2-eksbuild.21 (config/facts/versions.py) is not available for "
        "Kubernetes 1.35: the add-on would fail to install. Fix: pin one of v1.13.3-eksbuild.1 in config/facts/versions.py"
    ]
    weak = preflight.run(cfg, answers, authoritative=True, addon_versions_complete=False)
    assert [c.result for c in weak if c.name == "addon-version" and "coredns" in c.path] == ["warning"]


def test_certificate_in_another_region_not_issued_or_for_another_domain() -> None:
    cfg = parse(stack_data(PROD))
    arn = cfg.ingress.certificate_arn
    assert arn is not None
    west = cfg.model_copy(update={"ingress": cfg.ingress.model_copy(update={"certificate_arn": arn.replace("us-east-1", "us-west-2")})})
    assert _failed(_run(west, _answers())) == [
        "ingress.certificateArn: the certificate is in us-west-2, but the ALB is in us-east-1; an ALB can only use a "
        "certificate of its own region. Fix: request or import the certificate in us-east-1 and use its ARN"
    ]
    pending = [{"arn": arn, "domain": "*.llm.internal.example.com", "status": "PENDING_VALIDATION", "region": "us-east-1"}]
    assert "the certificate is PENDING_VALIDATION, not ISSUED" in _failed(_run(cfg, _answers(certificates=pending)))[0]
    other = [{"arn": arn, "domain": "api.example.org", "status": "ISSUED", "region": "us-east-1"}]
    assert _failed(_run(cfg, _answers(certificates=other))) == [
        "ingress.certificateArn: the certificate covers api.example.org, not *.llm.internal.example.com, where models are "
        "served: clients would get TLS errors. Fix: use a certificate with *.llm.internal.example.com as its domain name or "
        "an alternative name"
    ]
    good = [{"arn": arn, "domain": "*.llm.internal.example.com", "status": "ISSUED", "region": "us-east-1"}]
    assert [c.result for c in _run(cfg, _answers(certificates=good)) if c.name == "certificate"] == ["ok"]


def test_principals_are_not_checked_by_default_and_failed_when_the_answers_are_authoritative() -> None:
    cfg = parse(stack_data(PROD))
    assert {c.result for c in _run(cfg, _answers(), authoritative=False) if c.name == "principal"} == {"not checked"}
    roles = ["arn:aws:iam::123456789012:role/platform-admin", "arn:aws:iam::123456789012:role/llm-platform-deploy"]
    failed = [f for f in _failed(_run(cfg, _answers(roles=roles), authoritative=True)) if f.startswith("cluster.")]
    assert failed == [
        "cluster.access[0].principalArn: 'arn:aws:iam::123456789012:role/ml-oncall' does not exist in the account: EKS "
        "rejects an access entry for a missing principal and pulumi up would stop half-way. Fix: create the role first, "
        "or correct the ARN"
    ]


def test_spot_pools_need_the_spot_service_linked_role() -> None:
    cfg = parse(stack_data(DEV))
    assert _failed(_run(cfg, _answers(spotServiceLinkedRole=False))) == [
        "gpuPools[gpu-l4-a10g].capacityTypes: gpu-l4-a10g may launch spot capacity, but the account has no "
        "AWSServiceRoleForEC2Spot: every spot launch would fail. Fix: run `aws iam create-service-linked-role "
        "--aws-service-name spot.amazonaws.com` once"
    ]


def test_an_existing_vpc_is_checked_subnet_by_subnet() -> None:
    cfg = parse(stack_data("existing-vpc-irsa-bottlerocket"))
    vpc = {"id": "vpc-0a1b2c3d4e5f60718", "cidr": "10.60.0.0/16", "secondaryCidrs": ["100.64.0.0/16"]}
    tags = {"kubernetes.io/role/internal-elb": "1", "karpenter.sh/discovery": "llm-staging"}
    subnets = [
        {"id": "subnet-0a1b2c3d4e5f60711", "vpcId": vpc["id"], "zone": "us-west-2a", "cidr": "10.60.0.0/18", "tags": tags},
        {"id": "subnet-0a1b2c3d4e5f60712", "vpcId": vpc["id"], "zone": "us-west-2a", "cidr": "10.60.64.0/18", "tags": {}},
        {"id": "subnet-0a1b2c3d4e5f60713", "vpcId": vpc["id"], "zone": "us-west-2a", "cidr": "10.99.0.0/18", "tags": tags},
    ]
    failed = _failed(_run(cfg, _answers("us-west-2", vpcs=[vpc], subnets=subnets)))
    assert failed == [
        "network.privateSubnetIds[1]: subnet-0a1b2c3d4e5f60712 lacks the tag kubernetes.io/role/internal-elb=1: internal load "
        "balancers would not find it. Fix: tag the subnet",
        "network.privateSubnetIds[2]: subnet-0a1b2c3d4e5f60713 (10.99.0.0/18) is outside 10.60.0.0/16. Fix: correct network.vpcCidr",
        "network.privateSubnetIds: every listed subnet is in us-west-2a; EKS needs subnets in at least two zones. Fix: add a "
        "private subnet in another zone",
    ]


def test_the_vpcs_cidr_blocks_are_the_ones_declared() -> None:
    """The NetworkPolicies treat the declared blocks as the VPC: each must be associated, and none left out."""
    cfg = parse(stack_data("existing-vpc-irsa-bottlerocket"))  # declares 100.64.0.0/16
    vpc = {"id": "vpc-0a1b2c3d4e5f60718", "cidr": "10.60.0.0/16", "secondaryCidrs": ["100.65.0.0/16"]}
    failed = [f for f in _failed(_run(cfg, _answers("us-west-2", vpcs=[vpc]))) if f.startswith("network.secondaryCidrs")]
    assert failed == [
        "network.secondaryCidrs[0]: 100.64.0.0/16 is not a CIDR block of vpc-0a1b2c3d4e5f60718 (its blocks: 10.60.0.0/16, "
        "100.65.0.0/16): the NetworkPolicies would admit a range the VPC does not have. Fix: list the VPC's associated blocks",
        "network.secondaryCidrs: omits 100.65.0.0/16, associated with vpc-0a1b2c3d4e5f60718: pods, nodes or the control plane "
        "there would be treated as outside the VPC and refused by the NetworkPolicies. Fix: list every associated block",
    ]


def test_public_subnets_need_the_elb_tag_for_an_internet_facing_alb() -> None:
    data = stack_data("existing-vpc-irsa-bottlerocket")
    data["network"]["publicSubnetIds"] = ["subnet-0a1b2c3d4e5f60721"]
    cfg = parse(data)
    vpc = {"id": "vpc-0a1b2c3d4e5f60718", "cidr": "10.60.0.0/16", "secondaryCidrs": ["100.64.0.0/16"]}
    public = [{"id": "subnet-0a1b2c3d4e5f60721", "vpcId": vpc["id"], "zone": "us-west-2a", "cidr": "10.60.192.0/22", "tags": {}}]
    checks = [c for c in _run(cfg, _answers("us-west-2", vpcs=[vpc], subnets=public)) if c.path == "network.publicSubnetIds[0]"]
    # internal ALB: a warning; the tag only matters to internet-facing ones
    assert [(c.result, c.message) for c in checks] == [
        (
            "warning",
            "subnet-0a1b2c3d4e5f60721 lacks the tag kubernetes.io/role/elb=1: an internet-facing ALB would find no subnet for "
            "it. Fix: tag the subnet",
        )
    ]


TLS = "internet-facing-tls"  # domain llm.example.com; llama-3-1-8b exposed, mistral-7b not


def _certificate_checks(**cert: Any) -> list[tuple[str, str]]:
    cfg = parse(stack_data(TLS))
    found = {"arn": cfg.ingress.certificate_arn, "status": "ISSUED", "region": "us-east-1", **cert}
    return [(c.result, c.message) for c in _run(cfg, _answers(certificates=[found]), authoritative=True) if c.name == "certificate"]


def test_a_certificate_covers_the_domain_through_its_alternative_names() -> None:
    """The usual request: the bare domain as its name, the wildcard as an alternative name."""
    assert _certificate_checks(domain="llm.example.com", alternativeNames=["*.llm.example.com"]) == [
        ("ok", "issued, llm.example.com, *.llm.example.com")
    ]


def test_a_certificate_for_the_bare_domain_only_fails() -> None:
    assert _certificate_checks(domain="llm.example.com", alternativeNames=["www.llm.example.com"]) == [
        (
            "failed",
            "the certificate covers llm.example.com, www.llm.example.com, not *.llm.example.com, where models are served: "
            "clients would get TLS errors. Fix: use a certificate with *.llm.example.com as its domain name or an "
            "alternative name",
        )
    ]


def test_a_certificate_is_judged_by_the_exposed_model_hosts() -> None:
    """A certificate naming each exposed model's host covers them; mistral-7b is not exposed and needs no name."""
    assert _certificate_checks(domain="llm.example.com", alternativeNames=["llama-3-1-8b.llm.example.com"])[0][0] == "ok"
    data = stack_data(TLS)
    data["models"][1].pop("expose")  # a second exposed model: the certificate that misses it names it
    cfg = parse(data)
    found = {"arn": cfg.ingress.certificate_arn, "domain": "llama-3-1-8b.llm.example.com", "status": "ISSUED", "region": "us-east-1"}
    assert [c.message for c in _run(cfg, _answers(certificates=[found]), authoritative=True) if c.name == "certificate"] == [
        "the certificate covers llama-3-1-8b.llm.example.com, not mistral-7b.llm.example.com, where models are served: "
        "clients would get TLS errors. Fix: use a certificate with *.llm.example.com as its domain name or an alternative name"
    ]


def test_a_wildcard_covers_one_label_only() -> None:
    assert _certificate_checks(domain="*.example.com")[0][0] == "failed"  # <model>.llm.example.com is two labels below
    assert _certificate_checks(domain="*.LLM.example.com")[0][0] == "ok"  # DNS names are case-insensitive


def test_a_certificate_whose_alternative_names_are_not_visible_warns() -> None:
    """Online, the ACM lookup returns the domain name only: what the alternative names might cover is never failed."""
    assert _certificate_checks(domain="llm.example.com", alternativeNamesVisible=False) == [
        (
            "warning",
            "the certificate's domain name is llm.example.com; its alternative names are not visible to preflight (the ACM "
            "lookup returns only the domain name), so whether it covers *.llm.example.com, where models are served, is not "
            "checked. Fix: make sure *.llm.example.com is its domain name or an alternative name (`aws acm "
            "describe-certificate --certificate-arn <arn>` lists SubjectAlternativeNames)",
        )
    ]
    # a wildcard domain name needs no alternative name
    assert _certificate_checks(domain="*.llm.example.com", alternativeNamesVisible=False)[0][0] == "ok"


def test_a_refused_read_leaves_its_checks_not_checked_and_warns_once() -> None:
    cfg = parse(stack_data(DEV))
    reason = "the deploy credentials lack servicequotas:GetServiceQuota (AccessDenied)"
    checks = _run(cfg, _answers(quotas={}, unread={"quotas": reason}), authoritative=True)
    assert [c for c in checks if c.name == "quota" and c.result in ("failed", "warning")] == []
    assert {(c.result, c.message) for c in checks if c.name == "quota"} == {("not checked", f"could not be checked: {reason}")}
    assert [str(p) for c in checks if c.name == "account-read" and (p := c.problem())] == [
        "cluster.deployRoleArn: preflight could not read the account's quotas: the deploy credentials lack "
        "servicequotas:GetServiceQuota (AccessDenied); the quota checks are not checked. Fix: grant the permission to the "
        "identity that runs pulumi (docs/preflight.md lists every read it needs)"
    ]


def test_refused_zones_or_offerings_never_fail_the_offerings_check() -> None:
    cfg = parse(stack_data(DEV))
    reason = "the deploy credentials lack ec2:DescribeInstanceTypeOfferings (UnauthorizedOperation)"
    checks = _run(cfg, _answers(offerings={}, unread={"offerings": reason}), authoritative=True)
    assert {c.result for c in checks if c.name == "offerings"} == {"not checked"}
    assert [c.result for c in checks if c.name == "account-read"] == ["warning"]


def test_answers_for_another_region_fail_at_once() -> None:
    cfg = parse(stack_data(DEV))
    answers = account.parse({**yaml.safe_load(DEFAULT.read_text()), "region": "eu-west-1"}, "test")
    assert _failed(_run(cfg, answers)) == [
        "aws:region: the account answers are for eu-west-1, the stack deploys to us-east-1. Fix: use answers for us-east-1 "
        "(make account STACK=<stack> captures them)"
    ]


def test_the_account_file_is_validated_with_paths() -> None:
    data = yaml.safe_load(DEFAULT.read_text())
    data["quotas"]["L-417A185B"] = "lots"
    data["spotServiceLinkedRoll"] = True
    with pytest.raises(ConfigError) as err:
        account.parse(data, "mine.yaml")
    assert [str(p) for p in err.value.problems] == [
        "mine.yaml: quotas.L-417A185B: expected a number, got 'lots'. Fix: write a number without quotes",
        "mine.yaml: spotServiceLinkedRoll: unknown key (did you mean 'spotServiceLinkedRole'?); it would otherwise be "
        "ignored silently. Fix: correct or remove it (see the account file format, docs/preflight.md)",
    ]


# -- the render and the program -----------------------------------------------------------------------


def _account_file(tmp_path: Path, **changes: Any) -> Path:
    data = yaml.safe_load(DEFAULT.read_text())
    data.update(changes)
    path = tmp_path / "account.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_render_exits_2_on_every_problem_at_once_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    quotas = {"L-DB2E81BA": 4096, "L-417A185B": 0, "L-3819A6DF": 4096, "L-7212CCBC": 4096}
    path = _account_file(tmp_path, quotas=quotas, amiReleases={"al2023": ["v20261001"]}, spotServiceLinkedRole=False)
    out = tmp_path / "build"
    stack = ROOT / "tests" / "fixtures" / "stacks" / "full-prod.yaml"
    assert render.main(["full-prod", "--file", str(stack), "--account", str(path), "--out", str(out)]) == 2
    assert not out.exists()
    err = capsys.readouterr().err
    assert "preflight against the account answers failed" in err
    for needle in ("L-417A185B", "al2023@v20260930", "AWSServiceRoleForEC2Spot", "ingress.certificateArn"):
        assert needle in err
    assert "Traceback" not in err


def test_render_writes_the_checks(tmp_path: Path) -> None:
    stack = ROOT / "tests" / "fixtures" / "stacks" / "minimal-dev.yaml"
    assert render.main(["minimal-dev", "--file", str(stack), "--out", str(tmp_path)]) == 0
    checks = yaml.safe_load((tmp_path / "minimal-dev" / "preflight.json").read_text())
    assert {c["name"] for c in checks} == {"quota", "offerings", "ami-release", "addon-version", "principal", "spot-role"}
    assert all(set(c) == {"name", "path", "result", "message", "inputs"} for c in checks)


def test_the_program_stops_before_registering_anything(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pulumi

    from offline import mocks

    monitors: list[mocks.RecordingMonitor] = []

    class Kept(mocks.RecordingMonitor):
        def __init__(self, m: mocks.RecordingMocks) -> None:
            super().__init__(m)
            monitors.append(self)

    monkeypatch.setattr(harness, "RecordingMonitor", Kept)
    inp = fixture_input(DEV)
    inp.account = _account_file(tmp_path, spotServiceLinkedRole=False)
    with pytest.raises(pulumi.RunError) as info:
        harness.run(inp)
    assert str(info.value).startswith("Preflight against the account failed.")
    assert "AWSServiceRoleForEC2Spot" in str(info.value)
    assert len(monitors) == 1
    assert monitors[0].registrations == []  # not one resource: the stack stays as it was


ACCOUNTS = ROOT / "tests" / "fixtures" / "accounts"
ADMIN = "arn:aws:sts::123456789012:assumed-role/platform-admin/alice"
DEPLOY = "arn:aws:sts::123456789012:assumed-role/llm-platform-deploy/gha-run-1"
OTHER = "arn:aws:sts::123456789012:assumed-role/developer/bob"


def _fixture_account(tmp_path: Path, name: str) -> Path:
    """An account fixture (tests/fixtures/accounts: the keys that differ) over the default answers."""
    return _account_file(tmp_path, **yaml.safe_load((ACCOUNTS / f"{name}.yaml").read_text()))


@pytest.mark.parametrize(
    ("caller", "exists", "result"),
    [
        (DEPLOY, False, "ok"),
        (ADMIN, False, "failed"),  # the 409 of its own entry after the cluster exists
        (OTHER, False, "failed"),
        (DEPLOY, True, "ok"),
        (ADMIN, True, "ok"),
        (OTHER, True, "failed"),
        (ADMIN, None, "ok"),  # not read: judged as a later up
        ("arn:aws:iam::123456789012:user/carol", None, "failed"),
    ],
)
def test_the_first_up_runs_as_the_deploy_role_and_later_ones_as_it_or_an_admin(caller: str, exists: bool | None, result: str) -> None:
    cfg = parse(stack_data(PROD))
    answers = _answers(caller=caller, clusterExists=exists)
    (check,) = [c for c in preflight.run(cfg, answers, authoritative=False) if c.name == "caller"]
    assert check.result == result
    if result == "failed" and exists is False:
        assert "does not exist yet" in check.message
        assert "Fix: run the first pulumi up as the deploy role arn:aws:iam::123456789012:role/llm-platform-deploy" in check.message
    elif result == "failed":
        assert "creator-admin" in check.message
        assert "Fix: run as the deploy role" in check.message


def test_without_a_deploy_role_the_first_up_runs_as_a_principal_the_stack_does_not_declare() -> None:
    cfg = parse(stack_data(DEV))
    assert cfg.cluster.deploy_role_arn is None
    declared = cfg.cluster.admin_role_arns[0].replace(":iam::", ":sts::").replace(":role/", ":assumed-role/") + "/alice"

    def result(caller: str, exists: bool) -> str:
        (check,) = [c for c in preflight.run(cfg, _answers(caller=caller, clusterExists=exists), authoritative=False) if c.name == "caller"]
        return check.result

    assert (result(OTHER, False), result(declared, False)) == ("ok", "failed")
    # later: an admin is fine; an undeclared caller only if it created the cluster, which preflight cannot see
    assert (result(declared, True), result(OTHER, True)) == ("ok", "warning")


def test_clusteradmin_through_access_counts_as_an_admin() -> None:
    data = stack_data(PROD)
    data["cluster"]["access"] = [{"principalArn": "arn:aws:iam::123456789012:role/developer", "policy": "ClusterAdmin"}]
    (check,) = [
        c for c in preflight.run(parse(data), _answers(caller=OTHER, clusterExists=True), authoritative=False) if c.name == "caller"
    ]
    assert check.result == "ok"


@pytest.mark.parametrize(
    ("stack", "fixture", "code", "needles"),
    [
        ("full-prod", "first-run-as-admin", 2, ("does not exist yet", "409", "llm-platform-deploy")),
        ("full-prod", "first-run-as-deploy-role", 0, ()),
        ("scale-to-zero-dev", "zero-gpu-quota", 2, ("No replica of llama-3-1-8b can ever start", "L-DB2E81BA or L-3819A6DF")),
    ],
)
def test_the_account_fixtures_render_or_stop_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], stack: str, fixture: str, code: int, needles: tuple[str, ...]
) -> None:
    path = _fixture_account(tmp_path, fixture)
    out = tmp_path / "build"
    file = ROOT / "tests" / "fixtures" / "stacks" / f"{stack}.yaml"
    assert render.main([stack, "--file", str(file), "--account", str(path), "--out", str(out)]) == code
    err = capsys.readouterr().err
    for needle in needles:
        assert needle in err
    assert "Traceback" not in err


def test_the_caller_is_not_checked_without_an_answer() -> None:
    cfg = parse(stack_data(PROD))
    answers = account.load(ROOT / "offline" / "account.yaml").model_copy(update={"region": cfg.region})
    assert [c for c in preflight.run(cfg, answers, authoritative=False) if c.name == "caller"] == []
