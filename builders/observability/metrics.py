"""Metric names every query of the platform may use, for the pinned versions.

vLLM renames metrics between releases (vllm:gpu_cache_usage_perc was removed in 0.12); a query
over a missing series returns nothing, which KEDA reads as 0 and dashboards as "No data". Every
PromQL expression the platform writes is checked against this table by the tests.
"""

from __future__ import annotations

import re
from typing import Final

VLLM_VERSION: Final = "0.33.0"

# vllm/v1/metrics/loggers.py in the 0.33.0 wheel. Labels: model_name (= --served-model-name), engine.
VLLM_GAUGES: Final = frozenset(
    {
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
        "vllm:num_requests_waiting_by_reason",
        "vllm:kv_cache_usage_perc",
        "vllm:engine_sleep_state",
        "vllm:lora_requests_info",
        "vllm:cache_config_info",
    }
)
VLLM_COUNTERS: Final = frozenset(
    {
        "vllm:prompt_tokens",
        "vllm:generation_tokens",
        "vllm:request_success",
        "vllm:num_preemptions",
        "vllm:prefix_cache_queries",
        "vllm:prefix_cache_hits",
        "vllm:prompt_tokens_cached",
        "vllm:admission_rejections",
        "vllm:corrupted_requests",
    }
)
VLLM_HISTOGRAMS: Final = frozenset(
    {
        "vllm:time_to_first_token_seconds",
        "vllm:e2e_request_latency_seconds",
        "vllm:inter_token_latency_seconds",
        "vllm:request_time_per_output_token_seconds",
        "vllm:request_queue_time_seconds",
        "vllm:request_prefill_time_seconds",
        "vllm:request_decode_time_seconds",
        "vllm:request_inference_time_seconds",
        "vllm:request_prompt_tokens",
        "vllm:request_generation_tokens",
        "vllm:iteration_tokens_total",
        "vllm:request_max_num_generation_tokens",
        "vllm:request_params_n",
        "vllm:request_params_max_tokens",
        "vllm:request_num_preemptions",
    }
)
# Names older releases had and 0.33.0 does not: a query using one is a bug.
VLLM_REMOVED: Final = frozenset(
    {
        "vllm:gpu_cache_usage_perc",
        "vllm:cpu_cache_usage_perc",
        "vllm:time_per_output_token_seconds",
        "vllm:gpu_prefix_cache_queries",
        "vllm:gpu_prefix_cache_hits",
        "vllm:num_requests_swapped",
    }
)


def vllm_series() -> frozenset[str]:
    """Every series name vLLM 0.33.0 exposes (counters with _total, histograms with suffixes)."""
    names = set(VLLM_GAUGES)
    names |= {f"{c}_total" for c in VLLM_COUNTERS}
    names |= {f"{h}{s}" for h in VLLM_HISTOGRAMS for s in ("_bucket", "_sum", "_count")}
    return frozenset(names)


# DCGM exporter default counters: the uncommented rows of NVIDIA/dcgm-exporter etc/default-counters.csv
# (checked at tag 4.5.3-4.8.2; the GPU operator's exporter runs with that file unless given its own).
# DCGM_FI_DRIVER_VERSION is a label there, not a series.
DCGM_SERIES: Final = frozenset(
    {
        "DCGM_FI_DEV_SM_CLOCK",
        "DCGM_FI_DEV_MEM_CLOCK",
        "DCGM_FI_DEV_MEMORY_TEMP",
        "DCGM_FI_DEV_GPU_TEMP",
        "DCGM_FI_DEV_POWER_USAGE",
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_DEV_MEM_COPY_UTIL",
        "DCGM_FI_DEV_ENC_UTIL",
        "DCGM_FI_DEV_DEC_UTIL",
        "DCGM_FI_DEV_XID_ERRORS",
        "DCGM_FI_DEV_FB_FREE",
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_FB_RESERVED",
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
        "DCGM_FI_DEV_VGPU_LICENSE_STATUS",
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
        "DCGM_FI_DEV_ROW_REMAP_FAILURE",
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        "DCGM_FI_PROF_DRAM_ACTIVE",
        "DCGM_FI_PROF_PCIE_TX_BYTES",
        "DCGM_FI_PROF_PCIE_RX_BYTES",
    }
)
# KEDA 2.20 operator metrics (keda.sh docs, "Integrate with Prometheus": keda_scaler_detail_errors_total
# replaced keda_scaler_errors_total) the rules and dashboards use.
KEDA_SERIES: Final = frozenset({"keda_scaler_detail_errors_total", "keda_scaled_object_errors_total", "keda_scaler_metrics_value"})
# Karpenter 1.14 metrics (karpenter.sh docs, "Metrics"; the NodeClaim status-condition gauge comes from the
# operator package Karpenter embeds, hence its `operator_` prefix).
KARPENTER_SERIES: Final = frozenset(
    {
        "karpenter_interruption_received_messages_total",
        "operator_nodeclaim_status_condition_current_status_seconds",
        "karpenter_nodeclaims_created_total",
        "karpenter_nodeclaims_disrupted_total",
    }
)
# kube-state-metrics series (the v2 release kube-prometheus-stack 88.5.3 installs; kube-state-metrics
# docs/metrics/workload/*.md and docs/metrics/cluster/node-metrics.md).
KSM_SERIES: Final = frozenset(
    {
        "kube_pod_status_phase",
        "kube_pod_container_resource_requests",
        "kube_node_labels",
        "kube_deployment_status_replicas_ready",
        "kube_deployment_status_replicas_available",
        "kube_pod_container_status_ready",
        "kube_horizontalpodautoscaler_status_desired_replicas",
    }
)
# Series Prometheus writes itself for every scrape target (Prometheus docs, "Jobs and instances").
PROMETHEUS_SERIES: Final = frozenset({"up"})

_VLLM_NAME = re.compile(r"vllm:[a-zA-Z0-9_:]+")


def vllm_names_in(expr: str) -> set[str]:
    return set(_VLLM_NAME.findall(expr))


def known_series() -> frozenset[str]:
    """Every series name the tables say exists (vLLM's with their derived suffixes). A query may also
    read a recording rule the program defines; those are not in this table."""
    return vllm_series() | DCGM_SERIES | KEDA_SERIES | KARPENTER_SERIES | KSM_SERIES | PROMETHEUS_SERIES


_STRING = re.compile(r""""(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`""")
_MATCHERS = re.compile(r"\{[^{}]*\}")
_RANGE = re.compile(r"\[[^\[\]]*\]")
_LABEL_LIST = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
_IDENTIFIER = re.compile(r"(?<![\w:.$])([a-zA-Z_:][\w:]*)(?![\w:])(?!\s*\()")
_NAME_MATCHER = re.compile(r"""__name__\s*=\s*["']([^"']+)["']""")
_KEYWORDS = frozenset(
    {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right", "offset", "bool", "inf", "nan"}
)


def series_names_in(expr: str) -> set[str]:
    """The series names a PromQL expression selects: its identifiers once string literals, label
    matchers (`{...}`), ranges and subqueries (`[...]`) and label lists (`by (...)`, `on (...)`,
    `group_left (...)`, ...) are removed, less function and aggregation calls (a name before `(`),
    keywords and numbers; plus the names a `__name__="..."` matcher selects."""
    named = set(_NAME_MATCHER.findall(expr))
    text = _STRING.sub('""', expr)
    text = _MATCHERS.sub(" ", text)
    text = _RANGE.sub(" ", text)
    text = _LABEL_LIST.sub(" ", text)
    return named | {name for name in _IDENTIFIER.findall(text) if name.lower() not in _KEYWORDS}
