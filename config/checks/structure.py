"""Names and references: unique names, names the platform owns, a pool for every model, pools the catalog knows."""

from __future__ import annotations

from collections.abc import Iterator

from config.checks.common import catalog_problems, model_path, models_with_pools
from config.errors import Problem
from config.facts.conventions import HPA_PREFIX, K8S_NAME_MAX, hpa_name, reserved_namespaces
from config.sections.gateway import RELEASE_NAME_MAX
from config.sections.stack import StackConfig


def rule_pool_catalog(cfg: StackConfig) -> Iterator[Problem]:
    """gpuPools[]: instance types and MIG profiles the catalog knows."""
    for pool in cfg.gpu_pools:
        yield from catalog_problems(pool)


def rule_unique_names(cfg: StackConfig) -> Iterator[Problem]:
    """models[].name and gpuPools[].name: unique."""
    reasons = {
        "models": "each becomes Kubernetes object names (two ScaledObjects on one Deployment fight each other)",
        "gpuPools": "each becomes a NodePool, and models pick their pool by name (the second would replace the first)",
    }
    named = (("models", [m.name for m in cfg.models]), ("gpuPools", [p.name for p in cfg.gpu_pools]))
    for kind, names in named:
        seen: dict[str, int] = {}
        for i, name in enumerate(names):
            if name in seen:
                yield Problem(
                    f"{kind}[{i}].name",
                    f"'{name}' is already used by {kind}[{seen[name]}]; names must be unique, because {reasons[kind]}. Fix: rename one",
                )
            seen.setdefault(name, i)


def rule_model_names(cfg: StackConfig) -> Iterator[Problem]:
    """models[].name: not a namespace the platform owns, short enough for KEDA's HPA name."""
    reserved = reserved_namespaces(cfg)
    for path, m, _ in models_with_pools(cfg):
        if m.name in reserved:
            yield Problem(
                f"{path}.name",
                f"'{m.name}' is a namespace the platform or Kubernetes owns, and each model gets a "
                "namespace of its own name. Fix: choose another name",
            )
        hpa = hpa_name(m.name)
        if len(hpa) > K8S_NAME_MAX:
            yield Problem(
                f"{path}.name",
                f"name too long: KEDA names the HPA {hpa[:20]}... ({len(hpa)} characters), which must "
                f"be at most {K8S_NAME_MAX}. Fix: use at most {min(K8S_NAME_MAX - len(HPA_PREFIX), RELEASE_NAME_MAX)} characters "
                "(the longest name the HPA and the gateway's Helm release both allow)",
            )


def rule_gateway_names(cfg: StackConfig) -> Iterator[Problem]:
    """models[].name: every model's gateway names its router's Helm release after it, which Helm caps."""
    for path, m, _ in models_with_pools(cfg):
        if len(m.name) > RELEASE_NAME_MAX:
            yield Problem(
                f"{path}.name",
                f"name too long: the model's gateway is a Helm release named after it ({len(m.name)} "
                f"characters) and Helm allows {RELEASE_NAME_MAX}. Fix: use at most {RELEASE_NAME_MAX} characters",
            )


def rule_pools_exist(cfg: StackConfig) -> Iterator[Problem]:
    """models[].pool: one of gpuPools."""
    names = [p.name for p in cfg.gpu_pools]
    for m in cfg.models:
        path = model_path(m)
        if cfg.pool(m.pool) is None:
            yield Problem(
                f"{path}.pool",
                f"pool '{m.pool}' is not in gpuPools (have: {', '.join(names)}); the model would have "
                "nowhere to run. Fix: use one of those names or add the pool",
            )
