"""`gpuOperator`: the NVIDIA GPU operator."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from config.sections.base import ConfigModel
from config.sections.types import K8sName


class GpuOperatorConfig(ConfigModel):
    """The NVIDIA GPU operator (device plugin, GPU feature discovery, DCGM exporter, MIG manager)."""

    namespace: K8sName = Field(default="gpu-operator", description="Namespace (Pod Security privileged).")
    extra_values: dict[str, Any] = Field(
        default_factory=dict, description="Escape hatch: Helm values deep-merged last into the chart values."
    )
