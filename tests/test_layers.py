"""The layering README.md describes (Layout) holds: config -> builders (pure) -> components -> program.

- config/ (but config/load.py, the one Pulumi config reader) and builders/ import no Pulumi
  SDK, checked by importing every module in a fresh interpreter;
- lower layers never import higher ones;
- each platform convention is spelled in one module of non-test code.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

PURE_PACKAGES = ("config", "builders", "planner")
PULUMI_READER = "config.load"
CODE = ("config", "builders", "components", "offline", "planner", "policy", "examples", "__main__.py")


def _modules(package: str) -> list[str]:
    found = []
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


def _pulumi_imports_by_module(modules: list[str]) -> dict[str, list[str]]:
    """Import each module in one fresh interpreter; which pulumi* modules each one pulled in first."""
    script = (
        "import importlib, json, sys\n"
        "seen, found = set(), {}\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "    new = sorted(m for m in sys.modules if m.split('.')[0].startswith('pulumi') and m not in seen)\n"
        "    seen.update(new)\n"
        "    if new: found[name] = new[:3]\n"
        "print(json.dumps(found))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True)
    return dict(json.loads(out.stdout))


def test_pure_packages_import_no_pulumi_sdk() -> None:
    modules = [m for p in PURE_PACKAGES for m in _modules(p) if m != PULUMI_READER]
    assert len(modules) > 30
    assert _pulumi_imports_by_module(modules) == {}


def test_the_check_notices_a_pulumi_import() -> None:
    # The one module allowed to read Pulumi config does import the SDK: the check sees it.
    assert list(_pulumi_imports_by_module([PULUMI_READER])) == [PULUMI_READER]


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
    return names


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [
        ("config", {"builders", "components", "offline", "planner"}),
        ("builders", {"components", "offline", "planner"}),
        ("components", {"offline", "planner"}),
        ("planner", {"components", "offline"}),
    ],
)
def test_lower_layers_do_not_import_higher_ones(package: str, forbidden: set[str]) -> None:
    for path in (ROOT / package).rglob("*.py"):
        assert not _imports(path) & forbidden, f"{path.relative_to(ROOT)} imports {_imports(path) & forbidden}"


def _string_literals(path: Path) -> list[str]:
    """String constants of a module that are values, not prose: docstrings, field descriptions and
    messages (anything with a space) may name a convention."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings and " " not in n.value
    ]


CONVENTIONS = (
    "karpenter.sh/discovery",
    "keda-hpa-",
    "AmazonEKSWorkerNodePolicy",
    "AmazonEKS_CNI_Policy",
    "AmazonEC2ContainerRegistryPullOnly",
    "AmazonSSMManagedInstanceCore",
    "service-role/AmazonEBSCSIDriverPolicy",
    "llm-platform.io",
    "llm-platform/cluster",
    "kubernetes.io/role/elb",
    "kubernetes.io/role/internal-elb",
    "nvidia.com/gpu",
    "nvidia.com/device-plugin.config",
    "nvidia.com/gpu.deploy.mig-manager",
    "kube-system",
    "grafanaAdminPassword",
    "hfToken",
    "apiKeys",
)


def test_each_convention_is_spelled_in_one_module() -> None:
    homes: dict[str, set[str]] = {c: set() for c in CONVENTIONS}
    files = [p for entry in CODE for p in ([ROOT / entry] if entry.endswith(".py") else (ROOT / entry).rglob("*.py"))]
    for path in files:
        for literal in _string_literals(path):
            for convention in CONVENTIONS:
                if convention in literal:
                    homes[convention].add(path.relative_to(ROOT).as_posix())
    spread = {c: sorted(h) for c, h in homes.items() if len(h) != 1}
    assert spread == {}, "spell these once, in config/facts/conventions.py, and import them"
    assert {h.pop() for h in homes.values()} == {"config/facts/conventions.py"}
