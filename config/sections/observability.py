"""`observability`: kube-prometheus-stack, and the latency objectives and alert thresholds it watches."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from config.sections.base import ConfigModel
from config.sections.types import PromDuration, PromSize, Quantity

# Control-plane parts EKS runs out of reach (and kube-proxy, whose metrics the managed add-on binds
# to 127.0.0.1): kube-prometheus-stack scrapes them and renders their Down alerts only when
# enabled, and on EKS those alerts would fire forever. The platform turns them off.
EKS_UNREACHABLE_COMPONENTS = ("kubeControllerManager", "kubeScheduler", "kubeEtcd", "kubeProxy")


class Slo(ConfigModel):
    """Latency objectives a model is alerted on (defaults in observability.slo, per-model overrides)."""

    ttft_p99_seconds: float = Field(default=2.0, gt=0, description="Time to first token, 99th percentile.")
    end_to_end_p99_seconds: float = Field(default=60.0, gt=0, description="End-to-end request latency, 99th percentile.")


class AlertTuning(ConfigModel):
    """Thresholds of the alert rules."""

    queue_backlog_per_replica: float = Field(default=10, gt=0, description="Waiting requests per ready replica that count as a backlog.")
    queue_backlog_for: PromDuration = Field(default="5m", description="How long a backlog lasts before it alerts.")
    kv_cache_saturation: float = Field(default=0.95, gt=0, le=1, description="KV-cache usage (0-1) that counts as saturated.")
    kv_cache_saturation_for: PromDuration = Field(default="10m", description="How long saturation lasts before it alerts.")
    gpu_pod_pending_for: PromDuration = Field(
        default="15m",
        description="How long a GPU pod may stay Pending (node launch + image pull) before it alerts.",
    )


class ObservabilityConfig(ConfigModel):
    """kube-prometheus-stack: Prometheus, Alertmanager, Grafana, and our monitors, rules and dashboards."""

    namespace: Literal["monitoring"] = Field(default="monitoring", description="Namespace of the monitoring stack.")
    retention: PromDuration = Field(default="15d", description="Prometheus retention time.")
    retention_size: PromSize | None = Field(
        default=None, description="Prometheus retention by size, in Prometheus units (e.g. 90GB); unset: time only."
    )
    storage_size: Quantity = Field(default="100Gi", description="Prometheus volume (gp3, encrypted).")
    grafana_storage_size: Quantity = Field(default="10Gi", description="Grafana volume for its database.")
    vllm_scrape_interval: PromDuration = Field(
        default="5s",
        description="Scrape interval of vLLM /metrics and the gateway's; short, because autoscaling reads it (5 s as "
        "llm-d's SLO-aware autoscaling benchmark: twice the samples of 10 s, docs/scale-up.md).",
    )
    slo: Slo = Field(default_factory=Slo, description="Default latency objectives for every model.")
    alerts: AlertTuning = Field(default_factory=AlertTuning, description="Alert thresholds.")
    extra_values: dict[str, Any] = Field(
        default_factory=dict, description="Escape hatch: Helm values deep-merged last into the chart values."
    )
