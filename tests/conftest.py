"""Shared fixtures: stack data, parse helpers, offline runs of the real program."""

from __future__ import annotations

import copy
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from config.errors import ConfigError  # noqa: E402
from config.stack import StackConfig  # noqa: E402
from config.validate import parse_stack_config  # noqa: E402
from offline import harness  # noqa: E402

PROJECT = "llm-platform"


def stack_data(stack: str) -> dict[str, Any]:
    """The model input of a stack file (what config/load.py hands to pydantic)."""
    raw = yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())["config"]
    data: dict[str, Any] = {}
    for key, value in raw.items():
        namespace, name = key.split(":", 1)
        if namespace == PROJECT:
            data[name] = value
        elif key == "aws:region":
            data["region"] = value
    return data


def parse(data: dict[str, Any]) -> StackConfig:
    cfg, _ = parse_stack_config(data)
    return cfg


def problems_after(mutate: Callable[[dict[str, Any]], object], stack: str = "dev") -> list[str]:
    """Every problem (errors and warnings) the validator reports after mutating a stack's data."""
    data = copy.deepcopy(stack_data(stack))
    mutate(data)
    try:
        _, warnings = parse_stack_config(data)
    except ConfigError as err:
        return [str(p) for p in err.problems]
    return [str(w) for w in warnings]


def new_problems_after(mutate: Callable[[dict[str, Any]], object], stack: str = "dev") -> list[str]:
    """The problems a mutation adds to those the unmodified stack already has (its warnings)."""
    baseline = problems_after(lambda d: None, stack)
    return [p for p in problems_after(mutate, stack) if p not in baseline]


def shared_path(*parts: str) -> Path:
    """A file under ../shared/schemas (CI data); skip the test when it is absent."""
    path = SHARED.joinpath("schemas", *parts)
    if not path.exists():
        pytest.skip(f"upstream data {path.name} not found: ../shared/schemas is CI data beside the checkout")
    return path


@pytest.fixture(scope="session")
def dev_run() -> harness.RunResult:
    return harness.run(harness.stack_input("dev"))


@pytest.fixture(scope="session")
def prod_run() -> harness.RunResult:
    return harness.run(harness.stack_input("prod"))


def values(registration: object) -> dict[str, Any]:
    """A registration's inputs with secrets unwrapped and integral floats as ints."""
    from offline.mocks import Registration, redact, unwrap_secrets

    assert isinstance(registration, Registration)
    result = redact(unwrap_secrets(registration.inputs))
    assert isinstance(result, dict)
    return result
