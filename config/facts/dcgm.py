"""The DCGM fields the GPU operator's dcgm-exporter collects: the platform renders its own counters file.

The exporter's own file leaves ECC and throttling out (NVIDIA/dcgm-exporter etc/default-counters.csv
and dcp-metrics-included.csv keep them commented), and the GPU fault alerts read them. So the GPU
operator gets this list as `dcgmExporter.config` (a ConfigMap the chart creates and the operator mounts
as /etc/dcgm-exporter/dcgm-metrics.csv, setting DCGM_EXPORTER_COLLECTORS: gpu-operator v26.7.0
templates/dcgm_exporter_config.yaml, controllers/object_controls.go). An unknown field name stops the
exporter at start, so every DCGM_FI_ name here is one of go-dcgm v1.4601.1's (`pkg/dcgm/const_fields.go`, the
library the pinned exporter 4.6.0-4.8.3 is built on: its release notes, NVIDIA/dcgm-exporter#711), and the one
DCGM_EXP_ name one the exporter computes itself (internal/pkg/counters/const.go).

The first block is the exporter's default set at 4.5.3-4.8.2 (what the dashboards were built on), the
second what the GPU fault alerts and the dashboard's health row add.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

Kind = Literal["gauge", "counter", "label"]


@dataclass(frozen=True)
class Field:
    name: str
    kind: Kind
    help: str
    """One CSV cell: no comma (the exporter splits each line on commas)."""


DEFAULTS: Final = (
    Field("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock (MHz)."),
    Field("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock (MHz)."),
    Field("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (C)."),
    Field("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (C)."),
    Field("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (W)."),
    Field("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Energy since boot (mJ)."),
    Field("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "PCIe retries."),
    Field("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (%)."),
    Field("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory copy utilization (%)."),
    Field("DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (%)."),
    Field("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (%)."),
    Field("DCGM_FI_DEV_XID_ERRORS", "gauge", "The last XID error's code."),
    Field("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer free (MiB)."),
    Field("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer used (MiB)."),
    Field("DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer reserved (MiB)."),
    Field("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter", "NVLink bandwidth counters over all lanes."),
    Field("DCGM_FI_DEV_VGPU_LICENSE_STATUS", "gauge", "vGPU license status."),
    Field("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", "Rows remapped for uncorrectable errors."),
    Field("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Rows remapped for correctable errors."),
    Field("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "1 when a row remap failed."),
    Field("DCGM_FI_DRIVER_VERSION", "label", "Driver version."),
    Field("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Share of time the graphics engine is active."),
    Field("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Share of cycles the tensor pipe is active."),
    Field("DCGM_FI_PROF_DRAM_ACTIVE", "gauge", "Share of cycles device memory is sending or receiving."),
    Field("DCGM_FI_PROF_PCIE_TX_BYTES", "gauge", "PCIe bytes sent per second (headers included)."),
    Field("DCGM_FI_PROF_PCIE_RX_BYTES", "gauge", "PCIe bytes received per second (headers included)."),
)

HEALTH: Final = (
    # dcgm-exporter's own field: XIDs counted over a window (5 minutes, --xid-count-window-size) with the code as the
    # `xid` label; DCGM_FI_DEV_XID_ERRORS holds the last code until the engine restarts (NVIDIA/DCGM#277), so
    # alerts on it would never clear, and a repeat of the same code would not show (etc/default-counters.csv lists it)
    Field("DCGM_EXP_XID_ERRORS_COUNT", "counter", "XID errors in the last window by code (label xid)."),
    # DCGM field 310/311: volatile totals (since the driver loaded), so `increase` reads new errors
    Field("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "Single-bit ECC errors since the driver loaded (corrected)."),
    Field("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Double-bit ECC errors since the driver loaded (uncorrectable)."),
    # field 396: a row remap waits for a GPU reset (A100 and later remap rows instead of retiring pages)
    Field("DCGM_FI_DEV_ROW_REMAP_PENDING", "gauge", "1 when a row remap waits for a GPU reset."),
    # field 112, a bitmask of DCGM_CLOCKS_EVENT_REASON_* (dcgm_fields.h): why the clocks are below their maximum
    Field("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "gauge", "Bitmask of why the clocks are held below their maximum."),
    # fields 240/241, in ns (go-dcgm's field comments)
    Field("DCGM_FI_DEV_POWER_VIOLATION", "counter", "Time held back by the power limit (ns)."),
    Field("DCGM_FI_DEV_THERMAL_VIOLATION", "counter", "Time held back by the thermal limit (ns)."),
)

FIELDS: Final = DEFAULTS + HEALTH

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
