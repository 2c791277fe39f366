"""What every topic of the checks shares: the config paths of models and pools, and the models with a pool the
catalog can size (config/derived/sizing.py: a pool it cannot size is reported once, and skipped by the rest)."""

from __future__ import annotations

from collections.abc import Iterator

from config.derived.sizing import catalog_problems, pool_path
from config.sections.gpu_pools import GpuPool
from config.sections.models import ModelConfig
from config.sections.stack import StackConfig


def model_path(model: ModelConfig) -> str:
    return f"models[{model.name}]"


def models_with_pools(cfg: StackConfig) -> Iterator[tuple[str, ModelConfig, GpuPool | None]]:
    """Models with their pool; the pool is None when missing or not usable (reported elsewhere)."""
    for m in cfg.models:
        pool = cfg.pool(m.pool)
        yield model_path(m), m, pool if pool is not None and not catalog_problems(pool) else None


__all__ = ["catalog_problems", "model_path", "models_with_pools", "pool_path"]
