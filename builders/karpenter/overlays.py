"""NodeOverlays: tell Karpenter what a node of a sharing pool offers before it exists.

Karpenter's simulation only knows physical GPUs. Without an overlay, four pods that each ask for
one time-slice make it launch four nodes, and pods that ask for `nvidia.com/mig-3g.20gb` find
no instance type offering it and stay Pending. An overlay per (pool, GPUs per node) adds the
shared capacity to the matching instance types (karpenter.sh/v1alpha1, feature gate
`nodeOverlay`).
"""

from __future__ import annotations

from typing import Any

from config.derived.sharing import node_capacity
from config.sections.gpu_pools import GpuPool

API_VERSION = "karpenter.sh/v1alpha1"


def node_overlays(pool: GpuPool) -> list[dict[str, Any]]:
    if pool.sharing.mode == "none":
        return []
    overlays = []
    for count in sorted({t.gpu_count for t in pool.resolved_instance_types()}):
        capacity = node_capacity(pool, count)
        overlays.append(
            {
                "apiVersion": API_VERSION,
                "kind": "NodeOverlay",
                "metadata": {"name": f"{pool.name}-{count}gpu"},
                "spec": {
                    "requirements": [
                        {"key": "karpenter.sh/nodepool", "operator": "In", "values": [pool.name]},
                        {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "In", "values": [str(count)]},
                    ],
                    "capacity": {k: str(v) for k, v in capacity.items()},
                    "weight": 10,
                },
            }
        )
    return overlays
