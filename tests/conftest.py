"""Shared fixtures: fixture stacks, parse helpers, offline runs of the real program.

Unit tests read the fixture stacks under tests/fixtures/stacks/, never the shipped
Pulumi.<stack>.yaml: editing a shipped stack file is an operational act, checked only by
tests/test_shipped_stacks.py.
"""

from __future__ import annotations

import copy
import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

# Property tests run the same examples every time and keep no example database: a failure found once is a
# test to write, not an example that replays in every later run (issue 49: the flaky planner property).
settings.register_profile("deterministic", derandomize=True, database=None, deadline=None, print_blob=True)
settings.load_profile("deterministic")

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from config import stack_file  # noqa: E402
from config.errors import ConfigError  # noqa: E402
from config.sections.stack import StackConfig  # noqa: E402
from config.validate import parse_stack_config  # noqa: E402
from offline import golden, harness  # noqa: E402

FIXTURES = sorted(golden.fixtures())
"""Every fixture stack: tests over the whole render run on each."""
DEV = "minimal-dev"
"""The small dev-shaped fixture that single-stack tests and bad-input mutations start from."""
PROD = "full-prod"
"""The prod-shaped fixture with every sharing mode."""


def fixture_input(name: str, overrides: dict[str, Any] | None = None) -> harness.StackInput:
    """A fixture stack as the engine would hand it to the program (missing secrets filled)."""
    return harness.stack_input(name, golden.fixtures()[name], overrides)


@functools.cache
def fixture_run(name: str) -> harness.RunResult:
    """The real program run once under the recording mocks with a fixture stack."""
    return harness.run(fixture_input(name))


def stack_data(stack: str) -> dict[str, Any]:
    """The model input of a fixture stack (what config/load.py hands to pydantic), a fresh copy."""
    inp = fixture_input(stack)
    data, _, _ = stack_file.split(inp.config, lambda key: key in inp.secret_keys)
    return data


def parse(data: dict[str, Any]) -> StackConfig:
    cfg, _ = parse_stack_config(data)
    return cfg


def problems_after(mutate: Callable[[dict[str, Any]], object], stack: str = DEV) -> list[str]:
    """Every problem (errors and warnings) the validator reports after mutating a stack's data."""
    data = copy.deepcopy(stack_data(stack))
    mutate(data)
    try:
        _, warnings = parse_stack_config(data)
    except ConfigError as err:
        return [str(p) for p in err.problems]
    return [str(w) for w in warnings]


def new_problems_after(mutate: Callable[[dict[str, Any]], object], stack: str = DEV) -> list[str]:
    """The problems a mutation adds to those the unmodified stack already has (its warnings)."""
    baseline = problems_after(lambda d: None, stack)
    return [p for p in problems_after(mutate, stack) if p not in baseline]


def shared_path(*parts: str) -> Path:
    """A file under ../shared/schemas (CI data); skip the test when it is absent."""
    path = SHARED.joinpath("schemas", *parts)
    if not path.exists():
        where = "/".join(parts)
        if SHARED.joinpath("schemas").is_dir():
            pytest.skip(f"upstream data {where} is not among ../shared/schemas: add it there (untouched upstream) to run this check")
        pytest.skip(f"upstream data {where} not found: ../shared/schemas is CI data beside the checkout")
    return path


@pytest.fixture(scope="session")
def dev_run() -> harness.RunResult:
    return fixture_run(DEV)


@pytest.fixture(scope="session")
def prod_run() -> harness.RunResult:
    return fixture_run(PROD)


@pytest.fixture(scope="session")
def dev_in_an_existing_vpc_run() -> harness.RunResult:
    """The dev fixture in an existing VPC of two private subnets and no public one."""
    existing = {
        "mode": "existing",
        "vpcId": "vpc-0123456789abcdef0",
        "vpcCidr": "10.60.0.0/16",
        "privateSubnetIds": ["subnet-0123456789abcdef0", "subnet-0123456789abcdef1"],
        "publicSubnetIds": [],
    }
    return harness.run(fixture_input(DEV, overrides={"llm-platform:network": existing}))


def edited(registrations: list[Any], type_token: str, name: str | None, mutate: Callable[[dict[str, Any]], object]) -> list[Any]:
    """A copy of the registrations with one resource's inputs changed (name None: the first of the type)."""
    import dataclasses

    out, found = [], False
    for r in registrations:
        if r.type == type_token and (name is None or r.name == name) and not found:
            inputs = copy.deepcopy(values(r))
            mutate(inputs)
            r, found = dataclasses.replace(r, inputs=inputs), True
        out.append(r)
    assert found, f"{type_token} {name or ''} is not in the render"
    return out


def values(registration: object) -> dict[str, Any]:
    """A registration's inputs with secrets unwrapped and integral floats as ints."""
    from offline.mocks import Registration, redact, unwrap_secrets

    assert isinstance(registration, Registration)
    result = redact(unwrap_secrets(registration.inputs))
    assert isinstance(result, dict)
    return result
