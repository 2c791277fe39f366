"""Create a Kubernetes object from a builder's manifest dict, with the typed resource class."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any, TypeVar

import pulumi
import pulumi_kubernetes as k8s

_TYPED: dict[tuple[str, str], Any] = {
    ("v1", "Namespace"): k8s.core.v1.Namespace,
    ("v1", "ServiceAccount"): k8s.core.v1.ServiceAccount,
    ("v1", "Service"): k8s.core.v1.Service,
    ("v1", "ConfigMap"): k8s.core.v1.ConfigMap,
    ("batch/v1", "Job"): k8s.batch.v1.Job,
    ("scheduling.k8s.io/v1", "PriorityClass"): k8s.scheduling.v1.PriorityClass,
    ("apps/v1", "Deployment"): k8s.apps.v1.Deployment,
    ("policy/v1", "PodDisruptionBudget"): k8s.policy.v1.PodDisruptionBudget,
    ("networking.k8s.io/v1", "NetworkPolicy"): k8s.networking.v1.NetworkPolicy,
    ("networking.k8s.io/v1", "Ingress"): k8s.networking.v1.Ingress,
}


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def create(name: str, manifest: dict[str, Any], opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
    """The manifest's top-level fields become the resource's arguments; nested dicts go as they are."""
    api_version, kind = manifest["apiVersion"], manifest["kind"]
    body = {k: v for k, v in manifest.items() if k not in ("apiVersion", "kind")}
    typed = _TYPED.get((api_version, kind))
    if typed is not None:
        resource: pulumi.CustomResource = typed(name, opts=opts, **{_snake(k): v for k, v in body.items()})
        return resource
    metadata = body.pop("metadata")
    return k8s.apiextensions.CustomResource(name, api_version=api_version, kind=kind, metadata=metadata, opts=opts, **body)


_T = TypeVar("_T")


def create_resolved(
    name: str, value: pulumi.Output[_T], build: Callable[[_T], dict[str, Any]], sample: _T, opts: pulumi.ResourceOptions
) -> pulumi.CustomResource:
    """A manifest whose body needs deploy-time values (the weights bucket, the cache's registry).

    Its identity (apiVersion, kind, metadata) is taken from `build(sample)` and must not depend on
    the value, so a preview shows the object's name even while the value is unknown; the rest of the
    manifest waits for the value.
    """
    static = build(sample)
    typed = _TYPED.get((static["apiVersion"], static["kind"]))
    resolved = value.apply(build)
    fields = [k for k in static if k not in ("apiVersion", "kind", "metadata")]
    if typed is None:
        # a custom resource (a LeaderWorkerSet): its fields go by their own names
        custom = {k: resolved.apply(functools.partial(_field, key=k)) for k in fields}
        return k8s.apiextensions.CustomResource(
            name, api_version=static["apiVersion"], kind=static["kind"], metadata=static["metadata"], opts=opts, **custom
        )
    body = {_snake(k): resolved.apply(functools.partial(_field, key=k)) for k in fields}
    resource: pulumi.CustomResource = typed(name, opts=opts, metadata=static["metadata"], **body)
    return resource


def _field(manifest: dict[str, Any], key: str) -> Any:
    return manifest[key]
