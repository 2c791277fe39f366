"""Karpenter: IAM, interruption handling, the controller release, EC2NodeClasses and GPU NodePools."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from builders.iam import irsa_trust_policy, pod_identity_trust_json
from builders.karpenter import iam, nodepools, overlays
from builders.karpenter.values import karpenter_values
from components import k8s_objects
from components.helm import release
from components.iam import node_role
from components.options import inherited_depends_on
from config.derived.state import PoolState
from config.facts import versions
from config.facts.conventions import DISCOVERY_TAG, KARPENTER_NAMESPACE, KARPENTER_SERVICE_ACCOUNT, interruption_queue_name
from config.sections.gpu_pools import GpuPool
from config.sections.karpenter import KarpenterConfig

RELEASE = "karpenter"


def _document(documents: dict[str, dict[str, Any]], stem: str) -> str:
    return json.dumps(documents[stem])


@dataclass(frozen=True, kw_only=True)
class KarpenterArgs:
    """Inputs of the Karpenter component."""

    config: KarpenterConfig
    """The `karpenter` section."""
    pools: list[GpuPool]
    """The `gpuPools` section: one NodePool each."""
    derived: Mapping[str, PoolState]
    """Each pool's derived state (config/derived/state.py), by pool name: its AMI family and NodePool limit."""
    cluster_name: pulumi.Input[str]
    """EKS cluster name (an output of the cluster, so everything here waits for it)."""
    cluster_security_group_id: pulumi.Input[str]
    """The cluster's primary security group, which GPU nodes join (tagged for discovery here)."""
    subnet_selector_terms: list[dict[str, Any]]
    """EC2NodeClass subnet selector: the discovery tag (new VPC) or the subnet ids (existing VPC)."""
    vpc_zones: list[str] | None = None
    """Zones the stack named for its new VPC (names or zone ids); GPU NodePools launch only there."""
    oidc_provider_arn: pulumi.Input[str]
    """OIDC provider ARN, for IRSA."""
    oidc_issuer: pulumi.Input[str]
    """OIDC issuer (no https://), for IRSA."""
    region: str
    """AWS region."""
    provider: k8s.Provider
    """Kubernetes provider of the cluster."""
    tags: dict[str, str] = field(default_factory=dict)
    """Tags for AWS resources and for the nodes Karpenter launches."""
    efa: Mapping[str, nodepools.EfaPlacement] = field(default_factory=dict)
    """By EFA pool name: its placement group and the EFA security group (components/efa.py)."""


class Karpenter(pulumi.ComponentResource):
    """Karpenter on the system nodes, with spot-first GPU NodePools and interruption handling."""

    node_role_name: pulumi.Output[str]
    node_role_arn: pulumi.Output[str]
    controller_role_arn: pulumi.Output[str]
    interruption_queue_name: pulumi.Output[str]
    release: k8s.helm.v3.Release
    node_pools: dict[str, pulumi.CustomResource]

    def __init__(self, name: str, args: KarpenterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmplatform:index:Karpenter", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        invoke = pulumi.InvokeOutputOptions(parent=self)
        cfg, tags = args.config, args.tags
        partition = aws.get_partition_output(opts=invoke).partition
        account = aws.get_caller_identity_output(opts=invoke).account_id
        cluster_name = pulumi.Output.from_input(args.cluster_name)
        after = inherited_depends_on(opts)

        # Node role and its access entry (EC2_LINUX: EKS grants node permissions itself).
        node_role_resource, _ = node_role(f"{name}-node", partition, tags, self)
        access_entry = aws.eks.AccessEntry(
            f"{name}-node", cluster_name=cluster_name, principal_arn=node_role_resource.arn, type="EC2_LINUX", tags=tags, opts=child
        )

        # Interruption handling: the queue, its policy, and the five rules that feed it.
        queue = aws.sqs.Queue(
            f"{name}-interruption",
            name=cluster_name.apply(interruption_queue_name),
            message_retention_seconds=iam.QUEUE_RETENTION_SECONDS,
            sqs_managed_sse_enabled=True,
            tags=tags,
            opts=child,
        )
        aws.sqs.QueuePolicy(
            f"{name}-interruption", queue_url=queue.url, policy=queue.arn.apply(lambda a: json.dumps(iam.queue_policy(a))), opts=child
        )
        for stem, source, detail in iam.INTERRUPTION_RULES:
            rule = aws.cloudwatch.EventRule(
                f"{name}-{stem}",
                description=f"Karpenter interruption handling: {detail}",
                event_pattern=json.dumps(iam.event_pattern(source, detail)),
                tags=tags,
                opts=child,
            )
            aws.cloudwatch.EventTarget(
                f"{name}-{stem}", rule=rule.name, target_id="KarpenterInterruptionQueueTarget", arn=queue.arn, opts=child
            )

        # Controller role: the six upstream policies, through Pod Identity (or IRSA).
        if cfg.identity == "irsa":
            trust = pulumi.Output.all(args.oidc_provider_arn, args.oidc_issuer).apply(
                lambda a: json.dumps(irsa_trust_policy(a[0], a[1], KARPENTER_NAMESPACE, KARPENTER_SERVICE_ACCOUNT))
            )
        else:
            # This cluster's Karpenter service account only (the tag is the cluster's own name).
            trust = cluster_name.apply(lambda n: pod_identity_trust_json(n, KARPENTER_NAMESPACE, KARPENTER_SERVICE_ACCOUNT))
        controller = aws.iam.Role(f"{name}-controller", assume_role_policy=trust, tags=tags, opts=child)
        scope = pulumi.Output.all(cluster_name, account, partition).apply(lambda a: iam.Scope(a[0], args.region, a[1], a[2]))
        documents = pulumi.Output.all(scope, node_role_resource.arn, queue.arn).apply(lambda a: iam.controller_policies(a[0], a[1], a[2]))
        attachments: list[pulumi.Resource] = []
        for stem in iam.CONTROLLER_POLICY_STEMS:
            policy = aws.iam.Policy(
                f"{name}-{stem.lower()}",
                description=f"Karpenter controller: {stem} (upstream KarpenterController{stem}Policy)",
                policy=documents.apply(functools.partial(_document, stem=stem)),
                tags=tags,
                opts=child,
            )
            attachments.append(
                aws.iam.RolePolicyAttachment(f"{name}-{stem.lower()}", role=controller.name, policy_arn=policy.arn, opts=child)
            )
        identity: list[pulumi.Resource] = []
        if cfg.identity == "podIdentity":
            identity.append(
                aws.eks.PodIdentityAssociation(
                    f"{name}-controller",
                    cluster_name=cluster_name,
                    namespace=KARPENTER_NAMESPACE,
                    service_account=KARPENTER_SERVICE_ACCOUNT,
                    role_arn=controller.arn,
                    tags=tags,
                    opts=child,
                )
            )

        # GPU nodes join the cluster's primary security group, found by the discovery tag.
        sg_tag = aws.ec2.Tag(
            f"{name}-discovery", resource_id=args.cluster_security_group_id, key=DISCOVERY_TAG, value=cluster_name, opts=child
        )

        self.release = release(
            f"{name}-release",
            release_name=RELEASE,
            chart=versions.KARPENTER,
            namespace=KARPENTER_NAMESPACE,
            values=karpenter_values(
                cfg,
                cluster_name,
                queue.name,
                controller.arn if cfg.identity == "irsa" else None,
                node_overlay=any(p.sharing.mode != "none" for p in args.pools),
            ),
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[*after, *attachments, *identity, access_entry]),
        )
        crd_opts = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[self.release, sg_tag])
        for family, own_pool in nodepools.node_classes(args.pools, args.derived):
            manifest = nodepools.ec2_node_class(
                family,
                cfg,
                node_role_resource.name,
                args.subnet_selector_terms,
                cluster_name,
                tags,
                pool=own_pool,
                efa=args.efa.get(own_pool.name) if own_pool is not None else None,
            )
            k8s_objects.create(f"{name}-{manifest['metadata']['name']}", manifest, crd_opts)
        self.node_pools = {}
        for pool in args.pools:
            manifest = nodepools.node_pool(pool, args.derived[pool.name], args.vpc_zones)
            self.node_pools[pool.name] = k8s_objects.create(f"{name}-{pool.name}", manifest, crd_opts)
        for pool in args.pools:
            for manifest in overlays.node_overlays(pool):
                k8s_objects.create(f"{name}-overlay-{manifest['metadata']['name']}", manifest, crd_opts)
        self.node_role_name = node_role_resource.name
        self.node_role_arn = node_role_resource.arn
        self.controller_role_arn = controller.arn
        self.interruption_queue_name = queue.name
        self.register_outputs(
            {
                "nodeRoleArn": self.node_role_arn,
                "controllerRoleArn": self.controller_role_arn,
                "interruptionQueueName": self.interruption_queue_name,
            }
        )
