"""MIG at boot: the MIG pool's EC2NodeClass user data, and its partition script run against a stub nvidia-smi."""

from __future__ import annotations

import email
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from builders.karpenter import mig
from offline import harness
from tests.conftest import values

NODECLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"


def _node_class(run: harness.RunResult, name: str) -> dict[str, Any]:
    return values(run.one(NODECLASS, f"karpenter-{name}"))


def test_the_mig_pool_has_its_own_node_class_with_the_partitioning(prod_run: harness.RunResult) -> None:
    shared = _node_class(prod_run, "gpu-al2023")
    own = _node_class(prod_run, "gpu-al2023-gpu-a100-mig")
    # the same node settings as the shared class, and the user data: SOCI's NodeConfig, then the partitioning
    assert {k: v for k, v in own["spec"].items() if k != "userData"} == {k: v for k, v in shared["spec"].items() if k != "userData"}
    parts = {p.get_content_type(): p.get_payload() for p in email.message_from_string(own["spec"]["userData"]).walk()}
    assert parts["application/node.eks.aws"] == email.message_from_string(shared["spec"]["userData"]).get_payload()[0].get_payload()
    user_data = parts["text/x-shellscript"]
    # A100 40GB: two 3g.20gb instances per GPU, on every GPU, every boot, before kubelet
    assert user_data.strip() == mig.user_data("3g.20gb", 2).strip()
    assert 'nvidia-smi mig -i "$gpu" -cgi 3g.20gb,3g.20gb -C' in user_data
    assert "Before=nodeadm-run.service" in user_data
    assert "Requires=llm-platform-mig.service" in user_data
    assert "systemctl enable llm-platform-mig.service" in user_data
    pool = values(prod_run.one("kubernetes:karpenter.sh/v1:NodePool", "karpenter-gpu-a100-mig"))["spec"]["template"]
    assert pool["spec"]["nodeClassRef"]["name"] == "gpu-al2023-gpu-a100-mig"
    assert pool["metadata"]["labels"]["nvidia.com/gpu.deploy.mig-manager"] == "false"


def test_pools_without_mig_keep_the_shared_class(prod_run: harness.RunResult) -> None:
    for r in prod_run.of_type("kubernetes:karpenter.sh/v1:NodePool"):
        spec = values(r)["spec"]["template"]
        if "mig" not in r.name:
            assert spec["spec"]["nodeClassRef"]["name"] == "gpu-al2023"
            assert "nvidia.com/gpu.deploy.mig-manager" not in spec["metadata"]["labels"]


def test_user_data_is_valid_shell(tmp_path: Path) -> None:
    for name, text in (("user-data", mig.user_data("1g.10gb", 7)), ("partition", mig.partition_script("1g.10gb", 7))):
        path = tmp_path / name
        path.write_text(text)
        assert subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True, check=False).returncode == 0
        if shutil.which("shellcheck") is None:
            pytest.skip("shellcheck not installed: `apt-get install shellcheck` (.ci/run does it)")
        result = subprocess.run(["shellcheck", "-s", "bash", str(path)], capture_output=True, text=True, check=False)
        assert result.returncode == 0, result.stdout


STUB = r"""#!/bin/bash
echo "nvidia-smi $*" >> "$LOG"
case "$*" in
  "-L") echo "GPU 0: NVIDIA A100-SXM4-40GB"; echo "GPU 1: NVIDIA A100-SXM4-40GB" ;;
  "--query-gpu=mig.mode.current --format=csv,noheader")
    if [ -f "$STATE/enabled" ] || { [ "$MODE" = reboot ] && [ -f "$STATE/pending" ] && [ -f "$LLM_PLATFORM_MIG_MARKER" ]; }; then
      echo Enabled; echo Enabled; else echo Disabled; echo Disabled; fi ;;
  "-mig 1") if [ "$MODE" = switches ]; then touch "$STATE/enabled"; else touch "$STATE/pending"; fi
    if [ "$MODE" = refuses ]; then exit 6; fi ;;
  "--gpu-reset") if [ "$MODE" = reset ] && [ -f "$STATE/pending" ]; then touch "$STATE/enabled"; fi ;;
  "--query-gpu=index --format=csv,noheader") echo 0; echo 1 ;;
esac
exit 0
"""


def _run(tmp_path: Path, mode: str) -> tuple[int, list[str], str]:
    bin_dir, state = tmp_path / "bin", tmp_path / "state"
    bin_dir.mkdir(exist_ok=True)
    state.mkdir(exist_ok=True)
    (bin_dir / "nvidia-smi").write_text(STUB)
    (bin_dir / "systemctl").write_text('#!/bin/bash\necho "systemctl $*" >> "$LOG"\n')
    (bin_dir / "sleep").write_text("#!/bin/bash\n")
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    log = tmp_path / "log"
    log.write_text("")
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "LOG": str(log),
        "STATE": str(state),
        "MODE": mode,
        "LLM_PLATFORM_MIG_MARKER": str(tmp_path / "marker" / "rebooted"),
    }
    result = subprocess.run(["bash", "-c", mig.partition_script("3g.20gb", 2)], env=env, capture_output=True, text=True, check=False)
    return result.returncode, log.read_text().splitlines(), result.stderr


def test_partitioning_switches_mig_on_and_creates_the_instances_on_every_gpu(tmp_path: Path) -> None:
    code, calls, _ = _run(tmp_path, "switches")
    assert code == 0
    assert "nvidia-smi -mig 1" in calls
    assert "nvidia-smi --gpu-reset" not in calls  # no reset when the mode switched at once
    created = [c for c in calls if "-cgi" in c]
    assert created == ["nvidia-smi mig -i 0 -cgi 3g.20gb,3g.20gb -C", "nvidia-smi mig -i 1 -cgi 3g.20gb,3g.20gb -C"]
    # old instances are removed first: the layout is the same on every boot
    assert calls.index("nvidia-smi mig -dgi") < calls.index(created[0])


def test_a_pending_mode_is_applied_by_a_reset_with_the_host_clients_stopped(tmp_path: Path) -> None:
    code, calls, _ = _run(tmp_path, "reset")
    assert code == 0
    stop, reset, start = (
        calls.index("systemctl stop nvidia-persistenced nvidia-fabricmanager"),
        calls.index("nvidia-smi --gpu-reset"),
        calls.index("systemctl start nvidia-persistenced nvidia-fabricmanager"),
    )
    assert stop < reset < start


def test_a_mode_that_needs_a_reboot_gets_exactly_one(tmp_path: Path) -> None:
    code, calls, stderr = _run(tmp_path, "reboot")
    assert code == 1  # kubelet must not start before the reboot
    assert "systemctl --no-block reboot" in calls
    assert "rebooting once" in stderr
    # after the reboot the mode is on: the instances are created and the node joins
    code, calls, _ = _run(tmp_path, "reboot")
    assert code == 0
    assert "systemctl --no-block reboot" not in calls
    assert [c for c in calls if "-cgi" in c]


def test_a_failing_mode_switch_still_reaches_the_reset(tmp_path: Path) -> None:
    # nvidia-smi -mig 1 may exit non-zero while the mode is pending: set -e must not stop there
    _code, calls, _ = _run(tmp_path, "refuses")
    assert "nvidia-smi --gpu-reset" in calls


def test_a_node_whose_mig_mode_never_switches_stays_out_of_the_cluster(tmp_path: Path) -> None:
    code, calls, _ = _run(tmp_path, "stuck")
    assert code == 1
    assert calls.count("systemctl --no-block reboot") == 1
    code, calls, stderr = _run(tmp_path, "stuck")  # after the one reboot: no second one
    assert code == 1
    assert "MIG mode did not switch on" in stderr
    assert "systemctl --no-block reboot" not in calls
    assert not [c for c in calls if "-cgi" in c]


def test_the_mig_pool_is_limited_on_the_resource_its_nodes_report(prod_run: harness.RunResult) -> None:
    """Once a MIG node is initialized its capacity has no nvidia.com/gpu (every GPU partitioned, `mixed`), so the GPU
    limit alone stops counting it: the pool is limited on its MIG resource too, at gpuLimit's GPUs in slices, in
    the units its NodeOverlay advertises per node."""
    pools = {values(r)["metadata"]["name"]: values(r)["spec"] for r in prod_run.of_type("kubernetes:karpenter.sh/v1:NodePool")}
    overlays = [values(r)["spec"] for r in prod_run.of_type("kubernetes:karpenter.sh/v1alpha1:NodeOverlay")]
    mig_pools = [name for name, spec in pools.items() if any(k.startswith("nvidia.com/mig-") for k in spec["limits"])]
    assert mig_pools == ["gpu-a100-mig"]
    limits = pools["gpu-a100-mig"]["limits"]
    (overlay,) = [o for o in overlays if o["requirements"][0]["values"] == ["gpu-a100-mig"]]
    ((resource, per_node),) = overlay["capacity"].items()
    gpus_per_node = int(overlay["requirements"][1]["values"][0])
    assert int(limits[resource]) == int(limits["nvidia.com/gpu"]) // gpus_per_node * int(per_node)
    # no other pool's limits count MIG slices
    assert all(set(spec["limits"]) == {"nvidia.com/gpu"} for name, spec in pools.items() if name != "gpu-a100-mig")
