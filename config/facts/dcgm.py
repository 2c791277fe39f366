"""The DCGM fields the GPU operator's dcgm-exporter collects: the platform renders its own counters file.

The exporter's own file leaves ECC and throttling out (NVIDIA/dcgm-exporter etc/default-counters.csv
and dcp-metrics-included.csv keep them commented), and the GPU fault alerts read them. So the GPU
operator gets this list as `dcgmExporter.config` (a ConfigMap the chart creates and the operator mounts
as /etc/dcgm-exporter/dcgm-metrics.csv, setting DCGM_EXPORTER_COLLECTORS: gpu-operator v26.7.0
templates/dcgm_exporter_config.yaml, controllers/object_controls.go). An unknown field name stops the
exporter at start, so every DCGM_FI_ name here is one of go-dcgm v1.4601.1's (`pkg/dcgm/const_fields.go`, the
library the pinned exporter 4.6.0-4.8.3 is built on: its release notes, NVIDIA/dcgm-exporter#711), and the one
DCGM_EXP_ name one the exporter computes itself (internal/pkg/counters/const.go).

The fields are listed in dcgm_counters.csv beside this module: first the exporter's default set at 4.5.3-4.8.2
(what the dashboards were built on), then what the GPU fault alerts and the dashboard's health row add.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal, cast, get_args

Kind = Literal["gauge", "counter", "label"]


@dataclass(frozen=True)
class Field:
    name: str
    kind: Kind
    help: str
    """One CSV cell: no comma (the exporter splits each line on commas)."""


COUNTERS: Final = Path(__file__).with_name("dcgm_counters.csv")
"""The fields, one `field, kind, help` line each: the exporter's default set, then what the alerts add."""


def _read(path: Path) -> tuple[Field, ...]:
    fields = []
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, kind, help_ = line.split(", ", 2)
            if kind not in get_args(Kind):
                raise ValueError(f"{path.name}: {name} has kind {kind!r}, not one of {', '.join(get_args(Kind))}")
            fields.append(Field(name, cast(Kind, kind), help_))
    return tuple(fields)


FIELDS: Final = _read(COUNTERS)

CLOCKS_EVENT_FAULT_BITS: Final = {
    "HW slowdown": 0x8,
    "SW thermal slowdown": 0x20,
    "HW thermal slowdown": 0x40,
    "HW power brake": 0x80,
}
"""The DCGM_CLOCKS_EVENT_REASON_* bits (go-dcgm v1.4601.1 pkg/dcgm/dcgm_fields.h) that mean heat or a
hardware fault slows the GPU. Left out: idle (0x1), application clocks (0x2), the software power cap
(0x4, a GPU at its power limit under full load), sync boost (0x10) and display clocks (0x100)."""

CONFIGMAP: Final = "dcgm-exporter-counters"
"""The ConfigMap the GPU operator's chart creates from `dcgmExporter.config.data`."""


def series() -> frozenset[str]:
    """Every series the exporter writes from this file (labels excluded)."""
    return frozenset(f.name for f in FIELDS if f.kind != "label")


def counters_csv() -> str:
    """The exporter's counters file: `field, kind, help` per line, under a comment that says where it comes from."""
    lines = ["# Rendered by the platform (config/facts/dcgm.py): the exporter's defaults, then ECC and throttling."]
    lines += [f"{f.name}, {f.kind}, {f.help}" for f in FIELDS]
    return "\n".join(lines) + "\n"
