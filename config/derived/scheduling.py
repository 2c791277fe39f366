"""Kubernetes scheduling semantics the platform checks itself: taints against tolerations."""

from __future__ import annotations

from typing import Any


def tolerates(toleration: dict[str, Any], taint: dict[str, Any]) -> bool:
    """Whether a toleration tolerates a taint, as the Kubernetes scheduler decides it.

    - An empty key with operator Exists matches every taint key; otherwise the keys must be equal.
    - An empty effect matches every effect; otherwise the effects must be equal.
    - Operator Exists ignores the value; Equal (the default) needs equal values ("" when unset).
    """
    operator = toleration.get("operator") or "Equal"
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    if not key and operator != "Exists":
        return False
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    if operator == "Exists":
        return True
    return (toleration.get("value") or "") == (taint.get("value") or "")


def uncovered(taints: list[dict[str, Any]], tolerations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The taints no toleration in the list tolerates."""
    return [t for t in taints if not any(tolerates(tol, t) for tol in tolerations)]
