"""The offline render: the four outputs, redaction, determinism, and bad configs."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest
import yaml

from offline import golden, harness, render
from tests.conftest import DEV, FIXTURES, PROD, ROOT, fixture_input, parse, stack_data


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("build")
    for stack in FIXTURES:
        assert render.main([stack, "--file", str(golden.fixtures()[stack]), "--out", str(out)]) == 0
    return out


@pytest.mark.parametrize("stack", FIXTURES)
def test_writes_the_four_outputs(rendered: Path, stack: str) -> None:
    folder = rendered / stack
    assert sorted(p.name for p in folder.iterdir()) == ["helm", "manifests", "outputs.json", "preflight.json", "resources.json"]
    resources = json.loads((folder / "resources.json").read_text())
    assert isinstance(resources, list)
    for entry in resources:
        # ignoreChanges only where the program sets it (the HPA-owned count, a node group's desired size)
        assert {"type", "name", "parent", "inputs"} <= set(entry) <= {"type", "name", "parent", "inputs", "ignoreChanges"}
    assert {tuple(e.get("ignoreChanges", [])) for e in resources} <= {(), ("spec.replicas",), ("scalingConfig.desiredSize",)}
    outputs = json.loads((folder / "outputs.json").read_text())
    cfg = parse(stack_data(stack))
    assert outputs["region"] == cfg.region
    assert outputs["clusterName"] == cfg.cluster.name
    for doc_path in (folder / "manifests").rglob("*.yaml"):
        doc = yaml.safe_load(doc_path.read_text())
        assert {"apiVersion", "kind", "metadata"} <= set(doc)
    for release in (folder / "helm").glob("*.yaml"):
        assert set(yaml.safe_load(release.read_text())) == {"chart", "repository", "version", "namespace", "values"}


@pytest.mark.parametrize("stack", FIXTURES)
def test_no_secret_value_is_written(rendered: Path, stack: str) -> None:
    for path in (rendered / stack).rglob("*"):
        if path.is_file():
            assert harness.PLACEHOLDER not in path.read_text(), path


def test_render_is_deterministic(rendered: Path, tmp_path: Path) -> None:
    assert render.main([PROD, "--file", str(golden.fixtures()[PROD]), "--out", str(tmp_path)]) == 0
    assert golden.tree(rendered / PROD) == golden.tree(tmp_path / PROD)


def test_bad_config_exits_2_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = golden.fixtures()[DEV].read_text().replace("replicas: {min: 1, max: 3}", "replicas: {min: 5, max: 4}")
    text = text.replace("memory: 12Gi", "memory: 12GB")
    bad = tmp_path / "Pulumi.broken.yaml"
    bad.write_text(text)
    out = tmp_path / "build"
    assert render.main(["broken", "--file", str(bad), "--out", str(out)]) == 2
    assert not out.exists()
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "Pulumi.broken.yaml: The stack config has 2 errors:",
        "  - models[llama-3-1-8b].resources.memory: '12GB' is not a Kubernetes quantity (did you mean '12Gi'?); "
        "the API server would reject the object at apply time, after the preview looked fine. "
        "Fix: write a quantity such as 24Gi, 512Mi, 4 or 500m",
        "  - models[llama-3-1-8b].replicas: min (5) > max (4); KEDA's webhook would reject the ScaledObject. Fix: raise max or lower min",
    ]
    assert "Traceback" not in err


def test_unknown_stack_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert render.main(["qa"]) == 2
    shipped = ", ".join(p.name.split(".")[1] for p in sorted(ROOT.glob("Pulumi.*.yaml")))
    assert f"No stack file Pulumi.qa.yaml. Fix: use one of {shipped}" in capsys.readouterr().err


def test_the_program_itself_reports_bad_config_without_a_traceback() -> None:
    """Under `pulumi up` the same errors surface as a RunError (printed by Pulumi without a stack trace)."""
    import pulumi

    inp = fixture_input(DEV, overrides={"llm-platform:environment": "qa"})
    with pytest.raises(pulumi.RunError) as info:
        harness.run(inp)
    assert str(info.value) == (
        "The stack config has 1 error:\n  - environment: must be one of 'dev', 'staging' or 'prod'. Fix: use one of those values"
    )


def _summary(out: Path, *flags: str) -> list[str]:
    """The summary the render prints for the prod-like fixture, line by line."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert render.main([PROD, "--file", str(golden.fixtures()[PROD]), "--out", str(out), *flags]) == 0
    return printed.getvalue().splitlines()


@pytest.fixture(scope="module")
def summary(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], Path]:
    out = tmp_path_factory.mktemp("summary")
    return _summary(out), out / PROD


@pytest.fixture(scope="module")
def summary_with_flags(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    return _summary(tmp_path_factory.mktemp("flags"), "--counts", "--sources")


def _index(lines: list[str], start: str) -> int:
    return next(i for i, line in enumerate(lines) if line.startswith(start))


TYPE_ROW = re.compile(r"^\s+(\d+)\s+(\S+:\S+)$")
"""A resource-count row: `    12  aws:iam/role:Role`."""


def test_the_summary_prints_each_models_scale_up_budget(summary: tuple[list[str], Path]) -> None:
    lines, folder = summary
    outputs = json.loads((folder / "outputs.json").read_text())
    table = lines[_index(lines, "Scale-up budget in seconds") :]
    for name, entry in outputs["models"].items():
        row = next(line for line in table if line.strip().startswith(name + " "))
        budget = entry["scaleUpSeconds"]
        assert f"{budget['hit']:>5} {budget['miss']:>5}" in row
    assert any(line.startswith("  incl. headroom of gpu-l4-a10g") for line in lines)


def test_the_summary_leads_with_the_models_and_the_monthly_cost(summary: tuple[list[str], Path]) -> None:
    lines, folder = summary
    first = lines[:30]
    models = json.loads((folder / "outputs.json").read_text())["models"]
    assert "Models:" in first
    for name in models:
        assert any(line.startswith(f"  {name} ") for line in first), name
    assert any(line.startswith("  floor ") and "/month" in line for line in first)
    assert any(line.startswith("  ceiling ") and "/month" in line for line in first)
    # the fixed costs, each named, and the sample account said to be one
    assert any(line.startswith("  incl. fixed ") and "EKS control plane" in line and "NAT gateway" in line for line in first)
    assert any(line.startswith("Preflight against the sample account (offline/account.yaml") for line in lines)
    warnings = next(i for i, line in enumerate(lines) if re.fullmatch(r"\d+ warnings?:", line))
    order = [_index(lines, "Models:"), _index(lines, "Cost ("), warnings]
    order += [_index(lines, start) for start in ("Scale-up budget", "Resources:", "Preflight")]
    assert order == sorted(order), order


def test_resource_counts_by_type_only_behind_the_flag(summary: tuple[list[str], Path], summary_with_flags: list[str]) -> None:
    lines, folder = summary
    total = len(json.loads((folder / "resources.json").read_text()))
    assert f"Resources: {total} (--counts lists them by type)" in lines
    assert not [line for line in lines if TYPE_ROW.match(line)]
    counted = summary_with_flags[_index(summary_with_flags, "Resources:") :]
    assert counted[0] == f"Resources: {total}"
    rows = [m for line in counted if (m := TYPE_ROW.match(line))]
    assert sum(int(m.group(1)) for m in rows) == total
    assert [m.group(2) for m in rows] == sorted({r["type"] for r in json.loads((folder / "resources.json").read_text())})
    assert _index(summary_with_flags, "Scale-up budget") < _index(summary_with_flags, "Resources:")


def test_the_published_figures_are_listed_once_behind_the_flag(summary: tuple[list[str], Path], summary_with_flags: list[str]) -> None:
    from config.derived import scaleup

    keys = [key for key, _ in scaleup.sources()]
    lines, _ = summary
    assert "  The published figures behind the terms are in config/facts/speed.py (--sources lists them)." in lines
    assert not [line for line in lines if line.split()[:1] and line.split()[0] in keys]
    heading = "  Published figures behind the terms (config/facts/speed.py):"
    assert summary_with_flags.count(heading) == 1
    listed = summary_with_flags[summary_with_flags.index(heading) + 1 :][: len(keys)]
    assert [line.split()[0] for line in listed] == keys


def test_a_stack_outside_the_price_region_is_told_its_figures_are_estimates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stack = "existing-vpc-irsa-bottlerocket"
    assert parse(stack_data(stack)).region != "us-east-1"
    assert render.main([stack, "--file", str(golden.fixtures()[stack]), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "  Warning: the prices are us-east-1's and this stack deploys to us-west-2, whose prices differ" in out
    assert render.main([DEV, "--file", str(golden.fixtures()[DEV]), "--out", str(tmp_path)]) == 0
    assert "Warning: the prices are" not in capsys.readouterr().out


def test_an_account_files_problems_are_headed_by_its_own_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    answers = tmp_path / "mine.yaml"
    answers.write_text("region: us-east-1\nzones: {}\n")
    assert render.main([DEV, "--file", str(golden.fixtures()[DEV]), "--account", str(answers), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mine.yaml: ")
    assert golden.fixtures()[DEV].name not in err
    assert "docs/preflight.md" in err
