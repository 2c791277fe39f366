"""Boundary pairs of config/checks/structure.py (see __init__)."""

from __future__ import annotations

import copy
from typing import Any

from config.facts.conventions import HPA_PREFIX, K8S_NAME_MAX
from config.sections.gateway import RELEASE_NAME_MAX
from tests.config.checks.boundaries import Mutation, Pair
from tests.support.mutations import m0, p0

# -- rule_pool_catalog ---------------------------------------------------------------------------------


def _cpu_type_in_pool(d: dict[str, Any]) -> None:
    # in the catalog, but a CPU type: the catalog cannot size it as a GPU node
    p0(d)["instanceTypes"].append("m7i.xlarge")


def _gpu_type_in_pool(d: dict[str, Any]) -> None:
    p0(d)["instanceTypes"].append("g6.4xlarge")


def _family_unknown(d: dict[str, Any]) -> None:
    p0(d).pop("instanceTypes")
    p0(d)["instanceFamilies"] = ["g6", "g7"]


def _family_known(d: dict[str, Any]) -> None:
    p0(d).pop("instanceTypes")
    p0(d)["instanceFamilies"] = ["g6", "g6e"]


def _gpu_counts(count: int) -> Mutation:
    # g6 comes in 1, 4 and 8 GPUs per node: 2 narrows it to nothing, 4 to the 12xlarge
    def mutate(d: dict[str, Any]) -> None:
        p0(d).pop("instanceTypes")
        p0(d).update(instanceFamilies=["g6"], gpuCounts=[count])

    return mutate


def _mig_pool(types: list[str], profile: str) -> Mutation:
    """full-prod's MIG pool (gpu-a100-mig) on other types or another profile."""

    def mutate(d: dict[str, Any]) -> None:
        pool = next(p for p in d["gpuPools"] if p["name"] == "gpu-a100-mig")
        pool.update(instanceTypes=types, sharing={"mig": {"profile": profile}})

    return mutate


# -- rule_unique_names ------------------------------------------------------------------------------


def _second_model(name: str) -> Mutation:
    def mutate(d: dict[str, Any]) -> None:
        d["models"].append({**copy.deepcopy(m0(d)), "name": name})

    return mutate


def _second_pool(name: str) -> Mutation:
    def mutate(d: dict[str, Any]) -> None:
        d["gpuPools"].append({**copy.deepcopy(p0(d)), "name": name})

    return mutate


# -- rule_model_names / rule_gateway_names ---------------------------------------------------------------


def _named(name: str) -> Mutation:
    def mutate(d: dict[str, Any]) -> None:
        m0(d)["name"] = name

    return mutate


def _named_gpu_operator(d: dict[str, Any]) -> None:
    # the GPU operator's default namespace
    m0(d)["name"] = "gpu-operator"


def _named_gpu_operator_moved(d: dict[str, Any]) -> None:
    # the same name once the stack moves the operator elsewhere: the reserved set follows the config
    m0(d)["name"] = "gpu-operator"
    d["gpuOperator"] = {**d.get("gpuOperator", {}), "namespace": "gpu-ops"}


HPA_NAME_AT_LIMIT = "m" * (K8S_NAME_MAX - len(HPA_PREFIX))
"""The longest model name whose KEDA HPA name (keda-hpa-<name>) fits 63 characters: 54."""
RELEASE_NAME_AT_LIMIT = "r" * RELEASE_NAME_MAX
"""The longest model name Helm takes as the router's release name: 53."""


# -- rule_pools_exist ---------------------------------------------------------------------------------


def _pool_prefix(d: dict[str, Any]) -> None:
    # one character short of the pool's name: a match by prefix would take it
    m0(d)["pool"] = p0(d)["name"][:-1]


def _pool_exact(d: dict[str, Any]) -> None:
    m0(d)["pool"] = p0(d)["name"]


PAIRS = [
    Pair(
        "structure.rule_pool_catalog",
        "an instance type the catalog has but without a GPU (m7i.xlarge) vs a GPU type",
        bad=_cpu_type_in_pool,
        good=_gpu_type_in_pool,
        path="gpuPools[gpu-l4-a10g].instanceTypes",
        fix="not in the GPU catalog",
    ),
    Pair(
        "structure.rule_pool_catalog",
        "an instance family the catalog does not have vs one it has",
        bad=_family_unknown,
        good=_family_known,
        path="gpuPools[gpu-l4-a10g].instanceFamilies",
        fix="or add it to config/facts/catalog.py",
    ),
    Pair(
        "structure.rule_pool_catalog",
        "gpuCounts that no size of the families has (g6: 2) vs one that one size has (4)",
        bad=_gpu_counts(2),
        good=_gpu_counts(4),
        path="gpuPools[gpu-l4-a10g].gpuCounts",
        fix="widen gpuCounts or the families",
    ),
    Pair(
        "structure.rule_pool_catalog",
        "a MIG pool of two GPU models (A100 40GB and 80GB) vs one",
        bad=_mig_pool(["p4d.24xlarge", "p4de.24xlarge"], "3g.20gb"),
        good=_mig_pool(["p4d.24xlarge"], "3g.20gb"),
        path="gpuPools[gpu-a100-mig].sharing.mig",
        fix="keep the pool to instance types with the same GPU",
        stack="full-prod",
    ),
    Pair(
        "structure.rule_pool_catalog",
        "MIG on a GPU without MIG (L40S) vs one with it (A100)",
        bad=_mig_pool(["g6e.12xlarge"], "3g.20gb"),
        good=_mig_pool(["p4d.24xlarge"], "3g.20gb"),
        path="gpuPools[gpu-a100-mig].sharing.mig",
        fix="use timeSlicing on this GPU",
        stack="full-prod",
    ),
    Pair(
        "structure.rule_pool_catalog",
        "a MIG profile of another GPU (A100 80GB's 1g.20gb on A100 40GB) vs one of the pool's GPU (1g.10gb)",
        bad=_mig_pool(["p4d.24xlarge"], "1g.20gb"),
        good=_mig_pool(["p4d.24xlarge"], "1g.10gb"),
        path="gpuPools[gpu-a100-mig].sharing.mig.profile",
        fix="use one of 1g.5gb",
        stack="full-prod",
    ),
    Pair(
        "structure.rule_unique_names",
        "a second model of the first one's name vs one character apart",
        bad=_second_model("llama-3-1-8b"),
        good=_second_model("llama-3-1-8c"),
        path="models[1].name",
        fix="rename one",
    ),
    Pair(
        "structure.rule_unique_names",
        "a second pool of the first one's name vs one character apart",
        bad=_second_pool("gpu-l4-a10g"),
        good=_second_pool("gpu-l4-a10h"),
        path="gpuPools[1].name",
        fix="rename one",
    ),
    Pair(
        "structure.rule_model_names",
        "a model named as the GPU operator's namespace vs the same name with the operator moved",
        bad=_named_gpu_operator,
        good=_named_gpu_operator_moved,
        path="models[gpu-operator].name",
        fix="choose another name",
    ),
    Pair(
        "structure.rule_model_names",
        "a name one character over K8S_NAME_MAX - len(HPA_PREFIX) (55) vs at it (54)",
        bad=_named(HPA_NAME_AT_LIMIT + "m"),
        good=_named(HPA_NAME_AT_LIMIT),
        # the common prefix of both names' paths
        path=f"models[{HPA_NAME_AT_LIMIT}",
        fix=f"use at most {min(len(HPA_NAME_AT_LIMIT), len(RELEASE_NAME_AT_LIMIT))} characters (the longest name",
    ),
    Pair(
        "structure.rule_gateway_names",
        "a name one character over RELEASE_NAME_MAX (54) vs at it (53)",
        bad=_named(RELEASE_NAME_AT_LIMIT + "r"),
        good=_named(RELEASE_NAME_AT_LIMIT),
        path=f"models[{RELEASE_NAME_AT_LIMIT}",
        fix=f"use at most {RELEASE_NAME_MAX} characters",
    ),
    Pair(
        "structure.rule_pools_exist",
        "a pool name one character short of an existing pool's vs the pool's name",
        bad=_pool_prefix,
        good=_pool_exact,
        path="models[llama-3-1-8b].pool",
        fix="use one of those names or add the pool",
    ),
]
