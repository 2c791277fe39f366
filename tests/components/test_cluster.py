"""Cluster: every security-relevant input, exactly; add-on order; the Kubernetes provider."""

from __future__ import annotations

import json

import kubernetes_validate
import pytest

from builders import cluster as builders
from config.facts import versions
from offline import harness
from tests.conftest import FIXTURES, PROD, fixture_input, fixture_run, parse, stack_data, values

EKS = "eks:index:Cluster"
ADDON = "aws:eks/addon:Addon"


def test_dev_endpoint_is_restricted_and_private_is_on(dev_run: harness.RunResult) -> None:
    cluster = values(dev_run.one(EKS))
    assert cluster["endpointPrivateAccess"] is True
    assert cluster["endpointPublicAccess"] is True
    assert cluster["publicAccessCidrs"] == ["203.0.113.0/24"]


def test_prod_endpoint_is_private_only(prod_run: harness.RunResult) -> None:
    cluster = values(prod_run.one(EKS))
    assert cluster["endpointPrivateAccess"] is True
    assert cluster["endpointPublicAccess"] is False
    assert "publicAccessCidrs" not in cluster


@pytest.mark.parametrize("stack", FIXTURES)
def test_cluster_security_inputs(stack: str) -> None:
    run = fixture_run(stack)
    cluster = values(run.one(EKS))
    key = run.one("aws:kms/key:Key")
    cfg = parse(stack_data(stack))
    assert cluster["name"] == cfg.cluster.name
    assert cluster["version"] == "1.35"
    assert cluster["authenticationMode"] == "API"
    assert cluster["encryptionConfigKeyArn"] == f"arn:aws:kms:{cfg.region}:123456789012:key/{key.id}"
    assert cluster["enabledClusterLogTypes"] == ["api", "audit", "authenticator", "controllerManager", "scheduler"]
    assert cluster["skipDefaultNodeGroup"] is True
    assert cluster["bootstrapSelfManagedAddons"] is False
    assert cluster["useDefaultVpcCni"] is True
    assert cluster["corednsAddonOptions"]["enabled"] is False
    assert cluster["kubeProxyAddonOptions"]["enabled"] is False
    assert cluster["createOidcProvider"] is True
    assert cluster["nodeAssociatePublicIpAddress"] is False
    # control-plane ENIs only in private subnets: the cluster is given no public subnet
    assert "publicSubnetIds" not in cluster
    assert "subnetIds" not in cluster
    assert cluster["deletionProtection"] is (cfg.environment == "prod")
    assert "aws:cloudwatch/logGroup:LogGroup::cluster-logs" in run.one(EKS).dependencies


def test_access_entries(prod_run: harness.RunResult) -> None:
    assert values(prod_run.one(EKS))["accessEntries"] == {
        "admin-platform-admin": {
            "principalArn": "arn:aws:iam::123456789012:role/platform-admin",
            "type": "STANDARD",
            "accessPolicies": {
                "policy": {
                    "policyArn": "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy",
                    "accessScope": {"type": "cluster"},
                }
            },
        },
        # no entry for the deploy role: EKS gives the cluster's creator one of its own
        "access-ml-oncall": {
            "principalArn": "arn:aws:iam::123456789012:role/ml-oncall",
            "type": "STANDARD",
            "accessPolicies": {
                "policy": {
                    "policyArn": "arn:aws:eks::aws:cluster-access-policy/AmazonEKSViewPolicy",
                    "accessScope": {"type": "cluster"},
                }
            },
        },
    }


def test_namespace_scoped_grant() -> None:
    data = stack_data(PROD)
    data["cluster"]["access"] = [{"principalArn": "arn:aws:iam::123456789012:role/team-a", "policy": "Edit", "namespaces": ["team-a"]}]
    entries = builders.access_entries(parse(data).cluster)
    assert entries[-1] == builders.AccessEntrySpec(
        "access-team-a",
        "arn:aws:iam::123456789012:role/team-a",
        (builders.PolicySpec("policy", "arn:aws:eks::aws:cluster-access-policy/AmazonEKSEditPolicy", "namespace", ("team-a",)),),
    )


def test_one_principal_with_several_policies_is_one_entry_with_several_associations() -> None:
    data = stack_data(PROD)
    data["cluster"]["access"] = [
        {
            "principalArn": "arn:aws:iam::123456789012:role/team-a",
            "policies": [{"policy": "View"}, {"policy": "Edit", "namespaces": ["team-a"]}],
        }
    ]
    (entry,) = [e for e in builders.access_entries(parse(data).cluster) if e.key == "access-team-a"]
    policy = "arn:aws:eks::aws:cluster-access-policy/AmazonEKS{}Policy".format
    assert entry.policies == (
        builders.PolicySpec("policy", policy("View"), "cluster"),
        builders.PolicySpec("policy-edit", policy("Edit"), "namespace", ("team-a",)),
    )


def test_two_principals_of_one_name_keep_two_entries_and_the_last_keeps_its_name() -> None:
    """Roles of one name in two accounts: before, one key (the last grant kept it); now each has its own entry,
    and the one that existed keeps its name (a renamed entry would be replaced: EKS refuses the new one, 409)."""
    data = stack_data(PROD)
    data["cluster"]["access"] = [
        {"principalArn": "arn:aws:iam::111111111111:role/ops", "policy": "View"},
        {"principalArn": "arn:aws:iam::222222222222:role/ops", "policy": "View"},
    ]
    keys = [(e.key, e.principal_arn.split(":")[4]) for e in builders.access_entries(parse(data).cluster) if "ops" in e.key]
    assert keys == [("access-ops-111111111111", "111111111111"), ("access-ops", "222222222222")]


def test_secrets_key_rotates_and_has_no_wildcard_principal(prod_run: harness.RunResult) -> None:
    key = values(prod_run.one("aws:kms/key:Key"))
    assert key["enableKeyRotation"] is True
    assert key["deletionWindowInDays"] == 30
    policy = json.loads(key["policy"])
    principals = [s["Principal"] for s in policy["Statement"]]
    assert principals == [{"AWS": "arn:aws:iam::123456789012:root"}, {"Service": "logs.us-east-1.amazonaws.com"}]
    logs = policy["Statement"][1]
    assert logs["Condition"] == {
        "ArnEquals": {"kms:EncryptionContext:aws:logs:arn": "arn:aws:logs:us-east-1:123456789012:log-group:/aws/eks/llm-prod/cluster"}
    }
    assert not any(a in ("kms:*", "kms:CreateGrant", "kms:PutKeyPolicy") for a in logs["Action"])


def test_control_plane_logs_are_retained_and_encrypted_with_the_cluster_key(prod_run: harness.RunResult) -> None:
    group = values(prod_run.one("aws:cloudwatch/logGroup:LogGroup"))
    key = prod_run.one("aws:kms/key:Key")
    assert group["name"] == "/aws/eks/llm-prod/cluster"
    assert group["retentionInDays"] == 90
    assert group["kmsKeyId"] == f"arn:aws:kms:us-east-1:123456789012:key/{key.id}"


def test_system_nodes_require_imdsv2_with_hop_limit_1(prod_run: harness.RunResult) -> None:
    template = values(prod_run.one("aws:ec2/launchTemplate:LaunchTemplate"))
    assert template["metadataOptions"] == {
        "httpEndpoint": "enabled",
        "httpTokens": "required",
        "httpPutResponseHopLimit": 1,
        "instanceMetadataTags": "disabled",
    }
    assert template["blockDeviceMappings"] == [
        {"deviceName": "/dev/xvda", "ebs": {"volumeSize": 50, "volumeType": "gp3", "encrypted": "true", "deleteOnTermination": "true"}}
    ]


def test_system_node_group(prod_run: harness.RunResult) -> None:
    group = prod_run.one("aws:eks/nodeGroup:NodeGroup")
    inputs = values(group)
    template = prod_run.one("aws:ec2/launchTemplate:LaunchTemplate")
    assert inputs["capacityType"] == "ON_DEMAND"
    assert inputs["amiType"] == "AL2023_x86_64_STANDARD"
    assert inputs["instanceTypes"] == ["m7i.xlarge"]
    assert inputs["scalingConfig"] == {"minSize": 3, "desiredSize": 3, "maxSize": 5}
    assert inputs["launchTemplate"] == {"id": template.id, "version": "1"}
    assert inputs["labels"] == {"llm-platform.io/node-role": "system"}
    assert inputs["subnetIds"] == prod_run.outputs["privateSubnetIds"]
    role_policies = sorted(
        values(a)["policyArn"] for a in prod_run.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment") if "system-nodes" in a.name
    )
    assert role_policies == [
        "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryPullOnly",
        "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
        "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
        "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore",
    ]


def test_addons_are_pinned_and_configured(prod_run: harness.RunResult) -> None:
    addons = {values(a)["addonName"]: values(a) for a in prod_run.of_type(ADDON)}
    assert {n: a["addonVersion"] for n, a in addons.items()} == versions.EKS_ADDON_VERSIONS
    # kube-proxy must match the cluster's minor version, and every supported version is covered
    cluster_version = values(prod_run.one(EKS))["version"]
    assert addons["kube-proxy"]["addonVersion"].startswith(f"v{cluster_version}.")
    assert all(addons["kube-proxy"]["addonVersion"].startswith(f"v{v}.") for v in versions.KUBERNETES_VERSIONS)
    assert json.loads(addons["vpc-cni"]["configurationValues"]) == {"enableNetworkPolicy": "true"}
    assert all(a["clusterName"] == "llm-prod" for a in addons.values())
    assert all(a["resolveConflictsOnCreate"] == "OVERWRITE" for a in addons.values())


def test_addon_order_networking_before_nodes_coredns_after(prod_run: harness.RunResult) -> None:
    nodes = prod_run.one("aws:eks/nodeGroup:NodeGroup")
    for name in ("vpc-cni", "kube-proxy", "eks-pod-identity-agent"):
        assert f"{ADDON}::cluster-{name}" in nodes.dependencies
    for name in ("coredns", "aws-ebs-csi-driver"):
        assert "aws:eks/nodeGroup:NodeGroup::cluster-system" in prod_run.one(ADDON, f"cluster-{name}").dependencies


def test_ebs_csi_driver_uses_pod_identity(prod_run: harness.RunResult) -> None:
    role = prod_run.one("aws:iam/role:Role", "cluster-ebs-csi")
    # only the add-on's controller service account, in kube-system, on this cluster (the name eks.Cluster got)
    assert values(prod_run.one("eks:index:Cluster"))["name"] == "llm-prod"
    assert json.loads(values(role)["assumeRolePolicy"]) == {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "pods.eks.amazonaws.com"},
                "Action": ["sts:AssumeRole", "sts:TagSession"],
                "Condition": {
                    "StringEquals": {
                        "aws:RequestTag/eks-cluster-name": "llm-prod",
                        "aws:RequestTag/kubernetes-namespace": "kube-system",
                        "aws:RequestTag/kubernetes-service-account": "ebs-csi-controller-sa",
                    }
                },
            }
        ],
    }
    attachment = values(prod_run.one("aws:iam/rolePolicyAttachment:RolePolicyAttachment", "cluster-ebs-csi"))
    assert attachment["policyArn"] == "arn:aws:iam::aws:policy/service-role/AmazonEBSCSIDriverPolicy"
    addon = values(prod_run.one(ADDON, "cluster-aws-ebs-csi-driver"))
    assert addon["podIdentityAssociations"] == [
        {"roleArn": f"arn:aws:iam::123456789012:role/{role.id}", "serviceAccount": "ebs-csi-controller-sa"}
    ]


def test_default_storage_class_is_encrypted_gp3(prod_run: harness.RunResult) -> None:
    sc = prod_run.one("kubernetes:storage.k8s.io/v1:StorageClass")
    doc = values(sc)
    assert doc["metadata"]["annotations"] == {"storageclass.kubernetes.io/is-default-class": "true"}
    assert doc["parameters"] == {"type": "gp3", "encrypted": "true", "fsType": "ext4"}
    assert doc["volumeBindingMode"] == "WaitForFirstConsumer"
    assert sc.provider == "pulumi:providers:kubernetes::cluster-k8s"
    kubernetes_validate.validate(doc, "1.35", strict=True)


def test_kubernetes_provider_takes_the_secret_kubeconfig(prod_run: harness.RunResult) -> None:
    provider = prod_run.one("pulumi:providers:kubernetes")
    kubeconfig = json.loads(values(provider)["kubeconfig"])
    assert kubeconfig["current-context"] == "llm-prod"
    assert provider.redacted()["inputs"]["kubeconfig"] == "[secret]"
    assert values(provider)["enableServerSideApply"] == "true"
    assert "kubeconfig" in prod_run.secret_outputs


@pytest.mark.parametrize("stack", FIXTURES)
def test_every_resource_is_parented_under_our_components(stack: str) -> None:
    run = fixture_run(stack)
    for r in run.registrations:
        if r.type.startswith("llmplatform:index:"):
            continue
        assert r.parent is not None, r.ref
        assert r.parent.startswith("llmplatform:index:"), r.ref


def test_outputs(prod_run: harness.RunResult) -> None:
    out = prod_run.outputs
    assert out["region"] == "us-east-1"
    assert out["clusterName"] == "llm-prod"
    assert out["clusterEndpoint"].startswith("https://")
    assert out["clusterEndpoint"].endswith(".gr7.us-east-1.eks.amazonaws.com")
    assert out["oidcProviderArn"].startswith("arn:aws:iam::123456789012:oidc-provider/oidc.eks.us-east-1.amazonaws.com/id/")
    assert out["vpcId"].startswith("vpc-")
    assert len(out["privateSubnetIds"]) == 3


# -- reaching the private endpoint ----------------------------------------------------------------------

RULE = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"


def test_the_deploy_network_may_reach_the_private_endpoint(prod_run: harness.RunResult) -> None:
    cluster_sg = values(prod_run.one(EKS))  # the security group id comes from the cluster lookup
    assert cluster_sg["endpointPublicAccess"] is False
    rule = prod_run.one(RULE)
    assert rule.name == "cluster-api-from-192-0-2-0-24"
    assert rule.parent == "llmplatform:index:Cluster::cluster"
    inputs = values(rule)
    assert {k: inputs[k] for k in ("cidrIpv4", "ipProtocol", "fromPort", "toPort")} == {
        "cidrIpv4": "192.0.2.0/24",
        "ipProtocol": "tcp",
        "fromPort": 443,
        "toPort": 443,
    }
    assert inputs["securityGroupId"].startswith("sg-")


def test_a_runner_security_group_gets_its_own_rule() -> None:
    endpoint = {"private": True, "public": False, "privateAccessSecurityGroupIds": ["sg-0123456789abcdef0"]}
    cluster = {**stack_data(PROD)["cluster"], "endpoint": endpoint}
    run = harness.run(fixture_input(PROD, overrides={"llm-platform:cluster": cluster}))
    rule = run.one(RULE)
    assert rule.name == "cluster-api-from-sg-0123456789abcdef0"
    assert values(rule)["referencedSecurityGroupId"] == "sg-0123456789abcdef0"
    assert "cidrIpv4" not in values(rule)


def test_a_public_endpoint_needs_no_private_rule(dev_run: harness.RunResult) -> None:
    assert dev_run.of_type(RULE) == []


def _expected_scope(namespaces: list[str]) -> dict[str, object]:
    return {"type": "namespace", "namespaces": list(namespaces)} if namespaces else {"type": "cluster"}


@pytest.mark.parametrize("stack", FIXTURES)
def test_every_access_grant_is_rendered_with_its_scope(stack: str) -> None:
    """Each config grant's rendered association has the grant's policy and scope (a namespace grant never
    cluster-wide), each admin role ClusterAdmin on the cluster, and the render has no other entry."""
    cfg = parse(stack_data(stack)).cluster
    rendered = {e["principalArn"]: e for e in (values(fixture_run(stack).one(EKS)).get("accessEntries") or {}).values()}
    expected: dict[str, tuple[str, list[str]]] = {arn: ("ClusterAdmin", []) for arn in cfg.admin_role_arns} | {
        g.principal_arn: (g.policy, g.namespaces) for g in cfg.access
    }
    assert set(rendered) == set(expected)
    for arn, (policy, namespaces) in expected.items():
        (association,) = rendered[arn]["accessPolicies"].values()
        assert association["policyArn"].endswith(f":cluster-access-policy/AmazonEKS{policy}Policy"), arn
        assert association["accessScope"] == _expected_scope(namespaces), arn


def test_a_fixture_renders_a_namespace_scoped_grant() -> None:
    """The scope check above reads a namespace grant on some fixture (else a cluster-wide rendering would pass)."""
    scopes = [
        a["accessScope"]
        for stack in FIXTURES
        for e in (values(fixture_run(stack).one(EKS)).get("accessEntries") or {}).values()
        for a in e["accessPolicies"].values()
    ]
    assert {"type": "namespace", "namespaces": ["qwen-2-5-7b"]} in scopes
