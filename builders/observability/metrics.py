"""Metric names every query of the platform may use, for the pinned versions.

vLLM renames metrics between releases (vllm:gpu_cache_usage_perc was removed in 0.12); a query
over a missing series returns nothing, which KEDA reads as 0 and dashboards as "No data". Every
PromQL expression the platform writes is checked against this table by the tests.
"""

from __future__ import annotations

import re
from typing import Final

from config.facts import dcgm

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


# The DCGM fields the platform's counters file gives the GPU operator's exporter (config/facts/dcgm.py:
# the exporter's defaults at 4.5.3-4.8.2, then ECC and throttling). DCGM_FI_DRIVER_VERSION is a label there.
DCGM_SERIES: Final = dcgm.series()
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
        "kube_node_status_condition",
        "kube_deployment_status_replicas_ready",
        "kube_deployment_status_replicas_available",
        "kube_pod_container_status_ready",
        "kube_horizontalpodautoscaler_status_desired_replicas",
    }
)
# Series Prometheus writes itself for every scrape target (Prometheus docs, "Jobs and instances").
PROMETHEUS_SERIES: Final = frozenset({"up"})

EPP_VERSION: Final = "v0.10.0"
"""The llm-d router's Endpoint Picker (config/facts/versions.py EPP_IMAGE)."""
# The Endpoint Picker's own series under the `llm_d_epp_` subsystem (llm-d/llm-d-router at v0.10.0:
# pkg/epp/metrics/llm_d_router_metrics.go; the approximate prefix index's in
# pkg/epp/framework/plugins/requestcontrol/dataproducer/approximateprefix/metrics.go; catalogue in
# docs/metrics.md). Counters carry `_total` in their registered names. Labels, as registered:
# request_*: model_name, target_model_name, fairness_id, priority (request_error_total adds error_code);
# ready_endpoints, average_*: name (the InferencePool); scheduler_attempts_total: status (success,
# failure), target_model_name, endpoint_name, namespace, port (the chosen pod, empty on failure);
# datalayer_poll_errors_total: source_type (the data source plugin, `metrics-data-source` for vLLM's
# /metrics); prefix_indexer_*: plugin_name, plugin_type; scheduler_e2e_duration_seconds and
# request_processing_duration_seconds: none. ready_endpoints counts the pool's pods whose scraped metrics
# are fresh (pkg/epp/datalayer/logger/logger.go: within --metrics-staleness-threshold, 2 s, refreshed every
# --refresh-prometheus-metrics-interval, 5 s), so a ready pod the picker cannot scrape is not among them.
EPP_COUNTERS: Final = frozenset(
    {
        "llm_d_epp_request_total",
        "llm_d_epp_request_error_total",
        "llm_d_epp_scheduler_attempts_total",
        "llm_d_epp_datalayer_poll_errors_total",
        "llm_d_epp_datalayer_extract_errors_total",
        # flow control, with its feature gate (docs/metrics.md "Flow control"): outcome Dispatched,
        # RejectedCapacity, RejectedNoEndpoints (a 503), RejectedOther, EvictedTTL (a 429), ...; priority, inference_pool
        "llm_d_epp_flow_control_requests_total",
    }
)
EPP_GAUGES: Final = frozenset(
    {
        "llm_d_epp_ready_endpoints",
        "llm_d_epp_request_running",
        "llm_d_epp_average_queue_size",
        "llm_d_epp_average_kv_cache_utilization",
        "llm_d_epp_prefix_indexer_size",
        # flow control: held requests (labels fairness_id, priority, inference_pool, model_name, target_model_name),
        # the pool's saturation (inference_pool; 1.0 gates dispatch), endpoints with stale metrics (detector)
        "llm_d_epp_flow_control_queue_size",
        "llm_d_epp_flow_control_pool_saturation",
        "llm_d_epp_flow_control_stale_endpoints",
    }
)
EPP_HISTOGRAMS: Final = frozenset(
    {
        "llm_d_epp_request_duration_seconds",
        "llm_d_epp_scheduler_e2e_duration_seconds",
        "llm_d_epp_request_processing_duration_seconds",
        "llm_d_epp_prefix_indexer_hit_ratio",
        # flow control: enqueue to outcome (labels as the queue size, plus outcome)
        "llm_d_epp_flow_control_request_queue_duration_seconds",
    }
)
# The deprecated twins v0.10.0 still emits beside each of the above (docs/metrics.md, "Deprecated series"):
# they go with the deprecation window, so a query using one is a bug.
EPP_DEPRECATED: Final = frozenset(
    {
        "inference_objective_request_total",
        "inference_objective_request_error_total",
        "inference_objective_request_duration_seconds_bucket",
        "inference_pool_ready_pods",
        "inference_extension_scheduler_e2e_duration_seconds_bucket",
        "inference_extension_scheduler_attempts_total",
        "inference_extension_prefix_indexer_hit_ratio_bucket",
        "llm_d_inference_scheduler_datalayer_poll_errors_total",
    }
)


def _histogram_series(names: frozenset[str]) -> frozenset[str]:
    return frozenset(f"{h}{s}" for h in names for s in ("_bucket", "_sum", "_count"))


def epp_series() -> frozenset[str]:
    """Every Endpoint Picker series name the table holds (histograms with their suffixes)."""
    return EPP_COUNTERS | EPP_GAUGES | _histogram_series(EPP_HISTOGRAMS)


ENVOY_VERSION: Final = "1.33"
"""The gateway's proxies (config/facts/versions.py ENVOY_IMAGE)."""
# Envoy's statistics as its admin `/stats/prometheus` writes them: `envoy_` plus the tag-extracted stat
# name with every character outside [a-zA-Z0-9_] made `_`; counters get no `_total`, histograms `_bucket`,
# `_sum`, `_count` (envoyproxy/envoy source/server/admin/prometheus_stats.cc). Stat names, from Envoy's
# documentation pages "HTTP connection manager statistics" (`http.<stat_prefix>.*`, downstream_rq_time in
# ms), "Cluster statistics" (`cluster.<name>.*`) and "Statistics" (`server.live`); read on the stored sources, which
# have not changed these names across 1.x. Default tags (source/common/config/well_known_names.cc):
# envoy_http_conn_manager_prefix (the listener's stat_prefix, `api` for the API listener,
# builders/gateway/envoy.py), envoy_cluster_name (`ext_proc`, the Endpoint Picker; `original_destination_cluster`,
# the vLLM pods), envoy_response_code_class (`5` of `downstream_rq_5xx`, on the `*_rq_xx` names).
ENVOY_COUNTERS: Final = frozenset(
    {
        "envoy_http_downstream_rq_total",
        "envoy_http_downstream_rq_xx",
        "envoy_cluster_upstream_rq_total",
        "envoy_cluster_upstream_rq_xx",
        "envoy_cluster_upstream_cx_connect_fail",
    }
)
ENVOY_GAUGES: Final = frozenset(
    {
        "envoy_http_downstream_rq_active",
        "envoy_cluster_membership_healthy",
        "envoy_cluster_membership_total",
        "envoy_server_live",
    }
)
ENVOY_HISTOGRAMS: Final = frozenset({"envoy_http_downstream_rq_time", "envoy_cluster_upstream_rq_time"})


def envoy_series() -> frozenset[str]:
    """Every Envoy series name the table holds (histograms with their suffixes)."""
    return ENVOY_COUNTERS | ENVOY_GAUGES | _histogram_series(ENVOY_HISTOGRAMS)


_VLLM_NAME = re.compile(r"vllm:[a-zA-Z0-9_:]+")


def vllm_names_in(expr: str) -> set[str]:
    return set(_VLLM_NAME.findall(expr))


def known_series() -> frozenset[str]:
    """Every series name the tables say exists (vLLM's with their derived suffixes). A query may also
    read a recording rule the program defines; those are not in this table."""
    return vllm_series() | DCGM_SERIES | KEDA_SERIES | KARPENTER_SERIES | KSM_SERIES | PROMETHEUS_SERIES | epp_series() | envoy_series()


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
