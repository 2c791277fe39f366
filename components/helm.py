"""Create a Helm release the one way every component does."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from config.facts.versions import Chart


def release(
    name: str,
    *,
    release_name: str,
    chart: Chart,
    namespace: str,
    values: dict[str, Any],
    opts: pulumi.ResourceOptions,
    timeout: int = 600,
    skip_await: bool = False,
    skip_crds: bool = False,
) -> k8s.helm.v3.Release:
    """A real Helm release of a pinned chart (hooks run), always with an explicit name so
    chart-derived names are stable."""
    return k8s.helm.v3.Release(
        name,
        name=release_name,
        chart=chart.name,
        repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=chart.repository) if chart.repository else None,
        version=chart.version,
        namespace=namespace,
        values=values,
        max_history=10,
        timeout=timeout,
        # None (not false) when unset, so the other releases' inputs stay as they were
        skip_await=True if skip_await else None,
        # None (not false) too: a chart whose CRDs the program applies itself skips its crds/
        skip_crds=True if skip_crds else None,
        opts=opts,
    )
