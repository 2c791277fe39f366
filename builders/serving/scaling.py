"""KEDA ScaledObject for a model. Pure (the HPA arithmetic that reads it is in planner/hpa.py).

Triggers read vLLM's own metrics through Prometheus:
- queue depth, `sum(vllm:num_requests_waiting{...})` as AverageValue: the HPA divides the total
  by the threshold, so desired = ceil(total waiting / acceptable waiting per replica);
- KV-cache usage, the average over replicas as Value: desired = ceil(current x average / target);
- optionally p95 time to first token as Value, a guardrail when latency breaks before queues grow;
- for a model that scales to zero, the requests in flight at its gateway's proxies as AverageValue
  (the wake: see `gateway_requests_query`).
Every query aggregates to one series (KEDA errors on several). A failing query is an error, not
a zero (ignoreNullValues false), and the fallback holds the current replica count.
"""

from __future__ import annotations

from typing import Any

from builders.gateway import envoy
from builders.observability.rules import GATEWAY_PROXY_JOB
from builders.serving.multinode import LWS_API_VERSION
from config.derived import capacity
from config.facts.conventions import hpa_name
from config.sections.gpu_pools import GpuPool
from config.sections.models import ModelConfig, ScalePolicy
from config.sections.types import duration_seconds


def _selector(model: ModelConfig) -> str:
    return f'namespace="{model.name}", model_name="{model.name}"'


def _over_pods(aggregation: str, metric: str, model: ModelConfig) -> str:
    """One series for the whole model: KEDA's Prometheus scaler errors on several."""
    return f"{aggregation}({metric}{{{_selector(model)}}})"


def _at_zero(model: ModelConfig, query: str, scales_to_zero: bool) -> str:
    """A model that scales to zero: with no replica available there is nothing to measure, so the
    query reads 0 (kube-state-metrics' count of available replicas, when it is 0); with replicas
    running, a missing vLLM series still returns nothing, which KEDA treats as an error."""
    if not scales_to_zero:
        return query
    available = f'sum(kube_deployment_status_replicas_available{{namespace="{model.name}", deployment="{model.name}"}})'
    return f"({query}) or ({available} == 0)"


def queue_query(model: ModelConfig, scales_to_zero: bool = False) -> str:
    return _at_zero(model, _over_pods("sum", "vllm:num_requests_waiting", model), scales_to_zero)


def kv_cache_query(model: ModelConfig, scales_to_zero: bool = False) -> str:
    return _at_zero(model, _over_pods("avg", "vllm:kv_cache_usage_perc", model), scales_to_zero)


def gateway_requests_query(model: ModelConfig) -> str:
    """Requests in flight at the model's Envoy proxies (API listener only: not the ALB's health checks on
    the ready listener, not Prometheus on the metrics listener): held by the picker's flow control, or
    streaming from a replica.

    The wake signal from zero. Envoy writes every statistic from its own start (its `/stats/prometheus`
    without `usedonly`), so the series exists, at 0, while the pool has no endpoint and never had one: it
    does not depend on the Endpoint Picker having seen a backend, unlike the picker's
    llm_d_epp_flow_control_queue_size (llm-d/llm-d#2492), and survives a picker restart. No fallback to 0:
    with no proxy scraped the query returns nothing, which (ignoreNullValues false) is an error, and KEDA's
    fallback then starts a replica; a missing signal never reads as idle."""
    selector = f'job="{GATEWAY_PROXY_JOB}", namespace="{model.name}", envoy_http_conn_manager_prefix="{envoy.API_STAT_PREFIX}"'
    return f"sum(envoy_http_downstream_rq_active{{{selector}}})"


def ttft_query(model: ModelConfig) -> str:
    # No requests in the window gives NaN; with ignoreNullValues false KEDA would read that as a
    # failure and hold the fallback. Idle is 0 seconds to first token, not an error.
    quantile = f"histogram_quantile(0.95, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket{{{_selector(model)}}}[2m])))"
    return f"({quantile} >= 0) or vector(0)"


GATEWAY_REQUESTS_TRIGGER = "gateway-requests"
WAKE_ACTIVATION = 0
"""KEDA activates a trigger whose value is strictly above its activation threshold: one request in flight."""


def _number(value: float) -> str:
    return f"{value:g}"


def triggers(model: ModelConfig, server_address: str, pool: GpuPool, scales_to_zero: bool = False) -> list[dict[str, Any]]:
    """vLLM's metrics, then (at zero) the gateway's requests in flight, then the schedules."""
    a = model.autoscaling

    def prometheus(name: str, metric_type: str, query: str, threshold: float, activation: float | None = None) -> dict[str, Any]:
        return {
            "type": "prometheus",
            "name": name,
            "metricType": metric_type,
            "metadata": {
                "serverAddress": server_address,
                "query": query,
                "threshold": _number(threshold),
                **({"activationThreshold": _number(activation)} if activation is not None else {}),
                "ignoreNullValues": "false",
                "unsafeSsl": "false",
            },
        }

    out = [
        prometheus("queue-depth", "AverageValue", queue_query(model, scales_to_zero), a.queue_depth_per_replica),
        prometheus("kv-cache", "Value", kv_cache_query(model, scales_to_zero), a.kv_cache_usage_target),
    ]
    if a.ttft_p95_seconds is not None:
        out.append(prometheus("ttft-p95", "Value", ttft_query(model), a.ttft_p95_seconds))
    if scales_to_zero:
        # The one signal that exists at zero: active above 0, so one held request wakes the model. Per replica
        # its target is the sequences a replica runs at once; vLLM's triggers scale beyond one.
        out.append(
            prometheus(
                GATEWAY_REQUESTS_TRIGGER,
                "AverageValue",
                gateway_requests_query(model),
                capacity.max_num_seqs(model, pool),
                activation=WAKE_ACTIVATION,
            )
        )
    for i, s in enumerate(a.schedules):
        out.append(
            {
                "type": "cron",
                "name": f"schedule-{i}",
                "metadata": {"timezone": s.timezone, "start": s.start, "end": s.end, "desiredReplicas": str(s.replicas)},
            }
        )
    return out


def _policy(p: ScalePolicy) -> dict[str, Any]:
    policies = []
    if p.percent is not None:
        policies.append({"type": "Percent", "value": p.percent, "periodSeconds": p.period_seconds})
    if p.pods is not None:
        policies.append({"type": "Pods", "value": p.pods, "periodSeconds": p.period_seconds})
    return {"stabilizationWindowSeconds": p.stabilization_window_seconds, "selectPolicy": "Max", "policies": policies}


def scale_down_window(model: ModelConfig, scale_up_miss_seconds: int | None) -> int:
    """The configured scale-down window; when left at its default, at least the model's scale-up
    budget on a new node, so a replica removed in a lull is not needed back sooner than it can start."""
    window = model.autoscaling.scale_down.stabilization_window_seconds
    if "scale_down" in model.autoscaling.model_fields_set or scale_up_miss_seconds is None:
        return window
    return max(window, scale_up_miss_seconds)


def scale_target(model: ModelConfig) -> dict[str, str]:
    """What KEDA's HPA scales: the model's Deployment, or its LeaderWorkerSet (a group per replica; its scale
    subresource counts groups, LeaderWorkerSet v0.10.0 CRD `.spec.replicas`)."""
    if model.multi_node:
        return {"apiVersion": LWS_API_VERSION, "kind": "LeaderWorkerSet", "name": model.name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "name": model.name}


def scaled_object(
    model: ModelConfig, server_address: str, pool: GpuPool, scale_up_miss_seconds: int | None = None, *, scales_to_zero: bool
) -> dict[str, Any]:
    """The model's ScaledObject. `scales_to_zero` is the derived state's (config/derived/state.py
    ModelState.scales_to_zero): the gateway's wake trigger, queries that read 0 at zero replicas,
    and the idle cooldown."""
    a = model.autoscaling
    fallback: dict[str, Any] = {
        "failureThreshold": a.fallback.failure_threshold,
        # KEDA wants a positive count; a model that scales to zero falls back to one replica
        "replicas": a.fallback.replicas or max(1, model.replicas.min),
        # Never scale in on missing metrics: keep the current count when it is higher.
        "behavior": "currentReplicasIfHigher",
    }
    scale_down = _policy(a.scale_down)
    scale_down["selectPolicy"] = "Min"
    scale_down["stabilizationWindowSeconds"] = scale_down_window(model, scale_up_miss_seconds)
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": model.name, "namespace": model.name},
        "spec": {
            "scaleTargetRef": scale_target(model),
            "minReplicaCount": model.replicas.min,
            "maxReplicaCount": model.replicas.max,
            "pollingInterval": a.polling_interval_seconds,
            **({"cooldownPeriod": duration_seconds(a.idle_after)} if scales_to_zero else {}),
            "fallback": fallback,
            "advanced": {
                "horizontalPodAutoscalerConfig": {
                    "name": hpa_name(model.name),
                    "behavior": {"scaleUp": _policy(a.scale_up), "scaleDown": scale_down},
                }
            },
            "triggers": triggers(model, server_address, pool, scales_to_zero),
        },
    }
