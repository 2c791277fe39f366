"""The one exposure policy: is a model served through the shared ALB, and must it require an API key?

Config rules, secret loading, the builders and the offline harness all ask here, so the answer
cannot drift between the check that demands a key and the code that wires one in.
"""

from __future__ import annotations

from dataclasses import dataclass

from config.sections.models import ModelConfig
from config.sections.stack import StackConfig


@dataclass(frozen=True)
class Exposure:
    """How one model is reachable."""

    exposed: bool
    """Its /v1 API is routed through the shared ALB."""
    api_key_required: bool
    """vLLM must require an API key (an `apiKeys.<model>` secret must exist)."""
    reason: str = ""
    """Why a key is required (empty when it is not)."""


def exposure(cfg: StackConfig, model: ModelConfig) -> Exposure:
    """The exposure of one model of the stack."""
    if not model.expose:
        return Exposure(exposed=False, api_key_required=False)
    if cfg.ingress.scheme == "internet-facing":
        return Exposure(
            exposed=True,
            api_key_required=True,
            reason="the ALB is internet-facing and vLLM would otherwise serve anyone in the allow-list without a key",
        )
    if cfg.is_prod:
        return Exposure(
            exposed=True,
            api_key_required=True,
            reason="prod endpoints are reachable from the whole allow-list and the VPC, and vLLM would serve them without a key",
        )
    return Exposure(exposed=True, api_key_required=False)


def exposed_models(cfg: StackConfig) -> list[ModelConfig]:
    """The models served through the shared ALB, in config order."""
    return [m for m in cfg.models if exposure(cfg, m).exposed]


def models_needing_api_keys(cfg: StackConfig) -> list[ModelConfig]:
    """The models whose endpoint must require an API key, in config order."""
    return [m for m in cfg.models if exposure(cfg, m).api_key_required]
