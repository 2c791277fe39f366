"""A model's Envoy proxies, run by the platform rather than the router chart. Pure.

llm-d-router v0.10.0's proxy Deployment (routerlib `_proxy-deployment.yaml`) takes no lifecycle, grace
period or placement value, and Envoy closes its listeners the moment it gets SIGTERM (Envoy docs,
*Draining*: drains apply to hot restarts and `/drain_listeners`, not to a signal). So a proxy that
stops (a rollout, a node drain) cut every stream it relayed, and the ALB kept sending it new requests
until the load balancer controller deregistered it: 502s. Upstream has since added a 5 s preStop and a
70 s grace period to the template, in no release yet.

These proxies are the chart's own container (image, command, arguments, ports, readiness on Envoy's
`/ready`, the platform's bootstrap) in a Deployment the platform writes, with:

- a preStop `sleep` (the kubelet's native action: the image is distroless) as long as the ALB's
  deregistration delay plus the controller's reaction: the pod leaves the Service's endpoints at once,
  the controller deregisters it, the ALB stops sending it new requests and drains what it relays, and
  Envoy keeps serving meanwhile; only then does SIGTERM close its listeners;
- a grace period above that sleep;
- spread over nodes and zones (the system nodes), so one node's loss or drain never takes both;
- the chart's pod labels (`llm-d-router-proxy: <model>-proxy`), so the chart's Service (the model's
  front door, the Ingress's backend and the in-cluster `url`), the proxies' budget, NetworkPolicies
  and PodMonitor select them unchanged.

The chart's own proxy Deployment is kept at zero replicas (its replica count is written as the string
"0": the template's `| default 2` would take a number 0 for unset). The release waits for these
proxies, so an upgrade starts them before the chart's stop: the front door never empties.
"""

from __future__ import annotations

from typing import Any

from builders.gateway import envoy
from builders.gateway.router import config_hash, envoy_ports, envoy_readiness, picker_affinity_terms, proxy_name, proxy_pods
from config.facts.conventions import CONFIG_HASH_ANNOTATION
from config.sections.gateway import GatewayConfig
from config.sections.models import ModelConfig

CONTAINER = "envoy-proxy"
CONFIG_DIR = "/etc/envoy"
APP = {"app.kubernetes.io/name": "llm-platform-proxy"}
"""Beside the chart's selector label: tells the platform's proxies from the chart's (kept at zero)."""
ARGS = (
    "--service-node",
    CONTAINER,
    "--log-level",
    "warn",
    "--cpuset-threads",
    "--drain-strategy",
    "immediate",
    "--drain-time-s",
    "60",
    "-c",
    f"{CONFIG_DIR}/envoy.yaml",
)
"""The chart's Envoy preset arguments (llm-d-router-standalone v0.10.0 values, `router.proxy.presets.envoy.args`)."""
CONTROLLER_REACTION_SECONDS = 10
"""The load balancer controller's deregistration after the endpoint change: seconds (no published figure;
reports of seconds to minutes under load, aws-load-balancer-controller#1960): the slow end kept short of
the minutes, as a longer sleep only slows a rollout."""
GRACE_MARGIN_SECONDS = 15
CPU_LIMIT = "2"
"""A proxy's CPU ceiling: the platform's pods carry CPU limits (the policy pack's requests-and-limits). With
`--cpuset-threads` Envoy runs one worker per CPU of its cpuset (the node's, under the default CPU manager), more
than the limit lets run at once: the workers share the quota, which bounds a busy proxy's throughput, not its
correctness (gateway.proxyResources sizes the request)."""
NON_ROOT = 65532
"""The distroless images' `nonroot` user, which Envoy's distroless image runs as."""


def name(model: ModelConfig) -> str:
    return f"{proxy_name(model)}-drained"


def config_map_name(model: ModelConfig) -> str:
    return f"{proxy_name(model)}-envoy"


def pod_labels(model: ModelConfig) -> dict[str, str]:
    return {**proxy_pods(model), **APP, "app.kubernetes.io/instance": model.name}


def resources(cfg: GatewayConfig) -> dict[str, dict[str, str]]:
    """gateway.proxyResources with memory requested at its limit (the platform's pods: memory requests equal limits)
    and a CPU limit above the request (config/facts/system_capacity.py counts the same)."""
    r = cfg.proxy_resources
    return {"requests": {"cpu": r.cpu, "memory": r.memory_limit}, "limits": {"cpu": CPU_LIMIT, "memory": r.memory_limit}}


def service_account(model: ModelConfig) -> dict[str, Any]:
    """Their own, tokenless: Envoy never calls the API server."""
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": name(model), "namespace": model.name, "labels": pod_labels(model)},
        "automountServiceAccountToken": False,
    }


def config_map(model: ModelConfig, text: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": config_map_name(model), "namespace": model.name, "labels": pod_labels(model)},
        "data": {"envoy.yaml": text},
    }


def deployment(model: ModelConfig, cfg: GatewayConfig, *, image: str, text: str, drain_seconds: int) -> dict[str, Any]:
    """The proxies: `drain_seconds` is the ALB's deregistration delay for their target group."""
    sleep = drain_seconds + CONTROLLER_REACTION_SECONDS
    # Never two proxies of one revision on a node (a node's loss or drain must leave one); zones preferred. The
    # pod-template-hash key counts each rollout's pods apart, so a surge pod may join its predecessor's node.
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": key,
            "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": pod_labels(model)},
            "matchLabelKeys": ["pod-template-hash"],
        }
        for key, when in (("kubernetes.io/hostname", "DoNotSchedule"), ("topology.kubernetes.io/zone", "ScheduleAnyway"))
    ]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name(model), "namespace": model.name, "labels": pod_labels(model)},
        "spec": {
            "replicas": cfg.proxy_replicas,
            "selector": {"matchLabels": pod_labels(model)},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
            "template": {
                "metadata": {"labels": pod_labels(model), "annotations": {CONFIG_HASH_ANNOTATION: config_hash(text)}},
                "spec": {
                    "serviceAccountName": name(model),
                    "automountServiceAccountToken": False,
                    "enableServiceLinks": False,
                    "terminationGracePeriodSeconds": sleep + GRACE_MARGIN_SECONDS,
                    "securityContext": {"runAsNonRoot": True, "runAsUser": NON_ROOT, "seccompProfile": {"type": "RuntimeDefault"}},
                    "affinity": {"nodeAffinity": picker_affinity_terms()},
                    "topologySpreadConstraints": spread,
                    "containers": [
                        {
                            "name": CONTAINER,
                            "image": image,
                            "imagePullPolicy": "IfNotPresent",
                            "command": ["envoy"],
                            "args": list(ARGS),
                            "ports": envoy_ports(),
                            "readinessProbe": envoy_readiness(),
                            "livenessProbe": {
                                "httpGet": {"path": envoy.READY_PATH, "port": envoy.READY_PORT, "scheme": "HTTP"},
                                "periodSeconds": 10,
                                "failureThreshold": 6,
                                "timeoutSeconds": 2,
                            },
                            "lifecycle": {"preStop": {"sleep": {"seconds": sleep}}},
                            "resources": resources(cfg),
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "readOnlyRootFilesystem": True,
                                "capabilities": {"drop": ["ALL"]},
                                "runAsNonRoot": True,
                                "runAsUser": NON_ROOT,
                                "seccompProfile": {"type": "RuntimeDefault"},
                            },
                            "volumeMounts": [{"name": "config", "mountPath": CONFIG_DIR, "readOnly": True}],
                        }
                    ],
                    "volumes": [{"name": "config", "configMap": {"name": config_map_name(model)}}],
                },
            },
        },
    }
