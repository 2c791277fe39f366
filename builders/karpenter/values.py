"""Helm values of the Karpenter chart (pure)."""

from __future__ import annotations

from typing import Any

from builders.helm import deep_merge
from config.facts.conventions import KARPENTER_SERVICE_ACCOUNT, SYSTEM_NODE_SELECTOR
from config.facts.system_capacity import KARPENTER_CONTROLLER
from config.sections.karpenter import KarpenterConfig


def karpenter_values(
    cfg: KarpenterConfig,
    cluster_name: Any,
    interruption_queue: Any,
    irsa_role_arn: Any = None,
    node_overlay: bool = False,
) -> dict[str, Any]:
    """Values for the controller: on the system nodes, wired to the cluster and the interruption queue."""
    values: dict[str, Any] = {
        "settings": {
            "clusterName": cluster_name,
            "interruptionQueue": interruption_queue,
            "featureGates": {"nodeOverlay": node_overlay, "nodeRepair": cfg.node_repair},
        },
        "replicas": cfg.replicas,
        "serviceAccount": {
            "create": True,
            "name": KARPENTER_SERVICE_ACCOUNT,
            "annotations": {"eks.amazonaws.com/role-arn": irsa_role_arn} if irsa_role_arn is not None else {},
        },
        "controller": {
            "resources": {
                "requests": KARPENTER_CONTROLLER.as_values(),
                "limits": KARPENTER_CONTROLLER.as_values(),
            }
        },
        # Never on the nodes Karpenter manages: the chart's own affinity already avoids them; the
        # selector pins it to the system node group.
        "nodeSelector": dict(SYSTEM_NODE_SELECTOR),
        # Set, not left to the chart's defaults: the controller must survive drains of the system
        # nodes and preemption (config/checks/escape_hatches.py keeps the escape hatch from removing them).
        "podDisruptionBudget": {"name": "karpenter", "maxUnavailable": 1},
        "priorityClassName": "system-cluster-critical",
        "logLevel": "info",
    }
    return deep_merge(values, cfg.extra_values)
