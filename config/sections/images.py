"""Images through an ECR pull-through cache: which registries, and what a cached reference is. Pure.

A node pulling `vllm/vllm-openai` from Docker Hub through NAT meets anonymous rate limits, and
every spot replacement pulls again. With the cache on, the Deployment names the image in the
account's own registry (`<account>.dkr.ecr.<region>.amazonaws.com/<prefix>/<path>`): the first pull
imports it from the upstream, every later pull stays in the region (docs/upstream-facts.md#image-cache).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import Field

from config.sections.base import ConfigModel

if TYPE_CHECKING:
    from config.sections.models import Image

CREDENTIAL_SECRET_PREFIX = "ecr-pullthroughcache/"
"""ECR only accepts upstream credentials from a Secrets Manager secret named with this prefix."""


@dataclass(frozen=True)
class Upstream:
    """A registry the cache can front."""

    host: str
    """How image references name the registry."""
    url: str
    """The pull-through rule's upstream registry URL."""
    prefix: str
    """The ECR repository prefix of the rule."""
    needs_credential: bool


DOCKER_HUB = Upstream("docker.io", "registry-1.docker.io", "docker-hub", needs_credential=True)
UPSTREAMS: tuple[Upstream, ...] = (
    DOCKER_HUB,
    Upstream("quay.io", "quay.io", "quay", needs_credential=False),
    Upstream("public.ecr.aws", "public.ecr.aws", "ecr-public", needs_credential=False),
    Upstream("registry.k8s.io", "registry.k8s.io", "k8s", needs_credential=False),
)
_DOCKER_HUB_ALIASES = ("docker.io", "index.docker.io", "registry-1.docker.io")


class ImageCacheConfig(ConfigModel):
    """`imageCache`: an ECR pull-through cache for the model images."""

    enabled: bool | None = Field(
        default=None,
        description="Pull model images through an ECR pull-through cache in the stack's account and region. "
        "Unset: on in prod, off elsewhere.",
    )
    docker_hub_username: str | None = Field(
        default=None,
        min_length=1,
        max_length=100,
        description="Docker Hub user whose access token (the dockerHubAccessToken secret) the cache pulls with; "
        "ECR requires a credential for Docker Hub.",
    )


def split(repository: str) -> tuple[str, str]:
    """(registry host, path) of an image repository, Docker Hub's implied host made explicit."""
    first, _, rest = repository.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        host, path = first, rest
    else:
        host, path = DOCKER_HUB.host, repository
    if host in _DOCKER_HUB_ALIASES:
        host = DOCKER_HUB.host
        if "/" not in path:
            path = f"library/{path}"
    return host, path


def upstream_for(repository: str) -> Upstream | None:
    """The cache rule that serves this repository, or None (a private or unsupported registry)."""
    host, _ = split(repository)
    return next((u for u in UPSTREAMS if u.host == host), None)


def registry_host(account: str, region: str) -> str:
    return f"{account}.dkr.ecr.{region}.amazonaws.com"


RULE_PREFIX_MAX = 30


def rule_prefix(cluster_name: str, upstream: Upstream) -> str:
    """The ECR repository prefix of one stack's rule: prefixes are per registry (account and
    region), so two stacks there must not share one. At most 30 characters (docs/upstream-facts.md#image-cache, item 2)."""
    head = cluster_name[: RULE_PREFIX_MAX - len(upstream.prefix) - 1].rstrip("-._")
    return f"{head}-{upstream.prefix}"


def image_reference(image: Image, registry: str | None, cluster_name: str) -> str:
    """What pods pull: through the stack's cache in `registry` when the image's registry is
    cached, else the configured reference. The tag and digest stay as pinned."""
    upstream = upstream_for(image.repository)
    if registry is None or upstream is None:
        return image.reference
    _, path = split(image.repository)
    ref = f"{registry}/{rule_prefix(cluster_name, upstream)}/{path}:{image.tag}"
    return f"{ref}@{image.digest}" if image.digest else ref


def cached_reference(reference: str, registry: str | None, cluster_name: str) -> str:
    """A plain `repository:tag` reference (a platform image, not a model's) through the stack's cache
    in `registry` when its registry is cached, else unchanged."""
    repository, _, tag = reference.rpartition(":")
    upstream = upstream_for(repository)
    if registry is None or upstream is None or not repository:
        return reference
    _, path = split(repository)
    return f"{registry}/{rule_prefix(cluster_name, upstream)}/{path}:{tag}"
