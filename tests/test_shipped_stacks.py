"""The shipped stack files (Pulumi.<stack>.yaml) validate and render.

The only test that reads them: editing a shipped stack file is an operational act, so it may
fail here (and here only) when the edit is wrong. Unit tests use tests/fixtures/stacks/.
"""

from __future__ import annotations

import json

import jsonschema
import pytest
import yaml

from config import load as config_load
from config.errors import ConfigError
from config.outputs import keys
from offline import harness
from tests.conftest import ROOT

SHIPPED = sorted(p.name.split(".")[1] for p in ROOT.glob("Pulumi.*.yaml"))


def test_dev_and_prod_are_shipped() -> None:
    assert {"dev", "prod"} <= set(SHIPPED)


@pytest.mark.parametrize("stack", SHIPPED)
def test_shipped_stack_validates_and_renders(stack: str) -> None:
    path = ROOT / f"Pulumi.{stack}.yaml"
    schema = json.loads((ROOT / "config" / "stack-config.schema.json").read_text())
    jsonschema.validate(yaml.safe_load(path.read_text()), schema)
    inp = harness.stack_input(stack, path)
    harness.apply_config(inp)
    try:
        cfg, *_ = config_load.validate()
    except ConfigError as err:
        pytest.fail(f"Pulumi.{stack}.yaml does not validate:\n{err.report()}")
    assert cfg.environment in stack or stack not in ("dev", "staging", "prod")
    result = harness.run(inp)
    assert sorted(result.outputs) == sorted(keys())
    assert sorted(result.outputs["models"]) == sorted(m.name for m in cfg.models)
    assert all(r.type.startswith("llmplatform:index:") or r.parent for r in result.registrations)
