"""The generated docs are current (the config reference in docs/, the README's outputs contract, the
stack-file JSON Schema), the README stays a short read, and every relative link resolves."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
import yaml

from config import docs
from offline import golden
from tests.conftest import DEV, FIXTURES, ROOT


def test_reference_outputs_and_schema_are_current() -> None:
    assert docs.main(["--check"]) == 0, "run `make docs`"


def test_the_reference_lives_in_docs_and_the_outputs_contract_in_the_readme() -> None:
    readme = (ROOT / "README.md").read_text()
    page = (ROOT / "docs" / "config-reference.md").read_text()
    assert docs.OUT_START in readme
    assert docs.OUT_END in readme
    assert docs.START not in readme
    assert docs.END not in readme
    assert docs.START in page
    assert docs.END in page
    assert docs.reference() in page
    assert docs.outputs_table() in readme
    assert "](docs/config-reference.md)" in readme


def test_check_reports_a_stale_reference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    stale = tmp_path / "config-reference.md"
    stale.write_text(docs.REFERENCE.read_text().replace("| `network.cidr` |", "| `network.cidrBlock` |"))
    monkeypatch.setattr(docs, "REFERENCE", stale)
    monkeypatch.setattr(docs, "ROOT", tmp_path)
    monkeypatch.setattr(docs, "README", tmp_path / "README.md")
    monkeypatch.setattr(docs, "SCHEMA", tmp_path / "schema.json")
    (tmp_path / "README.md").write_text((ROOT / "README.md").read_text())
    (tmp_path / "schema.json").write_text((ROOT / "config" / "stack-config.schema.json").read_text())
    assert docs.main(["--check"]) == 1
    assert "Stale: config-reference.md. Fix: run `make docs`" in capsys.readouterr().err
    assert docs.main(["--write"]) == 0
    assert "| `network.cidr` |" in stale.read_text()
    assert stale.read_text() == (ROOT / "docs" / "config-reference.md").read_text()
    assert docs.main(["--check"]) == 0


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


README_HEADINGS = [
    "What the shipped stacks cost",
    "Two commands",
    "Quick start",
    "Deploying for real",
    "First request",
    "Further reading",
    "Layout",
    "Outputs contract",
]
"""What a newcomer reads, top down: what it costs, how to run it, how to deploy it, where to read on."""


def test_the_readme_is_a_short_read_in_order() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 350
    assert re.findall(r"(?m)^## (.+)$", readme) == README_HEADINGS


def _markdown_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _anchors(text: str) -> set[str]:
    """The anchors a Markdown renderer gives the headings: lowercase, punctuation dropped, spaces to hyphens."""
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in re.findall(r"(?m)^#{1,6} (.+)$", text)}


LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_every_relative_link_resolves() -> None:
    checked = 0
    for page in _markdown_files():
        text = re.sub(r"(?s)```.*?```", "", page.read_text())
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            where = f"{page.relative_to(ROOT)}: {target}"
            assert resolved.is_relative_to(ROOT), f"{where} leaves the repository"
            assert resolved.exists(), f"{where} does not exist"
            if anchor:
                assert resolved.suffix == ".md", f"{where}: an anchor into a file that is not Markdown"
                assert anchor in _anchors(resolved.read_text()), f"{where}: no such heading"
            checked += 1
    assert checked > 10


def test_every_doc_is_linked_from_the_readme() -> None:
    readme = (ROOT / "README.md").read_text()
    for page in sorted((ROOT / "docs").glob("*.md")):
        assert f"](docs/{page.name})" in readme, page.name


DOC_POINTER = re.compile(r"\b((?:docs/[\w-]+|README)\.md)(#[\w-]+)?")
"""A doc a message can name: `docs/<page>.md` or `README.md`, with an optional anchor."""


def test_every_doc_an_error_or_a_summary_can_point_at_exists() -> None:
    """Error messages, warnings and summaries name docs by path: each path (and anchor) must resolve, so a
    user who follows a Fix never lands on a page that moved. Read from the string literals of the code that
    talks to users (the config checks, the preflight, the components' warnings, the offline tools)."""
    import ast

    checked = 0
    for package in ("config", "components", "offline", "planner"):
        for source in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(source.read_text())
            docstrings = {
                id(n.body[0].value)
                for n in ast.walk(tree)
                if isinstance(n, ast.Module | ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef)
                and n.body
                and isinstance(n.body[0], ast.Expr)
                and isinstance(n.body[0].value, ast.Constant)
            }
            for node in ast.walk(tree):
                if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or id(node) in docstrings:
                    continue
                for path, anchor in DOC_POINTER.findall(node.value):
                    where = f"{source.relative_to(ROOT)}:{node.lineno}: {path}{anchor}"
                    target = ROOT / path
                    assert target.exists(), f"{where} does not exist"
                    if anchor:
                        assert anchor[1:] in _anchors(target.read_text()), f"{where}: no such heading"
                    checked += 1
    assert checked >= 5
