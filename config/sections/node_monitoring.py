"""`nodeMonitoring`: the EKS node monitoring agent, which turns GPU, kernel, network and storage faults
into node conditions (what karpenter.nodeRepair acts on) and events."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from config.sections.base import ConfigModel


class NodeMonitoringConfig(ConfigModel):
    """The EKS node monitoring agent (chart eks-node-monitoring-agent 1.7.0) on every node."""

    enabled: bool = Field(
        default=True,
        description="Run the agent on every node. It sets AcceleratedHardwareReady, KernelReady, NetworkingReady, "
        "StorageReady and ContainerRuntimeReady from what it sees (XID errors, double-bit ECC, NVLink faults, kernel "
        "and disk errors), which karpenter.nodeRepair acts on and the platform's alerts report. Its DCGM host engine "
        "(nv-hostengine on host port 5555) is the only one on each GPU node: the GPU operator's DCGM exporter reads it "
        "instead of starting its own. Off: no node conditions, and the exporter embeds its own engine.",
    )
    extra_values: dict[str, Any] = Field(
        default_factory=dict, description="Escape hatch: Helm values deep-merged last into the chart values."
    )
