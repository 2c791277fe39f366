"""Pure Helm values of the LeaderWorkerSet controller (chart lws v0.10.0), for models whose replicas span nodes."""

from __future__ import annotations

from typing import Any

from builders.k8s import namespace_manifest
from config.facts import versions

NAMESPACE = "lws-system"
RELEASE = "lws"
"""The release and namespace of the chart's own guide (its webhook Service is `lws-webhook-service` there)."""
WEBHOOK_PORT = 9443
"""Where the manager serves its admission and conversion webhooks (chart lws v0.10.0 values `service.port`,
controller-runtime's default webhook port), which the control plane calls."""


def namespace() -> dict[str, Any]:
    """The controller's namespace, at the restricted Pod Security profile."""
    return namespace_manifest(NAMESPACE, "restricted")


def values() -> dict[str, Any]:
    """The pinned image (the chart's git values say `main` / Always), and the seccomp profile `restricted` asks for
    beside the chart's non-root pod (its container already drops every capability on a read-only root). The CRDs
    stay out of the release: components/lws.py applies them from the tag, so no chart upgrade deletes them."""
    return {
        "image": {"manager": {"repository": "registry.k8s.io/lws/lws", "tag": versions.LWS_IMAGE_TAG, "pullPolicy": "IfNotPresent"}},
        "podSecurityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
    }
