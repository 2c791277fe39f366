"""`gateway`: the inference gateway in front of every model (those at replicas.min 0 included).

Per model, one release of the llm-d router's standalone chart: an Envoy proxy Deployment the ALB
targets, and the Endpoint Picker (EPP) Envoy asks, through ext_proc, which vLLM replica should
serve each request (builders/gateway/). Per model, `models[].routing` chooses the scorers.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from config.sections.base import ConfigModel
from config.sections.types import Quantity, config_error, parse_quantity


class GatewayResources(ConfigModel):
    """CPU and memory one gateway pod requests; memory is also its limit's floor."""

    cpu: Quantity = Field(description="CPU request (no CPU limit: the data path may burst).")
    memory: Quantity = Field(description="Memory request.")
    memory_limit: Quantity = Field(description="Memory limit (at least the request).")

    @field_validator("cpu", "memory", "memory_limit")
    @classmethod
    def _positive(cls, value: str) -> str:
        if parse_quantity(value) <= 0:
            raise config_error(f"'{value}' is not a positive quantity", "request e.g. cpu 500m, memory 512Mi")
        return value

    @model_validator(mode="after")
    def _limit(self) -> GatewayResources:
        if parse_quantity(self.memory_limit) < parse_quantity(self.memory):
            raise config_error(
                f"memoryLimit {self.memory_limit} is below the memory request {self.memory}; Kubernetes refuses the pod",
                "set memoryLimit to at least the request",
            )
        return self

    def as_values(self) -> dict[str, Any]:
        return {"requests": {"cpu": self.cpu, "memory": self.memory}, "limits": {"memory": self.memory_limit}}


# Sized from what each does, not from the chart's defaults (8 CPU / 8Gi per EPP and 4 CPU / 8Gi per
# proxy, sized for a shared pool of dozens of H100 servers): the EPP parses each request body once,
# hashes its prompt into prefix blocks, scores a model's few replicas and scrapes their /metrics
# every 50 ms; its state is an LRU index of prefix blocks per replica (tens of MB for 16 replicas).
# Envoy relays streams with 32 KiB per-connection buffers. Both get no CPU limit (a throttled
# data path adds latency to every token); raise them under `gateway` for a model with hundreds of
# requests per second.
EPP_RESOURCES = GatewayResources(cpu="250m", memory="512Mi", memory_limit="1Gi")
PROXY_RESOURCES = GatewayResources(cpu="100m", memory="128Mi", memory_limit="512Mi")
TOKENIZER_RESOURCES = GatewayResources(cpu="1", memory="2Gi", memory_limit="4Gi")
"""The render sidecar beside each picker under precise prefix-cache routing: it tokenizes every prompt
(the chart asks 4 CPU / 8Gi, sized for large pools)."""
RELEASE_NAME_MAX = 53
"""Helm refuses longer release names; each router release is named after its model."""


class GatewayConfig(ConfigModel):
    """The per-model inference gateway: Envoy proxies and the llm-d Endpoint Picker, on the system nodes."""

    epp_replicas: int | None = Field(
        default=None,
        ge=1,
        le=3,
        description="Endpoint Picker replicas per model. Above 1 they elect a leader (active-passive): a standby takes "
        "over when the leader is lost. Unset: 2 in prod, 1 elsewhere.",
    )
    proxy_replicas: int = Field(
        default=2, ge=1, le=10, description="Envoy proxy replicas per model (the ALB's targets and the in-cluster Service)."
    )
    epp_resources: GatewayResources = Field(default=EPP_RESOURCES, description="Requests and memory limit of one Endpoint Picker pod.")
    proxy_resources: GatewayResources = Field(default=PROXY_RESOURCES, description="Requests and memory limit of one Envoy proxy pod.")
    extra_values: dict[str, Any] = Field(
        default_factory=dict, description="Escape hatch: Helm values deep-merged last into every router release's values."
    )


class RoutingConfig(ConfigModel):
    """How the gateway picks a model's replica for each request."""

    prefix_cache: Literal["approximate", "precise"] = Field(
        default="approximate",
        description="approximate: the Endpoint Picker remembers which replica it sent each prompt prefix to (nothing "
        "to run beside it); precise: vLLM publishes its KV-cache events to the Endpoint Picker, which tokenizes each "
        "prompt in a sidecar (a CPU vLLM image, the model's tokenizer downloaded from Hugging Face) and routes on "
        "the blocks each replica really holds.",
    )
