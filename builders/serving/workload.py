"""Pure builders for one model's serving stack: namespace, Deployment, Service, PDB, policies."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from builders import network_policies as netpol
from builders.gateway import prefix
from builders.k8s import namespace_manifest
from builders.serving import compile_cache
from builders.serving.multinode import LEADER, multi_node_args
from config.derived import capacity, engine
from config.derived.path import keep_alive_seconds, sse_keep_alive_seconds
from config.derived.sharing import gpu_request
from config.facts import speed
from config.facts.conventions import (
    API_KEY_FINGERPRINT_ANNOTATION,
    INGRESS_GROUP_MEMBER,
    MODEL_LABEL,
    POOL_LABEL,
    PROJECT,
    READINESS_GATE_LABEL,
    VLLM_APP_LABEL,
    VLLM_PORT,
    VLLM_PORT_NAME,
    ZONE_LABEL,
)
from config.sections import weights
from config.sections.gpu_pools import GpuPool
from config.sections.models import ModelConfig
from config.sections.types import parse_quantity

PORT = VLLM_PORT


@dataclass(frozen=True)
class ModelFlows:
    """Where a model's traffic may come from, resolved from the stack (builders.network_policies)."""

    monitoring_namespace: str
    vpc_cidrs: list[str]
    """Excluded from 'the internet' in egress rules."""
    interface_endpoints: list[str]
    """Subnets of an existing VPC's interface endpoints, reachable on 443 (S3 resolving inside the VPC)."""
    gateway_peers: list[dict[str, Any]] = field(default_factory=list)
    """The model's gateway pods (builders/gateway/policies.py gateway_peers)."""
    kv_events: tuple[int, list[dict[str, Any]]] | None = None
    """vLLM's KV-event port and the pods it admits there: the gateway's pickers (precise prefix-cache routing)."""


RUN_AS = 10001
HF_TOKEN_DIR = "/var/run/secrets/huggingface"
HF_TOKEN_SECRET = "hf-token"
API_KEY_SECRET = "vllm-api-key"
CACHE_DIR = "/cache"
SCRIPT_DIR = "/opt/llm-platform"
SCRIPT_CONFIG_MAP = "weights-script"
SCRIPT_FILE = "weights.py"
# With weights streamed from S3 nothing big lands on disk: configs, tokenizer and compile caches.
STREAMED_CACHE_SIZE = "10Gi"
# The image's UID has no passwd entry: getpass.getuser() (torch's inductor) reads these instead.
RUN_AS_NAME = "vllm"
# /tmp holds only scratch now that every cache is on the sized cache volume: Python temporary
# files and the Prometheus multiprocess directory of the API server.
TMP_SIZE = "2Gi"


@dataclass(frozen=True)
class Sources:
    """What only the account knows, resolved at deploy time: the image pods pull (the upstream's or
    the pull-through cache's), the weights bucket, and the region."""

    image: str
    bucket: str | None = None
    region: str = ""


def upstream_sources(model: ModelConfig, region: str = "") -> Sources:
    """The image as configured and no bucket: a model that pulls and downloads from upstream."""
    return Sources(image=model.image.reference, region=region)


def labels(model: ModelConfig) -> dict[str, str]:
    return {**VLLM_APP_LABEL, "app.kubernetes.io/instance": model.name, MODEL_LABEL: model.name}


def selector(model: ModelConfig) -> dict[str, str]:
    """Every pod of the model (the leaders and workers of a multi-node model's groups too)."""
    return {**VLLM_APP_LABEL, "app.kubernetes.io/instance": model.name}


def serving_selector(model: ModelConfig) -> dict[str, str]:
    """The pods that serve the API: every pod, or a multi-node model's group leaders (the workers run headless)."""
    return {**selector(model), **(LEADER if model.multi_node else {})}


def shm_size(model: ModelConfig) -> str:
    """/dev/shm: NCCL between tensor-parallel ranks needs it; 1Gi plus 4Gi per extra rank."""
    return model.shm_size or f"{1 + 4 * (model.tensor_parallel_size - 1)}Gi"


def cache_size(model: ModelConfig) -> str:
    """The cache on the node's ephemeral storage: a Hugging Face download plus 20 % and 10Gi of
    headroom; streamed weights never land on disk."""
    if model.streams_from_s3:
        return STREAMED_CACHE_SIZE
    return f"{math.ceil(capacity.checkpoint_gib(model) * 1.2) + 10}Gi"


def namespace(model: ModelConfig) -> dict[str, Any]:
    """The model's namespace. The load balancer controller holds a rollout until the ALB target is
    healthy (readiness gate); the group label admits the model's Ingress to the shared ALB
    (builders/ingress/endpoints.py). Pod Security `baseline` is enforced and `restricted` audited and
    warned: the model's gateway runs here, and the router chart (llm-d-router v0.10.0, routerlib
    `_deployment.yaml`) renders the Endpoint Picker container with no securityContext and has no value to
    set one, which `restricted` refuses. Every container the platform writes itself (vLLM, its init
    containers, the populate Job) keeps the restricted context (a test holds each to it)."""
    labels = {READINESS_GATE_LABEL: "enabled", MODEL_LABEL: model.name, **INGRESS_GROUP_MEMBER}
    return namespace_manifest(model.name, "baseline", audit="restricted", labels=labels)


def service_account(model: ModelConfig) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": model.name, "namespace": model.name, "labels": labels(model)},
        "automountServiceAccountToken": False,
    }


def streamer_config(model: ModelConfig) -> dict[str, int | bool]:
    """The Run:ai streamer's three settings (docs/upstream-facts.md#s3-weights, item 2): reads in flight from the checkpoint's size, a
    staging buffer inside the replica's memory limit (the default 40 GB is not), and, with tensor
    parallelism, one read of the checkpoint shared between the ranks instead of one per rank."""
    config: dict[str, int | bool] = {
        "concurrency": weights.streamer_concurrency(capacity.checkpoint_gb(model)),
        "memory_limit": weights.streamer_memory_limit(parse_quantity(model.resources.memory), model.tensor_parallel_size),
    }
    if model.tensor_parallel_size > 1:
        config["distributed"] = True
    return config


def model_source_args(model: ModelConfig, sources: Sources) -> list[str]:
    """The model argument: the pinned revision on Hugging Face, or its copy streamed from S3."""
    if not model.streams_from_s3:
        return [model.hugging_face_id, "--revision", model.revision]
    assert sources.bucket is not None, "a model streaming from S3 needs the weights bucket"
    return [
        weights.s3_uri(sources.bucket, model.hugging_face_id, model.revision),
        "--load-format",
        weights.STREAMER_LOAD_FORMATS[0],
        "--model-loader-extra-config",
        json.dumps(streamer_config(model), sort_keys=True),
    ]


# `quantization` to vLLM's --quantization. fp8 on a bf16/fp16 checkpoint is vLLM's online
# per-tensor scheme: 0.33.0 still maps a bare `fp8` to it with a deprecation warning, and its
# Fp8Config now refuses checkpoints that are not serialized fp8 (deploy review 2026-12-01 part B,
# MINOR 1; vllm model_executor/layers/quantization/fp8.py). A pre-quantized AWQ or GPTQ checkpoint
# names its scheme in config.json: vLLM reads it there and picks the fastest kernel (Marlin where
# the GPU has it), while an explicit `awq`/`gptq` forces the slower reference kernel.
QUANTIZATION_FLAGS: dict[str, str | None] = {"none": None, "fp8": "fp8_per_tensor", "awq": None, "gptq": None}


def vllm_args(model: ModelConfig, pool: GpuPool, alb_idle_timeout_seconds: int, sources: Sources | None = None) -> list[str]:
    """Arguments after the image's `vllm serve` entrypoint: the model, then flags."""
    args = [
        *model_source_args(model, sources or upstream_sources(model)),
        # Also the `model_name` label of every metric; with s3:// it would default to the URI.
        "--served-model-name",
        model.name,
        "--host",
        "0.0.0.0",
        "--port",
        str(PORT),
        "--tensor-parallel-size",
        str(model.tensor_parallel_size),
        "--max-model-len",
        str(model.max_model_len),
        "--gpu-memory-utilization",
        str(model.gpu_memory_utilization),
        "--dtype",
        model.dtype,
        "--shutdown-timeout",
        str(model.drain.shutdown_timeout_seconds),
        "--sse-keep-alive-interval",
        str(sse_keep_alive_seconds(alb_idle_timeout_seconds)),
    ]
    if (quantization := QUANTIZATION_FLAGS[model.quantization]) is not None:
        args += ["--quantization", quantization]
    if model.kv_cache_dtype != "auto":
        args += ["--kv-cache-dtype", model.kv_cache_dtype]
    if model.max_num_seqs is not None:
        args += ["--max-num-seqs", str(model.max_num_seqs)]
    # Admission at the top: past its batch and this many waiting requests a replica answers 503 at
    # once instead of queueing without bound (config/derived/capacity.py max_in_flight_requests).
    args += ["--max-num-queued-reqs", str(capacity.max_in_flight_requests(model, pool))]
    if (kv_bytes := capacity.explicit_kv_cache_bytes(model, pool)) is not None:
        # skips vLLM's profiling pass; time-sliced replicas must not profile each other's memory
        # (capacity.explicit_kv_cache_bytes)
        args += ["--kv-cache-memory-bytes", str(kv_bytes)]
    if model.engine.cuda_graph_capture_max is not None and not capacity.eager(model):
        # CUDA graphs up to this batch only: fewer sizes to capture at start (config/derived/engine.py)
        args += ["--max-cudagraph-capture-size", str(engine.capture_max(model, pool))]
    # the gateway's precise prefix-cache routing reads vLLM's KV-cache events (builders/gateway/prefix.py)
    args += prefix.vllm_args(model)
    # a replica spanning nodes: its pod's stage, group and leader (builders/serving/multinode.py)
    args += multi_node_args(model)
    return [*args, *model.extra_args]


# A one-way fingerprint, never the key: keys are at least 32 characters (config/checks/secrets.py),
# beyond guessing, and PBKDF2 (salted per stack and model) slows any attempt further; 64 bits tell
# two keys apart.
FINGERPRINT_ITERATIONS = 100_000
FINGERPRINT_BYTES = 8


def api_key_fingerprint(stack: str, model_name: str, key: str) -> str:
    """What the pod template carries of the model's API key (deploy review 2026-12-01 part B, M3).
    Salted per stack and model, so one key reused in two stacks does not show as the same fingerprint."""
    salt = f"{PROJECT}/{stack}/{model_name}/api-key".encode()
    digest = hashlib.pbkdf2_hmac("sha256", key.encode(), salt, FINGERPRINT_ITERATIONS, dklen=FINGERPRINT_BYTES)
    return digest.hex()


def aws_env(region: str) -> list[dict[str, Any]]:
    """The region for boto3 and the streamer's AWS SDK: the Pod Identity webhook does not set it
    (docs/upstream-facts.md#s3-weights, item 5)."""
    return [{"name": "AWS_REGION", "value": region}, {"name": "AWS_DEFAULT_REGION", "value": region}]


def vllm_env(model: ModelConfig, hf_token: bool, api_key: bool, alb_idle_timeout_seconds: int, region: str) -> list[dict[str, Any]]:
    env: list[dict[str, Any]] = [
        {"name": "HOME", "value": "/tmp"},
        {"name": "USER", "value": RUN_AS_NAME},
        {"name": "LOGNAME", "value": RUN_AS_NAME},
        {"name": "HF_HOME", "value": f"{CACHE_DIR}/huggingface"},
        {"name": "VLLM_CACHE_ROOT", "value": f"{CACHE_DIR}/vllm"},
        {"name": "XDG_CACHE_HOME", "value": f"{CACHE_DIR}/xdg"},
        {"name": "TRITON_CACHE_DIR", "value": f"{CACHE_DIR}/triton"},
        {"name": "TORCHINDUCTOR_CACHE_DIR", "value": f"{CACHE_DIR}/inductor"},
        {"name": "FLASHINFER_WORKSPACE_BASE", "value": f"{CACHE_DIR}/flashinfer"},
        {"name": "CUDA_CACHE_PATH", "value": f"{CACHE_DIR}/cuda"},
        {"name": "VLLM_HTTP_TIMEOUT_KEEP_ALIVE", "value": str(keep_alive_seconds(alb_idle_timeout_seconds))},
        {"name": "HF_HUB_DISABLE_TELEMETRY", "value": "1"},
        {"name": "VLLM_NO_USAGE_STATS", "value": "1"},
        {"name": "DO_NOT_TRACK", "value": "1"},
    ]
    if model.streams_from_s3:
        env += [
            *aws_env(region),
            # The config and tokenizer files vLLM copies from S3 before streaming (root FS is read-only).
            {"name": "VLLM_ASSETS_CACHE", "value": f"{CACHE_DIR}/vllm-assets"},
            # Nothing comes from Hugging Face any more; fail instead of reaching out.
            {"name": "HF_HUB_OFFLINE", "value": "1"},
        ]
    elif hf_token:
        # huggingface_hub reads the token from this file: no token in env or args.
        env.append({"name": "HF_TOKEN_PATH", "value": f"{HF_TOKEN_DIR}/token"})
    if api_key:
        env.append({"name": "VLLM_API_KEY", "valueFrom": {"secretKeyRef": {"name": API_KEY_SECRET, "key": "api-key"}}})
    return [*env, *prefix.vllm_env(model)]


# The label the Deployment controller puts on each revision's pods: a spread that matches on it counts only
# the pods of the incoming pod's own revision, so a rollout re-spreads the new pods instead of stacking them
# beside the old ones (Kubernetes: matchLabelKeys; Karpenter's scheduler honours it too).
POD_TEMPLATE_HASH = "pod-template-hash"


def spread(model: ModelConfig, pool: GpuPool) -> list[dict[str, Any]]:
    """Where the replicas land. Replicas that each fill a node: a preferred zone spread (nothing is lost by
    spreading them). Replicas that share a node (time-slices, MIG slices, a few GPUs of a big node) of a model
    with `placement: spread` (the default) and replicas.min >= 2: a required zone spread, maxSkew 1 and
    minDomains 2. While fewer than two zones hold the pool's nodes the global minimum counts as 0, so a second
    replica may not join the first one's zone: it lands on a second node, in a second zone. Once two zones
    are in use the minimum is real and further replicas pack onto the nodes there (a zone may run one
    replica ahead). Karpenter's provisioning simulation counts every zone the NodePool may launch in (and,
    with a hostname key, treats every node as able to start empty, so a hostname spread of maxSkew 1 would
    mean a node per pending replica): the zone key is what packs. `placement: pack`, or replicas.min < 2:
    none, Karpenter packs them into as few nodes as hold them (config/checks/scaling.py warns)."""
    if capacity.fills_a_node(model, pool):
        return [
            {
                "maxSkew": 1,
                "topologyKey": ZONE_LABEL,
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": selector(model)},
            }
        ]
    if not capacity.spreads(model, pool):
        return []
    return [
        {
            "maxSkew": 1,
            "minDomains": capacity.SPREAD_MIN_DOMAINS,
            "topologyKey": ZONE_LABEL,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": selector(model)},
            "matchLabelKeys": [POD_TEMPLATE_HASH],
        }
    ]


def container_security() -> dict[str, Any]:
    """Every platform container: non-root, no privilege escalation, read-only root, no capabilities."""
    return {
        "runAsNonRoot": True,
        "runAsUser": RUN_AS,
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def pod_security() -> dict[str, Any]:
    return {
        "runAsNonRoot": True,
        "runAsUser": RUN_AS,
        "runAsGroup": RUN_AS,
        "fsGroup": RUN_AS,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def pool_tolerations(pool: GpuPool) -> list[dict[str, Any]]:
    return [{"key": t["key"], "operator": "Exists", "effect": t["effect"]} for t in pool.node_taints()]


def script_volume() -> dict[str, Any]:
    return {"name": "script", "configMap": {"name": SCRIPT_CONFIG_MAP, "defaultMode": 0o444}}


def hf_token_volume() -> dict[str, Any]:
    return {
        "name": "hf-token",
        "secret": {"secretName": HF_TOKEN_SECRET, "defaultMode": 0o440, "items": [{"key": "token", "path": "token"}]},
    }


def script_args(model: ModelConfig, bucket: str, mode: str) -> list[str]:
    """The weights script's command line, shared by the populate Job and the replicas' wait."""
    return [
        "python3",
        f"{SCRIPT_DIR}/{SCRIPT_FILE}",
        mode,
        "--bucket",
        bucket,
        "--repo",
        model.hugging_face_id,
        "--revision",
        model.revision,
        "--repository",
        weights.repository_prefix(model.hugging_face_id),
    ]


# The replicas' wait for the populate Job: as long as the Job may run (builders/serving/populate.py).
WAIT_RESOURCES = {"cpu": "100m", "memory": "256Mi"}


# With the compile cache it also downloads, checks and unpacks an archive of some tens to hundreds of MB:
# a core and room for tarfile's buffers (within the vLLM container's request, so the pod asks for nothing more).
CACHE_FETCH_RESOURCES = {"cpu": "1", "memory": "1Gi"}


def cache_key_args(cache_keys: dict[str, str]) -> list[str]:
    """`--cache-key LABEL=KEY` per GPU type, and the volume the archive goes to (weights_script.py)."""
    if not cache_keys:
        return []
    pairs = [arg for label, key in sorted(cache_keys.items()) for arg in ("--cache-key", f"{label}={key}")]
    return [*pairs, "--cache-root", CACHE_DIR]


def wait_for_weights(
    model: ModelConfig,
    sources: Sources,
    timeout_seconds: int,
    cache_keys: dict[str, str] | None = None,
    gpu: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Init container: checks the image can stream, waits until the revision is in the bucket, then copies
    the compile cache of its GPU's key into the cache volume (absent, partial or another key's: vLLM
    compiles). With several GPU types in the pool it requests the replica's GPU (`gpu`; the app container
    is handed the same device) to tell which key is its own."""
    assert sources.bucket is not None
    keys = cache_keys or {}
    resources: dict[str, str] = dict(CACHE_FETCH_RESOURCES if keys else WAIT_RESOURCES)
    if len(keys) > 1 and gpu:
        resources.update(gpu)
    mounts = [{"name": "script", "mountPath": SCRIPT_DIR, "readOnly": True}, {"name": "tmp", "mountPath": "/tmp"}]
    if keys:
        mounts.append({"name": "cache", "mountPath": CACHE_DIR})
    return {
        "name": "wait-for-weights",
        "image": sources.image,
        "imagePullPolicy": "IfNotPresent",
        "command": [*script_args(model, sources.bucket, "wait"), "--timeout-seconds", str(timeout_seconds), *cache_key_args(keys)],
        "env": [{"name": "HOME", "value": "/tmp"}, *aws_env(sources.region)],
        "resources": {"requests": dict(resources), "limits": dict(resources)},
        "securityContext": container_security(),
        "volumeMounts": mounts,
    }


READINESS_WINDOW_SECONDS = 30
"""How long /health may fail before a serving replica leaves the endpoints (periods of speed.PROBE_PERIOD)."""


def probes(model: ModelConfig, pool: GpuPool) -> dict[str, dict[str, Any]]:
    """vLLM's startup, readiness and liveness probes on /health. Startup and readiness poll every
    second or so (the budget's probe term counts one period of each): a replica serves within a
    period of its server answering. The startup probe allows startup_budget_seconds (the pessimistic
    load: a cold compile on the slowest host); readiness keeps a 30 s window of failures."""
    probe = {"httpGet": {"path": "/health", "port": VLLM_PORT_NAME}}
    period = int(speed.PROBE_PERIOD.value)
    return {
        "startupProbe": {
            **probe,
            "periodSeconds": model.startup.period_seconds,
            "failureThreshold": math.ceil(engine.startup_budget_seconds(model, pool) / model.startup.period_seconds),
            "timeoutSeconds": 5,
        },
        "readinessProbe": {
            **probe,
            "periodSeconds": period,
            "failureThreshold": math.ceil(READINESS_WINDOW_SECONDS / period),
            "timeoutSeconds": 5,
        },
        "livenessProbe": {**probe, "periodSeconds": 15, "failureThreshold": 6, "timeoutSeconds": 10},
    }


def vllm_resources(model: ModelConfig, pool: GpuPool) -> dict[str, dict[str, str]]:
    """Requests and limits of the vLLM container: memory and GPUs limited at the request, CPU above it
    (capacity.cpu_limit: Burstable, so the CPU-bound start is not throttled)."""
    request = gpu_request(model, pool)
    requests = {"cpu": model.resources.cpu, "memory": model.resources.memory, request.resource: str(request.count)}
    return {"requests": requests, "limits": {**requests, "cpu": capacity.cpu_limit(model, pool)}}


def engine_volumes(model: ModelConfig) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The vLLM container's mounts and the pod's volumes: its caches, scratch and shared memory (the replica's and
    the compile warm-up's alike: the cache paths are part of what vLLM's compile cache is keyed by)."""
    mounts: list[dict[str, Any]] = [
        {"name": "cache", "mountPath": CACHE_DIR},
        {"name": "tmp", "mountPath": "/tmp"},
        {"name": "shm", "mountPath": "/dev/shm"},
    ]
    volumes: list[dict[str, Any]] = [
        {"name": "cache", "emptyDir": {"sizeLimit": cache_size(model)}},
        {"name": "tmp", "emptyDir": {"sizeLimit": TMP_SIZE}},
        {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": shm_size(model)}},
    ]
    return mounts, volumes


def deployment(
    model: ModelConfig,
    pool: GpuPool,
    *,
    alb_idle_timeout_seconds: int,
    hf_token: bool,
    api_key: bool = False,
    api_key_fingerprint: str | None = None,
    sources: Sources | None = None,
    weights_wait_seconds: int = 3600,
    gpu_labels: Sequence[str] = (),
) -> dict[str, Any]:
    """The model's Deployment. `gpu_labels`: the GPU types of the pool's hosts that hold a replica
    (ModelState.gpu_labels), one compile-cache key each. `api_key_fingerprint` (api_key_fingerprint()) goes on the pod template,
    so a rotated key rolls the replicas: vLLM reads its key once, at start."""
    src = sources or upstream_sources(model)
    args = vllm_args(model, pool, alb_idle_timeout_seconds, src)
    volume_mounts, volumes = engine_volumes(model)
    init: list[dict[str, Any]] = []
    if model.streams_from_s3:
        # The token stays with the populate Job; replicas only read the bucket.
        volumes.append(script_volume())
        keys = compile_cache.keys(model, gpu_labels, args)
        request = gpu_request(model, pool)
        init.append(wait_for_weights(model, src, weights_wait_seconds, keys, {request.resource: str(request.count)}))
    elif hf_token:
        volume_mounts.append({"name": "hf-token", "mountPath": HF_TOKEN_DIR, "readOnly": True})
        volumes.append(hf_token_volume())
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": model.name, "namespace": model.name, "labels": labels(model)},
        "spec": {
            # The count at creation only: a model at zero starts at zero (no GPU node boots for the first
            # deploy), the others at their floor. Afterwards KEDA's HPA owns it: the component sets
            # ignore_changes on spec.replicas, so a later `pulumi up` never moves the running count
            # (pulumi-kubernetes then leaves the field to the HPA's field manager under server-side apply).
            "replicas": model.replicas.min,
            "selector": {"matchLabels": selector(model)},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": capacity.ROLLOUT_MAX_SURGE, "maxUnavailable": 0}},
            "template": {
                "metadata": {
                    "labels": labels(model),
                    **({"annotations": {API_KEY_FINGERPRINT_ANNOTATION: api_key_fingerprint}} if api_key_fingerprint else {}),
                },
                "spec": {
                    "serviceAccountName": model.name,
                    "automountServiceAccountToken": False,
                    "enableServiceLinks": False,
                    "terminationGracePeriodSeconds": model.drain.termination_grace_period_seconds,
                    "securityContext": pod_security(),
                    "nodeSelector": {POOL_LABEL: pool.name},
                    "tolerations": pool_tolerations(pool),
                    **({"topologySpreadConstraints": constraints} if (constraints := spread(model, pool)) else {}),
                    **({"initContainers": init} if init else {}),
                    "containers": [
                        {
                            "name": "vllm",
                            "image": src.image,
                            "imagePullPolicy": "IfNotPresent",
                            "args": args,
                            "ports": [{"name": VLLM_PORT_NAME, "containerPort": PORT, "protocol": "TCP"}],
                            "env": vllm_env(model, hf_token, api_key, alb_idle_timeout_seconds, src.region),
                            "resources": vllm_resources(model, pool),
                            "securityContext": container_security(),
                            **probes(model, pool),
                            "lifecycle": {"preStop": {"sleep": {"seconds": model.drain.pre_stop_sleep_seconds}}},
                            "volumeMounts": volume_mounts,
                        }
                    ],
                    "volumes": volumes,
                },
            },
        },
    }


def service(model: ModelConfig) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": model.name, "namespace": model.name, "labels": labels(model)},
        "spec": {
            "type": "ClusterIP",
            "selector": serving_selector(model),
            # a numeric target equal to the port: the network policy controller then maps the policy's port
            # to this Service's address (a named target only resolves once a pod exists)
            "ports": [{"name": VLLM_PORT_NAME, "port": PORT, "targetPort": PORT, "protocol": "TCP"}],
        },
    }


def pod_disruption_budget(model: ModelConfig) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": model.name, "namespace": model.name, "labels": labels(model)},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": selector(model)}},
    }


def network_policies(model: ModelConfig, flows: ModelFlows) -> list[dict[str, Any]]:
    """Default deny in the namespace; vLLM's port admits only the model's gateway (its proxies send the
    requests, its pickers read /metrics) and Prometheus. No load balancer subnet and no client namespace:
    they reach the gateway, which serves /v1 alone."""
    sources: list[dict[str, Any]] = [netpol.prometheus_peer(flows.monitoring_namespace), *flows.gateway_peers]
    ingress: list[dict[str, Any]] = [{"from": sources, "ports": netpol.tcp(PORT)}]
    if flows.kv_events is not None:
        port, pickers = flows.kv_events
        ingress.append({"from": list(pickers), "ports": netpol.tcp(port)})
    egress = model_egress(model, flows.vpc_cidrs, flows.interface_endpoints)
    if model.multi_node:
        # a group's pods to each other on every port: the workers' torch.distributed rendezvous with the leader
        # (vLLM's --master-port) and NCCL's bootstrap sockets, whose ports NCCL picks (the EFA traffic itself
        # bypasses the pod network); the model's own pods only
        group = [{"podSelector": {"matchLabels": selector(model)}}]
        ingress.append({"from": group})
        egress = [*egress, {"to": group}]
    vllm = netpol.policy(model.name, model.name, selector(model), ingress, egress)
    return [netpol.default_deny(model.name), vllm]


def model_egress(model: ModelConfig, vpc_cidrs: list[str], interface_endpoints: list[str]) -> list[dict[str, Any]]:
    """DNS, HTTPS to the internet only (Hugging Face or S3), and the Pod Identity agent for S3 credentials."""
    return [
        netpol.dns_egress(),
        *netpol.internet_https_egress(vpc_cidrs, interface_endpoints if model.streams_from_s3 else None),
        *([netpol.pod_identity_egress()] if model.streams_from_s3 else []),
    ]
