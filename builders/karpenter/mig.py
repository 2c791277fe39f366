"""MIG partitioning at boot, for the EC2NodeClass of each MIG pool (user data). Pure.

On the EKS AL2023 NVIDIA AMI the driver comes with the host, and the GPU operator's MIG manager
changes MIG mode by stopping kubelet: Karpenter-launched nodes then stay NotReady for good
(NVIDIA/gpu-operator#2415, NVIDIA/mig-parted#19). So the platform partitions the GPUs itself,
before the node joins: the user data installs a oneshot systemd unit that enables MIG mode and
creates the pool's instances on every GPU, and makes nodeadm-run (which starts kubelet) require it.
MIG mode survives a reboot, MIG instances do not, so the unit runs on every boot. The MIG manager
is kept off those nodes (label nvidia.com/gpu.deploy.mig-manager=false); the device plugin, with
the `mixed` strategy, advertises the instances as nvidia.com/mig-<profile>.

The mode change takes effect on a GPU reset; where the platform does not expose the reset to the
guest (GPU pass-through, which a p4d is), only a reboot applies it (NVML nvmlDeviceSetMigMode:
"VM reboot is required", NVML_ERROR_RESET_REQUIRED; NVIDIA/gpu-operator#1606: A100 "in passthrough
may need to system reboot to enable MIG"). The script tries the switch, then a reset with the
host's GPU clients stopped, then one reboot (the mode persists across it); a node whose mode still
did not switch stays out of the cluster.

Budget against Karpenter (v1.14.1 `registrationTimeout = time.Minute * 15`, a constant, in
pkg/controllers/nodeclaim/lifecycle/liveness.go): the node must register within 15 minutes of
its NodeClaim's creation, or Karpenter deletes it (karpenter_nodeclaims_disrupted_total
{reason="registration_timeout"}) and launches a fresh instance, which starts over (the reboot
marker is per instance): a loop at the p4d's price with the MIG models Pending. On the reboot
path that 15 minutes holds the launch, two boots, two driver waits of up to DRIVER_WAIT_SECONDS
each (10 minutes between them at worst), the mode switch and reset attempt, creating the
instances and kubelet's registration; the reset path needs one boot. Unconfirmed (no AWS or
NVIDIA source; measure on one p4d): which path a p4d takes, how long its boots take, whether
fabric manager must be stopped for the reset on NVSwitch systems. See docs/upstream-facts.md
(NVIDIA GPU operator, item 7).
"""

from __future__ import annotations

UNIT = "llm-platform-mig.service"
SCRIPT = "/usr/local/bin/llm-platform-mig"
# The services of the AL2023 NVIDIA AMI that hold the GPUs open (awslabs/amazon-eks-ami).
HOST_GPU_CLIENTS = ("nvidia-persistenced", "nvidia-fabricmanager")
# nodeadm-run.service starts kubelet, after cloud-final (AL2023 boot order).
KUBELET_STARTER = "nodeadm-run.service"
DRIVER_WAIT_SECONDS = 300
REBOOT_MARKER = "/var/lib/llm-platform/mig-rebooted"
"""Set before the one reboot a pending MIG mode may need, so a node never reboots in a loop."""


def partition_script(profile: str, per_gpu: int) -> str:
    """The script the unit runs: MIG mode on, then `per_gpu` instances of `profile` on every GPU."""
    instances = ",".join([profile] * per_gpu)
    clients = " ".join(HOST_GPU_CLIENTS)
    tries = DRIVER_WAIT_SECONDS // 5
    return f"""#!/bin/bash
# Partition every GPU into MIG instances of {profile} before kubelet starts (llm-platform).
set -euo pipefail
MARKER="${{LLM_PLATFORM_MIG_MARKER:-{REBOOT_MARKER}}}"
# The driver's modules load beside the boot, not before it: wait until the GPUs answer.
for _ in $(seq 1 {tries}); do
  if nvidia-smi -L >/dev/null 2>&1; then break; fi
  sleep 5
done
nvidia-smi -L >/dev/null
# True while any GPU is not in MIG mode (read whole, then tested: no early-closed pipe under pipefail).
mig_off() {{
  local modes
  modes="$(nvidia-smi --query-gpu=mig.mode.current --format=csv,noheader)"
  grep -qv '^Enabled$' <<<"$modes"
}}
if mig_off; then
  nvidia-smi -mig 1 || true
  if mig_off; then
    # The mode switches on a GPU reset, which needs the GPUs free of the host's own clients.
    systemctl stop {clients} || true
    nvidia-smi --gpu-reset || true
    systemctl start {clients} || true
  fi
fi
if mig_off; then
  # Some GPUs apply a pending MIG mode only across a reboot (the mode then persists): reboot once.
  if [ ! -e "$MARKER" ]; then
    mkdir -p "$(dirname "$MARKER")"
    touch "$MARKER"
    echo "MIG mode is pending; rebooting once to apply it" >&2
    systemctl --no-block reboot
    exit 1
  fi
  echo "MIG mode did not switch on; the node stays out of the cluster" >&2
  exit 1
fi
# Instances do not survive a reboot: recreate the same layout every time.
nvidia-smi mig -dci >/dev/null 2>&1 || true
nvidia-smi mig -dgi >/dev/null 2>&1 || true
for gpu in $(nvidia-smi --query-gpu=index --format=csv,noheader); do
  nvidia-smi mig -i "$gpu" -cgi {instances} -C
done
nvidia-smi mig -lgi
"""


def unit_file() -> str:
    return f"""[Unit]
Description=Partition the GPUs into MIG instances before kubelet starts (llm-platform)
After=nvidia-kmod-load.service {" ".join(f"{c}.service" for c in HOST_GPU_CLIENTS)}
Before={KUBELET_STARTER}

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart={SCRIPT}
TimeoutStartSec={DRIVER_WAIT_SECONDS + 600}

[Install]
WantedBy=multi-user.target
"""


def kubelet_dropin() -> str:
    """nodeadm-run waits for the partitioning and does not start when it failed (fail closed: an
    unpartitioned node never registers, and Karpenter replaces it)."""
    return f"""[Unit]
Requires={UNIT}
After={UNIT}
"""


def user_data(profile: str, per_gpu: int) -> str:
    """EC2NodeClass user data (a shell script; Karpenter adds its own NodeConfig part after it)."""
    return f"""#!/bin/bash
# llm-platform: MIG partitioning at every boot, before the node joins ({profile} x {per_gpu} per GPU).
set -euo pipefail
cat > {SCRIPT} <<'SCRIPT'
{partition_script(profile, per_gpu).rstrip()}
SCRIPT
chmod 0755 {SCRIPT}
cat > /etc/systemd/system/{UNIT} <<'UNIT'
{unit_file().rstrip()}
UNIT
mkdir -p /etc/systemd/system/{KUBELET_STARTER}.d
cat > /etc/systemd/system/{KUBELET_STARTER}.d/10-llm-platform-mig.conf <<'DROPIN'
{kubelet_dropin().rstrip()}
DROPIN
systemctl daemon-reload
systemctl enable {UNIT}
# This first boot: cloud-final runs before nodeadm-run, so kubelet starts only once this returns.
systemctl start {UNIT}
"""
