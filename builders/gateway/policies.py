"""The gateway's NetworkPolicies and disruption budgets, in the model's namespace. Pure.

The model namespace denies everything by default (builders/serving/workload.py); these open exactly
the gateway's paths:
- proxies: the API port from the ALB's subnets (when exposed) and the model's client namespaces; the
  ready port from the ALB's subnets (its health check); the metrics port from Prometheus; out to the
  Endpoint Picker's ext_proc port and to vLLM's port, and DNS (the picker's Service name);
- pickers: ext_proc from the proxies; metrics from Prometheus; out to vLLM's port (its /metrics,
  every 50 ms), the API server (it watches the pool's pods), DNS; with the precise prefix cache also
  vLLM's KV-event port, and HTTPS to the internet (the tokenizer sidecar downloads the tokenizer).
vLLM's own policy then admits the gateway's pods, not the ALB or any client.
"""

from __future__ import annotations

from typing import Any

from builders import network_policies as netpol
from builders.gateway import envoy, prefix, router
from builders.serving.workload import selector
from config.facts.conventions import CONFIG_HASH_ANNOTATION, VLLM_PORT
from config.sections.models import ModelConfig


def _pods(labels: dict[str, str]) -> dict[str, Any]:
    return {"podSelector": {"matchLabels": dict(labels)}}


def gateway_peers(model: ModelConfig) -> list[dict[str, Any]]:
    """The gateway's pods, as vLLM's policy admits them: proxies (requests) and pickers (/metrics)."""
    return [_pods(router.proxy_pods(model)), *picker_peers(model)]


def picker_peers(model: ModelConfig) -> list[dict[str, Any]]:
    """The pickers alone: what vLLM's KV-event port admits under precise prefix-cache routing."""
    return [_pods(router.picker_pods(model))]


def proxy_policy(model: ModelConfig, *, load_balancer_sources: list[str], monitoring_namespace: str) -> dict[str, Any]:
    callers = [*netpol.cidr_peers(load_balancer_sources), *(netpol.namespace_peer(ns) for ns in model.client_namespaces)]
    ingress: list[dict[str, Any]] = []
    if callers:
        ingress.append({"from": callers, "ports": netpol.tcp(envoy.API_PORT)})
    if load_balancer_sources:
        ingress.append({"from": netpol.cidr_peers(load_balancer_sources), "ports": netpol.tcp(envoy.READY_PORT)})
    ingress.append({"from": [netpol.prometheus_peer(monitoring_namespace)], "ports": netpol.tcp(envoy.METRICS_PORT)})
    egress = [
        netpol.dns_egress(),
        {"to": [_pods(router.picker_pods(model))], "ports": netpol.tcp(router.EPP_EXT_PROC_PORT)},
        {"to": [_pods(selector(model))], "ports": netpol.tcp(VLLM_PORT)},
    ]
    return netpol.policy(router.proxy_name(model), model.name, router.proxy_pods(model), ingress, egress)


def picker_policy(model: ModelConfig, *, monitoring_namespace: str, vpc_cidrs: list[str]) -> dict[str, Any]:
    ingress = [
        {"from": [_pods(router.proxy_pods(model))], "ports": netpol.tcp(router.EPP_EXT_PROC_PORT)},
        {"from": [netpol.prometheus_peer(monitoring_namespace)], "ports": netpol.tcp(router.EPP_METRICS_PORT)},
    ]
    vllm_ports = [VLLM_PORT, *([prefix.KV_EVENTS_PORT] if prefix.precise(model) else [])]
    egress = [
        netpol.dns_egress(),
        netpol.api_server_egress(vpc_cidrs),
        {"to": [_pods(selector(model))], "ports": netpol.tcp(*vllm_ports)},
    ]
    if prefix.precise(model):
        egress += netpol.internet_https_egress(vpc_cidrs)
    return netpol.policy(router.picker_name(model), model.name, router.picker_pods(model), ingress, egress)


def policies(
    model: ModelConfig, *, load_balancer_sources: list[str], monitoring_namespace: str, vpc_cidrs: list[str]
) -> list[dict[str, Any]]:
    return [
        proxy_policy(model, load_balancer_sources=load_balancer_sources, monitoring_namespace=monitoring_namespace),
        picker_policy(model, monitoring_namespace=monitoring_namespace, vpc_cidrs=vpc_cidrs),
    ]


WAIT_FOR_ANNOTATION = "pulumi.com/waitFor"
"""pulumi-kubernetes' own await on any resource (since v4.18.0; over a kind's built-in await since v4.18.4):
`condition=<type>` waits for the condition to be True."""


PICKER_READY = "jsonpath={.status.currentHealthy}=1"
"""The picker budget's await: one ready picker (with a standby only the leader is ever ready)."""


def picker_budget(model: ModelConfig, picker_config_hash: str) -> dict[str, Any]:
    """A budget over the pickers that never blocks an eviction (`minAvailable: 0`: the leader must stay
    evictable, a drain moves it to the standby), there for `pulumi up` to wait on: its await ends when one
    picker is ready, and the model's Ingress, its vLLM policies and its ScaledObject wait for it, so the
    ALB's rule never moves to proxies whose picker crash-loops (a router release is not awaited,
    components/serving/gateway.py). The picker config's hash on it makes a change of the config await again; the
    old leader may still count until the chart's Recreate strategy has stopped it (docs/gateway.md)."""
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {
            "name": router.picker_name(model),
            "namespace": model.name,
            "annotations": {WAIT_FOR_ANNOTATION: PICKER_READY, CONFIG_HASH_ANNOTATION: picker_config_hash},
        },
        "spec": {"minAvailable": 0, "selector": {"matchLabels": dict(router.picker_pods(model))}},
    }


def disruption_budgets(model: ModelConfig) -> list[dict[str, Any]]:
    """The chart renders none. A node drain takes one proxy at a time (the other keeps serving); a proxy
    that is not ready may always go (every proxy turns unready together only when Envoy cannot start, and
    a drain must not wait on that). The pickers' budget (picker_budget) allows every eviction: only the
    leader is ready, so any other budget over them would forbid evicting the leader at all, and a drain
    must be able to move it (the standby takes over).

    The budget is also what `pulumi up` waits on for the proxies (the router release is not awaited,
    components/serving/gateway.py): with `maxUnavailable: 1` its DisruptionAllowed condition is True exactly when
    every proxy the Deployment wants is ready, so the model's Ingress, which waits for it, moves the ALB's
    rule to proxies that serve. With one proxy the budget never blocks a drain (one may always go)."""
    return [
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {
                "name": router.proxy_name(model),
                "namespace": model.name,
                "annotations": {WAIT_FOR_ANNOTATION: "condition=DisruptionAllowed"},
            },
            "spec": {
                "maxUnavailable": 1,
                "selector": {"matchLabels": dict(router.proxy_pods(model))},
                "unhealthyPodEvictionPolicy": "AlwaysAllow",
            },
        }
    ]
