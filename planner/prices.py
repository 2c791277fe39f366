"""Hourly prices by capacity type: on-demand from the catalog, spot from a dated table. Pure.

Spot prices move with the market; the table is a snapshot, the planner's default and no promise.
"""

from __future__ import annotations

from typing import Final

from config.facts import catalog

SPOT_SOURCE: Final = (
    "skypilot-org/skypilot-catalog catalogs/v7/aws/vms.csv at commit 001367d22a0033fac286a8c71aeac7109e431bcb, "
    "us-east-1 Linux, the middle of the lowest and highest zone price"
)
SPOT_DATE: Final = "snapshot undated; its on-demand column predates AWS's June 2025 p4d/p5 price cut"
SPOT_PER_HOUR: Final[dict[str, float]] = {
    "g5.xlarge": (0.397 + 0.418) / 2,
    "g5.2xlarge": (0.429 + 0.607) / 2,
    "g6.xlarge": (0.388 + 0.417) / 2,
    "g6.2xlarge": (0.369 + 0.452) / 2,
    "g6e.xlarge": (0.787 + 1.208) / 2,
    "g6e.2xlarge": (0.738 + 0.879) / 2,
    "p4d.24xlarge": (5.09 + 9.61) / 2,
    "p5.48xlarge": (20.99 + 30.33) / 2,
}
"""us-east-1 spot prices per hour by instance type (SPOT_SOURCE, SPOT_DATE)."""
SPOT_DISCOUNT: Final = 0.35
"""Spot as a share of on-demand for types the table lacks: the seeds' g5.2xlarge ($0.42 of $1.212),
also the assumption of dirien/what-is-ai-platform-engineering-and-why-should-you-care 01-maas/COST_CALCULATION.md."""


def hourly(instance: catalog.InstanceType, capacity_type: str) -> float:
    if capacity_type != "spot":
        return instance.price_per_hour
    return SPOT_PER_HOUR.get(instance.name, instance.price_per_hour * SPOT_DISCOUNT)
