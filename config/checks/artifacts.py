"""Weights and images: the streamer's flags, the S3 path of the weights, the pull-through cache, pinned images."""

from __future__ import annotations

from collections.abc import Iterator

from config.checks.common import models_with_pools
from config.errors import Problem
from config.sections import images, weights
from config.sections.models import vllm_flag
from config.sections.network import NewVpc
from config.sections.stack import StackConfig


def rule_image_cache(cfg: StackConfig) -> Iterator[Problem]:
    """imageCache: every model image comes from a registry the cache fronts, and Docker Hub has its credential."""
    if not cfg.image_cache.enabled:
        return
    credential_said = False  # once for the stack, and the other models' registries still checked
    for path, m, _ in models_with_pools(cfg):
        upstream = images.upstream_for(m.image.repository)
        if upstream is None:
            host, _ = images.split(m.image.repository)
            yield Problem(
                f"{path}.image.repository",
                f"imageCache is on but {host} is not a registry the pull-through cache fronts "
                f"({', '.join(u.host for u in images.UPSTREAMS)}); this image is pulled from {host} directly. "
                "Fix: nothing, if that is intended (e.g. your own ECR); or mirror it to a supported registry",
                "warning",
            )
        elif upstream.needs_credential and cfg.image_cache.docker_hub_username is None and not credential_said:
            credential_said = True
            yield Problem(
                "imageCache.dockerHubUsername",
                f"is not set, but the image of {m.name} comes from Docker Hub, which ECR's pull-through cache only "
                "imports from with a Docker Hub user and access token. Fix: set imageCache.dockerHubUsername and the "
                "dockerHubAccessToken secret, or set imageCache.enabled: false",
            )


def rule_streamer_flags(cfg: StackConfig) -> Iterator[Problem]:
    """A model streaming from S3 leaves the loader flags to the platform (the streamer needs them as it sets them)."""
    for path, m, _ in models_with_pools(cfg):
        if not m.streams_from_s3:
            continue
        for i, arg in enumerate(m.extra_args):
            written, _, value = arg.partition("=")
            flag = vllm_flag(written)
            if flag == "--model-loader-extra-config":
                yield Problem(
                    f"{path}.extraArgs[{i}]",
                    "--model-loader-extra-config is set by the platform when weights stream from S3 (the streamer's "
                    "concurrency and memory limit, from the replica's CPU and memory). Fix: remove it",
                )
            if flag == "--load-format":
                fmt = value or (m.extra_args[i + 1] if i + 1 < len(m.extra_args) else "")
                if fmt not in weights.STREAMER_LOAD_FORMATS:
                    yield Problem(
                        f"{path}.extraArgs[{i}]",
                        f"--load-format {fmt or '(missing)'} cannot load an s3:// model; vLLM accepts only "
                        f"{' or '.join(weights.STREAMER_LOAD_FORMATS)} there and would fail at start. "
                        "Fix: remove the flag (the platform sets runai_streamer), or set weights.source: huggingface",
                    )


def rule_s3_gateway_endpoint(cfg: StackConfig) -> Iterator[Problem]:
    """network.s3GatewayEndpoint: on wherever models stream their weights from S3."""
    if cfg.uses_s3_weights and isinstance(cfg.network, NewVpc) and not cfg.network.s3_gateway_endpoint:
        yield Problem(
            "network.s3GatewayEndpoint",
            "models stream weights from S3 but the VPC has no S3 gateway endpoint: every replica start pulls its "
            "checkpoint through the NAT gateway, slower and billed per GB. Fix: remove s3GatewayEndpoint: false",
            "warning",
        )


def rule_image_pinned(cfg: StackConfig) -> Iterator[Problem]:
    """(prod only, see the registry) A model's image carries its digest."""
    for path, m, _ in models_with_pools(cfg):
        index = cfg.models.index(m)
        if m.image.digest is None:
            yield Problem(
                f"{path}.image.digest",
                f"a prod image must be pinned by digest, but {m.image.reference} is pinned by tag only: a re-pushed tag "
                "(followed by the pull-through cache within its sync window) changes what new replicas run, mid-rollout. "
                f"Fix: read the digest with `docker buildx imagetools inspect {m.image.reference}` (the `Digest:` line) "
                f"and set it: `pulumi config set --path 'models[{index}].image.digest' sha256:<64 hex>`",
            )
