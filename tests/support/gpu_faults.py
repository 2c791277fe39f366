"""promtool cases for the GPU fault alerts (issue 33, item 3): each fires on the fault it names and stays
silent on its look-alike (a power cap is not a thermal slowdown, a rebootable XID is not a replacement,
a corrected error count that stops is not a trend). Expected annotations are the rule's own templates
filled with the alert's labels and value, so the cases read the rendered rules."""

from __future__ import annotations

import re
from typing import Any

from builders.observability import rules

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
    return {"series": f'{field}{{node="{node}", gpu="{gpu}", UUID="GPU-{gpu}", hostname="{node}"}}', "values": values}


def condition(node: str, kind: str, status: str, values: str) -> dict[str, str]:
    return {"series": f'kube_node_status_condition{{node="{node}", condition="{kind}", status="{status}"}}', "values": values}


def _case(series: list[dict[str, str]], *checks: tuple[str, str, list[dict[str, Any]]], interval: str = "1m") -> dict[str, Any]:
    return {
        "interval": interval,
        "input_series": series,
        "alert_rule_test": [{"eval_time": at, "alertname": alert, "exp_alerts": exp} for at, alert, exp in checks],
    }


GPU = {"node": NODE, "gpu": "0"}

CASES: dict[str, list[dict[str, Any]]] = {
    "GpuXidErrors": [
        _case(
            [dcgm("DCGM_FI_DEV_XID_ERRORS", "0 0 13 0 0"), dcgm("DCGM_FI_DEV_XID_ERRORS", "0 0 0 0 0", gpu="1")],
            ("1m", "GpuXidErrors", []),
            ("3m", "GpuXidErrors", [fired("GpuXidErrors", "13", **GPU)]),
        )
    ],
    "GpuXidNeedsReplacement": [
        _case(
            # a rebootable 13 on gpu 0, then 79 (fell off the bus) on gpu 1: only gpu 1 needs a new node
            [dcgm("DCGM_FI_DEV_XID_ERRORS", "0 13 13 13 0"), dcgm("DCGM_FI_DEV_XID_ERRORS", "0 0 79 0 0", gpu="1")],
            ("1m", "GpuXidNeedsReplacement", []),
            ("3m", "GpuXidNeedsReplacement", [fired("GpuXidNeedsReplacement", "79", node=NODE, gpu="1")]),
        ),
        # a replacement code followed by a higher, rebootable one within the window is still caught
        _case(
            [dcgm("DCGM_FI_DEV_XID_ERRORS", "0 74 94 94 94")],
            ("4m", "GpuXidNeedsReplacement", [fired("GpuXidNeedsReplacement", "74", **GPU)]),
        ),
    ],
    "GpuDoubleBitEccErrors": [
        _case(
            [dcgm("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "0 0 0 1 1 1"), dcgm("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "3x5", gpu="1")],
            ("2m", "GpuDoubleBitEccErrors", []),
            ("4m", "GpuDoubleBitEccErrors", [fired("GpuDoubleBitEccErrors", "1", **GPU)]),
        )
    ],
    "GpuSingleBitEccErrors": [
        _case(
            # gpu 0 keeps correcting; gpu 1 corrected a burst an hour ago and stopped
            [dcgm("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "0+2x90"), dcgm("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "0 50x90", gpu="1")],
            ("10m", "GpuSingleBitEccErrors", []),
            ("80m", "GpuSingleBitEccErrors", [fired("GpuSingleBitEccErrors", "", **GPU)]),
        )
    ],
    "GpuRowRemapPending": [
        _case(
            [dcgm("DCGM_FI_DEV_ROW_REMAP_PENDING", "0 0 1x10"), dcgm("DCGM_FI_DEV_ROW_REMAP_PENDING", "0x12", gpu="1")],
            ("5m", "GpuRowRemapPending", []),
            ("9m", "GpuRowRemapPending", [fired("GpuRowRemapPending", "", **GPU)]),
        )
    ],
    "GpuRowRemapFailed": [
        _case(
            [dcgm("DCGM_FI_DEV_ROW_REMAP_FAILURE", "0 0 1 1"), dcgm("DCGM_FI_DEV_ROW_REMAP_FAILURE", "0 0 0 0", gpu="1")],
            ("1m", "GpuRowRemapFailed", []),
            ("2m", "GpuRowRemapFailed", [fired("GpuRowRemapFailed", "", **GPU)]),
        )
    ],
    "GpuClocksSlowedDown": [
        _case(
            # gpu 0 under full load at its power cap (0x4) and idle (0x1): normal; gpu 1 at the cap and thermally
            # slowed (0x44) for 12 minutes; gpu 2 power-braked (0x80) for 5 minutes only
            [
                dcgm("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "4x14 1"),
                dcgm("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "0 0 68x12 0", gpu="1"),
                dcgm("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "0 128x5 0x9", gpu="2"),
            ],
            ("8m", "GpuClocksSlowedDown", []),
            ("13m", "GpuClocksSlowedDown", [fired("GpuClocksSlowedDown", "", node=NODE, gpu="1")]),
        )
    ],
    "NodeAcceleratedHardwareNotReady": [
        _case(
            [
                condition(NODE, "AcceleratedHardwareReady", "false", "0 0 1 1"),
                condition("ip-10-0-1-2.ec2.internal", "AcceleratedHardwareReady", "false", "0 0 0 0"),
                condition("ip-10-0-1-2.ec2.internal", "Ready", "false", "0 1 1 1"),  # not the agent's condition
            ],
            ("1m", "NodeAcceleratedHardwareNotReady", []),
            ("3m", "NodeAcceleratedHardwareNotReady", [fired("NodeAcceleratedHardwareNotReady", "", node=NODE)]),
        )
    ],
    "NodeConditionNotReady": [
        _case(
            [
                condition(NODE, "KernelReady", "false", "0 1x8"),
                condition(NODE, "StorageReady", "false", "0 1 1 0x6"),
                condition(NODE, "AcceleratedHardwareReady", "false", "1x9"),  # its own, critical alert
            ],
            ("4m", "NodeConditionNotReady", []),
            ("7m", "NodeConditionNotReady", [fired("NodeConditionNotReady", "", node=NODE, condition="KernelReady")]),
        )
    ],
}
