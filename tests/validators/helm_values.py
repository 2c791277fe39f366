"""Every values key we set must exist in the chart's own values.yaml (Helm ignores unknown keys).

Rules (docs/upstream-facts.md#helm-values-keys): walk nested mappings instead of splitting on dots; a
key counts when present, whatever its value; under a default of {}, [] or null anything goes;
a few keys exist only as comments upstream and are allowed explicitly per chart.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())
    assert isinstance(data, dict)
    return data


# Keys whose values are maps of user-chosen keys (Kubernetes label, annotation, selector and
# resource maps), even where the upstream default happens to be non-empty.
FREE_FORM = frozenset({"nodeSelector", "annotations", "labels", "podAnnotations", "podLabels", "additionalLabels", "requests", "limits"})


def unknown_keys(values: Any, upstream: Any, allowed: tuple[str, ...] = (), prefix: str = "") -> list[str]:
    """Paths of keys in values that the upstream defaults do not have."""
    if not isinstance(values, dict) or prefix.rsplit(".", 1)[-1] in FREE_FORM:
        return []
    if upstream is None or upstream == {} or upstream == []:
        return []  # free-form
    if not isinstance(upstream, dict):
        return [f"{prefix}.{k}".lstrip(".") for k in values]  # upstream is a scalar; we set a mapping
    unknown: list[str] = []
    for key, value in values.items():
        path = f"{prefix}.{key}".lstrip(".")
        if path in allowed or any(path.startswith(a + ".") for a in allowed):
            continue
        if key not in upstream:
            unknown.append(path)
            continue
        unknown += unknown_keys(value, upstream[key], allowed, path)
    return unknown


def _placeholder(value: Any) -> bool:
    return value is None or value == {} or value == []


def union(*trees: Any) -> Any:
    """The keys valid in any of several values files of one chart (a parent chart's own file and its
    library's, e.g. llm-d-router-standalone over routerlib under `router`): mappings merged key by key.

    Where one file has a mapping and another only a placeholder (null, {} or []; a key whose children
    are all comments), the mapping's keys count, not "anything goes": the placeholder stands for the
    same block, and free-form would hide a misspelled key under it. Otherwise the first file wins."""
    found = [t for t in trees if not _placeholder(t)]
    if not found:
        return trees[0] if trees else None
    maps = [t for t in found if isinstance(t, dict)]
    if not maps:
        return found[0]
    merged: dict[str, Any] = {}
    for key in dict.fromkeys(k for m in maps for k in m):
        merged[key] = union(*(m[key] for m in maps if key in m))
    return merged
