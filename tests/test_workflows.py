"""The GitHub workflows: actionlint passes on them and fails on a broken one."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT

ACTIONLINT = ROOT / ".tools" / "node_modules" / "@tktco" / "node-actionlint" / "bin" / "node-actionlint.js"
WORKFLOWS = ROOT / ".github" / "workflows"


def _actionlint(pattern: str) -> subprocess.CompletedProcess[str]:
    if not ACTIONLINT.exists() or shutil.which("node") is None:
        pytest.skip("actionlint not installed: `make lint` installs it under .tools/")
    return subprocess.run(["node", str(ACTIONLINT), pattern], capture_output=True, text=True, check=False, timeout=120, cwd=ROOT)


def test_actionlint_passes_on_the_workflows() -> None:
    result = _actionlint(".github/workflows/*.yml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Checking {len(list(WORKFLOWS.glob('*.yml')))} workflow file(s)" in result.stdout


def test_actionlint_catches_a_broken_workflow(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yml"
    broken.write_text("on: push\njobs:\n  x:\n    runs-on: ubuntu-24.04\n    steps:\n      - run: echo ${{ github.evnt.name }}\n")
    result = _actionlint(str(broken))
    assert result.returncode == 1
    assert 'property "evnt" is not defined' in result.stdout


def _load(name: str) -> dict[str, object]:
    doc = yaml.safe_load((WORKFLOWS / name).read_text())
    assert isinstance(doc, dict)
    return doc


def test_pull_requests_run_the_tests_render_diff_and_preview() -> None:
    jobs = _load("pull-request.yml")["jobs"]
    assert isinstance(jobs, dict)
    assert set(jobs) == {"test", "render-diff", "preview"}
    steps = "\n".join(str(s) for s in jobs["test"]["steps"])
    assert "make test" in steps
    render = "\n".join(str(s) for s in jobs["render-diff"]["steps"])
    assert "make -C" in render
    assert "render STACK=" in render
    assert "diff -ruN" in render
    assert "secrets." not in render  # the render needs no credentials, so forks get it too
    preview = jobs["preview"]
    assert preview["permissions"]["id-token"] == "write"
    assert "vars.AWS_ROLE_ARN != ''" in preview["if"]


def test_main_deploys_behind_environments() -> None:
    deploy = _load("deploy.yml")
    assert deploy[True]["push"]["branches"] == ["main"]  # PyYAML reads the key `on` as True
    up = _load("up.yml")["jobs"]["up"]
    assert up["environment"] == "${{ inputs.stack }}"
    assert any("command" in (s.get("with") or {}) and s["with"]["command"] == "up" for s in up["steps"])


def test_preview_checks_the_deploy_role_the_same_way() -> None:
    preview = _load("pull-request.yml")["jobs"]["preview"]["steps"]  # type: ignore[index]
    check = next(s for s in preview if s.get("name") == "Check the deploy role")
    assert check["run"] == _deploy_role_check()
    assert check["env"]["STACK_FILE"] == "Pulumi.${{ matrix.stack }}.yaml"


def _deploy_role_check() -> str:
    steps = _load("up.yml")["jobs"]["up"]["steps"]  # type: ignore[index]
    found = [s for s in steps if s.get("name") == "Check the deploy role"]
    assert len(found) == 1
    names = [s.get("name") or s.get("uses") for s in steps]
    # it runs before the credentials are assumed and before pulumi up
    assert names.index("Check the deploy role") < names.index("aws-actions/configure-aws-credentials@v4")
    return str(found[0]["run"])


DEPLOY = "arn:aws:iam::123456789012:role/llm-platform-deploy"


@pytest.mark.parametrize(
    ("line", "role", "passes"),
    [
        (f"    deployRoleArn: {DEPLOY}", DEPLOY, True),
        (f'    deployRoleArn: "{DEPLOY}"', DEPLOY, True),  # quoted
        (f"    deployRoleArn: {DEPLOY}  # CI", DEPLOY, True),  # trailing comment
        (f"    deployRoleArn: {DEPLOY}", "arn:aws:iam::123456789012:role/someone-else", False),
        (f"    deployRoleArn: {DEPLOY}", "arn:aws:iam::123456789012:role/llm", False),  # a prefix is not the role
        (f"    deployRoleArn: {DEPLOY}", "", False),  # no role configured
        (f"    # deployRoleArn: {DEPLOY}", DEPLOY, False),  # commented out
    ],
)
def test_the_deploy_workflow_accepts_only_the_stacks_deploy_role(tmp_path: Path, line: str, role: str, passes: bool) -> None:
    stack = tmp_path / "Pulumi.x.yaml"
    stack.write_text(f"config:\n  llm-platform:cluster:\n    name: x\n{line}\n")
    env = {"ROLE": role, "STACK_FILE": str(stack), "PATH": "/usr/bin:/bin"}
    result = subprocess.run(["bash", "-c", _deploy_role_check()], env=env, capture_output=True, text=True, check=False)
    assert (result.returncode == 0) is passes, result.stdout + result.stderr
    if not passes:
        assert "is not cluster.deployRoleArn" in result.stdout


@pytest.mark.parametrize(("workflow", "job"), [("pull-request.yml", "preview"), ("up.yml", "up")])
def test_preview_and_up_run_the_policy_pack_in_its_own_environment(workflow: str, job: str) -> None:
    steps = _load(workflow)["jobs"][job]["steps"]  # type: ignore[index]
    pulumi = next(i for i, s in enumerate(steps) if str(s.get("uses", "")).startswith("pulumi/actions@"))
    assert steps[pulumi]["with"]["policyPacks"] == "policy"
    install = next(i for i, s in enumerate(steps) if s.get("name") == "Install the policy pack")
    assert install < pulumi
    venv = yaml.safe_load((ROOT / "policy" / "PulumiPolicy.yaml").read_text())["runtime"]["options"]["virtualenv"]
    assert f"python -m venv policy/{venv}" in steps[install]["run"]
    assert f"policy/{venv}/bin/python -m pip install --quiet -r policy/requirements.txt" in steps[install]["run"]
    # the README's deploy step does the same on a clean machine
    assert (
        f"python3 -m venv policy/{venv} && policy/{venv}/bin/python -m pip install -r policy/requirements.txt"
        in (ROOT / "README.md").read_text()
    )
