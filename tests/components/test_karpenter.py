"""Karpenter: IAM equal to the upstream template, interruption wiring, NodePools valid against the CRDs."""

from __future__ import annotations

import json

import pytest
from parliament import analyze_policy_string

from builders.karpenter import iam, nodepools
from config.derived import state
from config.facts import karpenter_cel
from config.facts.conventions import NODE_ROLE_POLICIES
from offline import harness
from tests.conftest import DEV, FIXTURES, fixture_input, fixture_run, parse, shared_path, stack_data, values
from tests.support.karpenter import NODE_ROLE, QUEUE, SCOPE, upstream_karpenter, upstream_names
from tests.validators import cloudformation, crds, helm_values

NODEPOOL = "kubernetes:karpenter.sh/v1:NodePool"
NODECLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"


# -- IAM ------------------------------------------------------------------------------------------


def test_controller_policies_equal_the_upstream_template() -> None:
    upstream = cloudformation.policy_documents(upstream_karpenter(), upstream_names())
    ours = iam.controller_policies(SCOPE, NODE_ROLE, QUEUE)
    assert sorted(upstream) == sorted(f"{stem}Policy" for stem in ours)
    for stem, document in ours.items():
        assert cloudformation.normalize(document) == cloudformation.normalize(upstream[f"{stem}Policy"]), stem


def test_node_role_matches_the_upstream_template() -> None:
    role = upstream_karpenter()["Resources"]["KarpenterNodeRole"]["Properties"]
    upstream_policies = sorted(cloudformation.substitute(p["Sub"], upstream_names()) for p in role["ManagedPolicyArns"])
    assert upstream_policies == sorted(f"arn:aws:iam::aws:policy/{p}" for p in NODE_ROLE_POLICIES)
    principal = role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"]["Service"]
    assert cloudformation.substitute(principal["Sub"], upstream_names()) == "ec2.amazonaws.com"


def test_queue_and_rules_match_the_upstream_template() -> None:
    resources = upstream_karpenter()["Resources"]
    queue = resources["KarpenterInterruptionQueue"]["Properties"]
    assert queue["MessageRetentionPeriod"] == iam.QUEUE_RETENTION_SECONDS
    assert queue["SqsManagedSseEnabled"] is True
    upstream_policy = resources["KarpenterInterruptionQueuePolicy"]["Properties"]["PolicyDocument"]
    upstream_policy = json.loads(json.dumps(upstream_policy).replace('{"GetAtt": "KarpenterInterruptionQueue.Arn"}', json.dumps(QUEUE)))
    ours = iam.queue_policy(QUEUE)
    assert ours.pop("Version") == "2012-10-17"  # the one addition: the current policy language version
    assert cloudformation.normalize(ours) == cloudformation.normalize(upstream_policy)
    upstream_patterns = sorted(
        json.dumps(r["Properties"]["EventPattern"], sort_keys=True) for r in resources.values() if r["Type"] == "AWS::Events::Rule"
    )
    ours = sorted(json.dumps(iam.event_pattern(source, detail), sort_keys=True) for _, source, detail in iam.INTERRUPTION_RULES)
    assert ours == upstream_patterns
    assert len(ours) == 5


# Findings parliament reports on the upstream design itself, each checked by hand:
KNOWN_PARLIAMENT_FINDINGS = {
    # RunInstances/CreateFleet need several resource types; upstream spreads them over three
    # statements (each with its own conditions), and parliament judges statements one at a time.
    ("NodeLifecycle", "RESOURCE_MISMATCH"): 3,
    # Public SSM parameters (/aws/service/...) have no account in their ARN; parliament's
    # format expects one.
    ("ResourceDiscovery", "RESOURCE_MISMATCH"): 1,
    # GetManagedResource has no resource-level permission; upstream scopes it by condition.
    ("ZonalShift", "RESOURCE_STAR"): 1,
}


def test_parliament_finds_nothing_beyond_the_known_upstream_patterns() -> None:
    documents = iam.controller_policies(SCOPE, NODE_ROLE, QUEUE)
    documents["Queue"] = iam.queue_policy(QUEUE)
    found: dict[tuple[str, str], int] = {}
    for name, document in documents.items():
        for finding in analyze_policy_string(json.dumps(document)).findings:
            found[(name, finding.issue)] = found.get((name, finding.issue), 0) + 1
    assert found == KNOWN_PARLIAMENT_FINDINGS


def test_rendered_policies_are_the_builder_output(prod_run: harness.RunResult) -> None:
    policies = {
        r.name: json.loads(values(r)["policy"]) for r in prod_run.of_type("aws:iam/policy:Policy") if r.name.startswith("karpenter-")
    }
    node_role = prod_run.one("aws:iam/role:Role", "karpenter-node")
    queue = prod_run.one("aws:sqs/queue:Queue")
    expected = iam.controller_policies(
        SCOPE, f"arn:aws:iam::123456789012:role/{node_role.id}", f"arn:aws:sqs:us-east-1:123456789012:{values(queue)['name']}"
    )
    policies_by_stem = {name.removeprefix("karpenter-"): doc for name, doc in policies.items()}
    assert policies_by_stem == {k.lower(): v for k, v in expected.items()}
    controller = prod_run.one("aws:iam/role:Role", "karpenter-controller")
    policy_arns = sorted(
        f"arn:aws:iam::123456789012:policy/{r.id}" for r in prod_run.of_type("aws:iam/policy:Policy") if r.name.startswith("karpenter-")
    )
    attached = sorted(
        values(a)["policyArn"]
        for a in prod_run.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
        if a.name.removeprefix("karpenter-") in policies_by_stem
    )
    assert attached == policy_arns
    assert len(attached) == 6
    (statement,) = json.loads(values(controller)["assumeRolePolicy"])["Statement"]
    assert statement["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    # the association's cluster, namespace and service account, and no other
    assert statement["Condition"] == {
        "StringEquals": {
            "aws:RequestTag/eks-cluster-name": "llm-prod",
            "aws:RequestTag/kubernetes-namespace": "kube-system",
            "aws:RequestTag/kubernetes-service-account": "karpenter",
        }
    }


def test_pod_identity_association(prod_run: harness.RunResult) -> None:
    association = values(prod_run.one("aws:eks/podIdentityAssociation:PodIdentityAssociation", "karpenter-controller"))
    controller = prod_run.one("aws:iam/role:Role", "karpenter-controller")
    assert association == {
        "clusterName": "llm-prod",
        "namespace": "kube-system",
        "serviceAccount": "karpenter",
        "roleArn": f"arn:aws:iam::123456789012:role/{controller.id}",
        "tags": association["tags"],
    }


def test_irsa_option_annotates_the_service_account_and_scopes_the_trust() -> None:
    run = harness.run(fixture_input(DEV, overrides={"llm-platform:karpenter": {"identity": "irsa"}}))
    assert [r.name for r in run.of_type("aws:eks/podIdentityAssociation:PodIdentityAssociation") if r.name.startswith("karpenter")] == []
    trust = json.loads(values(run.one("aws:iam/role:Role", "karpenter-controller"))["assumeRolePolicy"])
    condition = trust["Statement"][0]["Condition"]["StringEquals"]
    issuer = next(iter(condition)).rsplit(":", 1)[0]
    assert condition == {f"{issuer}:sub": "system:serviceaccount:kube-system:karpenter", f"{issuer}:aud": "sts.amazonaws.com"}
    release = values(run.one("kubernetes:helm.sh/v3:Release", "karpenter-release"))
    assert release["values"]["serviceAccount"]["annotations"]["eks.amazonaws.com/role-arn"].startswith("arn:aws:iam::123456789012:role/")


def test_node_role_access_entry_is_ec2_linux(prod_run: harness.RunResult) -> None:
    entry = values(prod_run.one("aws:eks/accessEntry:AccessEntry"))
    node_role = prod_run.one("aws:iam/role:Role", "karpenter-node")
    assert entry["type"] == "EC2_LINUX"
    assert entry["principalArn"] == f"arn:aws:iam::123456789012:role/{node_role.id}"
    assert "kubernetesGroups" not in entry


# -- interruption handling --------------------------------------------------------------------------


def test_interruption_queue_rules_and_wiring(prod_run: harness.RunResult) -> None:
    queue = values(prod_run.one("aws:sqs/queue:Queue"))
    assert queue["name"] == "llm-prod"
    assert queue["messageRetentionSeconds"] == 300
    assert queue["sqsManagedSseEnabled"] is True
    queue_arn = "arn:aws:sqs:us-east-1:123456789012:llm-prod"
    assert json.loads(values(prod_run.one("aws:sqs/queuePolicy:QueuePolicy"))["policy"]) == iam.queue_policy(queue_arn)
    rules = {r.name: json.loads(values(r)["eventPattern"]) for r in prod_run.of_type("aws:cloudwatch/eventRule:EventRule")}
    assert rules == {
        "karpenter-scheduled-change": {"source": ["aws.health"], "detail-type": ["AWS Health Event"]},
        "karpenter-spot-interruption": {"source": ["aws.ec2"], "detail-type": ["EC2 Spot Instance Interruption Warning"]},
        "karpenter-rebalance": {"source": ["aws.ec2"], "detail-type": ["EC2 Instance Rebalance Recommendation"]},
        "karpenter-instance-state-change": {"source": ["aws.ec2"], "detail-type": ["EC2 Instance State-change Notification"]},
        "karpenter-capacity-reservation-interruption": {
            "source": ["aws.ec2"],
            "detail-type": ["EC2 Capacity Reservation Instance Interruption Warning"],
        },
    }
    targets = [values(t) for t in prod_run.of_type("aws:cloudwatch/eventTarget:EventTarget")]
    assert len(targets) == 5
    assert {t["arn"] for t in targets} == {queue_arn}
    assert {t["targetId"] for t in targets} == {"KarpenterInterruptionQueueTarget"}


def test_the_fixtures_exercise_spot() -> None:
    without = [s for s in FIXTURES if not any("spot" in p.capacity_types for p in parse(stack_data(s)).gpu_pools)]
    # the multi-node fixture keeps its groups on demand: a spot interruption of one node restarts the whole group
    assert without == ["multi-node-405b"]


@pytest.mark.parametrize("stack", FIXTURES)
def test_the_interruption_queue_is_always_wired(stack: str) -> None:
    run = fixture_run(stack)
    settings = values(run.one("kubernetes:helm.sh/v3:Release", "karpenter-release"))["values"]["settings"]
    name = parse(stack_data(stack)).cluster.name
    assert settings["interruptionQueue"] == values(run.one("aws:sqs/queue:Queue"))["name"] == name
    assert settings["clusterName"] == name


# -- the release ---------------------------------------------------------------------------------------


def test_release(prod_run: harness.RunResult) -> None:
    release = values(prod_run.one("kubernetes:helm.sh/v3:Release", "karpenter-release"))
    assert release["name"] == "karpenter"
    assert release["chart"] == "oci://public.ecr.aws/karpenter/karpenter"
    assert release["version"] == "1.14.1"
    assert release["namespace"] == "kube-system"
    assert release["values"]["replicas"] == 2
    assert release["values"]["nodeSelector"] == {"kubernetes.io/os": "linux", "llm-platform.io/node-role": "system"}
    controller = release["values"]["controller"]["resources"]
    assert controller["requests"] == controller["limits"]


def test_values_keys_exist_upstream(dev_run: harness.RunResult, prod_run: harness.RunResult) -> None:
    upstream = helm_values.load(shared_path("helm-values", "karpenter-1.14.1.values.yaml"))
    for run in (dev_run, prod_run):
        assert helm_values.unknown_keys(values(run.one("kubernetes:helm.sh/v3:Release", "karpenter-release"))["values"], upstream) == []


def test_values_key_check_catches_a_typo() -> None:
    upstream = helm_values.load(shared_path("helm-values", "karpenter-1.14.1.values.yaml"))
    assert helm_values.unknown_keys({"settings": {"interuptionQueue": "q"}, "replicaCount": 2}, upstream) == [
        "settings.interuptionQueue",
        "replicaCount",
    ]


def test_custom_resources_depend_on_the_release(prod_run: harness.RunResult) -> None:
    for r in prod_run.of_type(NODEPOOL) + prod_run.of_type(NODECLASS):
        assert "kubernetes:helm.sh/v3:Release::karpenter-release" in r.dependencies, r.name
        assert r.provider == "pulumi:providers:kubernetes::cluster-k8s"


# -- NodePools and EC2NodeClasses ---------------------------------------------------------------------


@pytest.mark.parametrize("stack", FIXTURES)
def test_manifests_validate_against_the_upstream_crds(stack: str) -> None:
    run = fixture_run(stack)
    nodepool_crd = shared_path("crds", "karpenter.sh_nodepools.yaml")
    nodeclass_crd = shared_path("crds", "karpenter.k8s.aws_ec2nodeclasses.yaml")
    pools = run.of_type(NODEPOOL)
    assert len(pools) == len(parse(stack_data(stack)).gpu_pools)
    for r in pools:
        assert crds.errors(values(r), nodepool_crd) == [], r.name
        assert karpenter_cel.nodepool_problems(values(r)) == [], r.name
    for r in run.of_type(NODECLASS):
        assert crds.errors(values(r), nodeclass_crd) == [], r.name
        assert karpenter_cel.ec2nodeclass_problems(values(r)) == [], r.name


def test_crd_validation_catches_v1beta1_shapes() -> None:
    crd = shared_path("crds", "karpenter.sh_nodepools.yaml")
    cfg = parse(stack_data(DEV))
    pool = nodepools.node_pool(cfg.gpu_pools[0], state.of(cfg).pool(cfg.gpu_pools[0].name))
    pool["spec"]["disruption"]["consolidationPolicy"] = "WhenUnderutilized"
    pool["spec"]["template"]["spec"]["nodeClassRef"] = {"apiVersion": "karpenter.k8s.aws/v1beta1", "name": "x"}
    found = crds.errors(pool, crd)
    assert (
        "spec.disruption.consolidationPolicy: 'WhenUnderutilized' is not one of ['WhenEmpty', 'WhenEmptyOrUnderutilized', 'Balanced']"
        in found
    )
    assert any(e.startswith("spec.template.spec.nodeClassRef: 'group' is a required property") for e in found)


def test_cel_checks_catch_what_jsonschema_misses() -> None:
    cfg = parse(stack_data(DEV))
    node_class = nodepools.ec2_node_class("al2023", cfg.karpenter, "role", [{"tags": {"a": "b"}}], [{"tags": {"a": "b"}}], {})
    both = {**node_class, "spec": {**node_class["spec"], "instanceProfile": "profile"}}
    assert karpenter_cel.ec2nodeclass_problems(both) == ["must specify exactly one of ['role', 'instanceProfile']"]
    neither = {**node_class, "spec": {k: v for k, v in node_class["spec"].items() if k != "role"}}
    assert karpenter_cel.ec2nodeclass_problems(neither) == ["must specify exactly one of ['role', 'instanceProfile']"]
    bad_alias = {**node_class, "spec": {**node_class["spec"], "amiSelectorTerms": [{"alias": "al2023"}]}}
    assert karpenter_cel.ec2nodeclass_problems(bad_alias) == ["'alias' is improperly formatted, must match the format 'family@version'"]
    pool = nodepools.node_pool(cfg.gpu_pools[0], state.of(cfg).pool(cfg.gpu_pools[0].name))
    pool["spec"]["template"]["spec"]["requirements"].append(
        {"key": "karpenter.k8s.aws/instance-gpu-memory", "operator": "Gt", "values": ["1", "2"]}
    )
    pool["spec"]["template"]["metadata"]["labels"]["karpenter.sh/nodepool"] = "x"
    assert karpenter_cel.nodepool_problems(pool) == [
        'label "karpenter.sh/nodepool" is restricted',
        "requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value",
    ]


def test_dev_nodepool_exactly(dev_run: harness.RunResult) -> None:
    pool = values(dev_run.one(NODEPOOL))
    assert pool == {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "gpu-l4-a10g"},
        "spec": {
            "template": {
                "metadata": {"labels": {"llm-platform.io/gpu-pool": "gpu-l4-a10g", "llm-platform.io/gpu-sharing": "none"}},
                "spec": {
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu-al2023"},
                    "requirements": [
                        {
                            "key": "node.kubernetes.io/instance-type",
                            "operator": "In",
                            "values": ["g6.xlarge", "g6.2xlarge", "g5.xlarge", "g5.2xlarge"],
                        },
                        {"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": ["a10g", "l4"]},
                        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]},
                        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                        {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
                    ],
                    "taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}],
                    "expireAfter": "720h",
                    "terminationGracePeriod": "1h",
                },
            },
            "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "10m", "budgets": [{"nodes": "1"}]},
            "limits": {"nvidia.com/gpu": "4"},
        },
    }


def test_sharing_pools_label_their_nodes_for_the_gpu_operator(prod_run: harness.RunResult) -> None:
    labels = {r.name: values(r)["spec"]["template"]["metadata"]["labels"] for r in prod_run.of_type(NODEPOOL)}
    assert labels["karpenter-gpu-a100-mig"] == {
        "llm-platform.io/gpu-pool": "gpu-a100-mig",
        "llm-platform.io/gpu-sharing": "mig",
        "nvidia.com/gpu.deploy.mig-manager": "false",
    }
    assert labels["karpenter-gpu-l40s-shared"] == {
        "llm-platform.io/gpu-pool": "gpu-l40s-shared",
        "llm-platform.io/gpu-sharing": "time-slicing",
        "nvidia.com/device-plugin.config": "gpu-l40s-shared",
    }


def test_family_pool_requirements(prod_run: harness.RunResult) -> None:
    pool = values(prod_run.one(NODEPOOL, "karpenter-gpu-l4-a10g"))
    assert pool["spec"]["template"]["spec"]["requirements"][:3] == [
        {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["g6", "g5"]},
        {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "In", "values": ["1"]},
        {"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": ["a10g", "l4"]},
    ]


def test_ec2_node_class(prod_run: harness.RunResult) -> None:
    node_class = values(prod_run.one(NODECLASS, "karpenter-gpu-al2023"))
    node_role = prod_run.one("aws:iam/role:Role", "karpenter-node")
    spec = node_class["spec"]
    assert spec["amiSelectorTerms"] == [{"alias": "al2023@v20260930"}]
    assert spec["role"] == node_role.id
    assert spec["subnetSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "llm-prod"}}]
    assert spec["securityGroupSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "llm-prod"}}]
    assert spec["metadataOptions"] == {
        "httpEndpoint": "enabled",
        "httpProtocolIPv6": "disabled",
        "httpPutResponseHopLimit": 1,
        "httpTokens": "required",
    }
    assert spec["blockDeviceMappings"] == [
        {
            "deviceName": "/dev/xvda",
            "rootVolume": True,
            "ebs": {
                "volumeType": "gp3",
                "encrypted": True,
                "deleteOnTermination": True,
                "iops": 4000,
                "throughput": 1000,
                "volumeSize": "200Gi",
            },
        }
    ]
    assert spec["instanceStorePolicy"] == "RAID0"
    tag = values(prod_run.one("aws:ec2/tag:Tag"))
    assert tag["key"] == "karpenter.sh/discovery"
    assert tag["value"] == "llm-prod"
    assert tag["resourceId"].startswith("sg-")


def test_bottlerocket_node_class_has_a_data_volume() -> None:
    cfg = parse(stack_data(DEV))
    node_class = nodepools.ec2_node_class("bottlerocket", cfg.karpenter, "role", [], [], {})
    assert node_class["spec"]["amiSelectorTerms"] == [{"alias": "bottlerocket@v1.65.0"}]
    assert [d["deviceName"] for d in node_class["spec"]["blockDeviceMappings"]] == ["/dev/xvda", "/dev/xvdb"]
    assert node_class["spec"]["blockDeviceMappings"][1]["ebs"]["volumeSize"] == "200Gi"


def test_existing_vpc_selects_subnets_by_id(dev_in_an_existing_vpc_run: harness.RunResult) -> None:
    assert values(dev_in_an_existing_vpc_run.one(NODECLASS))["spec"]["subnetSelectorTerms"] == [
        {"id": "subnet-0123456789abcdef0"},
        {"id": "subnet-0123456789abcdef1"},
    ]
