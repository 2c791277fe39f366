"""Pure Helm values of the EFA device plugin (chart aws-efa-k8s-device-plugin 0.5.30) on the EFA pools' nodes.

It advertises `vpc.amazonaws.com/efa` on the nodes of EFA-capable types (the chart's own node affinity on
supportedInstanceLabels); its tolerations default to none, and GPU nodes are tainted, so it tolerates every
EFA pool's taints (../shared/reference/wave3-facts.md Part A 4.3). It runs privileged in kube-system (the chart's
securityContext: it opens the EFA devices of the host).
"""

from __future__ import annotations

from typing import Any

from config.facts.conventions import EFA_NODE_LABEL, KUBE_SYSTEM
from config.sections.gpu_pools import GpuPool

RELEASE = "aws-efa-k8s-device-plugin"
NAMESPACE = KUBE_SYSTEM


def values(pools: list[GpuPool]) -> dict[str, Any]:
    """Tolerations of every EFA pool's taints, and the EFA pools' nodes only (EFA_NODE_LABEL): a node of another pool
    may be of an EFA-capable type too, and its pods never ask for EFA."""
    taints = sorted({(t["key"], t["effect"]) for p in pools if p.efa for t in p.node_taints()})
    return {
        "tolerations": [{"key": key, "operator": "Exists", "effect": effect} for key, effect in taints],
        "nodeSelector": dict(EFA_NODE_LABEL),
    }
