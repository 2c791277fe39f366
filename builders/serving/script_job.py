"""The Job the weights script runs in (builders/serving/weights_script.py), as the populate Job and the compile
warm-up both have it: one container of the model's image on a node of its pool, tries retried within the Job's
deadline, each under its own, and an egress-only NetworkPolicy. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from builders import network_policies as netpol
from builders.serving import weights_script
from builders.serving.workload import container_security, pod_security, pool_tolerations
from config.facts.conventions import POOL_LABEL
from config.sections.gpu_pools import GpuPool
from config.sections.models import ModelConfig


@dataclass(frozen=True)
class Container:
    """The Job's one container: the script's command in the model's image."""

    name: str
    image: str
    command: list[str]
    env: list[dict[str, Any]]
    resources: dict[str, Any]
    mounts: list[dict[str, Any]]


@dataclass(frozen=True)
class Deadlines:
    """The Job's backoff limit, its deadline (all tries), one try's deadline, and how long a finished Job stays
    (None: until the next `pulumi up` replaces it)."""

    backoff_limit: int
    job_seconds: int
    try_seconds: int
    ttl_seconds: int | None = None


def job(
    model: ModelConfig,
    pool: GpuPool,
    *,
    name: str,
    labels: dict[str, str],
    annotations: dict[str, str],
    deadlines: Deadlines,
    service_account: str,
    node_labels: dict[str, str],
    container: Container,
    volumes: list[dict[str, Any]],
) -> dict[str, Any]:
    """The Job in the model's namespace, on a node of the pool that carries `node_labels` too.

    Rules of the pod failure policy apply in order, the first match wins. Exit code 2 is a problem a retry
    cannot fix (weights_script.PERMANENT): stop at once. A pod that a spot interruption, a drain or a
    preemption evicted (condition DisruptionTarget) is retried without counting against backoffLimit."""
    spec: dict[str, Any] = {"backoffLimit": deadlines.backoff_limit, "activeDeadlineSeconds": deadlines.job_seconds}
    if deadlines.ttl_seconds is not None:
        spec["ttlSecondsAfterFinished"] = deadlines.ttl_seconds
    permanent = {"containerName": container.name, "operator": "In", "values": [weights_script.PERMANENT]}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": model.name, "labels": labels, "annotations": annotations},
        "spec": {
            **spec,
            "podFailurePolicy": {
                "rules": [
                    {"action": "FailJob", "onExitCodes": permanent},
                    {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
                ]
            },
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {
                    "restartPolicy": "Never",
                    # a try stuck or slow past its deadline fails and is retried within the Job's
                    "activeDeadlineSeconds": deadlines.try_seconds,
                    "serviceAccountName": service_account,
                    "automountServiceAccountToken": False,
                    "enableServiceLinks": False,
                    "securityContext": pod_security(),
                    "nodeSelector": {POOL_LABEL: pool.name, **node_labels},
                    "tolerations": pool_tolerations(pool),
                    "containers": [
                        {
                            "name": container.name,
                            "image": container.image,
                            "imagePullPolicy": "IfNotPresent",
                            "command": container.command,
                            "env": container.env,
                            "resources": container.resources,
                            "securityContext": container_security(),
                            "volumeMounts": container.mounts,
                        }
                    ],
                    "volumes": volumes,
                },
            },
        },
    }


def service_account(model: ModelConfig, name: str, labels: dict[str, str]) -> dict[str, Any]:
    """The Job's service account in the model's namespace; it mounts no API token by default."""
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": name, "namespace": model.name, "labels": labels},
        "automountServiceAccountToken": False,
    }


def network_policy(
    model: ModelConfig, name: str, component: dict[str, str], vpc_cidrs: list[str], interface_endpoints: list[str]
) -> dict[str, Any]:
    """The Job's pods (those of `component` in the model's namespace) take no traffic; they reach DNS, HTTPS
    (S3, and Hugging Face for the populate Job) and the Pod Identity agent."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": model.name},
        "spec": {
            "podSelector": {"matchLabels": component},
            "policyTypes": ["Ingress", "Egress"],
            "egress": [netpol.dns_egress(), *netpol.internet_https_egress(vpc_cidrs, interface_endpoints), netpol.pod_identity_egress()],
        },
    }
