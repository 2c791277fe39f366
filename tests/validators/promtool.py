"""Run promtool (Debian package `prometheus`) on rule files: syntax checks and rule unit tests."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml


def require() -> str:
    path = shutil.which("promtool")
    if path is None:
        pytest.skip("promtool not installed: `apt-get install prometheus` (.ci/run does it)")
    return path


def _run(args: list[str], files: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    promtool = require()
    with tempfile.TemporaryDirectory() as tmp:
        for name, content in files.items():
            (Path(tmp) / name).write_text(yaml.safe_dump(content, sort_keys=False))
        return subprocess.run([promtool, *args], cwd=tmp, capture_output=True, text=True, check=False, timeout=120)


def check_rules(groups: list[dict[str, Any]]) -> subprocess.CompletedProcess[str]:
    """`promtool check rules` on a rule file holding these groups (a PrometheusRule's spec)."""
    return _run(["check", "rules", "rules.yaml"], {"rules.yaml": {"groups": groups}})


def test_rules(groups: list[dict[str, Any]], tests: list[dict[str, Any]]) -> subprocess.CompletedProcess[str]:
    """`promtool test rules` with the given unit tests against these groups (15 s evaluation)."""
    test_file = {"rule_files": ["rules.yaml"], "evaluation_interval": "15s", "tests": tests}
    return _run(["test", "rules", "tests.yaml"], {"rules.yaml": {"groups": groups}, "tests.yaml": test_file})


test_rules.__test__ = False  # type: ignore[attr-defined]  # not a pytest test
