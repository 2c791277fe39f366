"""Pure builders for the EKS cluster: access entries, KMS policy, add-ons, node template."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from builders.iam import policy_document
from config.facts import versions
from config.facts.conventions import eks_access_policy_arn
from config.sections.cluster import ClusterConfig

# AMI type of the system node group (x86_64 AL2023, no GPU).
SYSTEM_NODE_AMI_TYPE = "AL2023_x86_64_STANDARD"


@dataclass(frozen=True)
class PolicySpec:
    """One policy association of an access entry."""

    key: str
    """Its key in the entry's access policies: `policy` for the first (the name every existing stack has),
    `policy-<name>` for the others."""
    policy_arn: str
    scope: Literal["cluster", "namespace"]
    namespaces: tuple[str, ...] = ()


@dataclass(frozen=True)
class AccessEntrySpec:
    """One access entry with its policy associations."""

    key: str
    principal_arn: str
    policies: tuple[PolicySpec, ...]


def _key(prefix: str, arn: str) -> str:
    name = arn.rsplit("/", 1)[-1].lower()
    return f"{prefix}-" + "".join(c if c.isalnum() else "-" for c in name)


def _keys(prefix: str, arns: list[str]) -> list[str]:
    """Entry keys by principal name (the names every existing stack has). Two principals of one name (roles of
    other accounts) would share one: the last keeps it, as before, and the others take their account id."""
    plain = [_key(prefix, arn) for arn in arns]
    return [f"{key}-{arn.split(':')[4]}" if key in plain[i + 1 :] else key for i, (key, arn) in enumerate(zip(plain, arns, strict=True))]


def access_entries(cfg: ClusterConfig, partition: str = "aws") -> list[AccessEntrySpec]:
    """Access entries for the admin roles (cluster admin) and the extra grants, one per principal (the config
    rules refuse a principal named twice)."""
    admin = PolicySpec("policy", eks_access_policy_arn(partition, "ClusterAdmin"), "cluster")
    entries = [
        AccessEntrySpec(key, arn, (admin,)) for key, arn in zip(_keys("admin", cfg.admin_role_arns), cfg.admin_role_arns, strict=True)
    ]
    arns = [g.principal_arn for g in cfg.access]
    for key, grant in zip(_keys("access", arns), cfg.access, strict=True):
        policies = tuple(
            PolicySpec(
                "policy" if i == 0 else f"policy-{g.policy.lower()}",
                eks_access_policy_arn(partition, g.policy),
                "namespace" if g.namespaces else "cluster",
                tuple(g.namespaces),
            )
            for i, g in enumerate(grant.grants())
        )
        entries.append(AccessEntrySpec(key, grant.principal_arn, policies))
    return entries


@dataclass(frozen=True)
class ApiAccessRule:
    """An ingress rule of the cluster security group: who may reach the private API endpoint."""

    key: str
    description: str
    cidr: str | None = None
    security_group_id: str | None = None
    port: int = 443


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")


def api_access_rules(cfg: ClusterConfig) -> list[ApiAccessRule]:
    """The networks and security groups (beyond the cluster itself) that may call the private endpoint."""
    endpoint = cfg.endpoint
    return [
        *(
            ApiAccessRule(f"api-from-{_slug(c)}", f"Kubernetes API (private endpoint) from {c}", cidr=c)
            for c in endpoint.private_access_cidrs
        ),
        *(
            ApiAccessRule(f"api-from-{sg}", f"Kubernetes API (private endpoint) from members of {sg}", security_group_id=sg)
            for sg in endpoint.private_access_security_group_ids
        ),
    ]


def kms_key_policy(account_id: str, partition: str, region: str, log_group: str) -> dict[str, Any]:
    """Key policy of the cluster key: the account administers it through IAM; CloudWatch Logs may use
    it for the control-plane log group only (the encryption-context condition); no wildcard principal.

    One key encrypts both the cluster's Secrets (EKS envelope encryption) and its audit trail."""
    log_group_arn = f"arn:{partition}:logs:{region}:{account_id}:log-group:{log_group}"
    return policy_document(
        {
            "Sid": "AccountAdministersTheKeyThroughIam",
            "Effect": "Allow",
            "Principal": {"AWS": f"arn:{partition}:iam::{account_id}:root"},
            "Action": "kms:*",
            "Resource": "*",
        },
        {
            "Sid": "CloudWatchLogsEncryptsTheControlPlaneLogs",
            "Effect": "Allow",
            "Principal": {"Service": f"logs.{region}.amazonaws.com"},
            "Action": ["kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*"],
            "Resource": "*",
            "Condition": {"ArnEquals": {"kms:EncryptionContext:aws:logs:arn": log_group_arn}},
        },
    )


@dataclass(frozen=True)
class AddonSpec:
    """An EKS managed add-on, pinned."""

    name: str
    version: str
    phase: Literal["before-nodes", "after-nodes"]
    configuration: dict[str, Any] | None = None

    @property
    def configuration_values(self) -> str | None:
        return json.dumps(self.configuration, sort_keys=True) if self.configuration is not None else None


def addons() -> list[AddonSpec]:
    """The managed add-ons: networking first (nodes need a CNI to become Ready), the rest after."""
    v = versions.EKS_ADDON_VERSIONS
    return [
        # Network policy enforcement on: the NetworkPolicies the platform renders are inert without it.
        AddonSpec("vpc-cni", v["vpc-cni"], "before-nodes", {"enableNetworkPolicy": "true"}),
        AddonSpec("kube-proxy", v["kube-proxy"], "before-nodes"),
        AddonSpec("eks-pod-identity-agent", v["eks-pod-identity-agent"], "before-nodes"),
        # CoreDNS is a Deployment: created after the system nodes exist, or it sits DEGRADED.
        AddonSpec("coredns", v["coredns"], "after-nodes"),
        AddonSpec("aws-ebs-csi-driver", v["aws-ebs-csi-driver"], "after-nodes"),
    ]


def system_launch_template(disk_size_gib: int) -> dict[str, Any]:
    """Launch template inputs of the system node group: IMDSv2 only, hop limit 1, encrypted gp3."""
    return {
        "metadata_options": {
            "http_endpoint": "enabled",
            "http_tokens": "required",
            "http_put_response_hop_limit": 1,
            "instance_metadata_tags": "disabled",
        },
        "block_device_mappings": [
            {
                "device_name": "/dev/xvda",
                "ebs": {
                    "volume_size": disk_size_gib,
                    "volume_type": "gp3",
                    "encrypted": "true",
                    "delete_on_termination": "true",
                },
            }
        ],
    }


def gp3_storage_class() -> dict[str, Any]:
    """The default StorageClass: encrypted gp3 through the EBS CSI driver, bound in the pod's AZ."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": "gp3", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
        "provisioner": "ebs.csi.aws.com",
        "parameters": {"type": "gp3", "encrypted": "true", "fsType": "ext4"},
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "WaitForFirstConsumer",
        "allowVolumeExpansion": True,
    }
