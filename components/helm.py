"""Helm values helpers shared by the release components (pure)."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s


def _copy(value: Any) -> Any:
    # Copies the containers only: values may hold pulumi Outputs, which must not be deep-copied.
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """A new dict: override merged into base; nested mappings merge, everything else replaces."""
    merged: dict[str, Any] = _copy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = _copy(value)
    return merged


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
