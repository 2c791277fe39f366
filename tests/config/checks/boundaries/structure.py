"""Boundary mutations and values of config/checks/structure.py (the table: structure.yaml; see __init__)."""

from __future__ import annotations

from typing import Any

from config.facts.conventions import HPA_PREFIX, K8S_NAME_MAX
from config.sections.gateway import RELEASE_NAME_MAX
from tests.config.checks.boundaries import mutation, values
from tests.support.mutations import m0, p0

HPA_NAME_AT_LIMIT = "m" * (K8S_NAME_MAX - len(HPA_PREFIX))
"""The longest model name whose KEDA HPA name (keda-hpa-<name>) fits 63 characters: 54."""
RELEASE_NAME_AT_LIMIT = "r" * RELEASE_NAME_MAX
"""The longest model name Helm takes as the router's release name: 53."""

values(
    hpa_name_at_limit=HPA_NAME_AT_LIMIT,
    release_name_at_limit=RELEASE_NAME_AT_LIMIT,
    release_name_max=RELEASE_NAME_MAX,
    longest_model_name=min(len(HPA_NAME_AT_LIMIT), len(RELEASE_NAME_AT_LIMIT)),
)


@mutation
def pool_name_cut(d: dict[str, Any], cut: int) -> None:
    """The first model's pool: the first pool's name less its last `cut` characters (a match by prefix would
    take one short)."""
    name = p0(d)["name"]
    m0(d)["pool"] = name[: len(name) - cut]
