"""Helm values helpers shared by the release builders."""

from __future__ import annotations

from typing import Any


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
