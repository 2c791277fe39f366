"""The only reader of Pulumi config: stack file -> validated StackConfig + secret Outputs.

Sections are camelCase keys of the project namespace (`llm-platform:models`). Secrets
(`hfToken`, `apiKeys`, `grafanaAdminPassword`) never enter the pydantic model: they come back
as secret `pulumi.Output`s, and must have been stored with `pulumi config set --secret`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
from pulumi.runtime import config as runtime_config

from config.errors import ConfigError, Problem
from config.stack import StackConfig
from config.validate import parse_stack_config

PROJECT = "llm-platform"
HF_TOKEN = "hfToken"
API_KEYS = "apiKeys"
GRAFANA_ADMIN_PASSWORD = "grafanaAdminPassword"
SECRET_KEYS = (HF_TOKEN, API_KEYS, GRAFANA_ADMIN_PASSWORD)
SCALAR_SECTIONS = ("environment",)


@dataclass(frozen=True)
class Secrets:
    """Secret config values, as secret Outputs. None/empty when not set."""

    hf_token: pulumi.Output[str] | None = None
    api_keys: Mapping[str, pulumi.Output[str]] = field(default_factory=dict)
    grafana_admin_password: pulumi.Output[str] | None = None


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


def _secret_cmd(key: str) -> str:
    return f"pulumi config set --secret {key} <value>"


def read_raw() -> tuple[dict[str, Any], dict[str, Any], list[Problem]]:
    """Split raw config into model input and secret values; report problems that need no model."""
    problems: list[Problem] = []
    data: dict[str, Any] = {}
    secrets: dict[str, Any] = {}
    prefix = f"{PROJECT}:"
    values = _all_config()
    for full_key, raw in sorted(values.items()):
        if not full_key.startswith(prefix):
            continue
        key = full_key[len(prefix) :]
        if key in SECRET_KEYS:
            if not _is_secret(full_key):
                problems.append(
                    Problem(
                        key,
                        "is stored in plain text in the stack file; anyone with read access to the repo "
                        f"can read it. Fix: run `{_secret_cmd(key)}` (and remove the plain value)",
                    )
                )
            secrets[key] = raw  # kept so it is not also reported as missing; the load fails anyway
            continue
        if key == "region":
            problems.append(Problem(key, f"the region is read from aws:region, not {full_key}. Fix: move it to aws:region"))
            continue
        if key in SCALAR_SECTIONS or not isinstance(raw, str):
            data[key] = raw
            continue
        try:
            data[key] = json.loads(raw)
        except json.JSONDecodeError:
            data[key] = raw  # a plain string: the model reports the type problem with its path
    region = values.get("aws:region")
    if region:
        data["region"] = region
    else:
        problems.append(
            Problem("aws:region", "is not set; every AWS resource needs a region. Fix: run `pulumi config set aws:region us-east-1`")
        )
    return data, secrets, problems


def _secret_problems(cfg: StackConfig, secrets: dict[str, Any]) -> tuple[list[Problem], dict[str, str]]:
    problems: list[Problem] = []
    api_keys: dict[str, str] = {}
    if GRAFANA_ADMIN_PASSWORD not in secrets:
        problems.append(
            Problem(
                GRAFANA_ADMIN_PASSWORD,
                "is not set; Grafana needs an admin password that is not the chart's well-known default. "
                f"Fix: run `{_secret_cmd(GRAFANA_ADMIN_PASSWORD)}`",
            )
        )
    gated = [m.name for m in cfg.models if m.gated]
    if gated and HF_TOKEN not in secrets:
        problems.append(
            Problem(
                HF_TOKEN,
                f"is not set, but {', '.join(gated)} {'is' if len(gated) == 1 else 'are'} gated on Hugging Face; "
                f"the download would fail with 401 on every pod start. Fix: run `{_secret_cmd(HF_TOKEN)}`",
            )
        )
    if API_KEYS in secrets:
        try:
            parsed = json.loads(secrets[API_KEYS])
        except json.JSONDecodeError:
            parsed = None
        if not isinstance(parsed, dict) or not all(isinstance(v, str) and v for v in parsed.values()):
            problems.append(
                Problem(
                    API_KEYS,
                    "must be a mapping of model name to API key. Fix: run "
                    f"`pulumi config set --secret --path '{API_KEYS}.<model>' <key>` per model",
                )
            )
        else:
            names = {m.name for m in cfg.models}
            for model in sorted(parsed):
                if model not in names:
                    problems.append(
                        Problem(
                            f"{API_KEYS}.{model}",
                            f"names no model (have: {', '.join(sorted(names))}). Fix: remove it or correct the name",
                        )
                    )
            api_keys = {k: v for k, v in parsed.items() if k in names}
    if cfg.ingress.scheme == "internet-facing" or cfg.is_prod:
        reason = (
            "the ALB is internet-facing and vLLM would otherwise serve anyone in the allow-list without a key"
            if cfg.ingress.scheme == "internet-facing"
            else "prod endpoints are reachable from the whole allow-list and the VPC, and vLLM would serve them without a key"
        )
        for m in cfg.models:
            if m.expose and m.name not in api_keys:
                problems.append(
                    Problem(
                        f"{API_KEYS}.{m.name}",
                        f"is required: {reason}. Fix: run `pulumi config set --secret --path '{API_KEYS}.{m.name}' <key>`",
                    )
                )
    return problems, api_keys


def validate() -> tuple[StackConfig, dict[str, Any], dict[str, str], list[Problem]]:
    """Read and check everything; no Outputs are created. Raises ConfigError with every problem.

    Returns the config, the raw secret values, the API keys by model, and the warnings.
    """
    data, secrets, problems = read_raw()
    region_missing = "region" not in data
    try:
        cfg, warnings = parse_stack_config(data)
    except ConfigError as err:
        found = [p for p in err.problems if not (region_missing and p.path == "region")]
        raise ConfigError(problems + found) from None
    secret_problems, api_keys = _secret_problems(cfg, secrets)
    problems += secret_problems
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
        ),
        warnings=warnings,
    )
