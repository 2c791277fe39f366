"""Parse and check a raw stack config: the single entry point to a StackConfig."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from config.checks import registry, secrets
from config.errors import ConfigError, Problem, problems_from_validation_error
from config.sections.stack import StackConfig


def parse_stack_config(data: dict[str, Any]) -> tuple[StackConfig, list[Problem]]:
    """Validate raw config (camelCase keys) into a StackConfig.

    Returns the config and its warnings. Raises ConfigError with every problem found (credentials
    pasted into plain fields first, then field errors; cross-section rules run only on a config whose
    fields are valid). A field holding a credential reports that, not also its own complaint.
    """
    problems, covered = secrets.plain_credentials(data)
    try:
        cfg = StackConfig.model_validate(data)
    except ValidationError as exc:
        problems += [p for p in problems_from_validation_error(StackConfig, exc, data) if p.path not in covered]
        raise ConfigError(problems) from None
    problems += [p for p in registry.check(cfg) if p.path not in covered]
    if any(p.severity == "error" for p in problems):
        raise ConfigError(problems)
    return cfg, [p for p in problems if p.severity == "warning"]
