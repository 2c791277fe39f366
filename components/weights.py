"""WeightsBucket: the stack's S3 bucket of model weights, private, TLS-only, with its lifecycle."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, cast

import pulumi
import pulumi_aws as aws

from builders import weights as builders
from config.sections.weights import WeightsConfig

BUCKET_PREFIX_MAX = 37


@dataclass(frozen=True, kw_only=True)
class WeightsBucketArgs:
    """Inputs of the WeightsBucket component."""

    config: WeightsConfig
    """The `weights` section."""
    cluster_name: str
    """Starts the bucket's name."""
    tags: dict[str, str] = field(default_factory=dict)
    """Tags on the bucket."""


class WeightsBucket(pulumi.ComponentResource):
    """Encrypted, public access blocked, owner-enforced, TLS-only; versioning off (a revision is
    never overwritten: each has its own prefix); incomplete uploads and retired revisions expire."""

    name: pulumi.Output[str]
    arn: pulumi.Output[str]

    def __init__(self, name: str, args: WeightsBucketArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmplatform:index:WeightsBucket", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        bucket = aws.s3.Bucket(
            name,
            bucket_prefix=f"{args.cluster_name}-weights-"[:BUCKET_PREFIX_MAX],
            tags=args.tags,
            opts=child,
        )
        after_bucket = pulumi.ResourceOptions(parent=self, depends_on=[bucket])
        aws.s3.BucketOwnershipControls(
            name, bucket=bucket.id, rule=aws.s3.BucketOwnershipControlsRuleArgs(object_ownership="BucketOwnerEnforced"), opts=child
        )
        block = aws.s3.BucketPublicAccessBlock(
            name,
            bucket=bucket.id,
            block_public_acls=True,
            block_public_policy=True,
            ignore_public_acls=True,
            restrict_public_buckets=True,
            opts=child,
        )
        aws.s3.BucketServerSideEncryptionConfiguration(
            name,
            bucket=bucket.id,
            rules=[
                aws.s3.BucketServerSideEncryptionConfigurationRuleArgs(
                    apply_server_side_encryption_by_default=aws.s3.BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultArgs(
                        sse_algorithm="AES256"
                    )
                )
            ],
            opts=child,
        )
        aws.s3.BucketLifecycleConfiguration(name, bucket=bucket.id, rules=cast(Any, builders.lifecycle_rules()), opts=after_bucket)
        aws.s3.BucketPolicy(
            name,
            bucket=bucket.id,
            policy=bucket.arn.apply(lambda arn: json.dumps(builders.bucket_policy(arn))),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[block]),
        )
        self.name = bucket.bucket
        self.arn = bucket.arn
        self.register_outputs({"name": self.name, "arn": self.arn})
