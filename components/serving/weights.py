"""A model's S3 weights: read, populate and warm-up roles through Pod Identity, the script, the populate Job,
and one compile warm-up Job per GPU type."""

from __future__ import annotations

import functools
import json
import math
from typing import Any

import pulumi
import pulumi_aws as aws

from builders import weights as weights_builders
from builders.iam import pod_identity_trust_json
from builders.serving import compile_cache, populate, warmup
from builders.serving import workload as builders
from components import k8s_objects
from components.options import inherited_depends_on
from components.serving.args import SAMPLE_SOURCES, S3Weights, VllmModelArgs
from config.facts.conventions import populate_service_account, warmup_service_account
from config.sections.gpu_pools import GpuPool
from config.sections.models import ModelConfig


def build(
    parent: pulumi.Resource,
    name: str,
    args: VllmModelArgs,
    weights: S3Weights,
    inside: pulumi.ResourceOptions,
    secrets: list[pulumi.Resource],
) -> list[pulumi.Resource]:
    """S3 weights: read and populate roles through Pod Identity, the script, and the populate Job."""
    model = args.model
    before = inherited_depends_on(inside)
    bucket_arn = pulumi.Output.from_input(weights.bucket_arn)
    aws_child = pulumi.ResourceOptions(parent=parent)
    identities: list[pulumi.Resource] = []
    for suffix, service_account, document in (
        ("weights-read", model.name, weights_builders.reader_policy),
        ("weights-populate", populate_service_account(model.name), weights_builders.populate_policy),
        *([("compile-warmup", warmup_service_account(model.name), weights_builders.warmup_policy)] if model.compile_cache_used else []),
    ):
        role = aws.iam.Role(
            f"{name}-{suffix}",
            description=f"{model.name}: {suffix.replace('-', ' ')} ({model.hugging_face_id}@{model.revision[:12]})",
            assume_role_policy=pulumi.Output.from_input(weights.cluster_name).apply(
                functools.partial(pod_identity_trust_json, namespace=model.name, service_account=service_account)
            ),
            tags=weights.tags,
            opts=aws_child,
        )
        policy = aws.iam.RolePolicy(
            f"{name}-{suffix}",
            role=role.name,
            policy=bucket_arn.apply(
                functools.partial(_policy_json, document=document, repo=model.hugging_face_id, revision=model.revision)
            ),
            opts=aws_child,
        )
        identities.append(
            aws.eks.PodIdentityAssociation(
                f"{name}-{suffix}",
                cluster_name=weights.cluster_name,
                namespace=model.name,
                service_account=service_account,
                role_arn=role.arn,
                tags=weights.tags,
                opts=pulumi.ResourceOptions(parent=parent, depends_on=[policy]),
            )
        )
    script = k8s_objects.create(f"{name}-weights-script", populate.script_config_map(model), inside)
    account = k8s_objects.create(f"{name}-weights-service-account", populate.service_account(model), inside)
    k8s_objects.create(f"{name}-netpol-weights", populate.network_policy(model, args.vpc_cidrs, args.interface_endpoints), inside)
    timeout = f"{math.ceil(populate.populate_seconds(model) / 60)}m"
    job = k8s_objects.create_resolved(
        f"{name}-weights-job",
        args.sources,
        functools.partial(
            _populate_job,
            model=model,
            pool=args.pool,
            hf_token=args.hf_token is not None,
            models=weights.models,
            retire_days=weights.retired_revision_days,
        ),
        SAMPLE_SOURCES,
        pulumi.ResourceOptions(
            parent=parent,
            provider=args.provider,
            depends_on=[*before, *secrets, script, account, *identities],
            custom_timeouts=pulumi.CustomTimeouts(create=timeout, update=timeout),
        ),
    )
    if model.compile_cache_used:
        warmups(parent, name, args, inside, [*before, *secrets, script, job, *identities])
    return [script, *identities, job]


def warmups(parent: pulumi.Resource, name: str, args: VllmModelArgs, inside: pulumi.ResourceOptions, after: list[pulumi.Resource]) -> None:
    """One compile warm-up Job per GPU type, after the weights are in the bucket; nothing waits for them,
    `pulumi up` included (a replica that starts first compiles, builders/serving/warmup.py)."""
    model = args.model
    account = k8s_objects.create(f"{name}-warmup-service-account", warmup.service_account(model), inside)
    policy = k8s_objects.create(
        f"{name}-netpol-compile-warmup", warmup.network_policy(model, args.vpc_cidrs, args.interface_endpoints), inside
    )
    for label in args.facts.gpu_labels:
        k8s_objects.create_resolved(
            f"{name}-warmup-{label}",
            args.sources,
            functools.partial(
                _warmup_job, model=model, pool=args.pool, gpu_label=label, alb_idle_timeout_seconds=args.facts.path.chain.alb_idle
            ),
            SAMPLE_SOURCES,
            # not awaited (the Job's pulumi.com/skipAwait): `pulumi up` neither waits for the warm-up nor fails with it
            pulumi.ResourceOptions(parent=parent, provider=args.provider, depends_on=[*after, account, policy]),
        )


def _policy_json(bucket_arn: str, document: Any, repo: str, revision: str) -> str:
    return json.dumps(document(bucket_arn, repo, revision))


def _warmup_job(
    sources: builders.Sources, model: ModelConfig, pool: GpuPool, gpu_label: str, alb_idle_timeout_seconds: int
) -> dict[str, Any]:
    """The warm-up Job of one GPU type, its key from the replica's own arguments (what the replicas fetch)."""
    key = compile_cache.key(model, gpu_label, builders.vllm_args(model, pool, alb_idle_timeout_seconds, sources))
    return warmup.job(model, pool, sources, gpu_label=gpu_label, key=key)


def _populate_job(
    sources: builders.Sources, model: ModelConfig, pool: GpuPool, hf_token: bool, models: list[ModelConfig], retire_days: int
) -> dict[str, Any]:
    return populate.job(model, pool, sources, hf_token=hf_token, models=models, retire_days=retire_days)
