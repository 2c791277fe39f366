"""Kubernetes objects every component's builders share."""

from __future__ import annotations

from typing import Any


def namespace_manifest(name: str, enforce: str, audit: str | None = None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A Namespace with Pod Security admission labels (warn and audit default to the enforce level)."""
    level = audit or enforce
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": name,
            "labels": {
                "pod-security.kubernetes.io/enforce": enforce,
                "pod-security.kubernetes.io/audit": level,
                "pod-security.kubernetes.io/warn": level,
                **(labels or {}),
            },
        },
    }
