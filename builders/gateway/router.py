"""One model's router release (llm-d-router-standalone), and what the chart will make of it. Pure.

ALB -> Envoy proxy Deployment (`<model>-proxy`, the chart's service mode) -> vLLM pod, the pod chosen
per request by the Endpoint Picker (`<model>-epp`) that Envoy consults over ext_proc. The picker
watches the pods of the model's InferencePool (the chart creates it, named like the release, from
`router.modelServers.matchLabels`: the labels the vLLM pods already carry, builders.serving.workload
.selector) and scrapes their /metrics every 50 ms for the queue and KV-cache scorers.

Names follow the chart's helpers (routerlib v0.10.0 `_helpers.tpl`): `llm-d-router.name` is the
release name lower-cased, cut to 40 characters, plus `-epp`; `llm-d-router.proxyName` the same with
`-proxy`. The release is named after the model (config/checks/structure.py keeps it short enough).
"""

from __future__ import annotations

import hashlib
from typing import Any

import yaml

from builders.gateway import envoy
from builders.gateway.prefix import PREFIX_BLOCK_SIZE, precise
from builders.helm import deep_merge
from builders.serving.workload import serving_selector
from config.derived import path as request_path
from config.derived.hold import Hold
from config.facts import versions
from config.facts.conventions import CONFIG_HASH_ANNOTATION, SYSTEM_NODE_LABEL, VLLM_PORT
from config.sections.gateway import TOKENIZER_RESOURCES, GatewayConfig
from config.sections.models import ModelConfig

NAME_LIMIT = 40
"""The chart cuts the release name to this many characters before adding -epp / -proxy."""
EPP_CONFIG_FILE = "llm-platform.yaml"
EPP_EXT_PROC_PORT = 9002
EPP_HEALTH_PORT = 9003
EPP_METRICS_PORT = 9090
EPP_METRICS_PORT_NAME = "metrics"
"""The EPP container's port names (routerlib `_deployment.yaml`)."""
TOKENIZER_PORT = 8000
PICKER_SELECTOR_KEY = "llm-d-router-gateway"
PROXY_SELECTOR_KEY = "llm-d-router-proxy"
MODE_LABEL = ("llm-d.ai/igw-mode", "llm-d-router-gateway")
"""On every Endpoint Picker pod of any release (routerlib `llm-d-router.modeLabels`, pool mode)."""


def release_name(model: ModelConfig) -> str:
    return model.name


def _base(model: ModelConfig) -> str:
    return release_name(model).lower().strip()[:NAME_LIMIT]


def picker_name(model: ModelConfig) -> str:
    """The Endpoint Picker's Deployment, Service and service account."""
    return f"{_base(model)}-epp"


def proxy_name(model: ModelConfig) -> str:
    """The Envoy proxies' Deployment and Service: the model's front door."""
    return f"{_base(model)}-proxy"


def picker_pods(model: ModelConfig) -> dict[str, str]:
    """The labels that select the model's Endpoint Picker pods (routerlib `llm-d-router.selectorLabels`, pool mode)."""
    return {PICKER_SELECTOR_KEY: picker_name(model)}


def proxy_pods(model: ModelConfig) -> dict[str, str]:
    """The labels that select the model's Envoy pods (routerlib `llm-d-router.proxySelectorLabels`)."""
    return {PROXY_SELECTOR_KEY: proxy_name(model)}


def picker_host(model: ModelConfig, namespace: str) -> str:
    return f"{picker_name(model)}.{namespace}.svc.cluster.local"


def url(model: ModelConfig) -> str:
    """What in-cluster callers use: the proxies' Service."""
    return f"http://{proxy_name(model)}.{model.name}.svc.cluster.local:{envoy.API_PORT}/v1"


def _system_nodes() -> dict[str, Any]:
    """Required node affinity on the system nodes (the chart has no nodeSelector for the picker)."""
    terms = [{"key": k, "operator": "In", "values": [v]} for k, v in SYSTEM_NODE_LABEL.items()]
    return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": terms}]}}


def picker_affinity_terms() -> dict[str, Any]:
    """The system nodes, required: the pickers' and the platform's proxies' node affinity."""
    return _system_nodes()


def picker_affinity(model: ModelConfig) -> dict[str, Any]:
    """On the system nodes, a standby never on its leader's node."""
    return {
        "nodeAffinity": _system_nodes(),
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": picker_pods(model)}},
                }
            ]
        },
    }


DETECTOR = "utilization-detector"
DRAIN_TIMEOUT_SECONDS = 2
"""How long a stopping picker keeps its ext_proc server up (`--drain-timeout`, default 30 s). At v0.10.0 the
flow controller stops at the SIGTERM (cmd/epp/runner/runner.go builds it on the signal context), so
everything that reaches a draining picker gets 503 `rejected-shutting-down` and every held request is
evicted with it: the window only serves to finish streams already picked (GracefulStop waits for them
afterwards anyway). 2 s, then the GOAWAY moves the proxies' connections to the new leader."""


def epp_config(model: ModelConfig, hold: Hold) -> dict[str, Any]:
    """The Endpoint Picker's EndpointPickerConfig: the queue and KV-cache scorers on the metrics the
    picker scrapes from vLLM (vllm:num_requests_waiting, vllm:kv_cache_usage_perc), and a prefix-cache
    scorer, weighted 2 / 2 / 3 as the chart's default profile; flow control: the feature gate, the
    utilization detector at the hold's thresholds (above KEDA's targets), the hold's TTL
    (config/derived/hold.py).

    approximate: the picker indexes the prompt prefixes it routed (approx-prefix-cache-producer,
    block size and index capacity tuned from vLLM's cache_config_info), up to one context window.
    precise: prompts are tokenized in the render sidecar (token-producer) and matched against the KV
    blocks vLLM reports over ZMQ (precise-prefix-cache-producer, fed by the endpoint notifications)."""
    metrics = {"type": "metrics-data-source", "parameters": {"scheme": "http", "path": "/metrics", "insecureSkipVerify": True}}
    plugins: list[dict[str, Any]] = [
        {"type": "queue-scorer"},
        {"type": "kv-cache-utilization-scorer"},
        metrics,
        {"type": "core-metrics-extractor"},
    ]
    data_layer: dict[str, Any] | None = None
    if precise(model):
        producer = "precise-prefix-cache-producer"
        plugins += [
            {
                "type": "token-producer",
                "parameters": {"modelName": model.hugging_face_id, "vllm": {"url": f"http://localhost:{TOKENIZER_PORT}"}},
            },
            {"type": "endpoint-notification-source"},
            {
                "type": producer,
                "parameters": {
                    "tokenProcessorConfig": {"blockSize": PREFIX_BLOCK_SIZE},
                    "indexerConfig": {"kvBlockIndexConfig": {"enableMetrics": True}},
                },
            },
        ]
        data_layer = {
            "sources": [
                {"pluginRef": "metrics-data-source", "extractors": [{"pluginRef": "core-metrics-extractor"}]},
                {"pluginRef": "endpoint-notification-source", "extractors": [{"pluginRef": producer}]},
            ]
        }
    else:
        producer = "approx-prefix-cache-producer"
        plugins.append({"type": producer, "parameters": {"autoTune": True, "maxPrefixTokensToMatch": model.max_model_len}})
    plugins.append({"type": "prefix-cache-scorer", "parameters": {"prefixMatchInfoProducerName": producer}})
    out: dict[str, Any] = {
        "apiVersion": "llm-d.ai/v1alpha1",
        "kind": "EndpointPickerConfig",
        "plugins": plugins,
        "schedulingProfiles": [
            {
                "name": "default",
                "plugins": [
                    {"pluginRef": "queue-scorer", "weight": 2},
                    {"pluginRef": "kv-cache-utilization-scorer", "weight": 2},
                    {"pluginRef": "prefix-cache-scorer", "weight": 3},
                ],
            }
        ],
    }
    if data_layer is not None:
        out["dataLayer"] = data_layer
    plugins.append(
        {"type": DETECTOR, "parameters": {"queueDepthThreshold": hold.queue_threshold, "kvCacheUtilThreshold": hold.kv_threshold}}
    )
    return {
        "apiVersion": out["apiVersion"],
        "kind": out["kind"],
        "featureGates": ["flowControl"],
        **{k: v for k, v in out.items() if k not in ("apiVersion", "kind")},
        "flowControl": {
            "defaultRequestTTL": f"{hold.ttl_seconds}s",
            "saturationDetector": {"pluginRef": DETECTOR},
            # what the picker's memory limit holds (config/derived/hold.py caps): beyond it 429, not an OOM kill
            **({"maxBytes": str(hold.max_bytes), "maxRequests": str(hold.max_requests)} if hold.max_bytes else {}),
        },
    }


def envoy_bootstrap(model: ModelConfig, alb_idle_timeout_seconds: int, *, hold_seconds: int) -> str:
    """The proxies' Envoy bootstrap, its timeout chain checked."""
    chain = request_path.chain(alb_idle_timeout_seconds, hold_seconds)
    if problems := chain.problems():
        raise ValueError(f"{model.name}: the gateway's timeout chain does not hold: {'; '.join(problems)}")
    return envoy.config_text(picker_host(model, model.name), chain, envoy.models_body(model.name, model.max_model_len))


def envoy_preset(model: ModelConfig, image: str, alb_idle_timeout_seconds: int, *, hold_seconds: int) -> dict[str, Any]:
    """The preset's parts replaced: the image (pinned, through the image cache where it applies), the
    config, the ports and the readiness probe (on the ready listener)."""
    text = envoy_bootstrap(model, alb_idle_timeout_seconds, hold_seconds=hold_seconds)
    return {
        "image": image,
        "configMap": {"name": "envoy", "data": {"envoy.yaml": text}},
        # Envoy reads its bootstrap once, at start, and the chart's proxy pods carry no annotation to
        # change: the config's hash in the environment rolls them when the config changes (the two
        # variables before it are the preset's own).
        "env": [
            {"name": "NS_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": CONFIG_HASH_ENV, "value": config_hash(text)},
        ],
        "ports": envoy_ports(),
        "readinessProbe": envoy_readiness(),
    }


def envoy_ports() -> list[dict[str, Any]]:
    """The proxy container's ports: the API, Envoy's own /ready, and its metrics."""
    return [
        {"containerPort": envoy.API_PORT, "name": "api"},
        {"containerPort": envoy.READY_PORT, "name": "ready"},
        {"containerPort": envoy.METRICS_PORT, "name": "envoy-metrics"},
    ]


def envoy_readiness() -> dict[str, Any]:
    """The proxy's readiness probe, on Envoy's own ready listener (not tied to the picker)."""
    return {
        "httpGet": {"path": envoy.READY_PATH, "port": envoy.READY_PORT, "scheme": "HTTP"},
        "periodSeconds": 5,
        "failureThreshold": 2,
        "successThreshold": 1,
        "timeoutSeconds": 1,
    }


CONFIG_HASH_ENV = "LLM_PLATFORM_CONFIG_HASH"


def picker_config_text(model: ModelConfig, hold: Hold) -> str:
    """The picker's config file as the release writes it (its hash rolls the pickers and re-awaits their budget)."""
    return yaml.safe_dump(epp_config(model, hold), sort_keys=False)


def config_hash(text: str) -> str:
    """A short digest of a config file, which rolls the pods reading it at start when it changes."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def values(
    model: ModelConfig,
    cfg: GatewayConfig,
    *,
    alb_idle_timeout_seconds: int,
    envoy_image: str = versions.ENVOY_IMAGE,
    hf_token_secret: tuple[str, str] | None = None,
    hold: Hold,
) -> dict[str, Any]:
    """The release's values. `hf_token_secret` (secret name, key) feeds the precise-prefix tokenizer of a gated
    model; `hold` is the picker's flow control (config/derived/hold.py)."""
    registry, repository, tag = versions.EPP_IMAGE
    picker_config = picker_config_text(model, hold)
    epp: dict[str, Any] = {
        "replicas": cfg.epp_replicas,
        "image": {"registry": registry, "repository": repository, "tag": tag, "pullPolicy": "IfNotPresent"},
        "resources": cfg.epp_resources.as_values(),
        "affinity": picker_affinity(model),
        "pluginsConfigFile": EPP_CONFIG_FILE,
        "pluginsCustomConfig": {EPP_CONFIG_FILE: picker_config},
        # the picker reads its config once too
        "podAnnotations": {CONFIG_HASH_ANNOTATION: config_hash(picker_config)},
        # the gRPC health service on the ext_proc port, which the proxies' ext_proc cluster checks
        # (pkg/epp/server/runserver.go registers it only with --health-checking; off by default)
        "flags": {"health-checking": True, "drain-timeout": f"{DRAIN_TIMEOUT_SECONDS}s"},
    }
    router: dict[str, Any] = {
        "modelServers": {
            "type": "vllm",
            "protocol": "http",
            "targetPorts": [{"number": VLLM_PORT}],
            "matchLabels": serving_selector(model),
        },
        # Decided, not defaulted: the chart says FailOpen, the API's default is FailClose. The proxy is
        # what acts on it (failOpen below); the pool records the same choice.
        "inferencePool": {"create": True, "failureMode": "FailClose"},
        "epp": epp,
        # Prometheus reaches the metrics port alone (the namespace's NetworkPolicies): no token Secret
        # that never expires, no cluster-wide TokenReview rights per model.
        "monitoring": {"prometheus": {"enabled": False, "auth": {"enabled": False}}},
        "proxy": {
            "enabled": True,
            "proxyType": "envoy",
            # Its own Deployment: the ALB's targets stay put while the pickers fail over.
            "mode": "service",
            # The chart's proxy Deployment is kept at zero: the platform runs the proxies, with a drain the chart
            # cannot give them (builders/gateway/proxies.py). A string: the template's `| default 2` takes a 0 for unset.
            "replicas": "0",
            "failOpen": False,
            "resources": cfg.proxy_resources.as_values(),
            "presets": {"envoy": envoy_preset(model, envoy_image, alb_idle_timeout_seconds, hold_seconds=hold.ttl_seconds)},
        },
        "extraServicePorts": [{"name": "http", "port": envoy.API_PORT, "protocol": "TCP", "targetPort": envoy.API_PORT}],
    }
    if precise(model):
        env = []
        if hf_token_secret is not None:
            name, key = hf_token_secret
            env.append({"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": name, "key": key}}})
        router["tokenizer"] = {
            "enabled": True,
            "modelName": model.hugging_face_id,
            "port": TOKENIZER_PORT,
            "extraArgs": ["--revision", model.revision],
            "env": env,
            "resources": TOKENIZER_RESOURCES.as_values(),
        }
    return deep_merge({"router": router}, cfg.extra_values)


def inference_pool(release_values: dict[str, Any], release: str, namespace: str) -> dict[str, Any]:
    """The InferencePool the chart renders from these values (routerlib v0.10.0 `_inferencepool.yaml`),
    rebuilt so the render and the tests can check it against the CRD and against the model's pods."""
    router = release_values["router"]
    servers = router["modelServers"]
    pool: dict[str, Any] = {
        "apiVersion": "inference.networking.k8s.io/v1",
        "kind": "InferencePool",
        # routerlib `llm-d-router.labels`: the picker's name, and the chart's appVersion (set at packaging)
        "metadata": {
            "name": release,
            "namespace": namespace,
            "labels": {
                "app.kubernetes.io/name": f"{release.lower().strip()[:NAME_LIMIT]}-epp",
                "app.kubernetes.io/version": versions.LLM_D_ROUTER_VERSION,
            },
        },
        "spec": {
            "targetPorts": [{"number": p["number"]} for p in servers["targetPorts"]],
            "selector": {"matchLabels": {k: str(v) for k, v in servers["matchLabels"].items()}},
            "endpointPickerRef": {
                "name": f"{release.lower().strip()[:NAME_LIMIT]}-epp",
                "port": {"number": router["epp"].get("extProcPort", EPP_EXT_PROC_PORT)},
                "failureMode": router["inferencePool"].get("failureMode") or "FailOpen",
            },
        },
    }
    protocol = servers.get("protocol")
    if protocol == "grpc":
        pool["spec"]["appProtocol"] = "kubernetes.io/h2c"
    elif protocol == "http":
        pool["spec"]["appProtocol"] = "http"
    return pool
