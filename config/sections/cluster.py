"""`cluster`: the EKS control plane, its access, and the system node group."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from config.facts import catalog, versions
from config.sections.base import ConfigModel
from config.sections.types import PrincipalArn, PrivateAccessCidr, PublicCidr, RoleArn, SecurityGroupId, config_error

LogType = Literal["api", "audit", "authenticator", "controllerManager", "scheduler"]
REQUIRED_LOG_TYPES = ("api", "audit", "authenticator")

# The cluster name appears in the Karpenter interruption queue name and in derived IAM names
# (upstream calls the node role KarpenterNodeRole-<cluster>, 18 + n <= 64 characters).
_CLUSTER_NAME = re.compile(r"^[a-z][a-z0-9-]*[a-z0-9]$")
CLUSTER_NAME_MAX = 46


def _all_log_types() -> list[LogType]:
    return ["api", "audit", "authenticator", "controllerManager", "scheduler"]


class Endpoint(ConfigModel):
    """Who can reach the Kubernetes API server."""

    private: bool = Field(default=True, description="Private endpoint inside the VPC (nodes use it).")
    public: bool = Field(default=False, description="Public endpoint on the internet.")
    public_cidrs: list[PublicCidr] = Field(
        default_factory=list,
        description="CIDRs allowed to reach the public endpoint. Required when `public` is true; never 0.0.0.0/0.",
    )
    private_access_cidrs: list[PrivateAccessCidr] = Field(
        default_factory=list,
        description="Networks outside the cluster that may reach the private endpoint on 443 (a VPN or transit "
        "gateway range, the subnet of a CI runner): `pulumi up` creates Kubernetes objects through it. Each "
        "becomes an ingress rule of the cluster security group.",
    )
    private_access_security_group_ids: list[SecurityGroupId] = Field(
        default_factory=list,
        description="Security groups (in the cluster's VPC or a peered one) whose members may reach the private "
        "endpoint on 443, e.g. a self-hosted CI runner's. Each becomes an ingress rule of the cluster security group.",
    )

    @model_validator(mode="after")
    def _coherent(self) -> Endpoint:
        if self.public and not self.public_cidrs:
            raise config_error(
                "publicCidrs is empty while public=true; EKS would accept API calls from 0.0.0.0/0",
                "list your egress CIDRs in cluster.endpoint.publicCidrs, or set cluster.endpoint.public=false",
            )
        if self.public_cidrs and not self.public:
            raise config_error(
                "publicCidrs is set but public=false, so the list would be ignored silently",
                "remove cluster.endpoint.publicCidrs, or set cluster.endpoint.public=true",
            )
        if not self.private and not self.public:
            raise config_error(
                "both the private and the public endpoint are off; nothing could reach the API server",
                "set cluster.endpoint.private=true",
            )
        if self.public and not self.private:
            raise config_error(
                "private=false while the public endpoint is restricted by CIDRs; nodes inside "
                "the VPC could not reach the API server and would never join",
                "set cluster.endpoint.private=true",
            )
        return self


AccessPolicy = Literal["ClusterAdmin", "Admin", "Edit", "View"]


def _scoped(policy: str, namespaces: list[str]) -> None:
    if policy == "ClusterAdmin" and namespaces:
        raise config_error(
            "ClusterAdmin cannot be scoped to namespaces",
            "use policy Admin for namespace-scoped administration, or drop namespaces",
        )


class PolicyGrant(ConfigModel):
    """One EKS access policy of an access entry, cluster-wide or in some namespaces."""

    policy: AccessPolicy = Field(description="EKS access policy: AmazonEKS<policy>Policy.")
    namespaces: list[str] = Field(
        default_factory=list,
        description="Limit the policy to these namespaces; empty means cluster-wide (not allowed with ClusterAdmin).",
    )

    @model_validator(mode="after")
    def _scope(self) -> PolicyGrant:
        _scoped(self.policy, self.namespaces)
        return self


class AccessGrant(ConfigModel):
    """An extra IAM principal given access to the cluster through one access entry: one policy (`policy`, with
    `namespaces`), or several (`policies`), each its own association of that entry."""

    principal_arn: PrincipalArn = Field(description="IAM role or user ARN.")
    policy: AccessPolicy | None = Field(default=None, description="EKS access policy: AmazonEKS<policy>Policy. Set this or policies.")
    namespaces: list[str] = Field(
        default_factory=list,
        description="With policy: limit it to these namespaces; empty means cluster-wide "
        "(not allowed with ClusterAdmin, which is cluster-wide by definition).",
    )
    policies: list[PolicyGrant] = Field(
        default_factory=list,
        description="Several policies for this principal (e.g. View cluster-wide and Edit in one namespace), each with "
        "its own namespaces. Set this or policy: a principal has one access entry, so it appears once in the stack.",
    )

    @model_validator(mode="after")
    def _scope(self) -> AccessGrant:
        if (self.policy is None) == (not self.policies):
            raise config_error(
                "needs exactly one of policy and policies",
                "write `policy: <ClusterAdmin|Admin|Edit|View>` (with optional namespaces) for one policy, or "
                "`policies: [{policy: ..., namespaces: [...]}, ...]` for several",
            )
        if self.policies and self.namespaces:
            raise config_error("namespaces belongs to each item of policies here", "move namespaces into the policies items")
        if self.policy is not None:
            _scoped(self.policy, self.namespaces)
        names = [g.policy for g in self.policies]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise config_error(
                f"{', '.join(twice)} is listed twice: an access entry associates each policy once, with one scope",
                "list each policy once, with every namespace it covers",
            )
        return self

    def grants(self) -> list[PolicyGrant]:
        """The entry's policies, in config order."""
        if self.policy is not None:
            return [PolicyGrant(policy=self.policy, namespaces=list(self.namespaces))]
        return list(self.policies)

    def policy_names(self) -> list[str]:
        return [g.policy for g in self.grants()]


class SystemNodeGroup(ConfigModel):
    """The on-demand managed node group for controllers (Karpenter never runs on its own nodes)."""

    instance_types: list[str] = Field(
        default_factory=lambda: ["m7i.xlarge"],
        min_length=1,
        description="On-demand instance types (from the catalog, x86_64).",
    )
    min_size: int = Field(default=2, ge=1, description="Minimum nodes.")
    desired_size: int = Field(default=2, ge=1, description="Nodes at creation.")
    max_size: int = Field(default=4, ge=1, description="Maximum nodes.")
    disk_size_gib: int = Field(default=50, ge=20, le=1000, description="Root volume size (gp3, encrypted).")

    @field_validator("instance_types")
    @classmethod
    def _known(cls, value: list[str]) -> list[str]:
        cpu = sorted(t.name for t in catalog.cpu_instance_types())
        unknown = [t for t in value if t not in cpu]
        if unknown:
            raise config_error(
                f"{', '.join(unknown)} not among the catalog's CPU types, so the cost floor cannot be computed",
                f"use one of {', '.join(cpu)} (or add it to config/facts/catalog.py with its price source)",
            )
        return value

    @model_validator(mode="after")
    def _sizes(self) -> SystemNodeGroup:
        if not self.min_size <= self.desired_size <= self.max_size:
            raise config_error(
                f"sizes must satisfy minSize <= desiredSize <= maxSize (got {self.min_size}, {self.desired_size}, {self.max_size})",
                "adjust the three sizes",
            )
        return self


class ClusterConfig(ConfigModel):
    """The EKS cluster."""

    name: str = Field(description="EKS cluster name; part of the outputs contract and of derived AWS names.")
    kubernetes_version: str = Field(
        default=versions.KUBERNETES_DEFAULT,
        description=f"Kubernetes minor version, one of {', '.join(versions.KUBERNETES_VERSIONS)}.",
    )
    endpoint: Endpoint = Field(default_factory=Endpoint, description="API server endpoint access.")
    admin_role_arns: list[RoleArn] = Field(
        default_factory=list,
        description="IAM roles given cluster-admin through access entries.",
    )
    deploy_role_arn: RoleArn | None = Field(
        default=None,
        description="The role `pulumi up` runs as in CI (the workflows' `vars.AWS_ROLE_ARN`); run the first `pulumi up` "
        "as this role, so it creates the cluster and EKS gives it admin access. It must not be listed again in "
        "adminRoleArns or access (EKS refuses a second access entry for the creator). Required in prod.",
    )
    access: list[AccessGrant] = Field(default_factory=list, description="Further access entries.")
    log_types: list[LogType] = Field(
        default_factory=_all_log_types,
        description="Control-plane log types sent to CloudWatch (api, audit and authenticator at least).",
    )
    log_retention_days: int = Field(default=90, ge=1, description="CloudWatch retention of control-plane logs.")
    deletion_protection: bool | None = Field(
        default=None,
        description="EKS deletion protection. Unset: on in prod, off elsewhere.",
    )
    system_node_group: SystemNodeGroup = Field(
        default_factory=SystemNodeGroup, description="Nodes for Karpenter, KEDA, monitoring and other controllers."
    )

    def principals(self) -> list[tuple[str, str]]:
        """Every IAM principal the stack names, with its config path: admins, the deploy role, grants."""
        named = [(f"cluster.adminRoleArns[{i}]", arn) for i, arn in enumerate(self.admin_role_arns)]
        if self.deploy_role_arn:
            named.append(("cluster.deployRoleArn", self.deploy_role_arn))
        return named + [(f"cluster.access[{i}].principalArn", g.principal_arn) for i, g in enumerate(self.access)]

    def principal_arns(self) -> list[str]:
        """The distinct principal ARNs, in config order."""
        return list(dict.fromkeys(arn for _, arn in self.principals()))

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if len(value) > CLUSTER_NAME_MAX:
            raise config_error(
                f"'{value}' is {len(value)} characters; derived IAM role names such as "
                f"KarpenterNodeRole-<cluster> would exceed 64 characters",
                f"use at most {CLUSTER_NAME_MAX} characters",
            )
        if not _CLUSTER_NAME.match(value):
            raise config_error(
                f"'{value}' is not a valid cluster name here",
                "use lowercase letters, digits and '-', starting with a letter",
            )
        return value

    @field_validator("kubernetes_version")
    @classmethod
    def _version(cls, value: str) -> str:
        if value not in versions.KUBERNETES_VERSIONS:
            raise config_error(
                f"Kubernetes {value} is not one this program is tested with; the pinned "
                "Karpenter, KEDA and add-ons support " + ", ".join(versions.KUBERNETES_VERSIONS),
                f"set cluster.kubernetesVersion to one of {', '.join(versions.KUBERNETES_VERSIONS)}",
            )
        return value

    @field_validator("log_types")
    @classmethod
    def _logs(cls, value: list[str]) -> list[str]:
        missing = [t for t in REQUIRED_LOG_TYPES if t not in value]
        if missing:
            raise config_error(
                f"missing {', '.join(missing)}; without them there is no audit trail of who did what to the cluster",
                "include api, audit and authenticator in cluster.logTypes",
            )
        return value
