"""`keda`: KEDA, which scales every model on its vLLM metrics."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from config.sections.base import ConfigModel


class KedaConfig(ConfigModel):
    """KEDA, which scales every model on its vLLM metrics."""

    operator_replicas: int = Field(default=2, ge=1, le=3, description="KEDA operator replicas (leader election).")
    extra_values: dict[str, Any] = Field(
        default_factory=dict, description="Escape hatch: Helm values deep-merged last into the chart values."
    )
