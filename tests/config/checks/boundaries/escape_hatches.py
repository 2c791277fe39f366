"""Boundary pairs of config/checks/escape_hatches.py (see __init__).

extraValues are checked by key path: the bad case sets the pinned or derived path itself, the good one a sibling
key at the same depth under the same parents (what an escape hatch may tune)."""

from __future__ import annotations

from typing import Any

from config.sections.gpu_pools import GpuPool
from tests.config.checks.boundaries import Mutation, Pair
from tests.support.mutations import p0


def _extra(section: str, values: dict[str, Any]) -> Mutation:
    def mutate(d: dict[str, Any]) -> None:
        d.setdefault(section, {})["extraValues"] = values

    return mutate


# -- rule_gpu_operator ---------------------------------------------------------------------------------


def _enabled(component: str, on: bool) -> Mutation:
    return _extra("gpuOperator", {component: {"enabled": on}})


def _tolerations(drop_last: bool) -> Mutation:
    """The operator's daemonsets tolerating each of the pool's taints exactly (its own taint added to the GPU one),
    or all but the last."""

    def mutate(d: dict[str, Any]) -> None:
        p0(d)["taints"] = [{"key": "team", "value": "ml", "effect": "NoSchedule"}]
        taints = GpuPool.model_validate(p0(d)).node_taints()
        tolerations = [{**t, "operator": "Equal"} for t in taints]
        _extra("gpuOperator", {"daemonsets": {"tolerations": tolerations[:-1] if drop_last else tolerations}})(d)

    return mutate


def _toleration_value(value: str) -> Mutation:
    """Every taint tolerated, the pool's own one by value: another value leaves it uncovered."""

    def mutate(d: dict[str, Any]) -> None:
        p0(d)["taints"] = [{"key": "team", "value": "ml", "effect": "NoSchedule"}]
        tolerations = [
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "team", "operator": "Equal", "value": value, "effect": "NoSchedule"},
        ]
        _extra("gpuOperator", {"daemonsets": {"tolerations": tolerations}})(d)

    return mutate


PAIRS = [
    Pair(
        "escape_hatches.rule_gpu_operator",
        "driver.enabled true vs false",
        bad=_enabled("driver", True),
        good=_enabled("driver", False),
        path="gpuOperator.extraValues.driver.enabled",
        fix="must be false on EKS accelerated AMIs",
    ),
    Pair(
        "escape_hatches.rule_gpu_operator",
        "toolkit.enabled true vs false",
        bad=_enabled("toolkit", True),
        good=_enabled("toolkit", False),
        path="gpuOperator.extraValues.toolkit.enabled",
        fix="ship the NVIDIA toolkit",
    ),
    Pair(
        "escape_hatches.rule_gpu_operator",
        "migManager.enabled true vs false",
        bad=_enabled("migManager", True),
        good=_enabled("migManager", False),
        path="gpuOperator.extraValues.migManager.enabled",
        fix="MIG pools are partitioned at boot",
    ),
    Pair(
        "escape_hatches.rule_gpu_operator",
        "daemonsets.tolerations covering every pool taint but one vs every one",
        bad=_tolerations(drop_last=True),
        good=_tolerations(drop_last=False),
        path="gpuOperator.extraValues.daemonsets.tolerations",
        fix="or add a toleration for it",
    ),
    Pair(
        "escape_hatches.rule_gpu_operator",
        "a toleration of the pool's taint by another value (Equal) vs its value",
        bad=_toleration_value("mlx"),
        good=_toleration_value("ml"),
        path="gpuOperator.extraValues.daemonsets.tolerations",
        fix="taint team=ml:NoSchedule is not tolerated",
    ),
    Pair(
        "escape_hatches.rule_escape_hatches",
        "a pinned value (nodeMonitoring nodeAgent.tolerations) vs a sibling (nodeAgent.resources)",
        bad=_extra("nodeMonitoring", {"nodeAgent": {"tolerations": []}}),
        good=_extra("nodeMonitoring", {"nodeAgent": {"resources": {"requests": {"cpu": "20m"}}}}),
        path="nodeMonitoring.extraValues.nodeAgent",
        fix="is pinned by the platform",
    ),
    Pair(
        "escape_hatches.rule_escape_hatches",
        "a derived value set by a field (keda operator.replicaCount) vs a sibling (operator.resources)",
        bad=_extra("keda", {"operator": {"replicaCount": 3}}),
        good=_extra("keda", {"operator": {"resources": {"requests": {"cpu": "200m"}}}}),
        path="keda.extraValues.operator",
        fix="remove the override and set keda.operatorReplicas instead",
    ),
    Pair(
        "escape_hatches.rule_escape_hatches",
        "a derived value three keys deep (karpenter settings.featureGates.nodeOverlay) vs a sibling gate",
        bad=_extra("karpenter", {"settings": {"featureGates": {"nodeOverlay": False}}}),
        good=_extra("karpenter", {"settings": {"featureGates": {"spotToSpotConsolidation": True}}}),
        path="karpenter.extraValues.settings",
        fix="remove the override (sharing pools need the NodeOverlays it enables)",
    ),
    Pair(
        "escape_hatches.rule_escape_hatches",
        "a derived annotation (karpenter serviceAccount.annotations role-arn) vs another annotation",
        bad=_extra("karpenter", {"serviceAccount": {"annotations": {"eks.amazonaws.com/role-arn": "arn:aws:iam::1:role/x"}}}),
        good=_extra("karpenter", {"serviceAccount": {"annotations": {"example.com/owner": "platform"}}}),
        path="karpenter.extraValues.serviceAccount",
        fix="remove the override and set karpenter.identity instead",
    ),
    Pair(
        "escape_hatches.rule_escape_hatches",
        "a derived router value (gateway router.proxy.failOpen) vs a sibling (router.proxy.logLevel)",
        bad=_extra("gateway", {"router": {"proxy": {"failOpen": True}}}),
        good=_extra("gateway", {"router": {"proxy": {"logLevel": "debug"}}}),
        path="gateway.extraValues.router",
        fix="a caller gets a 503 when the Endpoint Picker is down",
    ),
    Pair(
        "escape_hatches.rule_observability_overrides",
        "kubeScheduler.enabled true vs false",
        bad=_extra("observability", {"kubeScheduler": {"enabled": True}}),
        good=_extra("observability", {"kubeScheduler": {"enabled": False}}),
        path="observability.extraValues.kubeScheduler.enabled",
        fix="EKS does not expose this component to scrape",
    ),
    Pair(
        "escape_hatches.rule_observability_overrides",
        "prometheusSpec.persistentVolumeClaimRetentionPolicy.whenDeleted Retain vs Delete",
        bad=_extra(
            "observability",
            {"prometheus": {"prometheusSpec": {"persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain"}}}},
        ),
        good=_extra(
            "observability",
            {"prometheus": {"prometheusSpec": {"persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete"}}}},
        ),
        path="observability.extraValues.prometheus.prometheusSpec.persistentVolumeClaimRetentionPolicy.whenDeleted",
        fix="snapshot the volume before destroying",
        severity="warning",
    ),
]
