"""A model's compile warm-up Jobs: one per GPU type of its pool, each starting the engine once. Pure.

Each Job runs the replica's own image, command line and environment (builders/serving/workload.py
vllm_args and vllm_env: vLLM keys its compile cache by them, so anything else would store a cache no
replica finds) on a node of its GPU type, through the weights script's `warm` mode: vLLM starts,
streams the weights, compiles and captures its CUDA graphs, answers /health, is stopped, and the
script stores its caches as one archive under the cache key (builders/serving/compile_cache.py). The
name carries the key, so a change of what the artifacts depend on (revision, image, engine flags)
runs a new Job; an unchanged key runs none, and a Job that finds its key stored ends at once.

What it costs: one replica's GPUs for a cold start per GPU type and key change (node launch, image,
weights, a cold engine: the model's pessimistic miss, minutes), billed like a replica; `pulumi up`
waits for it beside the Deployment's own rollout, which never waits for it (a replica that starts
before the cache exists compiles, as it did before the cache). Its GPUs count in the pool's limit
(config/checks/fit.py rule_gpu_limits warns when a deploy at minimum replicas, with its surge and a
replica's worth per GPU type, exceeds it) and the render prints what a key change costs (config/derived/cost.py).
"""

from __future__ import annotations

import math
from typing import Any

from builders import network_policies as netpol
from builders.serving import weights_script
from builders.serving.workload import (
    CACHE_DIR,
    PORT,
    SCRIPT_DIR,
    Sources,
    container_security,
    engine_volumes,
    pod_security,
    pool_tolerations,
    script_args,
    script_volume,
    vllm_args,
    vllm_env,
    vllm_resources,
)
from config.derived import engine
from config.facts import speed
from config.facts.conventions import GPU_NAME_LABEL, MODEL_LABEL, POOL_LABEL, warmup_job_name, warmup_service_account
from config.sections.gpu_pools import GpuPool
from config.sections.models import ModelConfig

COMPONENT = {"app.kubernetes.io/name": "compile-warmup"}
BACKOFF_LIMIT = 2
MARGIN = 2


def try_seconds(model: ModelConfig, pool: GpuPool) -> int:
    """One try: a GPU node, the image, and a cold start at the slow end (its startup probe's allowance), twice over."""
    node_and_image = speed.NODE_READY_SLOW.value + speed.IMAGE_PULL_SEQUENTIAL.value
    return math.ceil(MARGIN * (node_and_image + engine.startup_budget_seconds(model, pool)))


def job_seconds(model: ModelConfig, pool: GpuPool) -> int:
    """The Job's deadline and Pulumi's wait for it: two tries."""
    return 2 * try_seconds(model, pool)


def job_labels(model: ModelConfig) -> dict[str, str]:
    """Not vLLM's labels: the Service, the gateway's pool, the PDB and the monitors must not select the warm-up."""
    return {**COMPONENT, "app.kubernetes.io/instance": model.name, MODEL_LABEL: model.name}


def service_account(model: ModelConfig) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": warmup_service_account(model.name), "namespace": model.name, "labels": job_labels(model)},
        "automountServiceAccountToken": False,
    }


def job(
    model: ModelConfig,
    pool: GpuPool,
    sources: Sources,
    *,
    gpu_label: str,
    key: str,
    alb_idle_timeout_seconds: int,
    hf_token: bool,
    api_key: bool,
) -> dict[str, Any]:
    """The warm-up of one GPU type: the replica's engine, started once on a node of that type."""
    assert sources.bucket is not None
    args = vllm_args(model, pool, alb_idle_timeout_seconds, sources)
    mounts, volumes = engine_volumes(model)
    command = [
        *script_args(model, sources.bucket, "warm"),
        "--cache-key",
        f"{gpu_label}={key}",
        "--cache-root",
        CACHE_DIR,
        "--health-url",
        f"http://127.0.0.1:{PORT}/health",
        "--timeout-seconds",
        str(engine.startup_budget_seconds(model, pool)),
        "--poll-seconds",
        "2",
        "--",
        "vllm",
        "serve",
        *args,
    ]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": warmup_job_name(model.name, gpu_label, key),
            "namespace": model.name,
            "labels": job_labels(model),
            # A Job that failed in one `pulumi up` is replaced (run again) by the next.
            "annotations": {"pulumi.com/replaceUnready": "true"},
        },
        "spec": {
            "backoffLimit": BACKOFF_LIMIT,
            "activeDeadlineSeconds": job_seconds(model, pool),
            # Finished Jobs and their pods leave after a day; the key in the name keeps a rerun from repeating one.
            "ttlSecondsAfterFinished": 86400,
            "podFailurePolicy": {
                "rules": [
                    {
                        "action": "FailJob",
                        "onExitCodes": {"containerName": "warm", "operator": "In", "values": [weights_script.PERMANENT]},
                    },
                    {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
                ]
            },
            "template": {
                "metadata": {"labels": job_labels(model)},
                "spec": {
                    "restartPolicy": "Never",
                    "activeDeadlineSeconds": try_seconds(model, pool),
                    "serviceAccountName": warmup_service_account(model.name),
                    "automountServiceAccountToken": False,
                    "enableServiceLinks": False,
                    "securityContext": pod_security(),
                    "nodeSelector": {POOL_LABEL: pool.name, GPU_NAME_LABEL: gpu_label},
                    "tolerations": pool_tolerations(pool),
                    "containers": [
                        {
                            "name": "warm",
                            "image": sources.image,
                            "imagePullPolicy": "IfNotPresent",
                            "command": command,
                            "env": vllm_env(model, hf_token, api_key, alb_idle_timeout_seconds, sources.region),
                            "resources": vllm_resources(model, pool),
                            "securityContext": container_security(),
                            "volumeMounts": [*mounts, {"name": "script", "mountPath": SCRIPT_DIR, "readOnly": True}],
                        }
                    ],
                    "volumes": [*volumes, script_volume()],
                },
            },
        },
    }


def network_policy(model: ModelConfig, vpc_cidrs: list[str], interface_endpoints: list[str]) -> dict[str, Any]:
    """The warm-up takes no traffic; it reaches DNS, S3 over HTTPS and the Pod Identity agent."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": f"{model.name}-compile-warmup", "namespace": model.name},
        "spec": {
            "podSelector": {"matchLabels": COMPONENT},
            "policyTypes": ["Ingress", "Egress"],
            "egress": [netpol.dns_egress(), *netpol.internet_https_egress(vpc_cidrs, interface_endpoints), netpol.pod_identity_egress()],
        },
    }
