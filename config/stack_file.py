"""From engine-style config values to model input: the one reading of a stack's raw config.

The Pulumi engine hands the program `{"llm-platform:models": "<json>", "aws:region": "..."}`.
`config/load.py` reads those values from the runtime; the offline harness and the tests build
them from a stack file. Both then call `split` here, so they interpret them the same way. Pure.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from config.conventions import PROJECT, SECRET_KEYS
from config.errors import Problem

SCALAR_SECTIONS = ("environment",)


def secret_command(key: str) -> str:
    return f"pulumi config set --secret {key} <value>"


def split(values: Mapping[str, Any], is_secret: Callable[[str], bool]) -> tuple[dict[str, Any], dict[str, Any], list[Problem]]:
    """Split raw config into model input and secret values; report problems that need no model."""
    problems: list[Problem] = []
    data: dict[str, Any] = {}
    secrets: dict[str, Any] = {}
    prefix = f"{PROJECT}:"
    for full_key, raw in sorted(values.items()):
        if not full_key.startswith(prefix):
            continue
        key = full_key[len(prefix) :]
        if key in SECRET_KEYS:
            if not is_secret(full_key):
                problems.append(
                    Problem(
                        key,
                        "is stored in plain text in the stack file; anyone with read access to the repo "
                        f"can read it. Fix: run `{secret_command(key)}` (and remove the plain value)",
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
