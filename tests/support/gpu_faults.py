"""promtool cases for the GPU fault alerts (issue 33, item 3): each fires on the fault it names and stays
silent on its look-alike (a power cap is not a thermal slowdown, a rebootable XID is not a replacement,
a corrected error count that stops is not a trend). Expected annotations are the rule's own templates
filled with the alert's labels and value, so the cases read the rendered rules."""

from __future__ import annotations

import re
from typing import Any

from builders.observability import rules
from tests.support.alerts import AlertCase, series

NODE = "ip-10-0-1-1.ec2.internal"
_BY_NAME = {r["alert"]: r for r in rules.gpu_fault_alerts()}


def _fill(template: str, labels: dict[str, str], value: str) -> str:
    text = re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels[m.group(1)], template)
    return text.replace("{{ $value }}", value)


def fired(alert: str, value: str, **labels: str) -> dict[str, Any]:
    """The alert as promtool must see it: its severity and these labels, its annotations filled in."""
    rule = _BY_NAME[alert]
    annotations = {k: _fill(v, labels, value) for k, v in rule["annotations"].items()}
    return {"exp_labels": {"severity": rule["labels"]["severity"], **labels}, "exp_annotations": annotations}


def dcgm(field: str, values: str, gpu: str = "0", node: str = NODE) -> dict[str, str]:
    """A DCGM series as the platform's ServiceMonitor labels it (the exporter's own labels, and `node`)."""
    return series(f'{field}{{node="{node}", gpu="{gpu}", UUID="GPU-{gpu}", hostname="{node}"}}', values)


def condition(node: str, kind: str, status: str, values: str) -> dict[str, str]:
    return series(f'kube_node_status_condition{{node="{node}", condition="{kind}", status="{status}"}}', values)


GPU = {"node": NODE, "gpu": "0"}
HEALTHY = "ip-10-0-1-2.ec2.internal"


def xids(code: str, values: str, gpu: str = "0") -> dict[str, str]:
    """The exporter's windowed XID count for one code (label `xid`), as the ServiceMonitor labels it."""
    return series(f'DCGM_EXP_XID_ERRORS_COUNT{{node="{NODE}", gpu="{gpu}", xid="{code}", hostname="{NODE}"}}', values)


def _healthy(kind: str, values: str = "1x40") -> list[dict[str, str]]:
    """kube-state-metrics' three series of a healthy node's condition: true at 1, false and unknown at 0."""
    return [
        condition(HEALTHY, kind, "true", values),
        condition(HEALTHY, kind, "false", "0x40"),
        condition(HEALTHY, kind, "unknown", "0x40"),
    ]


REASONS = {"0": 0x5, "1": 0x10, "2": 0x100, "3": 0x8, "4": 0x20, "5": 0x40, "6": 0x80, "7": 0x44}
"""By GPU, a clocks-event bitmask: idle with the power cap, sync boost, display clocks (normal); a hardware slowdown,
a software and a hardware thermal slowdown, a power brake, and the power cap with a thermal slowdown (faults)."""
SLOWED = ["3", "4", "5", "6", "7"]


def _gpu_0_only(alert: str, field: str, fault: str, look_alike: str, quiet: str, at: str) -> list[AlertCase]:
    """A DCGM field shows the fault on gpu 0 and its look-alike on gpu 1: the alert is silent at `quiet`, then
    fires for gpu 0 alone at `at`."""
    series = [dcgm(field, fault), dcgm(field, look_alike, gpu="1")]
    return [AlertCase(series, {quiet: [], at: [fired(alert, "", **GPU)]}, interval="1m")]


GPU_0_ONLY = {
    # gpu 0 keeps correcting; gpu 1 corrected a burst once and stopped (silent however long its total stays up)
    "GpuSingleBitEccErrors": ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "0+1x90", "0 50x90", "25m", "45m"),
    "GpuRowRemapPending": ("DCGM_FI_DEV_ROW_REMAP_PENDING", "0 0 1x10", "0x12", "5m", "9m"),
    "GpuRowRemapFailed": ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "0 0 1 1", "0 0 0 0", "1m", "2m"),
}
"""By alert: the DCGM field, gpu 0's values and gpu 1's, when the alert is still silent and when it has fired."""

CASES: dict[str, list[AlertCase]] = {
    "GpuXidErrors": [
        AlertCase(
            # one XID 13 counted for the exporter's window, then the window passes: the alert fires, then clears
            [xids("13", "0 0 1 1 1 1 1 0 0 0"), xids("13", "0x9", gpu="1")],
            {"1m": [], "3m": [fired("GpuXidErrors", "1", node=NODE, gpu="0", xid="13")], "8m": []},
            interval="1m",
        )
    ],
    "GpuXidNeedsReplacement": [
        AlertCase(
            # each Replace code on a GPU of its own fires; a rebootable 13 and a contained-ECC 94 do not
            [
                *(xids(str(code), "0 1 1 1", gpu=str(i)) for i, code in enumerate(rules.XID_REPLACE)),
                xids("13", "0 1 1 1", gpu="6"),
                xids("94", "0 1 1 1", gpu="7"),
            ],
            {
                "0m": [],
                "2m": [
                    fired("GpuXidNeedsReplacement", "1", node=NODE, gpu=str(i), xid=str(code)) for i, code in enumerate(rules.XID_REPLACE)
                ],
            },
            interval="1m",
        )
    ],
    "GpuDoubleBitEccErrors": [
        AlertCase(
            # gpu 0: a new error; gpu 1: old errors only; gpu 2: the driver reloaded (counter reset), then a new error
            [
                dcgm("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "0 0 0 1 1 1"),
                dcgm("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "3x5", gpu="1"),
                dcgm("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "3 0 0 1 1 1", gpu="2"),
            ],
            {"2m": [], "4m": [fired("GpuDoubleBitEccErrors", "", **GPU), fired("GpuDoubleBitEccErrors", "", node=NODE, gpu="2")]},
            interval="1m",
        )
    ],
    **{alert: _gpu_0_only(alert, *spec) for alert, spec in GPU_0_ONLY.items()},
    "GpuClocksSlowedDown": [
        AlertCase(
            [dcgm("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", f"{value}x14", gpu=gpu) for gpu, value in REASONS.items()],
            {"8m": [], "12m": [fired("GpuClocksSlowedDown", "", node=NODE, gpu=gpu) for gpu in SLOWED]},
            interval="1m",
        )
    ],
    "NodeAcceleratedHardwareNotReady": [
        AlertCase(
            [
                condition(NODE, "AcceleratedHardwareReady", "false", "0 0 1 1"),
                condition(NODE, "AcceleratedHardwareReady", "true", "1 1 0 0"),
                *_healthy("AcceleratedHardwareReady", "1x3"),
                condition(HEALTHY, "Ready", "false", "0 1 1 1"),  # not the agent's condition
            ],
            {"1m": [], "3m": [fired("NodeAcceleratedHardwareNotReady", "", node=NODE)]},
            interval="1m",
        )
    ],
    "NodeConditionNotReady": [
        AlertCase(
            [
                condition(NODE, "KernelReady", "false", "0 1x8"),
                condition(NODE, "StorageReady", "false", "0 1 1 0x6"),
                condition(NODE, "AcceleratedHardwareReady", "false", "1x9"),  # its own, critical alert
                *_healthy("KernelReady", "1x9"),
                *_healthy("NetworkingReady", "1x9"),
            ],
            {"4m": [], "7m": [fired("NodeConditionNotReady", "", node=NODE, condition="KernelReady")]},
            interval="1m",
        )
    ],
}
