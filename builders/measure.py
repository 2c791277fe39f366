"""Pure manifests of `make measure`: a benchmark Job against a deployed model's gateway, from a client namespace.

The Job runs builders/bench_client.py (a ConfigMap) in the model's own vLLM image, as a client of the model: in a
namespace the model lists in `clientNamespaces` (its gateway admits only those, and the Job needs nothing else),
with the model's API key from a Secret of that namespace (Secrets are per namespace: `make measure` prints the
command that creates it from the stack's `apiKeys`). It is bounded in time (activeDeadlineSeconds) and in
requests (`--max-requests` per rate), never retried, and removed an hour after it ends. While it runs the model
is held at a fixed replica count by KEDA's paused-replicas annotation on its ScaledObject, so the sweep measures
replicas, not the autoscaler.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from builders import bench_client
from builders.gateway import router
from builders.k8s import namespace_manifest
from builders.serving.workload import container_security, pod_security
from config.facts.conventions import PROJECT
from config.sections.models import ModelConfig

SCRIPT_DIR = "/opt/bench"
SCRIPT_FILE = "bench_client.py"
API_KEY_ENV = "VLLM_API_KEY"
PAUSED_REPLICAS = "autoscaling.keda.sh/paused-replicas"
"""KEDA's annotation that holds a ScaledObject's target at a replica count (keda.sh docs, ScaledObject spec)."""
RESOURCES = {"cpu": "1", "memory": "1Gi"}
TTL_SECONDS = 3600


def name(model: ModelConfig) -> str:
    return f"measure-{model.name}"


def labels(model: ModelConfig) -> dict[str, str]:
    return {"app.kubernetes.io/name": "measure", "app.kubernetes.io/part-of": PROJECT, "app.kubernetes.io/instance": model.name}


def api_key_secret(model: ModelConfig) -> str:
    return f"{model.name}-api-key"


def script_config_map(model: ModelConfig, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name(model), "namespace": namespace, "labels": labels(model)},
        "data": {SCRIPT_FILE: Path(bench_client.__file__).read_text(encoding="utf-8")},
    }


def client_args(
    model: ModelConfig, rates: list[float], *, duration: float, prompt: int, output: int, max_requests: int, api_key: bool
) -> list[str]:
    """The client's arguments: the model's in-cluster URL (its gateway's proxies), the sweep and its bounds, and a
    probe at the lowest rate with prompts twice as long (what a prompt token costs, apart from what a request does)."""
    return [
        "--base-url",
        router.url(model),
        "--model",
        model.name,
        *(["--api-key-env", API_KEY_ENV] if api_key else []),
        "--rates",
        ",".join(f"{r:g}" for r in rates),
        "--duration",
        f"{duration:g}",
        "--max-requests",
        str(max_requests),
        "--prompt-tokens",
        str(prompt),
        "--probe-prompt-tokens",
        str(2 * prompt),
        "--output-tokens",
        str(output),
    ]


def deadline_seconds(rates: list[float], duration: float, timeout: float) -> int:
    """Every step's arrivals (and the probe's) and its last request's time out, and a minute to start."""
    return int((len(rates) + 1) * (duration + timeout) + 60)


def job(model: ModelConfig, namespace: str, image: str, args: list[str], deadline: int, api_key: bool) -> dict[str, Any]:
    env: list[dict[str, Any]] = [{"name": "HOME", "value": "/tmp"}]
    if api_key:
        env.append({"name": API_KEY_ENV, "valueFrom": {"secretKeyRef": {"name": api_key_secret(model), "key": "api-key"}}})
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name(model), "namespace": namespace, "labels": labels(model)},
        "spec": {
            "backoffLimit": 0,
            "activeDeadlineSeconds": deadline,
            "ttlSecondsAfterFinished": TTL_SECONDS,
            "template": {
                "metadata": {"labels": labels(model)},
                "spec": {
                    "restartPolicy": "Never",
                    "automountServiceAccountToken": False,
                    "enableServiceLinks": False,
                    "securityContext": pod_security(),
                    "containers": [
                        {
                            "name": "bench",
                            "image": image,
                            "imagePullPolicy": "IfNotPresent",
                            "command": ["python3", f"{SCRIPT_DIR}/{SCRIPT_FILE}", *args],
                            "env": env,
                            "resources": {"requests": dict(RESOURCES), "limits": dict(RESOURCES)},
                            "securityContext": container_security(),
                            "volumeMounts": [
                                {"name": "script", "mountPath": SCRIPT_DIR, "readOnly": True},
                                {"name": "tmp", "mountPath": "/tmp"},
                            ],
                        }
                    ],
                    "volumes": [
                        {"name": "script", "configMap": {"name": name(model), "defaultMode": 0o444}},
                        {"name": "tmp", "emptyDir": {"sizeLimit": "1Gi"}},
                    ],
                },
            },
        },
    }


def client_namespace(namespace: str) -> dict[str, Any]:
    """The client namespace, where it does not exist yet: restricted, as every namespace the platform writes."""
    return namespace_manifest(namespace, "restricted")
