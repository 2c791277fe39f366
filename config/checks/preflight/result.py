"""One preflight check's result: what was checked, what it found, and the inputs it used."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from config.errors import Problem

Result = Literal["ok", "failed", "warning", "not checked"]

# EC2 vCPU quotas (service ec2), by purchase option and instance class (docs/upstream-facts.md#quotas-and-amis).
QUOTAS = {
    ("on-demand", "G"): ("L-DB2E81BA", "Running On-Demand G and VT instances"),
    ("on-demand", "P"): ("L-417A185B", "Running On-Demand P instances"),
    ("spot", "G"): ("L-3819A6DF", "All G and VT Spot Instance Requests"),
    ("spot", "P"): ("L-7212CCBC", "All P Spot Instance Requests"),
}
SPOT_ROLE = "AWSServiceRoleForEC2Spot"


@dataclass(frozen=True)
class Check:
    """One preflight check and what it found."""

    name: str
    path: str
    result: Result
    message: str
    inputs: dict[str, Any] = field(default_factory=dict)

    def problem(self) -> Problem | None:
        if self.result == "failed":
            return Problem(self.path, self.message)
        if self.result == "warning":
            return Problem(self.path, self.message, "warning")
        return None
