"""Pure builders for the NVIDIA GPU operator: Helm values, device-plugin config, tolerations."""

from __future__ import annotations

from typing import Any

import yaml

from builders.helm import deep_merge
from config.facts import dcgm
from config.facts.conventions import GPU_RESOURCE, SYSTEM_NODE_SELECTOR
from config.sections.gpu_operator import GpuOperatorConfig
from config.sections.gpu_pools import GpuPool

DEVICE_PLUGIN_CONFIGMAP = "device-plugin-config"
DEFAULT_PLUGIN_CONFIG = "default"
CONTROL_PLANE_TOLERATION = {"key": "node-role.kubernetes.io/control-plane", "operator": "Equal", "value": "", "effect": "NoSchedule"}


def tolerations(pools: list[GpuPool]) -> list[dict[str, str]]:
    """One Exists toleration per distinct (taint key, effect) of every GPU pool."""
    seen: dict[tuple[str, str], dict[str, str]] = {}
    for pool in pools:
        for taint in pool.node_taints():
            seen.setdefault((taint["key"], taint["effect"]), {"key": taint["key"], "operator": "Exists", "effect": taint["effect"]})
    return [seen[k] for k in sorted(seen)]


def device_plugin_config(pool: GpuPool | None) -> str:
    """A device-plugin config file: time-slicing for a shared pool, plain (MIG mixed) otherwise."""
    if pool is None or pool.sharing.time_slicing is None:
        doc: dict[str, Any] = {"version": "v1", "flags": {"migStrategy": "mixed"}}
    else:
        doc = {
            "version": "v1",
            "flags": {"migStrategy": "none"},
            "sharing": {
                "timeSlicing": {
                    # Keep the resource name nvidia.com/gpu so pods and Karpenter's overlay agree.
                    "renameByDefault": False,
                    # A model on a time-sliced pool asks for exactly one slice; more is a mistake.
                    "failRequestsGreaterThanOne": True,
                    "resources": [{"name": GPU_RESOURCE, "replicas": pool.sharing.time_slicing.replicas}],
                }
            },
        }
    return yaml.safe_dump(doc, sort_keys=False)


def device_plugin_configs(pools: list[GpuPool]) -> dict[str, str]:
    """ConfigMap data: the default config plus one named config per time-sliced pool.

    Nodes select a config with the label nvidia.com/device-plugin.config=<pool>, which the
    pool's NodePool sets.
    """
    data = {DEFAULT_PLUGIN_CONFIG: device_plugin_config(None)}
    for pool in pools:
        if pool.sharing.time_slicing:
            data[pool.name] = device_plugin_config(pool)
    return data


MOFED_ENABLED = "MOFED_ENABLED"
"""The NVIDIA device plugin's variable for mounting the host's InfiniBand devices into GPU pods."""
DCGM_REMOTE_HOSTENGINE = "DCGM_REMOTE_HOSTENGINE_INFO"
"""dcgm-exporter's variable naming the host engine to read instead of embedding one."""


def gpu_operator_values(cfg: GpuOperatorConfig, pools: list[GpuPool], host_engine: str | None = None) -> dict[str, Any]:
    """Values for the EKS AL2023 NVIDIA AMI: driver and toolkit come with the AMI.

    `host_engine`: the node's DCGM host engine the exporter reads (the node monitoring agent's, at
    localhost:5555), so the node runs one engine; None: the exporter embeds its own. The exporter then runs
    on the host network (`dcgmExporter.hostNetwork`), where the node's localhost is, and the operator's own
    standalone engine stays off."""
    daemonset_tolerations = tolerations(pools)
    values: dict[str, Any] = {
        "driver": {"enabled": False},
        "toolkit": {"enabled": False},
        "devicePlugin": {
            "enabled": True,
            "config": {"create": False, "name": DEVICE_PLUGIN_CONFIGMAP, "default": DEFAULT_PLUGIN_CONFIG},
        },
        "gfd": {"enabled": True},
        "mig": {"strategy": "mixed"},
        # MIG pools are partitioned at boot (their EC2NodeClass user data): with the AMI's host driver
        # the MIG manager restarts kubelet to change MIG mode, and the nodes never come back Ready.
        "migManager": {"enabled": False},
        "dcgmExporter": {
            "enabled": True,
            # Scraped by the platform's own ServiceMonitor (observability), so this release does
            # not need the Prometheus CRDs to exist first.
            "serviceMonitor": {"enabled": False},
            # the engine at the node's localhost is reachable from the node's network only: the operator does not
            # infer it from values' env (its localhost check reads the base DaemonSet's, controllers/object_controls.go
            # 1828-1839 at v26.7.0, before values' env is applied at 1936), so hostNetwork is set here (applied at 1842)
            **({"env": [{"name": DCGM_REMOTE_HOSTENGINE, "value": host_engine}], "hostNetwork": True} if host_engine else {}),
            # the platform's counters file: the exporter's defaults plus the ECC and throttling fields the GPU
            # fault alerts read (config/facts/dcgm.py); the chart creates the ConfigMap, the operator mounts it
            "config": {"name": dcgm.CONFIGMAP, "create": True, "data": dcgm.counters_csv()},
        },
        # the operator's standalone nv-hostengine (nvidia-dcgm) would be a second engine beside the agent's
        "dcgm": {"enabled": False},
        "daemonsets": {"tolerations": daemonset_tolerations},
        "operator": {"nodeSelector": dict(SYSTEM_NODE_SELECTOR)},
        "node-feature-discovery": {
            "worker": {"tolerations": [CONTROL_PLANE_TOLERATION, *daemonset_tolerations]},
        },
    }
    if any(p.efa for p in pools):
        # The device plugin (v0.20.0 in this release) injects /dev/infiniband/uverbs* into every GPU pod by
        # default (MOFED_ENABLED, on since v0.19.0), which conflicts with the EFA device plugin's devices
        # (../shared/reference/wave3-facts.md Part A 4.3): off, set explicitly so the operator's module probe
        # does not turn it back on.
        values["devicePlugin"]["env"] = [{"name": MOFED_ENABLED, "value": "false"}]
    return deep_merge(values, cfg.extra_values)
