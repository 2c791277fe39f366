"""Run the real program (`__main__.py`) under the recording mocks, with a stack's config."""

from __future__ import annotations

import asyncio
import json
import logging
import runpy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
from pulumi.runtime import settings
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from config import load as config_load
from config import stack_file
from config.checks import secrets as stack_secrets
from config.errors import ConfigError
from config.facts.conventions import API_KEYS, DOCKER_HUB_ACCESS_TOKEN, GRAFANA_ADMIN_PASSWORD, HF_TOKEN, PROJECT
from config.validate import parse_stack_config
from offline.mocks import RecordingMocks, RecordingMonitor, Registration, redact

ROOT = Path(__file__).resolve().parent.parent
PLACEHOLDER = "offline-placeholder-secret-0123456789"
"""Stands for every secret the offline render cannot read (long enough for the API key check)."""


@dataclass
class StackInput:
    """A stack's config as the Pulumi engine would hand it to the program."""

    stack: str
    config: dict[str, str]
    secret_keys: list[str]
    placeholders: list[str] = field(default_factory=list)
    """Secret keys the stack file lacks, filled with placeholders so the render can run."""
    account: Path | None = None
    """Account answers to check the stack against (authoritative); None: the default file."""


@dataclass
class RunResult:
    """What one offline run of the program registered and exported."""

    registrations: list[Registration]
    outputs: dict[str, Any]
    secret_outputs: set[str]
    logs: list[str] = field(default_factory=list)

    def of_type(self, type_token: str) -> list[Registration]:
        return [r for r in self.registrations if r.type == type_token]

    def one(self, type_token: str, name: str | None = None) -> Registration:
        found = [r for r in self.of_type(type_token) if name is None or r.name == name]
        if len(found) != 1:
            raise AssertionError(f"expected one {type_token} {name or ''}, found {[r.name for r in found]}")
        return found[0]

    def redacted_outputs(self) -> dict[str, Any]:
        return {k: "[secret]" if k in self.secret_outputs else redact(v) for k, v in sorted(self.outputs.items())}


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _mask_secure(value: Any) -> tuple[Any, bool]:
    """Replace `secure:` leaves (encrypted, unreadable offline) with a placeholder."""
    if isinstance(value, dict) and set(value) == {"secure"}:
        return PLACEHOLDER, True
    if isinstance(value, dict):
        out, found = {}, False
        for k, v in value.items():
            out[k], f = _mask_secure(v)
            found = found or f
        return out, found
    if isinstance(value, list):
        items = [_mask_secure(v) for v in value]
        return [i for i, _ in items], any(f for _, f in items)
    return value, False


def stack_input(stack: str, path: Path | None = None, overrides: dict[str, Any] | None = None) -> StackInput:
    """Read Pulumi.<stack>.yaml into engine-style config, filling missing required secrets."""
    path = path or ROOT / f"Pulumi.{stack}.yaml"
    raw: dict[str, Any] = dict(stack_file.read_document(path.read_text(), path.name))
    raw.update(overrides or {})
    file_problems = stack_file.mixed_secret_problems(raw)
    if file_problems:
        raise ConfigError(file_problems)
    config: dict[str, str] = {}
    secret_keys: list[str] = []
    for key, value in raw.items():
        masked, secret = _mask_secure(value)
        config[key] = json.dumps(masked) if isinstance(masked, (dict, list)) else _scalar(masked)
        if secret:
            secret_keys.append(key)
    placeholders = _fill_secrets(raw, config, secret_keys)
    return StackInput(stack, config, secret_keys, placeholders)


def _fill_secrets(raw: dict[str, Any], config: dict[str, str], secret_keys: list[str]) -> list[str]:
    """Add placeholders for the secrets a real `pulumi up` would require but the file lacks.

    Which secrets are required is the program's own answer (config/checks/secrets.py, from the parsed
    config and the exposure policy). A config that does not parse needs none: the run stops at
    its config errors first.
    """
    filled: list[str] = []
    data, _, _ = stack_file.split(config, lambda key: key in secret_keys)
    try:
        cfg, _ = parse_stack_config(data)
    except ConfigError:
        return filled
    need = stack_secrets.needed(cfg)

    def add(key: str, value: str) -> None:
        config[f"{PROJECT}:{key}"] = value
        secret_keys.append(f"{PROJECT}:{key}")
        filled.append(key)

    if f"{PROJECT}:{GRAFANA_ADMIN_PASSWORD}" not in raw and need.grafana_admin_password:
        add(GRAFANA_ADMIN_PASSWORD, PLACEHOLDER)
    if f"{PROJECT}:{HF_TOKEN}" not in raw and need.hf_token:
        add(HF_TOKEN, PLACEHOLDER)
    if f"{PROJECT}:{DOCKER_HUB_ACCESS_TOKEN}" not in raw and need.docker_hub:
        add(DOCKER_HUB_ACCESS_TOKEN, PLACEHOLDER)
    if f"{PROJECT}:{API_KEYS}" not in raw and need.api_keys:
        add(API_KEYS, json.dumps(dict.fromkeys(need.api_keys, PLACEHOLDER)))
    return filled


DEFAULT_ACCOUNT = ROOT / "offline" / "account.yaml"


def offline_account(inp: StackInput) -> config_load.OfflineAccount:
    """The account answers an offline run of this stack checks against: its own file (authoritative)
    or the default one. The harness hands them to the program (run_program); a caller that validates
    or runs preflight itself passes them to config/load.py `validate` and components/account.py `check`."""
    return config_load.OfflineAccount(inp.account or DEFAULT_ACCOUNT, authoritative=inp.account is not None)


def apply_config(inp: StackInput) -> None:
    """Hand the program its config as the engine would (the runtime's config and secret keys)."""
    pulumi.runtime.set_all_config(dict(inp.config), list(inp.secret_keys))


def run(inp: StackInput) -> RunResult:
    """Run __main__.py under recording mocks and return what it registered and exported."""
    return run_program(ROOT / "__main__.py", PROJECT, inp)


def run_program(main: Path, project: str, inp: StackInput, stack_outputs: dict[str, dict[str, Any]] | None = None) -> RunResult:
    """Run a Pulumi program file under recording mocks (the platform, or a consumer of its outputs)."""
    region = inp.config.get("aws:region", "us-east-1")
    mocks = RecordingMocks(region=region, stack_outputs=stack_outputs)
    monitor = RecordingMonitor(mocks)
    logs = _Collector()
    logger = logging.getLogger("offline.engine")
    logger.handlers = [logs]
    logger.propagate = False
    reset_runtime()
    apply_config(inp)
    pulumi.runtime.set_mocks(mocks, project=project, stack=inp.stack, preview=False, monitor=monitor, logger=logger)

    # The program learns that it runs offline, and against which answers, from its own globals:
    # explicit at its entry point, gone with the run (the engine hands a real run none).
    handed = {config_load.PROGRAM_GLOBAL: offline_account(inp)}

    def program() -> None:
        runpy.run_path(str(main), init_globals=handed, run_name="__main__")

    try:
        _sync_await(run_pulumi_func(program))
    finally:
        _drain_event_loop()
    root = settings.get_root_resource()
    exported: dict[str, Any] = dict(getattr(root, "outputs", {}) or {})
    outputs: dict[str, Any] = {}
    secret: set[str] = set()
    for key, value in exported.items():
        out = pulumi.Output.from_input(value)
        outputs[key] = _sync_await(out.future())
        if _sync_await(out.is_secret()):
            secret.add(key)
    return RunResult(list(monitor.registrations), outputs, secret, logs.messages)


def reset_runtime() -> None:
    """Forget what an earlier run left behind (a failed run leaves failed outputs queued)."""
    settings.ROOT.set(None)
    settings.SETTINGS.outputs.clear()
    settings.SETTINGS.rpc_manager.clear()


def _drain_event_loop() -> None:
    """Cancel what a failed run left on the event loop, so the next run starts clean."""
    loop = asyncio.get_event_loop()
    pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))


class _Collector(logging.Handler):
    """Keeps the engine's log messages (warnings from the program) instead of printing them."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(f"{record.levelname.lower()}: {record.getMessage()}")
