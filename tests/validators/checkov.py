"""Run checkov's CloudFormation checks on templates and its Kubernetes checks on manifests (a
separate environment: `make checkov`)."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = ROOT / ".tools" / "checkov" / "bin" / "checkov"


@dataclass(frozen=True)
class Result:
    """One check on one resource of one template."""

    template: str
    check_id: str
    check_name: str
    logical_id: str
    passed: bool


def require() -> str:
    path = os.environ.get("CHECKOV") or str(DEFAULT)
    if not Path(path).exists():
        pytest.skip("checkov not installed: `make checkov` (make test does it) puts it in .tools/checkov")
    return path


def scan(templates: dict[str, dict[str, Any]]) -> list[Result]:
    """Every passed and failed CloudFormation check on every template, in one checkov run."""
    with tempfile.TemporaryDirectory() as tmp:
        for name, template in templates.items():
            (Path(tmp) / f"{name}.json").write_text(json.dumps(template, indent=1))
        report = _report(Path(tmp), "cloudformation")
    return [
        Result(
            template=Path(found["file_path"]).stem,
            check_id=found["check_id"],
            check_name=found["check_name"],
            logical_id=found["resource"].split(".", 1)[1],
            passed=passed,
        )
        for passed, found in _found(report)
    ]


def _report(directory: Path, framework: str) -> dict[str, Any]:
    """checkov's JSON report of one framework's checks over every file under directory."""
    checkov = require()
    # --skip-download: no vendor API calls (offline); exit code 1 only means a check failed.
    proc = subprocess.run(
        [checkov, "-d", str(directory), "--framework", framework, "--skip-download", "-o", "json"],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    if proc.returncode not in (0, 1):
        raise AssertionError(f"checkov failed ({proc.returncode}): {proc.stderr[-2000:]}")
    report: dict[str, Any] = json.loads(proc.stdout)
    if "results" not in report:
        raise AssertionError(f"checkov found nothing to check under {directory.name}: {report}")
    if report["summary"]["parsing_errors"]:
        raise AssertionError(f"checkov could not parse a file: {report['results'].get('parsing_errors')}")
    return report


def _found(report: dict[str, Any]) -> list[tuple[bool, dict[str, Any]]]:
    return [(passed, f) for passed, key in ((True, "passed_checks"), (False, "failed_checks")) for f in report["results"].get(key, [])]


@dataclass(frozen=True)
class KubernetesResult:
    """One check on one object of one manifest file."""

    path: str
    """The file, relative to the scanned directory (POSIX separators)."""
    check_id: str
    check_name: str
    resource: str
    """checkov's name of the object (`Kind.namespace.name`; graph checks name the pod template)."""
    passed: bool


def scan_kubernetes(directory: Path) -> list[KubernetesResult]:
    """Every passed and failed Kubernetes check on every YAML manifest under directory, in one
    checkov run. Files that are not Kubernetes objects (no apiVersion and kind) are not checked."""
    root = directory.resolve()
    report = _report(root, "kubernetes")
    return [
        KubernetesResult(
            path=Path(found["file_abs_path"]).resolve().relative_to(root).as_posix(),
            check_id=found["check_id"],
            check_name=found["check_name"],
            resource=found["resource"],
            passed=passed,
        )
        for passed, found in _found(report)
    ]
