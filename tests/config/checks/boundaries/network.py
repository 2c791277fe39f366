"""Boundary mutations of config/checks/network.py (the table: network.yaml; see __init__)."""

from __future__ import annotations

from typing import Any

from tests.config.checks.boundaries import mutation
from tests.support.mutations import EXISTING_VPC

TGW = "tgw-0a1b2c3d4e5f60718"


@mutation
def existing_vpc(d: dict[str, Any], **replaced: Any) -> None:
    """The valid existing VPC of tests/support/mutations.py, with the keys given replaced."""
    d["network"] = {**EXISTING_VPC, **replaced}


@mutation
def routes(d: dict[str, Any], *destinations: str) -> None:
    """network.routes: one per destination, through the transit gateway."""
    d["network"]["routes"] = [{"destinationCidr": c, "transitGatewayId": TGW} for c in destinations]
