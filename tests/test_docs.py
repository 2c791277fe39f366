"""The README config reference and the stack-file JSON Schema are generated and current."""

from __future__ import annotations

import json

import jsonschema
import yaml

from config import docs
from offline import golden
from tests.conftest import DEV, FIXTURES, ROOT


def test_readme_reference_and_schema_are_current() -> None:
    assert docs.main(["--check"]) == 0, "run `make docs`"


def test_reference_lists_every_section_and_secret() -> None:
    text = docs.reference()
    for key in (
        "network.cidr",
        "cluster.endpoint.publicCidrs",
        "gpuPools[].sharing.mig.profile",
        "models[].drain.terminationGracePeriodSeconds",
    ):
        assert f"| `{key}` |" in text
    for secret in ("hfToken", "apiKeys", "grafanaAdminPassword"):
        assert f"| `{secret}` |" in text


def test_stack_files_validate_against_the_schema() -> None:
    schema = json.loads((ROOT / "config" / "stack-config.schema.json").read_text())
    for stack in FIXTURES:
        jsonschema.validate(yaml.safe_load(golden.fixtures()[stack].read_text()), schema)


def test_schema_rejects_an_unknown_key() -> None:
    schema = json.loads((ROOT / "config" / "stack-config.schema.json").read_text())
    document = yaml.safe_load(golden.fixtures()[DEV].read_text())
    document["config"]["llm-platform:models"][0]["replica"] = 2
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(document))
    assert any("replica" in e.message for e in errors)


def test_outputs_contract_matches_the_program(dev_run: object, prod_run: object) -> None:
    from config.facts.outputs import MODEL_FIELDS, keys
    from offline.harness import RunResult

    for run in (dev_run, prod_run):
        assert isinstance(run, RunResult)
        assert sorted(run.outputs) == sorted(keys())
        for entry in run.outputs["models"].values():
            assert sorted(entry) == sorted(MODEL_FIELDS)
