"""Grafana dashboards built from one list of panel definitions per dashboard. Pure.

Each dashboard is a ConfigMap that Grafana's sidecar loads (label grafana_dashboard=1). The
queries use the pinned metric names (metrics.py) and the recording rules (rules.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from builders.gateway import envoy as envoy_config
from builders.observability.rules import AGENT_CONDITIONS, GATEWAY_PICKER_JOB, GATEWAY_PROXY_JOB, VLLM_CONTAINER
from config.facts.conventions import CAPACITY_TYPE_LABEL, INSTANCE_TYPE_LABEL, POOL_LABEL, PROJECT, hpa_name


def ksm_label(node_label: str) -> str:
    """How kube-state-metrics names a node label on kube_node_labels (non-alphanumerics become _)."""
    return "label_" + "".join(c if c.isalnum() else "_" for c in node_label)


POOL = ksm_label(POOL_LABEL)
CAPACITY_TYPE = ksm_label(CAPACITY_TYPE_LABEL)
INSTANCE_TYPE = ksm_label(INSTANCE_TYPE_LABEL)

MODEL = 'model_name=~"$model"'
RATE = "$__rate_interval"


@dataclass(frozen=True)
class Panel:
    """A time series (or stat) panel with one or more queries: (expr, legend)."""

    title: str
    queries: tuple[tuple[str, str], ...]
    unit: str = "short"
    kind: str = "timeseries"
    description: str = ""
    repeat: str = ""
    """A row only: the template variable the row (and the panels under it) repeats for, one row per value."""


def row(title: str, *, repeat: str = "") -> Panel:
    """A row header: the panels after it, up to the next row, are its panels."""
    return Panel(title, (), kind="row", repeat=repeat)


@dataclass(frozen=True)
class Dashboard:
    uid: str
    title: str
    panels: tuple[Panel, ...]
    variables: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    """(name, label_values query) template variables."""


def _quantile_panel(title: str, histogram: str) -> Panel:
    return Panel(
        title,
        tuple(
            (
                f"histogram_quantile({q}, sum by (model_name, le) (rate({histogram}_bucket{{{MODEL}}}[{RATE}])))",
                f"p{int(float(q) * 100)} {{{{model_name}}}}",
            )
            for q in ("0.5", "0.95", "0.99")
        ),
        unit="s",
    )


def _gateway_quantiles(histogram: str) -> tuple[tuple[str, str], ...]:
    return tuple(
        (
            f"histogram_quantile({q}, sum by (namespace, le) (rate({histogram}_bucket{{{GATEWAY}}}[{RATE}])))",
            f"p{int(float(q) * 100)} {{{{namespace}}}}",
        )
        for q in ("0.5", "0.95", "0.99")
    )


# The gateway's series (Endpoint Picker, Envoy) carry the namespace of their target: each model runs in
# the namespace named after it, so the model variable selects them by namespace. Names and labels:
# metrics.py EPP_* and ENVOY_* (llm-d router v0.10.0, Envoy 1.33).
GATEWAY = 'namespace=~"$model"'
API_STAT_PREFIX = envoy_config.API_STAT_PREFIX
_API = f'envoy_http_conn_manager_prefix="{API_STAT_PREFIX}"'
_ENDPOINTS = f'envoy_cluster_name="{envoy_config.ENDPOINT_CLUSTER}"'
_PICKERS = f'envoy_cluster_name="{envoy_config.EXT_PROC_CLUSTER}"'

GATEWAY_PANELS = (
    row("Gateway: $model", repeat="model"),
    Panel(
        "Requests picked per replica",
        (
            (
                f"sum by (namespace, endpoint_name) (rate(llm_d_epp_scheduler_attempts_total{{{GATEWAY}, "
                f'status="success", endpoint_name!=""}}[{RATE}]))',
                "{{endpoint_name}}",
            ),
        ),
        unit="reqps",
        description="Requests the Endpoint Picker sent to each vLLM pod. An even spread is the queue and KV-cache "
        "scorers balancing; one pod well ahead is prefix-cache affinity (or the others missing from its endpoints).",
    ),
    Panel(
        "Prefix-cache hit rate",
        (
            (
                f"sum by (model_name) (rate(vllm:prefix_cache_hits_total{{{MODEL}}}[{RATE}])) / "
                f"sum by (model_name) (rate(vllm:prefix_cache_queries_total{{{MODEL}}}[{RATE}]))",
                "vLLM cache hits {{model_name}}",
            ),
            (
                f"sum by (namespace) (rate(llm_d_epp_prefix_indexer_hit_ratio_sum{{{GATEWAY}}}[{RATE}])) / "
                f"sum by (namespace) (rate(llm_d_epp_prefix_indexer_hit_ratio_count{{{GATEWAY}}}[{RATE}]))",
                "picker prefix match {{namespace}}",
            ),
        ),
        unit="percentunit",
        description="vLLM's prompt tokens served from its prefix cache over those looked up: what cache-aware routing "
        "achieves. The picker's mean matched share of each prompt's prefix is there in the approximate mode only.",
    ),
    Panel(
        "Endpoint Picker scheduling latency",
        (
            *_gateway_quantiles("llm_d_epp_scheduler_e2e_duration_seconds"),
            (
                f"histogram_quantile(0.99, sum by (namespace, le) "
                f"(rate(llm_d_epp_request_processing_duration_seconds_bucket{{{GATEWAY}}}[{RATE}])))",
                "p99 request handling {{namespace}}",
            ),
        ),
        unit="s",
        description="Time to pick a pod per request, and the picker's whole handling of the request body (the "
        "overhead the gateway adds before vLLM sees the request).",
    ),
    Panel(
        "Request latency at the gateway",
        _gateway_quantiles("llm_d_epp_request_duration_seconds"),
        unit="s",
        description="End-to-end request latency as the Endpoint Picker records it (streamed responses included).",
    ),
    Panel(
        "Gateway errors per second",
        (
            (
                f"sum by (namespace, error_code) (rate(llm_d_epp_request_error_total{{{GATEWAY}}}[{RATE}]))",
                "picker error {{error_code}}",
            ),
            (
                f'sum by (namespace) (rate(llm_d_epp_scheduler_attempts_total{{{GATEWAY}, status="failure"}}[{RATE}]))',
                "no pod picked",
            ),
            (
                f'sum by (namespace) (rate(envoy_http_downstream_rq_xx{{{GATEWAY}, {_API}, envoy_response_code_class="5"}}[{RATE}]))',
                "5xx to callers (Envoy)",
            ),
            (
                f"sum by (namespace) (rate(envoy_cluster_upstream_rq_xx{{{GATEWAY}, {_ENDPOINTS}, "
                f'envoy_response_code_class="5"}}[{RATE}]))',
                "5xx from vLLM (Envoy)",
            ),
            (
                f'sum by (namespace) (rate(llm_d_epp_datalayer_poll_errors_total{{{GATEWAY}, source_type="metrics-data-source"}}[{RATE}]))',
                "picker scrapes of vLLM failed",
            ),
        ),
        unit="reqps",
        description="Envoy answers 503 itself when the picker fails (fail closed); vLLM's own 503s (admission bound) "
        "pass through. Failed scrapes leave pods out of the picker's endpoints (alert EppCannotScrapePod).",
    ),
    Panel(
        "Ready endpoints: the picker's view and vLLM's",
        (
            (f"max by (namespace) (llm_d_epp_ready_endpoints{{{GATEWAY}}})", "picker's endpoints {{namespace}}"),
            (
                f"count by (namespace) (max by (namespace, pod) "
                f'(kube_pod_container_status_ready{{{GATEWAY}, container="{VLLM_CONTAINER}"}}) == 1)',
                "ready vLLM pods {{namespace}}",
            ),
        ),
        description="The picker counts the pods whose metrics it scraped in the last 2 s; fewer than the ready vLLM "
        "pods means some take no gateway traffic.",
    ),
    Panel(
        "Held by the gateway (flow control)",
        (
            (f"sum by (namespace) (llm_d_epp_flow_control_queue_size{{{GATEWAY}}})", "held {{namespace}}"),
            (f"max by (namespace) (llm_d_epp_flow_control_pool_saturation{{{GATEWAY}}})", "pool saturation {{namespace}}"),
        ),
        description="Requests the picker holds while the replicas are saturated (saturation >= 1 gates dispatch; "
        "its thresholds sit above KEDA's targets, config/derived/hold.py). Exactly 1.0 with stale endpoints is a "
        "scrape problem, not load.",
    ),
    Panel(
        "Flow control outcomes per second",
        ((f"sum by (outcome) (rate(llm_d_epp_flow_control_requests_total{{{GATEWAY}}}[5m]))", "{{outcome}}"),),
        unit="reqps",
        description="EvictedTTL: held past the TTL, answered 429; RejectedNoEndpoints: no ready replica, answered 503.",
    ),
    Panel(
        "Gateway replicas ready",
        (
            (
                'sum by (deployment) (kube_deployment_status_replicas_ready{deployment=~"$model-(epp|proxy-drained)"})',
                "ready {{deployment}}",
            ),
            (f"sum by (namespace) (envoy_cluster_membership_healthy{{{GATEWAY}, {_PICKERS}}})", "pickers healthy to Envoy"),
            (f'sum by (namespace) (up{{job="{GATEWAY_PROXY_JOB}", {GATEWAY}}})', "proxies scraped"),
            (f'sum by (namespace) (up{{job="{GATEWAY_PICKER_JOB}", {GATEWAY}}})', "pickers scraped"),
        ),
        description="With more than one picker only the leader is ready (leader election); every proxy reports "
        "the pickers its health check passes.",
    ),
)

VLLM = Dashboard(
    uid=f"{PROJECT}-vllm",
    title="LLM platform / vLLM models",
    variables=(("model", "label_values(vllm:num_requests_running, model_name)"),),
    panels=(
        Panel(
            "Requests running and waiting",
            (
                (f"sum by (model_name) (vllm:num_requests_running{{{MODEL}}})", "running {{model_name}}"),
                (f"sum by (model_name) (vllm:num_requests_waiting{{{MODEL}}})", "waiting {{model_name}}"),
            ),
        ),
        Panel(
            "KV-cache usage",
            ((f"avg by (model_name) (vllm:kv_cache_usage_perc{{{MODEL}}})", "{{model_name}}"),),
            unit="percentunit",
        ),
        _quantile_panel("Time to first token", "vllm:time_to_first_token_seconds"),
        _quantile_panel("Inter-token latency", "vllm:inter_token_latency_seconds"),
        _quantile_panel("End-to-end request latency", "vllm:e2e_request_latency_seconds"),
        Panel(
            "Tokens per second",
            (
                (f"sum by (model_name) (rate(vllm:generation_tokens_total{{{MODEL}}}[{RATE}]))", "generated {{model_name}}"),
                (f"sum by (model_name) (rate(vllm:prompt_tokens_total{{{MODEL}}}[{RATE}]))", "prompt {{model_name}}"),
            ),
            unit="short",
        ),
        Panel(
            "Preemptions per second",
            ((f"sum by (model_name) (rate(vllm:num_preemptions_total{{{MODEL}}}[{RATE}]))", "{{model_name}}"),),
        ),
        Panel(
            "Replicas: desired vs ready",
            (
                (
                    "max by (horizontalpodautoscaler) "
                    '(kube_horizontalpodautoscaler_status_desired_replicas{horizontalpodautoscaler=~"' + hpa_name("$model") + '"})',
                    "desired {{horizontalpodautoscaler}}",
                ),
                ('max by (deployment) (kube_deployment_status_replicas_ready{deployment=~"$model"})', "ready {{deployment}}"),
            ),
        ),
        *GATEWAY_PANELS,
    ),
)

_POOL_JOIN = f' * on (node) group_left ({POOL}) kube_node_labels{{{POOL}=~"$pool"}}'

GPUS = Dashboard(
    uid=f"{PROJECT}-gpus",
    title="LLM platform / GPUs (DCGM)",
    variables=(("pool", f"label_values(kube_node_labels, {POOL})"),),
    panels=(
        Panel("GPU utilization", ((f"max by (node, gpu) (DCGM_FI_DEV_GPU_UTIL){_POOL_JOIN}", "{{node}} gpu{{gpu}}"),), unit="percent"),
        Panel(
            "Framebuffer memory used",
            ((f"max by (node, gpu) (DCGM_FI_DEV_FB_USED){_POOL_JOIN}", "{{node}} gpu{{gpu}}"),),
            unit="decmbytes",
        ),
        Panel("Power draw", ((f"max by (node, gpu) (DCGM_FI_DEV_POWER_USAGE){_POOL_JOIN}", "{{node}} gpu{{gpu}}"),), unit="watt"),
        Panel("Temperature", ((f"max by (node, gpu) (DCGM_FI_DEV_GPU_TEMP){_POOL_JOIN}", "{{node}} gpu{{gpu}}"),), unit="celsius"),
        Panel(
            "Tensor core activity (MIG-aware)",
            ((f"max by (node, gpu) (DCGM_FI_PROF_GR_ENGINE_ACTIVE){_POOL_JOIN}", "{{node}} gpu{{gpu}}"),),
            unit="percentunit",
        ),
        Panel(
            "GPU utilization by pool",
            (
                (
                    f"avg by ({POOL}) (max by (node, gpu) (DCGM_FI_DEV_GPU_UTIL){_POOL_JOIN})",
                    f"{{{{{POOL}}}}}",
                ),
            ),
            unit="percent",
        ),
        # what the GPU fault alerts read (docs/gpu-faults.md), per GPU of the pools shown
        row("GPU health"),
        Panel(
            "XID errors (5-minute window, by code)",
            ((f"max by (node, gpu, xid) (DCGM_EXP_XID_ERRORS_COUNT){_POOL_JOIN}", "{{node}} gpu{{gpu}} XID {{xid}}"),),
        ),
        Panel(
            "ECC errors (10 min)",
            (
                (f"max by (node, gpu) (increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[10m])){_POOL_JOIN}", "{{node}} gpu{{gpu}} double-bit"),
                (f"max by (node, gpu) (increase(DCGM_FI_DEV_ECC_SBE_VOL_TOTAL[10m])){_POOL_JOIN}", "{{node}} gpu{{gpu}} single-bit"),
            ),
            description="Double-bit errors are uncorrectable (GpuDoubleBitEccErrors); single-bit ones are corrected.",
        ),
        Panel(
            "Memory rows: remap pending or failed",
            (
                (f"max by (node, gpu) (DCGM_FI_DEV_ROW_REMAP_PENDING){_POOL_JOIN}", "{{node}} gpu{{gpu}} pending"),
                (f"max by (node, gpu) (DCGM_FI_DEV_ROW_REMAP_FAILURE){_POOL_JOIN}", "{{node}} gpu{{gpu}} failed"),
            ),
        ),
        Panel(
            "Time slowed by heat or power",
            (
                (f"max by (node, gpu) (rate(DCGM_FI_DEV_THERMAL_VIOLATION[5m]) / 1e9){_POOL_JOIN}", "{{node}} gpu{{gpu}} thermal"),
                (f"max by (node, gpu) (rate(DCGM_FI_DEV_POWER_VIOLATION[5m]) / 1e9){_POOL_JOIN}", "{{node}} gpu{{gpu}} power"),
            ),
            unit="percentunit",
            description="Share of time the GPU was held below its clocks (the violation counters count ns).",
        ),
        Panel(
            "GPU nodes with a failed condition",
            (
                (
                    f'max by (node, condition) (kube_node_status_condition{{condition=~"{"|".join(AGENT_CONDITIONS)}", '
                    f'status="false"}}) * on (node) group_left ({POOL}) kube_node_labels{{{POOL}=~"$pool"}}',
                    "{{node}} {{condition}}",
                ),
            ),
            description="Conditions the EKS node monitoring agent sets; with karpenter.nodeRepair Karpenter replaces the node.",
        ),
    ),
)

_INSTANCE_COUNT = (
    f'count by (instance_type) (label_replace(kube_node_labels{{{POOL}!=""}}, "instance_type", "$1", "{INSTANCE_TYPE}", "(.*)"))'
)

CAPACITY = Dashboard(
    uid=f"{PROJECT}-capacity",
    title="LLM platform / capacity and cost",
    panels=(
        Panel(
            "GPU nodes by pool and capacity type",
            (
                (
                    f'count by ({POOL}, {CAPACITY_TYPE}) (kube_node_labels{{{POOL}!=""}})',
                    f"{{{{{POOL}}}}} {{{{{CAPACITY_TYPE}}}}}",
                ),
            ),
        ),
        Panel(
            "Pending GPU pods",
            (
                (
                    'count((max by (namespace, pod) (kube_pod_status_phase{phase="Pending"}) == 1) and on (namespace, pod) '
                    '(max by (namespace, pod) (kube_pod_container_resource_requests{resource=~"nvidia_com_gpu|nvidia_com_mig_.+"}) > 0))',
                    "pending",
                ),
            ),
        ),
        Panel(
            "Interruption messages (1h)",
            (("sum by (message_type) (increase(karpenter_interruption_received_messages_total[1h]))", "{{message_type}}"),),
        ),
        Panel(
            "Estimated GPU node cost (on-demand list price)",
            ((f"sum({_INSTANCE_COUNT} * on (instance_type) group_left () llm:ec2_on_demand_price_per_hour)", "USD/hour"),),
            unit="currencyUSD",
            description="GPU nodes by instance type times the catalog's on-demand price; spot nodes cost less.",
        ),
        Panel(
            "Estimated cost by instance type",
            ((f"{_INSTANCE_COUNT} * on (instance_type) group_left () llm:ec2_on_demand_price_per_hour", "{{instance_type}}"),),
            unit="currencyUSD",
        ),
        Panel(
            "Nodes launched by pool (1h)",
            (("sum by (nodepool) (increase(karpenter_nodeclaims_created_total[1h]))", "{{nodepool}}"),),
        ),
    ),
)

DASHBOARDS = (VLLM, GPUS, CAPACITY)


def expressions(dashboard: Dashboard) -> list[str]:
    return [expr for panel in dashboard.panels for expr, _ in panel.queries]


def grafana_json(dashboard: Dashboard) -> dict[str, Any]:
    panels: list[dict[str, Any]] = []
    y, column = 0, 0
    for i, panel in enumerate(dashboard.panels):
        if panel.kind == "row":
            if column:
                y, column = y + 8, 0
            header: dict[str, Any] = {"id": i + 1, "type": "row", "title": panel.title, "collapsed": False, "panels": []}
            if panel.repeat:
                header["repeat"] = panel.repeat
            panels.append({**header, "gridPos": {"h": 1, "w": 24, "x": 0, "y": y}})
            y += 1
            continue
        position = {"h": 8, "w": 12, "x": column * 12, "y": y}
        y, column = (y + 8, 0) if column else (y, 1)
        panels.append(
            {
                "id": i + 1,
                "type": panel.kind,
                "title": panel.title,
                "description": panel.description,
                "datasource": {"type": "prometheus", "uid": "${datasource}"},
                "gridPos": position,
                "fieldConfig": {"defaults": {"unit": panel.unit}, "overrides": []},
                "targets": [
                    {
                        "refId": chr(ord("A") + j),
                        "expr": expr,
                        "legendFormat": legend,
                        "datasource": {"type": "prometheus", "uid": "${datasource}"},
                    }
                    for j, (expr, legend) in enumerate(panel.queries)
                ],
            }
        )
    variables: list[dict[str, Any]] = [
        {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Data source"},
    ]
    for name, query in dashboard.variables:
        variables.append(
            {
                "name": name,
                "type": "query",
                "datasource": {"type": "prometheus", "uid": "${datasource}"},
                "query": {"query": query, "refId": name},
                "includeAll": True,
                "multi": True,
                "current": {"text": "All", "value": "$__all"},
                "refresh": 2,
            }
        )
    return {
        "uid": dashboard.uid,
        "title": dashboard.title,
        "tags": [PROJECT],
        "timezone": "utc",
        "schemaVersion": 39,
        "refresh": "30s",
        "time": {"from": "now-3h", "to": "now"},
        "templating": {"list": variables},
        "panels": panels,
    }


def config_map_data(dashboard: Dashboard) -> dict[str, str]:
    return {f"{dashboard.uid}.json": json.dumps(grafana_json(dashboard), indent=2, sort_keys=True)}
