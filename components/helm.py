"""Create a Helm release the one way every component does."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s


def release(
    name: str,
    *,
    release_name: str,
    chart: str,
    version: str,
    namespace: str,
    values: dict[str, Any],
    opts: pulumi.ResourceOptions,
    repository: str | None = None,
    timeout: int = 600,
) -> k8s.helm.v3.Release:
    """A real Helm release (hooks run), always with an explicit name so chart-derived names are stable."""
    return k8s.helm.v3.Release(
        name,
        name=release_name,
        chart=chart,
        repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=repository) if repository else None,
        version=version,
        namespace=namespace,
        values=values,
        max_history=10,
        timeout=timeout,
        opts=opts,
    )
