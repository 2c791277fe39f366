"""Scale to zero: the KEDA HTTP add-on's values, and per model its InterceptorRoute and the
Ingress that sends the model's host to the interceptor. Pure.

A model with replicas.min 0 is reached through the add-on's interceptor (ALB -> interceptor proxy
-> model Service): at zero replicas it holds the request, tells KEDA through the external-push
trigger, and forwards it when a replica is ready. Routing is by host (the interceptor matches the
Host header the ALB passes through), so these models need ingress.domain.

Guard against upstream #1692 (0.15.0: the first request after a long idle got a 504 without a
scale-up, reported with requestRate on an HTTPScaledObject): routes use the `concurrency` metric
on an InterceptorRoute with our own ScaledObject, never requestRate or HTTPScaledObject, and the
interceptor's readiness wait is set explicitly to the model's scale-up budget with a margin.
"""

from __future__ import annotations

import json
import math
from typing import Any

from builders.helm import deep_merge
from builders.ingress import endpoints
from config.derived import capacity
from config.derived.scaleup import HOLD_MARGIN_SECONDS
from config.facts.conventions import INTERCEPTOR_ADMIN, INTERCEPTOR_PROXY, KEDA_NAMESPACE, SYSTEM_NODE_SELECTOR, VLLM_PORT
from config.facts.system_capacity import HTTP_ADD_ON_INTERCEPTORS, HTTP_ADD_ON_OPERATOR, HTTP_ADD_ON_SCALER, HTTP_ADD_ON_SCALERS
from config.sections.gpu_pools import GpuPool
from config.sections.ingress import IngressConfig
from config.sections.models import ModelConfig

RELEASE = "keda-add-ons-http"
READINESS_MARGIN = 1.5
"""The interceptor waits this many scale-up budgets for a replica before it gives up (504)."""


def readiness_seconds(miss_seconds: int, alb_idle_timeout_seconds: int) -> int:
    """How long a held request waits for a replica: the budget with a margin, ending before the ALB's
    idle timeout (config/derived/scaleup.py HOLD_MARGIN_SECONDS), which the config rules keep above the budget."""
    return min(math.ceil(miss_seconds * READINESS_MARGIN), alb_idle_timeout_seconds - HOLD_MARGIN_SECONDS)


def add_on_values(
    *, miss_seconds: int, alb_idle_timeout_seconds: int, drain: tuple[int, int] = (15, 45), extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The chart's values: on the system nodes, two interceptors and scalers, and timeouts that let a
    held request wait out a cold start (the slowest model's budget) but never outlive the ALB's idle timeout."""
    values: dict[str, Any] = {
        "crds": {"install": True},
        "operator": {"nodeSelector": dict(SYSTEM_NODE_SELECTOR), "resources": {"requests": HTTP_ADD_ON_OPERATOR.as_values()}},
        "scaler": {
            "replicas": HTTP_ADD_ON_SCALERS,
            "nodeSelector": dict(SYSTEM_NODE_SELECTOR),
            "resources": {"requests": HTTP_ADD_ON_SCALER.as_values()},
        },
        "interceptor": {
            # a fixed pair: the system-capacity table counts two, and churn cuts streams
            "replicas": {"min": HTTP_ADD_ON_INTERCEPTORS, "max": HTTP_ADD_ON_INTERCEPTORS},
            "nodeSelector": dict(SYSTEM_NODE_SELECTOR),
            # no total deadline: a streamed answer may run long; the ALB's idle timeout bounds silence
            "requestTimeout": "0s",
            "readinessTimeout": f"{readiness_seconds(miss_seconds, alb_idle_timeout_seconds)}s",
            "responseHeaderTimeout": f"{alb_idle_timeout_seconds}s",
            # drain like the models behind it: out of the ALB first, then in-flight streams finish
            "shutdownDelay": f"{drain[0]}s",
            "drainTimeout": f"{drain[1]}s",
            "terminationGracePeriodSeconds": drain[0] + drain[1] + 15,
        },
    }
    return deep_merge(values, extra or {})


def interceptor_route(model: ModelConfig, pool: GpuPool, ingress: IngressConfig, miss_seconds: int) -> dict[str, Any]:
    """The model's route: its host, its Service, and how long a held request waits for a replica
    (the budget with a margin, never past the ALB's idle timeout, which would cut the request first)."""
    assert ingress.domain is not None  # validated: min 0 needs a domain
    return {
        "apiVersion": "http.keda.sh/v1beta1",
        "kind": "InterceptorRoute",
        "metadata": {"name": model.name, "namespace": model.name},
        "spec": {
            "target": {"service": model.name, "port": VLLM_PORT},
            # in-flight requests per replica; the vLLM triggers scale beyond one, this one wakes from zero
            "scalingMetric": {"concurrency": {"targetValue": capacity.max_num_seqs(model, pool)}},
            # /v1 only, as at the ALB and the gateway: vLLM's other routes (/invocations, /tokenize,
            # /pooling, /score) are not the model's API and some ignore its key
            "rules": [{"hosts": [endpoints.host(model, ingress)], "paths": [{"value": endpoints.API_PREFIX}]}],
            "timeouts": {"readiness": f"{readiness_seconds(miss_seconds, ingress.idle_timeout_seconds)}s"},
        },
    }


def ingress(model: ModelConfig, cfg: IngressConfig, vpc_cidrs: list[str]) -> dict[str, Any]:
    """The model's host on the shared ALB, sent to the interceptor (in KEDA's namespace, where its
    Service is) instead of the model's Service; health checks on the interceptor's admin port."""
    manifest = endpoints.ingress(model, cfg, vpc_cidrs)
    proxy, port = INTERCEPTOR_PROXY
    annotations = dict(manifest["metadata"]["annotations"])
    annotations[f"{endpoints.A}/healthcheck-port"] = str(INTERCEPTOR_ADMIN[1])
    annotations[f"{endpoints.A}/healthcheck-path"] = "/readyz"
    rule = json.loads(json.dumps(manifest["spec"]["rules"][0]))
    for path in rule["http"]["paths"]:
        path["backend"] = {"service": {"name": proxy, "port": {"number": port}}}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": model.name, "namespace": KEDA_NAMESPACE, "annotations": annotations},
        "spec": {"ingressClassName": manifest["spec"]["ingressClassName"], "rules": [rule]},
    }
