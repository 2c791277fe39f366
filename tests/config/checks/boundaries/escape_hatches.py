"""Boundary mutations of config/checks/escape_hatches.py (the table: escape_hatches.yaml; see __init__)."""

from __future__ import annotations

from typing import Any

from config.sections.gpu_pools import GpuPool
from tests.config.checks.boundaries import mutation
from tests.support.mutations import p0


@mutation
def tolerate_pool_taints(d: dict[str, Any], drop_last: bool) -> None:
    """The GPU operator's daemonsets tolerating each of the first pool's node taints exactly (Equal), or all but
    the last."""
    tolerations = [{**t, "operator": "Equal"} for t in GpuPool.model_validate(p0(d)).node_taints()]
    d.setdefault("gpuOperator", {})["extraValues"] = {"daemonsets": {"tolerations": tolerations[:-1] if drop_last else tolerations}}
