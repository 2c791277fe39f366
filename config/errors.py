"""Config problems: one format for every error and warning the user sees.

Each problem prints as `<path>: <problem>; <why>. Fix: <action>`, with the path in the stack
file's own camelCase terms (`models[llama-8b].replicas`). Pydantic's own errors are rewritten
into that form, unknown keys get a did-you-mean, and a type error quotes the value it got (cut
when long). No credential is ever printed back, whatever field it was pasted into: every message
goes through `scrub`, which replaces the published credential formats (CREDENTIAL_SHAPES) and
random-looking runs by a marker naming what they looked like (a mistyped secret must not end up
in a CI log).
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from config.facts.conventions import API_KEYS, DOCKER_HUB_ACCESS_TOKEN, HF_TOKEN

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


# -- credentials: recognised by their published formats, never printed back ----------------------


@dataclass(frozen=True)
class CredentialShape:
    """A published credential format: what it is, how it is spelled, and where it belongs instead."""

    kind: str
    """What the value looks like, for the redaction marker and the message: "a Hugging Face token"."""
    pattern: re.Pattern[str]
    secret: str | None
    """The stack secret it belongs in; None for credentials the platform never takes in its config."""
    source: str
    """Where the format is documented."""
    instead: str = "the platform takes no such credential in its config"
    """For a credential that is no stack secret: where it goes instead."""
    guard: Callable[[str], bool] | None = None
    """For a format with no prefix: what a match must also be (random, not a name that happens to fit)."""

    @property
    def marker(self) -> str:
        return f"[{self.kind}, not shown]"

    def found(self, text: str) -> bool:
        return any(self._is(m) for m in self.pattern.finditer(text))

    def hide(self, text: str) -> str:
        return self.pattern.sub(lambda m: self.marker if self._is(m) else m.group(0), text)

    def _is(self, match: re.Match[str]) -> bool:
        return self.guard is None or self.guard(match.group(0))


def _shape(
    kind: str, pattern: str, secret: str | None, source: str, *instead: str, guard: Callable[[str], bool] | None = None
) -> CredentialShape:
    # Not glued to a longer word or token on either side (a model called "task-..." is not "sk-...").
    compiled = re.compile(rf"(?<![A-Za-z0-9])(?:{pattern})(?![A-Za-z0-9])")
    if instead:
        return CredentialShape(kind, compiled, secret, source, instead[0], guard=guard)
    return CredentialShape(kind, compiled, secret, source, guard=guard)


_MIXED = r"(?=[A-Za-z0-9_-]*[A-Z])(?=[A-Za-z0-9_-]*[a-z])(?=[A-Za-z0-9_-]*[0-9])"
"""Upper and lower case and a digit ahead: random, not a lowercase Kubernetes name such as sk-llama-3-8b."""

CREDENTIAL_SHAPES: tuple[CredentialShape, ...] = (
    _shape(
        "a private key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----[A-Za-z0-9+/=\r\n]*(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----)?",
        None,
        "RFC 7468 sections 10-11 (PRIVATE KEY, ENCRYPTED PRIVATE KEY); OpenSSH PROTOCOL.key (OPENSSH PRIVATE KEY)",
    ),
    _shape(
        "a JSON Web Token",
        r"eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*",
        None,
        'RFC 7519 section 3 and RFC 7515 section 7.1: base64url header.payload.signature, both JSON objects ({" is eyJ)',
    ),
    _shape(
        "a Hugging Face token",
        r"(?:hf_|api_org_)(?:[A-Za-z0-9]{30,}|(?=[A-Za-z0-9]*[A-Z])(?=[A-Za-z0-9]*[a-z])[A-Za-z0-9]{20,})",
        HF_TOKEN,
        "huggingface.co/docs/hub/security-tokens (user access tokens hf_..., retired organization tokens api_org_...)",
    ),
    _shape(
        "a Docker Hub access token",
        r"dckr_(?:pat|oat)_[A-Za-z0-9_-]{10,}",
        DOCKER_HUB_ACCESS_TOKEN,
        "docs.docker.com/security/for-developers/access-tokens and the Hub API reference (dckr_pat_..., dckr_oat_...)",
    ),
    _shape(
        "an API key",
        rf"sk-(?:[A-Za-z0-9]{{32,}}|{_MIXED}[A-Za-z0-9_-]{{20,}})",
        API_KEYS,
        "platform.openai.com/docs/api-reference/authentication (sk-..., sk-proj-...); OpenAI-compatible clients of vLLM use the same shape",
    ),
    _shape(
        "an AWS access key id",
        r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}",
        None,
        "IAM User Guide, unique identifiers (AKIA long-term, ASIA temporary); STS GetAccessKeyInfo",
        "`pulumi up` uses the AWS credentials of the shell or CI runner it runs in, from a profile or an assumed role",
    ),
    _shape(
        "an AWS secret access key",
        # 40 of base64's characters, not part of a base64url token (those join with - and _)
        r"(?<![_-])[A-Za-z0-9/+]{40}(?![_=-])",
        None,
        "IAM User Guide, access keys (a 40-character secret in base64's alphabet, shown once when the key is created)",
        "`pulumi up` uses the AWS credentials of the shell or CI runner it runs in, from a profile or an assumed role",
        guard=lambda token: _looks_secret(token),
    ),
    _shape(
        "a GitHub token",
        r"gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,}",
        None,
        "github.blog/changelog/2021-03-31-authentication-token-format-updates-are-generally-available; github_pat_ for fine-grained tokens",
    ),
    _shape("a GitLab token", r"glpat-[A-Za-z0-9_-]{20,}", None, "docs.gitlab.com/user/profile/personal_access_tokens (prefix glpat-)"),
    _shape("a Slack token", r"xox[abposr]-[A-Za-z0-9-]{10,}", None, "api.slack.com/authentication/token-types (xoxb-, xoxp-, ...)"),
    _shape(
        "a Pulumi access token",
        r"pul-[0-9a-f]{40}",
        None,
        "pulumi.com/docs/pulumi-cloud/access-management/access-tokens (pul-)",
        "the Pulumi CLI reads it from `pulumi login` or PULUMI_ACCESS_TOKEN",
    ),
)

SECRET_KEY_NAME = re.compile(r"(?i)(password|passwd|secret|token|api[-_]?key|access[-_]?key|private[-_]?key|credential)")
"""A mapping key naming a secret: a random-looking value under it is a credential (gitleaks' generic-api-key rule)."""
RANDOM_SECRET = CredentialShape(
    "a secret value",
    re.compile(r"(?!)"),
    None,
    "gitleaks generic-api-key: a random-looking value under a key named password, secret, token or key",
    "chart values take a credential from a Kubernetes Secret by reference (the chart's existingSecret or secretKeyRef)",
)

HIDDEN = "[a value shaped like a credential, not shown]"
"""The marker of a value that matches no published format but looks random (an AWS secret key, a key
from `openssl rand`): hidden in every message, but not refused (a checksum or a certificate looks alike)."""

# ARNs are matched first and kept (a role name may look random); the rest is judged token by token.
_TOKENS = re.compile(r"arn:[A-Za-z0-9:/_+=,.@-]+|[A-Za-z0-9/+=_.:-]+")
# Names written as words: lowercase start, then Capitalised words, acronyms and numbers (KarpenterNodeRole1).
_WORDS = re.compile(r"[a-z]*(?:[A-Z]*[A-Z][a-z]{2,}|[A-Z]+|[0-9]+)*")


def credential_shapes(text: str) -> list[CredentialShape]:
    """The published credential formats found in text, in catalog order."""
    return [shape for shape in CREDENTIAL_SHAPES if shape.found(text)]


# The prefixes of the published formats: a value that starts like one is never printed, however short or
# oddly shaped the rest (a truncated or mistyped token still gives part of one away). The rest must look
# random (a digit or capital among 4+ letters and digits): `hf_transfer` and `sk-llama-3` are names.
_PREFIXED = re.compile(
    r"(?<![A-Za-z0-9])(?:hf_|api_org_|dckr_(?:pat|oat)_|sk-(?:proj-)?|AKIA|ASIA|ABIA|ACCA|gh[pousr]_|github_pat_|glpat-"
    r"|xox[abposr]-|pul-|eyJ)(?=[A-Za-z0-9]*[A-Z0-9])[A-Za-z0-9]{4,}[A-Za-z0-9_-]*"
)


def _random_run(part: str) -> bool:
    return (
        len(part) >= 16
        and bool(re.search(r"[A-Z]", part) and re.search(r"[a-z]", part) and re.search(r"[0-9]", part))
        and not _WORDS.fullmatch(part)
    )


def _looks_secret(token: str) -> bool:
    """A long random run: mixed-case letters and digits with no word separators (an AWS secret key,
    a random API key), a run of 16+ random characters between separators (`secrets.token_urlsafe`),
    or 64 hex digits that are not a sha256 digest (`openssl rand -hex 32`). Names joined by '-', '_'
    or '.' (models, roles, instance types), CamelCase names and 40-hex revisions are not."""
    if token.startswith("/"):
        return False
    mixed = re.search(r"[A-Z]", token) and re.search(r"[a-z]", token) and re.search(r"[0-9]", token)
    if len(token) >= 32 and mixed and not re.search(r"[-_.:]", token) and not _WORDS.fullmatch(token):
        return True
    if len(token) >= 24 and any(_random_run(part) for part in re.split(r"[-_.:/+=]", token)):
        return True
    return bool(re.fullmatch(r"[0-9a-f]{64}", token))


def scrub(text: str) -> str:
    """The text with every credential-shaped value replaced by a marker naming what it looked like."""
    for shape in CREDENTIAL_SHAPES:
        text = shape.hide(text)
    text = _PREFIXED.sub(HIDDEN, text)

    def judge(match: re.Match[str]) -> str:
        token = match.group(0)
        if token.startswith("arn:") or text[max(0, match.start() - 7) : match.start()] == "sha256:":
            return token
        return HIDDEN if _looks_secret(token) else token

    return _TOKENS.sub(judge, text)


def is_credential_shaped(text: str) -> bool:
    return scrub(text) != text


_SHOWN = 40
"""Characters of a value a message quotes before it is cut."""


def shown(value: Any) -> str:
    """A value as a message quotes it, in YAML's terms: 'text' (cut when long), 12, true, null, a list or
    a mapping by its size. A credential-shaped string is never quoted, only named."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        hidden = scrub(value)
        if hidden != value:
            shapes = credential_shapes(value)
            return shapes[0].marker if shapes else HIDDEN
        one_line = value.replace("\n", "\\n")
        if len(one_line) > _SHOWN:
            return f"'{one_line[: _SHOWN - 8]}...' ({len(value)} characters)"
        return f"'{one_line}'"
    if isinstance(value, list):
        return f"a list of {len(value)} entr{'y' if len(value) == 1 else 'ies'}"
    if isinstance(value, dict):
        return f"a mapping of {len(value)} key{'' if len(value) == 1 else 's'}"
    return type(value).__name__


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
            named = prev in NAMED_LISTS and isinstance(name, str) and name and not is_credential_shaped(name)
            label = name if named else str(part)
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


def _got(error: Any) -> str:
    return shown(error.get("input"))


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
            "Fix: correct or remove it (see the config reference, docs/config-reference.md)"
        )
    if kind == "missing":
        return "required key is missing. Fix: add it (see the config reference, docs/config-reference.md)"
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
    return f"{msg}. Fix: see the config reference, docs/config-reference.md"


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
