"""LoadBalancerController: the AWS Load Balancer Controller, its IAM role and its release."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from builders.iam import pod_identity_trust_json
from builders.ingress import endpoints as builders
from builders.ingress.iam import controller_policy
from components.helm import release
from components.options import inherited_depends_on
from config.facts import versions
from config.facts.conventions import LOAD_BALANCER_CONTROLLER_NAMESPACE, LOAD_BALANCER_CONTROLLER_SERVICE_ACCOUNT
from config.sections.ingress import IngressConfig

RELEASE = "aws-load-balancer-controller"


@dataclass(frozen=True, kw_only=True)
class LoadBalancerControllerArgs:
    """Inputs of the LoadBalancerController component."""

    config: IngressConfig
    """The `ingress` section."""
    cluster_name: pulumi.Input[str]
    """EKS cluster name."""
    region: str
    """AWS region (the controller cannot read it from IMDS at hop limit 1)."""
    vpc_id: pulumi.Input[str]
    """VPC id (likewise)."""
    provider: k8s.Provider
    """Kubernetes provider of the cluster."""
    tags: dict[str, str] = field(default_factory=dict)
    """Tags for AWS resources."""


class LoadBalancerController(pulumi.ComponentResource):
    """The controller that turns the models' Ingresses into one shared ALB."""

    release: k8s.helm.v3.Release

    def __init__(self, name: str, args: LoadBalancerControllerArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmplatform:index:LoadBalancerController", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        after = inherited_depends_on(opts)
        partition = aws.get_partition_output(opts=pulumi.InvokeOutputOptions(parent=self)).partition
        # Only the controller's service account on this cluster can assume it, whatever association comes later.
        trust = pulumi.Output.from_input(args.cluster_name).apply(
            lambda n: pod_identity_trust_json(n, LOAD_BALANCER_CONTROLLER_NAMESPACE, LOAD_BALANCER_CONTROLLER_SERVICE_ACCOUNT)
        )
        role = aws.iam.Role(f"{name}-role", assume_role_policy=trust, tags=args.tags, opts=child)
        policy = aws.iam.Policy(
            f"{name}-policy",
            description="AWS Load Balancer Controller (upstream iam_policy.json of the pinned version)",
            policy=partition.apply(lambda p: json.dumps(controller_policy(p))),
            tags=args.tags,
            opts=child,
        )
        attachment = aws.iam.RolePolicyAttachment(f"{name}-policy", role=role.name, policy_arn=policy.arn, opts=child)
        association = aws.eks.PodIdentityAssociation(
            f"{name}-identity",
            cluster_name=args.cluster_name,
            namespace=LOAD_BALANCER_CONTROLLER_NAMESPACE,
            service_account=LOAD_BALANCER_CONTROLLER_SERVICE_ACCOUNT,
            role_arn=role.arn,
            tags=args.tags,
            opts=child,
        )
        self.release = release(
            f"{name}-release",
            release_name=RELEASE,
            chart=versions.AWS_LOAD_BALANCER_CONTROLLER,
            namespace=LOAD_BALANCER_CONTROLLER_NAMESPACE,
            values=builders.controller_values(args.config, args.cluster_name, args.region, args.vpc_id),
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[*after, attachment, association]),
        )
        self.register_outputs({})
