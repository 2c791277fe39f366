"""build_platform: wire the components together in dependency order."""

from __future__ import annotations

from typing import Any

from config.load import Secrets
from config.stack import StackConfig


def build_platform(cfg: StackConfig, secrets: Secrets) -> dict[str, Any]:
    """Create every component of the platform; return the stack outputs (the contract)."""
    del secrets  # used by the serving and observability components
    return {
        "region": cfg.region,
        "clusterName": cfg.cluster.name,
    }
