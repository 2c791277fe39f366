"""Bad-input mutations' handles on a fixture stack's model input: its first model, its first pool."""

from __future__ import annotations

from typing import Any


def m0(d: dict[str, Any]) -> dict[str, Any]:
    return d["models"][0]  # type: ignore[no-any-return]


def p0(d: dict[str, Any]) -> dict[str, Any]:
    return d["gpuPools"][0]  # type: ignore[no-any-return]
