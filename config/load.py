"""The only reader of Pulumi config: stack file -> validated StackConfig + secret Outputs.

Sections are camelCase keys of the project namespace (`llm-platform:models`). Secrets
(`hfToken`, `apiKeys`, `grafanaAdminPassword`) never enter the pydantic model: they come back
as secret `pulumi.Output`s, and must have been stored with `pulumi config set --secret`.
What the values mean is decided by the pure modules this one calls (`config/stack_file.py`,
`config/checks/secrets.py`); this module only reads the runtime and wraps secrets.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
from pulumi.runtime import config as runtime_config

from config import stack_file
from config.checks import secrets as stack_secrets
from config.errors import ConfigError, Problem
from config.facts import placeholders
from config.facts.conventions import DOCKER_HUB_ACCESS_TOKEN, GRAFANA_ADMIN_PASSWORD, HF_TOKEN
from config.sections.stack import StackConfig
from config.validate import parse_stack_config


@dataclass(frozen=True)
class OfflineAccount:
    """The account answers an offline run checks the stack against (set by the harness)."""

    path: Path
    authoritative: bool
    """False for the default file: what it does not describe is "not checked", never failed."""


OFFLINE_ACCOUNT: OfflineAccount | None = None
"""Set when the offline harness (offline/harness.py) hands the program its config, under mocks;
never read from the environment. Offline, placeholder values are warnings and the account is the
harness's file; a real `pulumi preview`/`up` stops on placeholders and reads the account itself."""


@dataclass(frozen=True)
class Secrets:
    """Secret config values, as secret Outputs. None/empty when not set."""

    hf_token: pulumi.Output[str] | None = None
    api_keys: Mapping[str, pulumi.Output[str]] = field(default_factory=dict)
    grafana_admin_password: pulumi.Output[str] | None = None
    docker_hub_access_token: pulumi.Output[str] | None = None


@dataclass(frozen=True)
class LoadedConfig:
    """What the program runs from."""

    config: StackConfig
    secrets: Secrets
    warnings: list[Problem]


def _all_config() -> dict[str, Any]:
    merged = dict(runtime_config.get_config_env())
    merged.update(runtime_config.CONFIG.get())
    return merged


def _is_secret(key: str) -> bool:
    return runtime_config.is_config_secret(key) or key in runtime_config.get_config_secret_keys_env()


def validate() -> tuple[StackConfig, dict[str, Any], dict[str, str], list[Problem]]:
    """Read and check everything; no Outputs are created. Raises ConfigError with every problem.

    Returns the config, the raw secret values, the API keys by model, and the warnings.
    """
    data, secrets, problems = stack_file.split(_all_config(), _is_secret)
    region_missing = "region" not in data
    try:
        cfg, warnings = parse_stack_config(data)
    except ConfigError as err:
        found = [p for p in err.problems if not (region_missing and p.path == "region")]
        raise ConfigError(problems + found) from None
    secret_problems, api_keys = stack_secrets.problems(cfg, secrets)
    problems += secret_problems
    found = placeholders.find(cfg)
    if OFFLINE_ACCOUNT is not None:
        warnings = [*warnings, *(Problem(p.path, p.message, "warning") for p in found)]
    else:
        problems += found
    if problems:
        raise ConfigError(problems + warnings)
    return cfg, secrets, api_keys, warnings


def load() -> LoadedConfig:
    """Read, validate and return the stack config with its secrets as secret Outputs."""
    cfg, secrets, api_keys, warnings = validate()
    return LoadedConfig(
        config=cfg,
        secrets=Secrets(
            hf_token=pulumi.Output.secret(secrets[HF_TOKEN]) if HF_TOKEN in secrets else None,
            api_keys={k: pulumi.Output.secret(v) for k, v in sorted(api_keys.items())},
            grafana_admin_password=pulumi.Output.secret(secrets[GRAFANA_ADMIN_PASSWORD]),
            docker_hub_access_token=(
                pulumi.Output.secret(secrets[DOCKER_HUB_ACCESS_TOKEN]) if DOCKER_HUB_ACCESS_TOKEN in secrets else None
            ),
        ),
        warnings=warnings,
    )
