"""A model's populate Job: its pinned revision copied from Hugging Face into the weights bucket. Pure.

One Job per revision (the name carries it, so a new revision runs a new Job and `pulumi up`
waits for it). It runs the model's own image on the model's pool, so the image is on a pool node
before the first replica lands there, and it holds one checkpoint file at a time on scratch, so
a 140 GB checkpoint needs no 140 GB disk. The script is builders/serving/weights_script.py.

Each try (pod) has its own deadline, `try_seconds`; the Job's deadline, `populate_seconds`, is
the budget of all its tries. A try that fails for good (exit 2) ends the Job at once; a pod a spot
interruption or a drain evicts does not count against the backoff limit.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from builders.serving import script_job, weights_script
from builders.serving.workload import (
    HF_TOKEN_DIR,
    RUN_AS_NAME,
    SCRIPT_CONFIG_MAP,
    SCRIPT_DIR,
    SCRIPT_FILE,
    TMP_SIZE,
    Sources,
    aws_env,
    hf_token_volume,
    script_args,
    script_volume,
)
from config.derived import capacity
from config.facts import speed
from config.facts.conventions import MODEL_LABEL, populate_job_name, populate_service_account
from config.sections.gpu_pools import GpuPool
from config.sections.models import ModelConfig

SCRATCH_GIB = 30
"""Holds the largest single file of a checkpoint (safetensors shards are a few GB)."""
RESOURCES = {"cpu": "2", "memory": "4Gi"}
BACKOFF_LIMIT = 4
MARGIN = 2
MIN_SECONDS = 1800
BUDGETED_TRIES = 2
"""Tries the Job's deadline pays for in full. Most failures come early (the hub, credentials, the
node) and cost little; the costly one is a try that fails late, after most of its download. Two
tries' worth lets one such failure be followed by one full retry (less in practice: a retry skips
the files the failed try uploaded). Paying for every try the backoff limit allows (5) would hold
`pulumi up` and the replicas' wait for hours behind a Job that cannot succeed. Evictions cost no
backoff (the DisruptionTarget rule) but do spend this wall-clock budget."""
COMPONENT = {"app.kubernetes.io/name": "weights-populate"}


def try_seconds(model: ModelConfig) -> int:
    """How long one try (pod) may run: a node, the image, and the download at the published Hugging
    Face rate, twice over; at least half an hour."""
    download = capacity.checkpoint_gb(model) / speed.HUGGING_FACE_RATE.value
    node_and_image = speed.NODE_READY.value + speed.IMAGE_SIZE_GB.value / speed.IMAGE_PULL_RATE.value
    return max(MIN_SECONDS, math.ceil(MARGIN * (download + node_and_image)))


def populate_seconds(model: ModelConfig) -> int:
    """How long the whole Job may run (its deadline, Pulumi's wait for it, the replicas' wait for
    the weights): `BUDGETED_TRIES` tries."""
    return BUDGETED_TRIES * try_seconds(model)


def job_labels(model: ModelConfig) -> dict[str, str]:
    """Not vLLM's labels: the Service, the PDB, the monitors and vLLM's NetworkPolicy must not select the Job."""
    return {**COMPONENT, "app.kubernetes.io/instance": model.name, MODEL_LABEL: model.name}


def script_config_map(model: ModelConfig) -> dict[str, Any]:
    source = Path(weights_script.__file__).read_text(encoding="utf-8")
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": SCRIPT_CONFIG_MAP, "namespace": model.name, "labels": job_labels(model)},
        "data": {SCRIPT_FILE: source},
    }


def service_account(model: ModelConfig) -> dict[str, Any]:
    return script_job.service_account(model, populate_service_account(model.name), job_labels(model))


def keep_revisions(model: ModelConfig, models: list[ModelConfig]) -> list[str]:
    """Revisions of the model's repository that some model of the stack streams (never retired)."""
    return sorted({m.revision for m in models if m.hugging_face_id == model.hugging_face_id and m.streams_from_s3})


def job(
    model: ModelConfig, pool: GpuPool, sources: Sources, *, hf_token: bool, models: list[ModelConfig], retire_days: int = 7
) -> dict[str, Any]:
    assert sources.bucket is not None
    env: list[dict[str, Any]] = [
        {"name": "HOME", "value": "/tmp"},
        {"name": "USER", "value": RUN_AS_NAME},
        {"name": "HF_HOME", "value": "/scratch/.hf"},
        {"name": "HF_HUB_DISABLE_TELEMETRY", "value": "1"},
        {"name": "HF_XET_HIGH_PERFORMANCE", "value": "1"},
        *aws_env(sources.region),
    ]
    mounts: list[dict[str, Any]] = [
        {"name": "script", "mountPath": SCRIPT_DIR, "readOnly": True},
        {"name": "scratch", "mountPath": "/scratch"},
        {"name": "tmp", "mountPath": "/tmp"},
    ]
    volumes: list[dict[str, Any]] = [
        script_volume(),
        {"name": "scratch", "emptyDir": {"sizeLimit": f"{SCRATCH_GIB}Gi"}},
        {"name": "tmp", "emptyDir": {"sizeLimit": TMP_SIZE}},
    ]
    if hf_token:
        env.append({"name": "HF_TOKEN_PATH", "value": f"{HF_TOKEN_DIR}/token"})
        mounts.append({"name": "hf-token", "mountPath": HF_TOKEN_DIR, "readOnly": True})
        volumes.append(hf_token_volume())
    command = [
        *script_args(model, sources.bucket, "populate"),
        "--scratch",
        "/scratch",
        "--scratch-bytes",
        str(SCRATCH_GIB * 2**30 * 9 // 10),
        "--retire-days",
        str(retire_days),
        "--quantization",
        model.quantization,
        "--keep",
        *keep_revisions(model, models),
    ]
    requests = {**RESOURCES, "ephemeral-storage": f"{SCRATCH_GIB}Gi"}
    return script_job.job(
        model,
        pool,
        name=populate_job_name(model.name, model.revision),
        labels=job_labels(model),
        # A Job that failed in one `pulumi up` is replaced (run again) by the next.
        annotations={"pulumi.com/replaceUnready": "true"},
        deadlines=script_job.Deadlines(BACKOFF_LIMIT, populate_seconds(model), try_seconds(model)),
        service_account=populate_service_account(model.name),
        node_labels={},
        container=script_job.Container("populate", sources.image, command, env, {"requests": requests, "limits": dict(requests)}, mounts),
        volumes=volumes,
    )


def network_policy(model: ModelConfig, vpc_cidrs: list[str], interface_endpoints: list[str]) -> dict[str, Any]:
    """The Job takes no traffic; it reaches DNS, HTTPS (Hugging Face, S3) and the Pod Identity agent."""
    return script_job.network_policy(model, f"{model.name}-weights", COMPONENT, vpc_cidrs, interface_endpoints)
