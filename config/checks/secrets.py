"""Which secrets a stack needs, and what is wrong with the ones it has. Pure.

Secret values never enter the pydantic model: `config/load.py` turns them into secret Outputs.
This module only decides which are required (from the config and the exposure policy) and
checks their shape, without ever printing a value.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from config.derived.exposure import exposure, models_needing_api_keys
from config.errors import RANDOM_SECRET, SECRET_KEY_NAME, CredentialShape, Problem, credential_shapes, format_path, scrub
from config.facts.conventions import API_KEYS, DOCKER_HUB_ACCESS_TOKEN, GRAFANA_ADMIN_PASSWORD, HF_TOKEN
from config.sections import images
from config.sections.stack import StackConfig
from config.stack_file import secret_command

MIN_API_KEY_CHARACTERS = 32
"""An API key's least length: 32 hex characters are 128 bits, beyond any guessing."""


@dataclass(frozen=True)
class NeededSecrets:
    """The secrets a stack cannot run without."""

    grafana_admin_password: bool
    hf_token: list[str]
    """Gated models, which need the Hugging Face token."""
    api_keys: list[str]
    """Models whose endpoint must require an API key."""
    docker_hub: list[str]
    """Models whose image the pull-through cache imports from Docker Hub, which needs a credential."""


def docker_hub_cached(cfg: StackConfig) -> list[str]:
    """Models whose image comes from Docker Hub through the stack's pull-through cache."""
    if not cfg.image_cache.enabled:
        return []
    return [m.name for m in cfg.models if images.upstream_for(m.image.repository) is images.DOCKER_HUB]


def needed(cfg: StackConfig) -> NeededSecrets:
    return NeededSecrets(
        grafana_admin_password=True,
        hf_token=[m.name for m in cfg.models if m.gated],
        api_keys=[m.name for m in models_needing_api_keys(cfg)],
        docker_hub=docker_hub_cached(cfg),
    )


def _api_keys(secrets: dict[str, Any], names: set[str]) -> tuple[list[Problem], dict[str, str]]:
    try:
        parsed = json.loads(secrets[API_KEYS])
    except json.JSONDecodeError:
        parsed = None
    if not isinstance(parsed, dict) or not all(isinstance(v, str) and v for v in parsed.values()):
        return [
            Problem(
                API_KEYS,
                "must be a mapping of model name to API key. Fix: run "
                f"`pulumi config set --secret --path '{API_KEYS}.<model>' <key>` per model",
            )
        ], {}
    problems = [
        Problem(
            f"{API_KEYS}.{model}",
            f"names no model (have: {', '.join(sorted(names))}). Fix: remove it or correct the name",
        )
        for model in sorted(parsed)
        if model not in names
    ]
    problems += [
        Problem(
            f"{API_KEYS}.{model}",
            f"is shorter than {MIN_API_KEY_CHARACTERS} characters: it is the endpoint's only credential, and the pod "
            "template carries a one-way fingerprint of it that a short key could be guessed from offline. Fix: generate one "
            f"with `openssl rand -hex 32` and run `pulumi config set --secret --path '{API_KEYS}.{model}' <key>`",
        )
        for model, key in sorted(parsed.items())
        if model in names and len(key) < MIN_API_KEY_CHARACTERS
    ]
    return problems, {k: v for k, v in parsed.items() if k in names}


def _misplaced(shape: CredentialShape, in_key: bool) -> str:
    """The message for a credential in plain config: what it looks like, why not here, where it goes."""
    holds = "has a key that looks like" if in_key else "holds what looks like"
    problem = (
        f"{holds} {shape.kind}; the stack file is plain text that anyone who can read the repository can read, "
        "and the value would reach the cluster in plain objects"
    )
    revoke = "revoke it if the file was ever committed"
    if shape.secret == API_KEYS:
        fix = (
            f"if it is a model endpoint's key, move it to the {API_KEYS} secret: run "
            f"`pulumi config set --secret --path '{API_KEYS}.<model>' <key>`, and delete it here ({revoke})"
        )
    elif shape.secret is not None:
        fix = f"move it to the {shape.secret} secret: run `{secret_command(shape.secret)}`, and delete it here ({revoke})"
    else:
        fix = f"delete it here; {shape.instead} ({revoke})"
    return f"{problem}. Fix: {fix}"


def plain_credentials(data: Any) -> tuple[list[Problem], set[str]]:
    """Credentials of a published format anywhere in the plain (non-secret) config, keys included, and
    random-looking values under a key that names a secret (`adminPassword`, `apiKey`, `token`).

    Returns the problems and every path they cover, so that the field's own complaint about the
    same value ("not a Hugging Face repository id") is not reported as well."""
    found: list[Problem] = []
    covered: set[str] = set()

    def walk(node: Any, loc: tuple[Any, ...]) -> None:
        if isinstance(node, str):
            shapes = credential_shapes(node)
            named = bool(loc) and isinstance(loc[-1], str) and SECRET_KEY_NAME.search(loc[-1])
            if not shapes and named and scrub(node) != node:
                shapes = [RANDOM_SECRET]
            if shapes:
                path = format_path(loc, data)
                found.append(Problem(path, _misplaced(shapes[0], in_key=False)))
                covered.add(path)
        elif isinstance(node, dict):
            for key, value in node.items():
                shapes = credential_shapes(key) if isinstance(key, str) else []
                if shapes:
                    found.append(Problem(format_path(loc, data), _misplaced(shapes[0], in_key=True)))
                    covered.add(format_path((*loc, key), data))
                walk(value, (*loc, key))
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, (*loc, i))

    walk(data, ())
    return found, covered


def problems(cfg: StackConfig, secrets: dict[str, Any]) -> tuple[list[Problem], dict[str, str]]:
    """Missing or malformed secrets, and the API keys by model."""
    found: list[Problem] = []
    need = needed(cfg)
    if need.grafana_admin_password and GRAFANA_ADMIN_PASSWORD not in secrets:
        found.append(
            Problem(
                GRAFANA_ADMIN_PASSWORD,
                "is not set; Grafana needs an admin password that is not the chart's well-known default. "
                f"Fix: run `{secret_command(GRAFANA_ADMIN_PASSWORD)}`",
            )
        )
    if need.hf_token and HF_TOKEN not in secrets:
        gated = need.hf_token
        found.append(
            Problem(
                HF_TOKEN,
                f"is not set, but {', '.join(gated)} {'is' if len(gated) == 1 else 'are'} gated on Hugging Face; "
                f"the download would fail with 401 on every pod start. Fix: run `{secret_command(HF_TOKEN)}`",
            )
        )
    if need.docker_hub and DOCKER_HUB_ACCESS_TOKEN not in secrets:
        found.append(
            Problem(
                DOCKER_HUB_ACCESS_TOKEN,
                f"is not set, but imageCache is on and the image of {', '.join(need.docker_hub)} comes from Docker Hub, "
                "which ECR's pull-through cache only imports from with a credential; every first pull would fail. "
                f"Fix: run `{secret_command(DOCKER_HUB_ACCESS_TOKEN)}` (a Docker Hub access token, read-only scope), "
                "or set imageCache.enabled: false",
            )
        )
    api_keys: dict[str, str] = {}
    if API_KEYS in secrets:
        key_problems, api_keys = _api_keys(secrets, {m.name for m in cfg.models})
        found += key_problems
    for model in cfg.models:
        exp = exposure(cfg, model)
        if exp.api_key_required and model.name not in api_keys:
            found.append(
                Problem(
                    f"{API_KEYS}.{model.name}",
                    f"is required: {exp.reason}. Fix: run `pulumi config set --secret --path '{API_KEYS}.{model.name}' <key>`",
                )
            )
    return found, api_keys
