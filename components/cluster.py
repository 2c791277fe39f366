"""Cluster: EKS control plane, access entries, secrets encryption, logs, system nodes, add-ons."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_eks as eks
import pulumi_kubernetes as k8s

from builders import cluster as builders
from builders.iam import pod_identity_trust_json
from components.iam import node_role
from config.facts.conventions import (
    EBS_CSI_POLICY,
    EBS_CSI_SERVICE_ACCOUNT,
    KUBE_SYSTEM,
    SYSTEM_NODE_LABEL,
    kms_alias,
    log_group_name,
    managed_policy_arn,
)
from config.sections.cluster import ClusterConfig


@dataclass(frozen=True, kw_only=True)
class ClusterArgs:
    """Inputs of the Cluster component."""

    config: ClusterConfig
    """The `cluster` section of the stack config."""
    deletion_protection: bool
    """EKS deletion protection (resolved from config and environment)."""
    vpc_id: pulumi.Input[str]
    """VPC of the cluster."""
    private_subnet_ids: pulumi.Input[list[str]]
    """Subnets for the control plane ENIs and the nodes."""
    region: str
    """AWS region: CloudWatch Logs' service principal in the key policy."""
    tags: dict[str, str]
    """Tags for every AWS resource."""


class Cluster(pulumi.ComponentResource):
    """An EKS cluster in API authentication mode with a system node group and pinned add-ons."""

    cluster_name: pulumi.Output[str]
    endpoint: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]
    oidc_provider_arn: pulumi.Output[str]
    oidc_issuer: pulumi.Output[str]
    cluster_security_group_id: pulumi.Output[str]
    provider: k8s.Provider
    system_node_group: aws.eks.NodeGroup
    system_node_role_name: pulumi.Output[str]

    def __init__(self, name: str, args: ClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmplatform:index:Cluster", name, None, opts)
        cfg, tags = args.config, args.tags
        child = pulumi.ResourceOptions(parent=self)
        invoke = pulumi.InvokeOutputOptions(parent=self)
        partition = aws.get_partition_output(opts=invoke).partition
        account = aws.get_caller_identity_output(opts=invoke).account_id

        key = aws.kms.Key(
            f"{name}-secrets",
            description=f"EKS secrets envelope encryption for {cfg.name}",
            enable_key_rotation=True,
            deletion_window_in_days=30,
            policy=pulumi.Output.all(account, partition).apply(
                lambda a: json.dumps(builders.kms_key_policy(a[0], a[1], args.region, log_group_name(cfg.name)))
            ),
            tags=tags,
            opts=child,
        )
        aws.kms.Alias(f"{name}-secrets", name=kms_alias(cfg.name), target_key_id=key.key_id, opts=child)
        # Created before the cluster so the retention and the key apply (EKS would create it with neither).
        logs = aws.cloudwatch.LogGroup(
            f"{name}-logs",
            name=log_group_name(cfg.name),
            retention_in_days=cfg.log_retention_days,
            kms_key_id=key.arn,
            tags=tags,
            opts=child,
        )

        entries = {
            e.key: eks.AccessEntryArgs(
                principal_arn=e.principal_arn,
                type=eks.AccessEntryType.STANDARD,
                access_policies={
                    p.key: eks.AccessPolicyAssociationArgs(
                        policy_arn=p.policy_arn,
                        access_scope=aws.eks.AccessPolicyAssociationAccessScopeArgs(type=p.scope, namespaces=list(p.namespaces) or None),
                    )
                    for p in e.policies
                },
            )
            for e in builders.access_entries(cfg)
        }
        endpoint = cfg.endpoint
        cluster = eks.Cluster(
            f"{name}-eks",
            name=cfg.name,
            version=cfg.kubernetes_version,
            vpc_id=args.vpc_id,
            # Control-plane ENIs only in private subnets (public subnets are for load balancers, which
            # find them by their tags).
            private_subnet_ids=args.private_subnet_ids,
            node_associate_public_ip_address=False,
            endpoint_private_access=endpoint.private,
            endpoint_public_access=endpoint.public,
            public_access_cidrs=list(endpoint.public_cidrs) if endpoint.public else None,
            authentication_mode=eks.AuthenticationMode.API,
            access_entries=entries,
            encryption_config_key_arn=key.arn,
            enabled_cluster_log_types=list(cfg.log_types),
            create_oidc_provider=True,
            deletion_protection=args.deletion_protection,
            skip_default_node_group=True,
            skip_default_security_groups=True,
            # Add-ons are managed below, pinned: no self-managed bootstrap copies, and pulumi-eks
            # must not install its own vpc-cni, kube-proxy or coredns.
            bootstrap_self_managed_addons=False,
            use_default_vpc_cni=True,
            kube_proxy_addon_options=eks.KubeProxyAddonOptionsArgs(enabled=False),
            coredns_addon_options=eks.CoreDnsAddonOptionsArgs(enabled=False),
            storage_classes={},
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[logs]),
        )
        # The name is known up front; deriving it from a cluster output makes dependents wait for the cluster.
        self.cluster_name = cluster.kubeconfig_json.apply(lambda _: cfg.name)
        self.kubeconfig = pulumi.Output.secret(cluster.kubeconfig_json)
        self.endpoint = cluster.kubeconfig.apply(lambda k: str(k["clusters"][0]["cluster"]["server"]))
        self.oidc_provider_arn = cluster.oidc_provider_arn
        self.oidc_issuer = cluster.oidc_issuer
        self.cluster_security_group_id = aws.eks.get_cluster_output(
            name=self.cluster_name, opts=invoke
        ).vpc_config.cluster_security_group_id

        # Who may reach the private endpoint: the cluster security group admits only itself.
        api_rules = [
            aws.vpc.SecurityGroupIngressRule(
                f"{name}-{rule.key}",
                security_group_id=self.cluster_security_group_id,
                description=rule.description,
                ip_protocol="tcp",
                from_port=rule.port,
                to_port=rule.port,
                cidr_ipv4=rule.cidr,
                referenced_security_group_id=rule.security_group_id,
                tags=tags,
                opts=pulumi.ResourceOptions(parent=self),
            )
            for rule in builders.api_access_rules(cfg)
        ]

        before, after = self._addons(name, partition, tags, cluster)
        self.system_node_group = self._system_nodes(name, args, partition, before)
        for spec, role in after:
            self._addon(name, spec, [self.system_node_group], role)

        self.provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=self.kubeconfig,
            enable_server_side_apply=True,
            # Kubernetes objects go through the API endpoint: after the rules that let pulumi up reach it.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.system_node_group, *api_rules]),
        )
        sc = builders.gp3_storage_class()
        k8s.storage.v1.StorageClass(
            f"{name}-gp3",
            metadata=sc["metadata"],
            provisioner=sc["provisioner"],
            parameters=sc["parameters"],
            reclaim_policy=sc["reclaimPolicy"],
            volume_binding_mode=sc["volumeBindingMode"],
            allow_volume_expansion=sc["allowVolumeExpansion"],
            opts=pulumi.ResourceOptions(parent=self, provider=self.provider),
        )
        self.register_outputs(
            {
                "clusterName": self.cluster_name,
                "endpoint": self.endpoint,
                "oidcProviderArn": self.oidc_provider_arn,
                "clusterSecurityGroupId": self.cluster_security_group_id,
            }
        )

    def _addons(
        self, name: str, partition: pulumi.Output[str], tags: dict[str, str], cluster: eks.Cluster
    ) -> tuple[list[aws.eks.Addon], list[tuple[builders.AddonSpec, aws.iam.Role | None]]]:
        before: list[aws.eks.Addon] = []
        after: list[tuple[builders.AddonSpec, aws.iam.Role | None]] = []
        for spec in builders.addons():
            role = None
            if spec.name == "aws-ebs-csi-driver":
                role = aws.iam.Role(
                    f"{name}-ebs-csi",
                    # The add-on's controller service account (EKS installs the add-on into kube-system)
                    # on this cluster only: its name is cfg.name, the name given to eks.Cluster above.
                    assume_role_policy=self.cluster_name.apply(lambda n: pod_identity_trust_json(n, KUBE_SYSTEM, EBS_CSI_SERVICE_ACCOUNT)),
                    tags=tags,
                    opts=pulumi.ResourceOptions(parent=self),
                )
                aws.iam.RolePolicyAttachment(
                    f"{name}-ebs-csi",
                    role=role.name,
                    policy_arn=partition.apply(lambda p: managed_policy_arn(p, EBS_CSI_POLICY)),
                    opts=pulumi.ResourceOptions(parent=self),
                )
            if spec.phase == "before-nodes":
                before.append(self._addon(name, spec, [cluster], role))
            else:
                after.append((spec, role))
        return before, after

    def _addon(self, name: str, spec: builders.AddonSpec, depends_on: list[Any], role: aws.iam.Role | None) -> aws.eks.Addon:
        return aws.eks.Addon(
            f"{name}-{spec.name}",
            cluster_name=self.cluster_name,
            addon_name=spec.name,
            addon_version=spec.version,
            configuration_values=spec.configuration_values,
            resolve_conflicts_on_create="OVERWRITE",
            resolve_conflicts_on_update="OVERWRITE",
            pod_identity_associations=(
                [aws.eks.AddonPodIdentityAssociationArgs(role_arn=role.arn, service_account=EBS_CSI_SERVICE_ACCOUNT)]
                if role is not None
                else None
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=depends_on),
        )

    def _system_nodes(self, name: str, args: ClusterArgs, partition: pulumi.Output[str], addons: list[aws.eks.Addon]) -> aws.eks.NodeGroup:
        cfg, tags = args.config, args.tags
        group = cfg.system_node_group
        role, attachments = node_role(f"{name}-system-nodes", partition, tags, self)
        self.system_node_role_name = role.name
        lt = builders.system_launch_template(group.disk_size_gib)
        template = aws.ec2.LaunchTemplate(
            f"{name}-system-nodes",
            description=f"{cfg.name} system nodes: IMDSv2 only, hop limit 1, encrypted gp3 root",
            metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(**lt["metadata_options"]),
            block_device_mappings=[
                aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
                    device_name=b["device_name"], ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(**b["ebs"])
                )
                for b in lt["block_device_mappings"]
            ],
            tag_specifications=[
                aws.ec2.LaunchTemplateTagSpecificationArgs(resource_type="instance", tags={**tags, "Name": f"{cfg.name}-system"})
            ],
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self),
        )
        return aws.eks.NodeGroup(
            f"{name}-system",
            cluster_name=self.cluster_name,
            node_role_arn=role.arn,
            subnet_ids=args.private_subnet_ids,
            instance_types=list(group.instance_types),
            capacity_type="ON_DEMAND",
            ami_type=builders.SYSTEM_NODE_AMI_TYPE,
            version=cfg.kubernetes_version,
            scaling_config=aws.eks.NodeGroupScalingConfigArgs(
                min_size=group.min_size, desired_size=group.desired_size, max_size=group.max_size
            ),
            update_config=aws.eks.NodeGroupUpdateConfigArgs(max_unavailable=1),
            launch_template=aws.eks.NodeGroupLaunchTemplateArgs(id=template.id, version=template.latest_version.apply(str)),
            labels=dict(SYSTEM_NODE_LABEL),
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[*addons, *attachments], ignore_changes=["scalingConfig.desiredSize"]),
        )
