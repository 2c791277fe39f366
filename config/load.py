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
    """The account answers an offline run checks the stack against (handed over by the harness).

    A run has one only when the offline harness (offline/harness.py) starts the program under
    mocks; it is never read from the environment. Offline, placeholder values are warnings and the
    account is the harness's file; a real `pulumi preview`/`up` (no OfflineAccount) stops on
    placeholders and reads the account itself."""

    path: Path
    authoritative: bool
    """False for the default file: what it does not describe is "not checked", never failed."""


PROGRAM_GLOBAL = "harness_offline_account"
"""The name under which the harness hands a program run its OfflineAccount (runpy's init_globals);
the Pulumi engine runs `__main__.py` without it, so a deploy is never offline."""


def offline_account(program_globals: Mapping[str, object]) -> OfflineAccount | None:
    """The account answers the harness handed this run of the program, or None for a real run."""
    found = program_globals.get(PROGRAM_GLOBAL)
    return found if isinstance(found, OfflineAccount) else None


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
    offline: OfflineAccount | None = None
    """The harness's account answers when the run is offline (preflight reads them); None for a real run."""


def _all_config() -> dict[str, Any]:
    merged = dict(runtime_config.get_config_env())
    merged.update(runtime_config.CONFIG.get())
    return merged


def _is_secret(key: str) -> bool:
    return runtime_config.is_config_secret(key) or key in runtime_config.get_config_secret_keys_env()


def validate(offline: OfflineAccount | None = None) -> tuple[StackConfig, dict[str, Any], dict[str, str], list[Problem]]:
    """Read and check everything; no Outputs are created. Raises ConfigError with every problem.

    Returns the config, the raw secret values, the API keys by model, and the warnings. Offline
    (the harness's account answers given), placeholders are warnings; otherwise they are errors.
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
    if offline is not None:
        warnings = [*warnings, *(Problem(p.path, p.message, "warning") for p in found)]
    else:
        problems += found
    if problems:
        raise ConfigError(problems + warnings)
    return cfg, secrets, api_keys, warnings


def load(offline: OfflineAccount | None = None) -> LoadedConfig:
    """Read, validate and return the stack config with its secrets as secret Outputs (and the
    offline account answers, when the harness runs the program)."""
    cfg, secrets, api_keys, warnings = validate(offline)
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
        offline=offline,
    )
