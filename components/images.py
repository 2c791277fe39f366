"""ImageCache: ECR pull-through cache rules for the registries the model images come from."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from builders import images as builders
from config.sections import images


@dataclass(frozen=True, kw_only=True)
class ImageCacheArgs:
    """Inputs of the ImageCache component."""

    upstreams: list[images.Upstream]
    """The registries to front (those of the models' images)."""
    cluster_name: str
    """Names the rule prefixes and the credential secret (one stack's cache never meets another's)."""
    region: str
    """AWS region of the cache."""
    docker_hub_username: str | None
    """Docker Hub user (with Docker Hub among the upstreams)."""
    docker_hub_access_token: pulumi.Input[str] | None
    """Docker Hub access token (secret)."""
    node_role_names: list[pulumi.Input[str]]
    """Roles of the nodes that pull model images: they may import on first pull."""
    tags: dict[str, str] = field(default_factory=dict)
    """Tags on the secret."""


class ImageCache(pulumi.ComponentResource):
    """One pull-through cache rule per upstream, its credential, and the node roles' import right."""

    registry: pulumi.Output[str]
    """The account's ECR registry host, which cached image references start with."""

    def __init__(self, name: str, args: ImageCacheArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmplatform:index:ImageCache", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        invoke = pulumi.InvokeOutputOptions(parent=self)
        account = aws.get_caller_identity_output(opts=invoke).account_id
        partition = aws.get_partition_output(opts=invoke).partition
        prefixes = [images.rule_prefix(args.cluster_name, u) for u in args.upstreams]
        for upstream, prefix in zip(args.upstreams, prefixes, strict=True):
            credential_arn = None
            rule_after: list[pulumi.Resource] = []
            if upstream.needs_credential:
                assert args.docker_hub_username is not None  # validated (rules, secrets)
                assert args.docker_hub_access_token is not None
                # ECR reads upstream credentials only from secrets named ecr-pullthroughcache/...
                secret = aws.secretsmanager.Secret(
                    f"{name}-{upstream.prefix}",
                    name=f"{images.CREDENTIAL_SECRET_PREFIX}{args.cluster_name}/{upstream.prefix}",
                    description=f"{upstream.url} credential of the {args.cluster_name} pull-through cache",
                    # A destroyed stack's secret must not block the next one of the same name for 30 days.
                    recovery_window_in_days=0,
                    tags=args.tags,
                    opts=child,
                )
                value = aws.secretsmanager.SecretVersion(
                    f"{name}-{upstream.prefix}",
                    secret_id=secret.id,
                    secret_string=pulumi.Output.from_input(args.docker_hub_access_token).apply(
                        functools.partial(builders.credential, args.docker_hub_username)
                    ),
                    opts=child,
                )
                credential_arn = secret.arn
                rule_after.append(value)
            # ECR reads the credential when it creates the rule: the secret's value must exist first.
            aws.ecr.PullThroughCacheRule(
                f"{name}-{upstream.prefix}",
                ecr_repository_prefix=prefix,
                upstream_registry_url=upstream.url,
                credential_arn=credential_arn,
                opts=pulumi.ResourceOptions(parent=self, depends_on=rule_after),
            )
            aws.ecr.RepositoryCreationTemplate(
                f"{name}-{upstream.prefix}",
                prefix=prefix,
                applied_fors=["PULL_THROUGH_CACHE"],
                description=f"Repositories the {args.cluster_name} cache creates from {upstream.url}",
                encryption_configurations=[aws.ecr.RepositoryCreationTemplateEncryptionConfigurationArgs(encryption_type="AES256")],
                lifecycle_policy=builders.repository_lifecycle_policy(),
                opts=child,
            )
        policy = pulumi.Output.all(partition, account).apply(
            lambda a: json.dumps(builders.node_import_policy(a[0], args.region, a[1], prefixes))
        )
        for i, role in enumerate(args.node_role_names):
            aws.iam.RolePolicy(f"{name}-node-import-{i}", role=role, policy=policy, opts=child)
        self.registry = account.apply(lambda a: images.registry_host(a, args.region))
        self.register_outputs({"registry": self.registry})
