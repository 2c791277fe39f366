"""Config problems: one format for every error and warning the user sees.

Each problem prints as `<path>: <problem>; <why>. Fix: <action>`, with the path in the stack
file's own camelCase terms (`models[llama-8b].replicas`). Pydantic's own errors are rewritten
into that form, unknown keys get a did-you-mean, and no input value is ever echoed (a mistyped
secret must not end up in a CI log).
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

Severity = Literal["error", "warning"]

# Lists whose entries are named: their paths use the entry's name instead of its index.
NAMED_LISTS = ("models", "gpuPools")
# Keys earlier releases accepted that now have one home elsewhere: the reason replaces "unknown key".
RETIRED_KEYS = {
    "version": "chart versions are pinned by the program (config/facts/versions.py), not by the stack file",
    "controllerVersion": "chart versions are pinned by the program (config/facts/versions.py), not by the stack file",
}
# Discriminated unions: their tag appears in pydantic's loc and is dropped from the path.
_UNION_TAGS = {"network": ("new", "existing")}


# Shapes of credentials a user may paste into the wrong field: never printed back, whichever field.
# ARNs are matched first and kept (a role name may look random); the rest is judged token by token.
_TOKENS = re.compile(r"arn:[A-Za-z0-9:/_+=,.@-]+|[A-Za-z0-9/+=_.:-]+")
_PREFIXED = re.compile(
    r"(?<![A-Za-z0-9])(hf_[A-Za-z0-9]{20,}"  # Hugging Face
    r"|sk-[A-Za-z0-9_-]{20,}"  # OpenAI-style API keys
    r"|(?:AKIA|ASIA)[A-Z0-9]{16}"  # AWS access key ids
    r"|gh[pousr]_[A-Za-z0-9]{30,}"  # GitHub tokens
    r"|pul-[0-9a-f]{40})"  # Pulumi access tokens
)
HIDDEN = "[a value shaped like a credential, not shown]"


def _looks_secret(token: str) -> bool:
    """A long random run: mixed-case letters and digits with no word separators (an AWS secret key,
    a random API key), or 64 hex digits that are not a sha256 digest (`openssl rand -hex 32`).
    Names joined by '-', '_' or '.' (models, roles, instance types) and 40-hex revisions are not."""
    if len(token) >= 32 and not re.search(r"[-_.:]", token):
        mixed = re.search(r"[A-Z]", token) and re.search(r"[a-z]", token) and re.search(r"[0-9]", token)
        if mixed and not token.startswith("/"):
            return True
    return bool(re.fullmatch(r"[0-9a-f]{64}", token))


def scrub(text: str) -> str:
    """The text with every credential-shaped value replaced by a description."""
    text = _PREFIXED.sub(HIDDEN, text)

    def judge(match: re.Match[str]) -> str:
        token = match.group(0)
        if token.startswith("arn:") or text[max(0, match.start() - 7) : match.start()] == "sha256:":
            return token
        return HIDDEN if _looks_secret(token) else token

    return _TOKENS.sub(judge, text)


@dataclass(frozen=True)
class Problem:
    """One finding about the stack config."""

    path: str
    message: str
    severity: Severity = "error"

    def __str__(self) -> str:
        text = f"{self.path}: {self.message}" if self.path else self.message
        return scrub(text)


class ConfigError(Exception):
    """The stack config is invalid. Carries every problem found, not just the first."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__(self.report())

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "warning"]

    def report(self) -> str:
        return format_report(self.problems)


def format_report(problems: list[Problem]) -> str:
    errors = [p for p in problems if p.severity == "error"]
    warnings = [p for p in problems if p.severity == "warning"]
    lines: list[str] = []
    if errors:
        lines.append(f"The stack config has {len(errors)} error{'s' if len(errors) != 1 else ''}:")
        lines += [f"  - {p}" for p in errors]
    if warnings:
        lines.append(f"{len(warnings)} warning{'s' if len(warnings) != 1 else ''}:")
        lines += [f"  - {p}" for p in warnings]
    return "\n".join(lines)


def format_path(loc: tuple[Any, ...], data: Any) -> str:
    """Render a pydantic loc as a stack-file path, naming list entries by their `name`."""
    out = ""
    node = data
    prev: Any = None
    for part in loc:
        if isinstance(part, str) and prev in _UNION_TAGS and part in _UNION_TAGS[prev]:
            prev = part
            continue
        if isinstance(part, int):
            name = node[part].get("name") if isinstance(node, list) and 0 <= part < len(node) and isinstance(node[part], dict) else None
            label = name if prev in NAMED_LISTS and isinstance(name, str) and name else str(part)
            out += f"[{label}]"
            node = node[part] if isinstance(node, list) and 0 <= part < len(node) else None
        else:
            out += f".{part}" if out else str(part)
            node = node.get(part) if isinstance(node, dict) else None
        prev = part
    return out


def _unwrap(annotation: Any) -> list[Any]:
    """The concrete types inside Annotated / Optional / Union."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        found: list[Any] = []
        for arg in typing.get_args(annotation):
            if arg is not type(None):
                found += _unwrap(arg)
        return found
    return [annotation]


def _model_at(root: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The config model class found by following loc from root, if any."""
    candidates: list[Any] = [root]
    for part in loc:
        nxt: list[Any] = []
        for cand in candidates:
            for t in _unwrap(cand):
                origin = typing.get_origin(t)
                if isinstance(t, type) and issubclass(t, BaseModel) and isinstance(part, str):
                    for fname, field in t.model_fields.items():
                        if part in (fname, field.alias):
                            nxt.append(field.annotation)
                    mode = t.model_fields.get("mode")
                    if mode is not None and part in typing.get_args(mode.annotation):
                        nxt.append(t)  # a discriminated union's tag: stay on this model
                elif origin is list and isinstance(part, int):
                    nxt.append(typing.get_args(t)[0])
                elif origin is dict and isinstance(part, str):
                    nxt.append(typing.get_args(t)[1])
        candidates = nxt
    models = [t for c in candidates for t in _unwrap(c) if isinstance(t, type) and issubclass(t, BaseModel)]
    return models[0] if models else None


def _did_you_mean(root: type[BaseModel], loc: tuple[Any, ...]) -> str:
    model = _model_at(root, loc[:-1])
    if model is None:
        return ""
    keys = [f.alias or n for n, f in model.model_fields.items()]
    match = difflib.get_close_matches(str(loc[-1]), keys, n=1, cutoff=0.6)
    return f" (did you mean '{match[0]}'?)" if match else ""


_TYPE_NAMES = {
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "true/false",
    list: "a list",
    dict: "a mapping",
    type(None): "nothing",
}


def _got(error: Any) -> str:
    return _TYPE_NAMES.get(type(error.get("input")), type(error.get("input")).__name__)


def _message(root: type[BaseModel], error: Any) -> str:
    kind = error["type"]
    loc = error["loc"]
    ctx = error.get("ctx") or {}
    if kind == "llm_config":
        return str(error["msg"])
    if kind == "extra_forbidden" and loc and loc[-1] in RETIRED_KEYS:
        return f"{RETIRED_KEYS[loc[-1]]}. Fix: remove the key (a version bump is a change to config/facts/versions.py and its tests)"
    if kind == "extra_forbidden":
        return (
            f"unknown key{_did_you_mean(root, loc)}; it would otherwise be ignored silently. "
            "Fix: correct or remove it (see the config reference in README.md)"
        )
    if kind == "missing":
        return "required key is missing. Fix: add it (see the config reference in README.md)"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return f"expected an integer, got {_got(error)}. Fix: write a whole number without quotes"
    if kind in ("float_type", "float_parsing"):
        return f"expected a number, got {_got(error)}. Fix: write a number without quotes"
    if kind in ("bool_type", "bool_parsing"):
        return f"expected true or false, got {_got(error)}. Fix: write true or false without quotes"
    if kind == "string_type":
        return f"expected a string, got {_got(error)}. Fix: quote the value"
    if kind == "list_type":
        return f"expected a list, got {_got(error)}. Fix: write a YAML list"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"expected a mapping of keys to values, got {_got(error)}. Fix: write a YAML mapping"
    if kind == "literal_error":
        return f"must be one of {ctx.get('expected', '')}. Fix: use one of those values"
    if kind == "union_tag_invalid":
        return f"mode must be one of {ctx.get('expected_tags', '')}. Fix: set mode to one of those"
    if kind == "union_tag_not_found":
        return "mode is missing; it selects which kind of section this is. Fix: add mode"
    bounds = {
        "greater_than": ">",
        "greater_than_equal": ">=",
        "less_than": "<",
        "less_than_equal": "<=",
    }
    if kind in bounds:
        limit = next(iter(ctx.values()), "")
        return f"must be {bounds[kind]} {limit}. Fix: change the value"
    if kind in ("too_short", "too_long"):
        return f"{error['msg']}. Fix: change the number of entries"
    msg = str(error["msg"]).removeprefix("Value error, ")
    return f"{msg}. Fix: see the config reference in README.md"


def problems_from_validation_error(root: type[BaseModel], exc: ValidationError, data: Any) -> list[Problem]:
    problems = []
    for error in exc.errors(include_url=False):
        problems.append(Problem(format_path(tuple(error["loc"]), data), _message(root, error)))
    # pydantic may report one location twice (e.g. for union members); keep the first.
    seen: set[tuple[str, str]] = set()
    unique = []
    for p in problems:
        if (p.path, p.message) not in seen:
            seen.add((p.path, p.message))
            unique.append(p)
    return unique
