"""From engine-style config values to model input: the one reading of a stack's raw config.

The Pulumi engine hands the program `{"llm-platform:models": "<json>", "aws:region": "..."}`.
`config/load.py` reads those values from the runtime; the offline harness and the tests build
them from a stack file. Both then call `split` here, so they interpret them the same way. Pure.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

import yaml

from config.errors import ConfigError, Problem
from config.facts.conventions import PROJECT, SECRET_KEYS

SCALAR_SECTIONS = ("environment",)


def secret_command(key: str) -> str:
    return f"pulumi config set --secret {key} <value>"


def split(values: Mapping[str, Any], is_secret: Callable[[str], bool]) -> tuple[dict[str, Any], dict[str, Any], list[Problem]]:
    """Split raw config into model input and secret values; report problems that need no model."""
    problems: list[Problem] = namespace_problems([str(k) for k in values])
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


# -- the stack file itself ----------------------------------------------------------------------
KNOWN_NAMESPACES = ("aws", "pulumi", "kubernetes", "eks")
"""Namespaces of the providers and the engine that a stack file may also configure."""


def read_document(text: str, name: str) -> dict[str, Any]:
    """The `config:` mapping of a stack file; a problem with the file itself says where and what."""
    if re.search(r"^(<{7}|={7}|>{7})( |$)", text, re.MULTILINE):
        line = next(i for i, t in enumerate(text.splitlines(), 1) if re.match(r"^(<{7}|={7}|>{7})( |$)", t))
        raise ConfigError(
            [Problem(f"{name}:{line}", "has merge-conflict markers (<<<<<<<, =======, >>>>>>>). Fix: resolve the conflict, keep one side")]
        )
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        problem = str(getattr(exc, "problem", "") or "")
        mark: Any = getattr(exc, "problem_mark", None)
        if "<stream end>" in problem and getattr(exc, "context_mark", None) is not None:
            mark = getattr(exc, "context_mark", None)  # what was left open, rather than the end of the file
        where = f"{name}:{mark.line + 1}" if mark is not None else name
        source_lines = text.splitlines()
        at = source_lines[mark.line] if mark is not None and mark.line < len(source_lines) else ""
        tab = "\t" in problem or "\t" in at[: (mark.column + 1) if mark is not None else 0]
        fix = "indent with spaces, not tabs" if tab else "correct the YAML at that line"
        raise ConfigError([Problem(where, f"is not valid YAML ({problem or 'cannot parse'}). Fix: {fix}")]) from None
    if document is None:
        raise ConfigError([Problem(name, "is empty. Fix: add a `config:` section (see the README)")])
    if not isinstance(document, dict):
        raise ConfigError([Problem(name, "is not a mapping of keys. Fix: start the file with `config:`")])
    if "config" not in document:
        stray = [k for k in document if isinstance(k, str) and ":" in k]
        detail = f" ({', '.join(sorted(stray)[:3])} sit at the top level)" if stray else ""
        raise ConfigError(
            [
                Problem(
                    name,
                    f"has no `config:` section{detail}; Pulumi reads stack settings only under it. Fix: indent every key under `config:`",
                )
            ]
        )
    config = document["config"] or {}
    if not isinstance(config, dict):
        raise ConfigError([Problem(f"{name}: config", "is not a mapping. Fix: list `<namespace>:<key>: value` lines under it")])
    return config


def namespace_problems(keys: list[str]) -> list[Problem]:
    """Keys in a namespace no provider or this project reads: ignored silently otherwise."""
    problems = []
    for key in keys:
        namespace = key.split(":", 1)[0] if ":" in key else ""
        if namespace == PROJECT or namespace in KNOWN_NAMESPACES:
            continue
        if not namespace:
            problems.append(Problem(key, f"has no namespace, so nothing reads it. Fix: write {PROJECT}:{key}"))
            continue
        match = difflib.get_close_matches(namespace, [PROJECT, *KNOWN_NAMESPACES], n=1, cutoff=0.6)
        hint = f" (did you mean '{match[0]}:{key.split(':', 1)[-1]}'?)" if match else ""
        problems.append(
            Problem(
                key,
                f"is in namespace '{namespace}', which nothing reads{hint}; the setting would be ignored silently. "
                f"Fix: use {PROJECT}:<key> for this program's settings",
            )
        )
    return problems


def mixed_secret_problems(raw: dict[str, Any]) -> list[Problem]:
    """Secret keys whose value mixes encrypted (`secure:`) and plain-text leaves."""
    problems = []
    for key in SECRET_KEYS:
        value = raw.get(f"{PROJECT}:{key}")
        if not isinstance(value, dict) or set(value) == {"secure"}:
            continue
        for sub, leaf in value.items():
            if not (isinstance(leaf, dict) and set(leaf) == {"secure"}) and any(
                isinstance(v, dict) and set(v) == {"secure"} for v in value.values()
            ):
                problems.append(
                    Problem(
                        f"{key}.{sub}",
                        "is plain text beside encrypted values, readable by anyone with the repository. Fix: run "
                        f"`pulumi config set --secret --path '{key}.{sub}' <value>`",
                    )
                )
    return problems


def round_trip_yaml() -> Any:
    """ruamel.yaml set up to rewrite a stack file as the shipped ones are written, keeping its comments and
    layout (`make model WRITE=1`, `make tune WRITE=1`; a dev dependency, imported when used)."""
    from ruamel.yaml import YAML

    rt = YAML()
    rt.preserve_quotes = True
    rt.indent(mapping=2, sequence=4, offset=2)
    rt.width = 4096
    return rt
