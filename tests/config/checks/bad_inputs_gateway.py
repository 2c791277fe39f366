"""The gateway's config (gateway, models[].routing) and the rules it brings: each bad input with its exact message,
a table of the bad-input catalog (tests/config/checks/test_bad_inputs.py runs it).

The base stack is minimal-dev, whose one model keeps a replica and so has a gateway. Precise prefix-cache routing
adds a tokenizer sidecar beside the model's picker, which the fixture's two system nodes cannot also hold: that
finding is part of the expected messages, as a user would see it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.support.mutations import m0

CASES: dict[str, Callable[[dict[str, Any]], object]] = {
    "kv-target-at-one": lambda d: m0(d).setdefault("autoscaling", {}).update(kvCacheUsageTarget=1.0),
    "waiting-bound-below-gateway-threshold": lambda d: m0(d).update(maxWaitingRequests=8),
    "alb-idle-below-hold": lambda d: d.setdefault("ingress", {}).update(idleTimeoutSeconds=120),
    "alb-idle-leaves-no-hold": lambda d: d.setdefault("ingress", {}).update(idleTimeoutSeconds=60),
    "router-release-name-too-long": lambda d: m0(d).update(name="m" * 54),
    "precise-routing-with-block-size": lambda d: m0(d).update(routing={"prefixCache": "precise"}, extraArgs=["--block-size=16"]),
    "precise-routing-with-hash-algo": lambda d: m0(d).update(
        routing={"prefixCache": "precise"}, extraArgs=["--prefix-caching-hash-algo", "sha256"]
    ),
    "routing-unknown-mode": lambda d: m0(d).update(routing={"prefixCache": "exact"}),
    "gateway-fail-open": lambda d: d.update(gateway={"extraValues": {"router": {"proxy": {"failOpen": True}}}}),
    "gateway-envoy-preset-replaced": lambda d: d.update(
        gateway={"extraValues": {"router": {"proxy": {"presets": {"envoy": {"image": "envoyproxy/envoy:latest"}}}}}}
    ),
    "gateway-pool-selector-replaced": lambda d: d.update(
        gateway={"extraValues": {"router": {"modelServers": {"matchLabels": {"app": "x"}}}}}
    ),
    "gateway-epp-replicas-through-values": lambda d: d.update(gateway={"extraValues": {"router": {"epp": {"replicas": 3}}}}),
    "gateway-no-picker": lambda d: d.update(gateway={"eppReplicas": 0}),
    "gateway-too-many-pickers": lambda d: d.update(gateway={"eppReplicas": 5}),
    "gateway-memory-not-positive": lambda d: d.update(gateway={"proxyResources": {"cpu": "100m", "memory": "0", "memoryLimit": "512Mi"}}),
    "gateway-memory-limit-below-request": lambda d: d.update(
        gateway={"eppResources": {"cpu": "250m", "memory": "1Gi", "memoryLimit": "512Mi"}}
    ),
    "gateway-unknown-key": lambda d: d.update(gateway={"proxyReplica": 3}),
}

EXPECTED: dict[str, list[str]] = {
    "kv-target-at-one": [
        "models[llama-3-1-8b].autoscaling.kvCacheUsageTarget: 1 leaves the gateway no KV-cache threshold above it: the gateway would hold requests at KEDA's target, vLLM's KV use would sit there, and the model would never scale out. Fix: set it below 1, e.g. 0.8"
    ],
    "waiting-bound-below-gateway-threshold": [
        "models[llama-3-1-8b].maxWaitingRequests: 8 is not above the gateway's queue threshold (10, twice autoscaling.queueDepthPerReplica): a replica would answer 503 to requests the gateway still sends it instead of the gateway holding them. Fix: raise maxWaitingRequests above 10, or remove it"
    ],
    "alb-idle-below-hold": [
        "ingress.idleTimeoutSeconds: 120 s caps how long llama-3-1-8b's gateway holds a request at 60 s (a hold, a 30 s pick and 30 s of margin inside the ALB's idle timeout), short of its pessimistic warm scale-up (359 s): during a slow scale-up callers get 429 before a new replica can serve them. Fix: raise it to at least 419, or accept the earlier 429s"
    ],
    "alb-idle-leaves-no-hold": [
        "ingress.idleTimeoutSeconds: 60 s leaves llama-3-1-8b's gateway no time to hold a request: a hold, a 30 s pick and 30 s of margin must fit inside the ALB's idle timeout. Fix: raise it to at least 61"
    ],
    "router-release-name-too-long": [
        "models[mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm].name: name too long: the model's gateway is a Helm release named after it (54 characters) and Helm allows 53. Fix: use at most 53 characters",
        "ingress.certificateArn: is not set: mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm is served over plain HTTP inside the VPC. Fix: set an ACM certificate ARN to serve HTTPS (HTTP then redirects)",
    ],
    "precise-routing-with-block-size": [
        "models[llama-3-1-8b].extraArgs[0]: --block-size is managed with routing.prefixCache precise: the picker hashes KV blocks of exactly the size the platform passes. Fix: remove it",
        "cluster.systemNodeGroup: with one of its 2 nodes lost, 1 x m7i.xlarge leave 3725m CPU and 13948 MiB for the system pods, which request 3980m CPU and 8232 MiB (Karpenter, Prometheus, KEDA, the GPU operator, CoreDNS, the CSI controller, the models' gateways; see config/facts/system_capacity.py): pods would stay Pending and nothing scales this group. Fix: raise minSize and desiredSize to 3 or set instanceTypes to [m7i.2xlarge] (replaces the node group)",
    ],
    "precise-routing-with-hash-algo": [
        "models[llama-3-1-8b].extraArgs[0]: --prefix-caching-hash-algo is managed with routing.prefixCache precise: the picker reproduces vLLM's block hashes only with sha256_cbor. Fix: remove it",
        "cluster.systemNodeGroup: with one of its 2 nodes lost, 1 x m7i.xlarge leave 3725m CPU and 13948 MiB for the system pods, which request 3980m CPU and 8232 MiB (Karpenter, Prometheus, KEDA, the GPU operator, CoreDNS, the CSI controller, the models' gateways; see config/facts/system_capacity.py): pods would stay Pending and nothing scales this group. Fix: raise minSize and desiredSize to 3 or set instanceTypes to [m7i.2xlarge] (replaces the node group)",
    ],
    "routing-unknown-mode": [
        "models[llama-3-1-8b].routing.prefixCache: must be one of 'approximate' or 'precise'. Fix: use one of those values"
    ],
    "gateway-fail-open": [
        "gateway.extraValues.router.proxy.failOpen: is derived by the platform, and other resources rely on the value it sets (an override would point them at something that does not exist). Fix: remove the override (a caller gets a 503 when the Endpoint Picker is down, never an unpicked request)"
    ],
    "gateway-envoy-preset-replaced": [
        "gateway.extraValues.router.proxy.presets: is derived by the platform, and other resources rely on the value it sets (an override would point them at something that does not exist). Fix: remove the override (the Envoy configuration serves /v1 only, with timeouts derived from the ALB's)"
    ],
    "gateway-pool-selector-replaced": [
        "gateway.extraValues.router.modelServers: is derived by the platform, and other resources rely on the value it sets (an override would point them at something that does not exist). Fix: remove the override (the pool selects the model's own pods on the labels they carry)"
    ],
    "gateway-epp-replicas-through-values": [
        "gateway.extraValues.router.epp.replicas: is derived by the platform, and other resources rely on the value it sets (an override would point them at something that does not exist). Fix: remove the override and set gateway.eppReplicas instead"
    ],
    "gateway-no-picker": ["gateway.eppReplicas: must be >= 1. Fix: change the value"],
    "gateway-too-many-pickers": ["gateway.eppReplicas: must be <= 3. Fix: change the value"],
    "gateway-memory-not-positive": [
        "gateway.proxyResources.memory: '0' is not a positive quantity. Fix: request e.g. cpu 500m, memory 512Mi"
    ],
    "gateway-memory-limit-below-request": [
        "gateway.eppResources: memoryLimit 512Mi is below the memory request 1Gi; Kubernetes refuses the pod. Fix: set memoryLimit to at least the request"
    ],
    "gateway-unknown-key": [
        "gateway.proxyReplica: unknown key (did you mean 'proxyReplicas'?); it would otherwise be ignored silently. Fix: correct or remove it (see the config reference, docs/config-reference.md)"
    ],
}
