"""`observability`, `keda` and `ingress`: the shared services around the models."""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator

from config import versions
from config.base import ConfigModel
from config.types import AcmCertificateArn, PromDuration, PromSize, Quantity, _err


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

    version: Literal["88.5.3"] = Field(default=versions.KUBE_PROMETHEUS_STACK_VERSION, description="Chart version.")
    namespace: Literal["monitoring"] = Field(default="monitoring", description="Namespace of the monitoring stack.")
    retention: PromDuration = Field(default="15d", description="Prometheus retention time.")
    retention_size: PromSize | None = Field(
        default=None, description="Prometheus retention by size, in Prometheus units (e.g. 90GB); unset: time only."
    )
    storage_size: Quantity = Field(default="100Gi", description="Prometheus volume (gp3, encrypted).")
    grafana_storage_size: Quantity = Field(default="10Gi", description="Grafana volume for its database.")
    vllm_scrape_interval: PromDuration = Field(
        default="10s", description="Scrape interval of vLLM /metrics; short, because autoscaling reads it."
    )
    slo: Slo = Field(default_factory=Slo, description="Default latency objectives for every model.")
    alerts: AlertTuning = Field(default_factory=AlertTuning, description="Alert thresholds.")
    extra_values: dict[str, Any] = Field(
        default_factory=dict, description="Escape hatch: Helm values deep-merged last into the chart values."
    )


class KedaConfig(ConfigModel):
    """KEDA, which scales every model on its vLLM metrics."""

    version: Literal["2.20.2"] = Field(default=versions.KEDA_VERSION, description="Chart version.")
    operator_replicas: int = Field(default=2, ge=1, le=3, description="KEDA operator replicas (leader election).")
    extra_values: dict[str, Any] = Field(
        default_factory=dict, description="Escape hatch: Helm values deep-merged last into the chart values."
    )


def _cidr(value: str) -> str:
    try:
        net = ipaddress.IPv4Network(value, strict=True)
    except ValueError:
        raise _err(f"'{value}' is not a network CIDR (or has host bits set)", "write e.g. 10.20.0.0/16") from None
    if net.prefixlen == 0:
        raise _err(
            f"'{value}' allows every address, which defeats the allow-list",
            "list the client CIDRs that may call the models",
        )
    return value


Cidr = Annotated[str, AfterValidator(_cidr)]


class IngressConfig(ConfigModel):
    """Model endpoints: the AWS Load Balancer Controller and one shared ALB."""

    controller_version: Literal["3.5.0"] = Field(
        default=versions.AWS_LOAD_BALANCER_CONTROLLER_VERSION, description="AWS Load Balancer Controller chart version."
    )
    scheme: Literal["internal", "internet-facing"] = Field(
        default="internal", description="`internal` (default) or `internet-facing` (needs allowedCidrs and API keys)."
    )
    allowed_cidrs: list[Cidr] = Field(
        default_factory=list,
        description="Client CIDRs allowed by the ALB security group. Required for internet-facing; internal ALBs default to the VPC CIDR.",
    )
    certificate_arn: AcmCertificateArn | None = Field(
        default=None, description="ACM certificate for HTTPS (HTTP redirects to HTTPS). Required for internet-facing."
    )
    domain: str | None = Field(
        default=None,
        description="DNS domain for host-based routing: model M is served at https://M.<domain>/v1 "
        "(point a wildcard record *.<domain> at the ALB). Unset: models are told apart by path "
        "prefix /M/v1 on the ALB hostname.",
    )
    idle_timeout_seconds: int = Field(default=600, ge=60, le=4000, description="ALB idle timeout; long, so streamed responses are not cut.")
    extra_values: dict[str, Any] = Field(
        default_factory=dict, description="Escape hatch: Helm values deep-merged last into the controller chart values."
    )

    @field_validator("domain")
    @classmethod
    def _domain(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$", value):
            raise _err(f"'{value}' is not a DNS domain", "write e.g. llm.example.com (lowercase, no scheme, no trailing dot)")
        return value

    @model_validator(mode="after")
    def _exposure(self) -> IngressConfig:
        if self.scheme == "internet-facing":
            if not self.allowed_cidrs:
                raise _err(
                    "scheme is internet-facing but allowedCidrs is empty; the models would be open to the whole internet",
                    "list client CIDRs in ingress.allowedCidrs, or use scheme internal",
                )
            if self.certificate_arn is None:
                raise _err(
                    "scheme is internet-facing without certificateArn; prompts and API keys would cross the internet in clear text",
                    "set ingress.certificateArn to an ACM certificate for the domain",
                )
        return self
