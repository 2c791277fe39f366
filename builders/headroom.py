"""Warm GPU headroom: the PriorityClass, namespace and one placeholder Deployment per pool. Pure.

The shape (how many pods, what each requests) comes from config/derived/headroom.py.
"""

from __future__ import annotations

from typing import Any

from builders.k8s import namespace_manifest
from builders.serving.workload import container_security, pod_security, pool_tolerations
from config.derived.headroom import Placeholders
from config.facts.conventions import (
    HEADROOM_NAMESPACE,
    HEADROOM_PRIORITY,
    HEADROOM_PRIORITY_CLASS,
    POOL_LABEL,
    headroom_name,
)
from config.sections.gpu_pools import GpuPool

# Containers beyond the first only pull an image; they hold nothing.
PULL_ONLY = {"cpu": "10m", "memory": "16Mi"}

SLEEP = "sleep"
"""The one binary a placeholder runs: the model image must have it for the container to start at all."""


def probe() -> dict[str, Any]:
    """Liveness and readiness of a placeholder, which only sleeps: the probe shows the container can
    still start a process. `sleep 0` needs only the binary the command already runs (an image
    without a shell or `true` still passes); every 5 minutes, so it costs next to nothing."""
    return {"exec": {"command": [SLEEP, "0"]}, "periodSeconds": 300, "timeoutSeconds": 5, "failureThreshold": 3}


def priority_class() -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": HEADROOM_PRIORITY_CLASS},
        "value": HEADROOM_PRIORITY,
        "globalDefault": False,
        "description": "Placeholder pods that keep GPU headroom warm; every workload preempts them.",
    }


def namespace() -> dict[str, Any]:
    return namespace_manifest(HEADROOM_NAMESPACE, "restricted")


def network_policy() -> dict[str, Any]:
    """Placeholders only sleep: no traffic in or out."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "default-deny", "namespace": HEADROOM_NAMESPACE},
        "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]},
    }


SERVICE_ACCOUNT = "gpu-headroom"


def service_account() -> dict[str, Any]:
    """The placeholders' own identity (never the namespace's default), without an API token."""
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": SERVICE_ACCOUNT, "namespace": HEADROOM_NAMESPACE},
        "automountServiceAccountToken": False,
    }


def deployment(pool: GpuPool, shape: Placeholders, images: list[str]) -> dict[str, Any]:
    """Placeholders that hold the pool's headroom and keep its model images on the node."""
    name = headroom_name(pool.name)
    labels = {"app.kubernetes.io/name": "gpu-headroom", "app.kubernetes.io/instance": name}
    held = {"cpu": f"{shape.cpu_millis}m", "memory": f"{shape.memory_mib}Mi", shape.resource: str(shape.count)}
    containers = []
    for i, image in enumerate(sorted(set(images))):
        resources = held if i == 0 else PULL_ONLY
        containers.append(
            {
                "name": f"hold-{i}",
                "image": image,
                "imagePullPolicy": "IfNotPresent",
                "command": [SLEEP, "infinity"],
                "resources": {"requests": dict(resources), "limits": dict(resources)},
                "securityContext": container_security(),
                "livenessProbe": probe(),
                "readinessProbe": probe(),
            }
        )
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": HEADROOM_NAMESPACE, "labels": labels},
        "spec": {
            "replicas": shape.pods,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "priorityClassName": HEADROOM_PRIORITY_CLASS,
                    # Step aside at once when a replica needs the room.
                    "terminationGracePeriodSeconds": 0,
                    "serviceAccountName": SERVICE_ACCOUNT,
                    "automountServiceAccountToken": False,
                    "enableServiceLinks": False,
                    "securityContext": pod_security(),
                    "nodeSelector": {POOL_LABEL: pool.name},
                    "tolerations": pool_tolerations(pool),
                    "containers": containers,
                },
            },
        },
    }
