"""The generic mutations of the tables: set, remove, append or copy what a path names in the model input.

A path is written as the problems' config paths are: keys joined by dots, a list item by its index or its name,
e.g. `models[0].replicas.min`, `gpuPools[gpu-h100].headroom`, `ingress.allowedCidrs[1]`."""

from __future__ import annotations

import copy
import re
from typing import Any

from tests.config.checks.boundaries import mutation

_FIRST = re.compile(r"([A-Za-z_]\w*)")
_NEXT = re.compile(r"\.([A-Za-z_]\w*)|\[([^\[\]]+)\]")


def _parts(path: str) -> list[str | int]:
    """The keys of `path` (str), its list indices (int) and list items by name (`[name]`)."""
    found = _FIRST.match(path)
    if found is None:
        raise ValueError(f"not a path: {path!r} (a key first)")
    parts: list[str | int] = [found[1]]
    at = found.end()
    while at < len(path):
        found = _NEXT.match(path, at)
        if found is None:
            raise ValueError(f"not a path: {path!r} (at {path[at:]!r})")
        key, item = found.groups()
        parts.append(key if key is not None else int(item) if item.isdigit() else f"[{item}]")
        at = found.end()
    return parts


def _child(node: Any, part: str | int, path: str, create: bool) -> Any:
    if isinstance(part, int) or part.startswith("["):
        if not isinstance(node, list):
            raise TypeError(f"{path}: {part} of a {type(node).__name__}")
        if isinstance(part, int):
            return node[part]
        named = [item for item in node if item.get("name") == part[1:-1]]
        if len(named) != 1:
            raise ValueError(f"{path}: {len(named)} items named {part[1:-1]}")
        return named[0]
    return node.setdefault(part, {}) if create else node[part]


def _parent(d: dict[str, Any], path: str, create: bool) -> tuple[Any, str | int]:
    """The container of what `path` names, and its key there; `create` makes the missing mappings on the way."""
    *way, last = _parts(path)
    node: Any = d
    for part in way:
        node = _child(node, part, path, create)
    if isinstance(last, str) and last.startswith("["):
        raise ValueError(f"{path}: set or remove a list item by its index, not its name")
    return node, last


@mutation
def put(d: dict[str, Any], **values: Any) -> None:
    """Each path set to its value (the mappings on the way made where missing)."""
    for path, value in values.items():
        node, last = _parent(d, path, create=True)
        node[last] = value


@mutation
def put_from(d: dict[str, Any], path: str, source: str, plus: int = 0) -> None:
    """`path` set to the number at `source` plus `plus`."""
    node, last = _parent(d, source, create=False)
    put(d, **{path: node[last] + plus})


@mutation
def drop(d: dict[str, Any], *paths: str) -> None:
    """Each path removed where it is set (a missing key on the way: nothing to remove)."""
    for path in paths:
        try:
            node, last = _parent(d, path, create=False)
        except KeyError:
            continue
        if isinstance(node, dict):
            node.pop(last, None)
        else:
            del node[last]


@mutation
def append(d: dict[str, Any], **values: Any) -> None:
    """Each value appended to the list at its path (made where missing)."""
    for path, value in values.items():
        node, last = _parent(d, path, create=True)
        (node.setdefault(last, []) if isinstance(node, dict) else node[last]).append(value)


@mutation
def clone(d: dict[str, Any], path: str, name: str) -> None:
    """A copy of the list item at `path`, named `name`, appended to its list."""
    node, last = _parent(d, path, create=False)
    node.append({**copy.deepcopy(node[last]), "name": name})
