"""Boundary pairs of config/checks/artifacts.py (see __init__)."""

from __future__ import annotations

from typing import Any

from config.sections.weights import STREAMER_LOAD_FORMATS
from tests.config.checks.boundaries import Mutation, Pair
from tests.support.mutations import m0

# existing-vpc-irsa-bottlerocket's first model streams its weights from S3
STREAMING = "models[qwen-2-5-7b]"


def _extra_args(*args: str, source: str | None = None) -> Mutation:
    """The first model's extraArgs, and its weights' source (None: as the fixture has it)."""

    def mutate(d: dict[str, Any]) -> None:
        m0(d)["extraArgs"] = list(args)
        if source is not None:
            m0(d)["weights"] = {"source": source}

    return mutate


def _s3_weights(gateway_endpoint: bool) -> Mutation:
    def mutate(d: dict[str, Any]) -> None:
        m0(d)["weights"] = {"source": "s3"}
        d["network"]["s3GatewayEndpoint"] = gateway_endpoint

    return mutate


def _image_cache(username: str | None) -> Mutation:
    """The cache on for a Docker Hub image (the default vllm/vllm-openai), with or without a Docker Hub user."""

    def mutate(d: dict[str, Any]) -> None:
        d["imageCache"] = {"enabled": True, **({"dockerHubUsername": username} if username else {})}

    return mutate


def _cached_repository(repository: str) -> Mutation:
    def mutate(d: dict[str, Any]) -> None:
        d["imageCache"] = {"enabled": True, "dockerHubUsername": "ci"}
        m0(d)["image"] = {**m0(d).get("image", {}), "repository": repository}

    return mutate


def _unpinned(d: dict[str, Any]) -> None:
    m0(d)["image"].pop("digest")


def _pinned(d: dict[str, Any]) -> None:
    m0(d)["image"]["digest"] = "sha256:" + "1" * 64


PAIRS = [
    Pair(
        "artifacts.rule_streamer_flags",
        "--model-loader-extra-config on a model streaming from S3 vs on one downloading from Hugging Face",
        bad=_extra_args("--model-loader-extra-config={}"),
        good=_extra_args("--model-loader-extra-config={}", source="huggingface"),
        path=f"{STREAMING}.extraArgs[0]",
        fix="--model-loader-extra-config is set by the platform",
        stack="existing-vpc-irsa-bottlerocket",
    ),
    Pair(
        "artifacts.rule_streamer_flags",
        "--model_loader_extra_config (vLLM's other spelling) vs the neighbouring --model-loader (no extra config)",
        bad=_extra_args("--model_loader_extra_config={}"),
        good=_extra_args("--model-loader=default"),
        path=f"{STREAMING}.extraArgs[0]",
        fix="--model-loader-extra-config is set by the platform",
        stack="existing-vpc-irsa-bottlerocket",
    ),
    Pair(
        "artifacts.rule_streamer_flags",
        "--load-format=safetensors vs a streamer format, with =",
        bad=_extra_args("--load-format=safetensors"),
        good=_extra_args(f"--load-format={STREAMER_LOAD_FORMATS[-1]}"),
        path=f"{STREAMING}.extraArgs[0]",
        fix="remove the flag (the platform sets runai_streamer)",
        stack="existing-vpc-irsa-bottlerocket",
    ),
    Pair(
        "artifacts.rule_streamer_flags",
        "--load-format safetensors vs a streamer format, as the next argument",
        bad=_extra_args("--enforce-eager", "--load-format", "safetensors"),
        good=_extra_args("--enforce-eager", "--load-format", STREAMER_LOAD_FORMATS[0]),
        path=f"{STREAMING}.extraArgs[1]",
        fix="remove the flag (the platform sets runai_streamer)",
        stack="existing-vpc-irsa-bottlerocket",
    ),
    Pair(
        "artifacts.rule_streamer_flags",
        "--load-format last, without its value, vs with a streamer format",
        bad=_extra_args("--load-format"),
        good=_extra_args("--load-format", STREAMER_LOAD_FORMATS[0]),
        path=f"{STREAMING}.extraArgs[0]",
        fix="--load-format (missing)",
        stack="existing-vpc-irsa-bottlerocket",
    ),
    Pair(
        "artifacts.rule_s3_gateway_endpoint",
        "S3 weights in a new VPC with s3GatewayEndpoint false vs true",
        bad=_s3_weights(gateway_endpoint=False),
        good=_s3_weights(gateway_endpoint=True),
        path="network.s3GatewayEndpoint",
        fix="remove s3GatewayEndpoint: false",
        severity="warning",
    ),
    Pair(
        "artifacts.rule_image_cache",
        "the cache on for a Docker Hub image without dockerHubUsername vs with one",
        bad=_image_cache(None),
        good=_image_cache("ci"),
        path="imageCache.dockerHubUsername",
        fix="set imageCache.dockerHubUsername and the dockerHubAccessToken secret",
    ),
    Pair(
        "artifacts.rule_image_cache",
        "the cache on for an image of a registry it does not front (ghcr.io) vs one it fronts (quay.io)",
        bad=_cached_repository("ghcr.io/vllm-project/vllm-openai"),
        good=_cached_repository("quay.io/vllm-project/vllm-openai"),
        path="models[llama-3-1-8b].image.repository",
        fix="or mirror it to a supported registry",
        severity="warning",
    ),
    Pair(
        "artifacts.rule_image_pinned",
        "a prod image by tag only vs with its digest",
        bad=_unpinned,
        good=_pinned,
        path="models[llama-3-1-8b].image.digest",
        fix="docker buildx imagetools inspect",
        stack="full-prod",
    ),
]
