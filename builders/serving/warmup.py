"""A model's compile warm-up Jobs: one per GPU type of its pool, each starting the engine once. Pure.

Each Job runs the replica's own image, engine flags and environment (builders/serving/workload.py
vllm_args and vllm_env: vLLM keys its compile cache by them, so anything else would store a cache no
replica finds) on a node of its GPU type, through the weights script's `warm` mode: vLLM starts,
streams the weights, compiles and captures its CUDA graphs, answers /health, is stopped, and the
script stores its caches as one archive under the cache key (builders/serving/compile_cache.py). The
name carries the key, so a change of what the artifacts depend on (revision, image, engine flags)
runs a new Job; an unchanged key runs none, and a Job that finds its key stored ends at once.

Only what vLLM's compile cache does not depend on differs from the replica, so that a change of it
neither replaces the Job nor schedules a GPU for nothing: the server's own flags (address, name,
timeouts, admission: compile_cache.SERVER_FLAGS; vLLM's ModelConfig hash ignores served_model_name and
its SchedulerConfig hash counts only max_num_batched_tokens and max_num_seqs) and the two variables
vLLM 0.33's `envs.compile_factors()` ignores that the platform sets (KEY_NEUTRAL_ENV): the API key,
which the warm-up then never holds, and the HTTP keep-alive.

What it costs: one replica's GPUs for a cold start per GPU type and key change (node launch, image,
weights, a cold engine: the model's pessimistic miss, minutes), billed like a replica. `pulumi up`
does not wait for it (`pulumi.com/skipAwait`): the cache is an optimisation, a replica that starts
before it exists compiles as it did before the cache, and a warm-up held at the pool's limit or
without capacity must not fail a deploy. A failed warm-up leaves no cache (replicas compile); delete
its Job to run it again, or change the key. Its GPUs count in the pool's limit
(config/checks/fit.py rule_gpu_limits warns when a deploy at minimum replicas, with its surge and a
replica's worth per GPU type, exceeds it) and the render prints what a key change costs (config/derived/cost.py).
"""

from __future__ import annotations

import math
from typing import Any

from builders.serving import compile_cache, script_job
from builders.serving.workload import (
    CACHE_DIR,
    PORT,
    SCRIPT_DIR,
    Sources,
    engine_volumes,
    script_args,
    script_volume,
    vllm_args,
    vllm_env,
    vllm_resources,
)
from config.derived import engine
from config.facts import speed
from config.facts.conventions import GPU_NAME_LABEL, MODEL_LABEL, warmup_job_name, warmup_service_account
from config.sections.gpu_pools import GpuPool
from config.sections.models import ModelConfig

COMPONENT = {"app.kubernetes.io/name": "compile-warmup"}
KEY_NEUTRAL_ENV = ("VLLM_API_KEY", "VLLM_HTTP_TIMEOUT_KEEP_ALIVE")
"""Variables of the replica's environment the warm-up leaves out: both are in vLLM 0.33.0's
`compile_factors()` ignored set (vllm/envs.py: the key "must not be persisted in cache_key_factors.json")."""
ALB_IDLE_PLACEHOLDER = 60
"""vllm_args and vllm_env take the ALB's idle timeout for the server's keep-alives alone, which the warm-up drops."""
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
    return script_job.service_account(model, warmup_service_account(model.name), job_labels(model))


def engine_args(model: ModelConfig, pool: GpuPool, sources: Sources) -> list[str]:
    """The replica's vLLM arguments without the server's own (compile_cache.SERVER_FLAGS), on loopback."""
    args = compile_cache.engine_flags(vllm_args(model, pool, ALB_IDLE_PLACEHOLDER, sources))
    return [*args, "--host", "127.0.0.1", "--port", str(PORT)]


def engine_env(model: ModelConfig, sources: Sources) -> list[dict[str, Any]]:
    """The replica's environment without KEY_NEUTRAL_ENV."""
    env = vllm_env(model, hf_token=False, api_key=False, alb_idle_timeout_seconds=ALB_IDLE_PLACEHOLDER, region=sources.region)
    return [e for e in env if e["name"] not in KEY_NEUTRAL_ENV]


def job(model: ModelConfig, pool: GpuPool, sources: Sources, *, gpu_label: str, key: str) -> dict[str, Any]:
    """The warm-up of one GPU type: the replica's engine, started once on a node of that type."""
    assert sources.bucket is not None
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
        *engine_args(model, pool, sources),
    ]
    return script_job.job(
        model,
        pool,
        name=warmup_job_name(model.name, gpu_label, key),
        labels=job_labels(model),
        # `pulumi up` neither waits for it nor fails with it (the module's docstring)
        annotations={"pulumi.com/skipAwait": "true"},
        # Finished Jobs and their pods leave after a day; the key in the name keeps a rerun from repeating one.
        deadlines=script_job.Deadlines(BACKOFF_LIMIT, job_seconds(model, pool), try_seconds(model, pool), ttl_seconds=86400),
        service_account=warmup_service_account(model.name),
        node_labels={GPU_NAME_LABEL: gpu_label},
        container=script_job.Container(
            "warm",
            sources.image,
            command,
            engine_env(model, sources),
            vllm_resources(model, pool),
            [*mounts, {"name": "script", "mountPath": SCRIPT_DIR, "readOnly": True}],
        ),
        volumes=[*volumes, script_volume()],
    )


def network_policy(model: ModelConfig, vpc_cidrs: list[str], interface_endpoints: list[str]) -> dict[str, Any]:
    """The warm-up takes no traffic; it reaches DNS, S3 over HTTPS and the Pod Identity agent."""
    return script_job.network_policy(model, f"{model.name}-compile-warmup", COMPONENT, vpc_cidrs, interface_endpoints)
