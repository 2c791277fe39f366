"""Escape hatches: extraValues may tune a chart, never replace what the platform derives or pins
(PROTECTED_VALUES, DERIVED_VALUES), nor bring back a GPU operator or monitoring component that breaks on EKS."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from config.derived.scheduling import uncovered
from config.errors import Problem
from config.sections.observability import EKS_UNREACHABLE_COMPONENTS
from config.sections.stack import StackConfig

# Chart values the program derives and other parts rely on: an escape hatch may not replace them.
# (section, dotted values path) -> the config field (or fact) to change instead.
PROTECTED_VALUES: dict[tuple[str, tuple[str, ...]], str] = {
    ("karpenter", ("podDisruptionBudget",)): "a drain of the system nodes must never take every Karpenter controller at once",
    ("nodeMonitoring", ("nodeAgent", "tolerations")): "the agent watches every node, whatever its taints",
    ("karpenter", ("priorityClassName",)): "Karpenter runs as system-cluster-critical, so nothing preempts the controller "
    "that brings capacity back",
}
"""Reliability settings an escape hatch may not remove."""


DERIVED_VALUES: dict[tuple[str, tuple[str, ...]], str] = {
    ("ingress", ("clusterName",)): "cluster.name",
    ("ingress", ("region",)): "aws:region",
    ("ingress", ("vpcId",)): "network (the VPC the stack creates or network.vpcId)",
    ("ingress", ("serviceAccount", "name")): "nothing: its Pod Identity association names this service account",
    ("ingress", ("serviceAccount", "create")): "nothing: the chart must create the service account the Pod Identity association names",
    **{
        ("ingress", (key,)): "nothing: the `alb` class's parameters close the model IngressGroup to the platform's namespaces"
        for key in ("ingressClass", "createIngressClassResource", "ingressClassParams", "disableIngressClassAnnotation")
    },
    ("karpenter", ("settings", "clusterName")): "cluster.name",
    ("karpenter", ("settings", "interruptionQueue")): "nothing: the stack creates the queue and names it after the cluster",
    ("karpenter", ("settings", "featureGates", "nodeOverlay")): "nothing: sharing pools need the NodeOverlays it enables",
    ("karpenter", ("serviceAccount", "name")): "nothing: its Pod Identity association or IRSA trust names this service account",
    ("karpenter", ("serviceAccount", "create")): "nothing: the chart must create the service account its identity names",
    ("karpenter", ("serviceAccount", "annotations", "eks.amazonaws.com/role-arn")): "karpenter.identity",
    ("karpenter", ("replicas",)): "karpenter.replicas",
    ("karpenter", ("nodeSelector",)): "nothing: Karpenter runs on the system nodes, never on the nodes it manages",
    ("keda", ("operator", "replicaCount")): "keda.operatorReplicas",
    ("observability", ("fullnameOverride",)): "nothing: the Prometheus address KEDA and the outputs use is derived from it",
    ("observability", ("prometheus", "service", "port")): "nothing: the Prometheus address KEDA and the outputs use includes it",
    ("observability", ("prometheus", "prometheusSpec", "retention")): "observability.retention",
    ("observability", ("prometheus", "prometheusSpec", "retentionSize")): "observability.retentionSize",
    ("observability", ("prometheus", "prometheusSpec", "storageSpec")): "observability.storageSize",
    **{
        ("observability", ("prometheus", "prometheusSpec", key)): (
            "nothing: the platform's monitors and rules live outside the chart's release and are selected only this way"
        )
        for key in (
            "podMonitorSelectorNilUsesHelmValues",
            "serviceMonitorSelectorNilUsesHelmValues",
            "ruleSelectorNilUsesHelmValues",
            "podMonitorSelector",
            "serviceMonitorSelector",
            "ruleSelector",
        )
    },
    ("observability", ("grafana", "admin")): "the grafanaAdminPassword secret",
    **{
        ("gateway", ("router", *path)): reason
        for path, reason in (
            (("modelServers",), "nothing: the pool selects the model's own pods on the labels they carry"),
            (("inferencePool",), "nothing: the pool is created and fails closed, as the proxies do"),
            (("proxy", "failOpen"), "nothing: a caller gets a 503 when the Endpoint Picker is down, never an unpicked request"),
            (("proxy", "mode"), "nothing: the proxies run as their own Deployment, the ALB's targets"),
            (("proxy", "proxyType"), "nothing: the platform writes the Envoy configuration"),
            (("proxy", "presets"), "nothing: the Envoy configuration serves /v1 only, with timeouts derived from the ALB's"),
            (("proxy", "replicas"), "gateway.proxyReplicas"),
            (("proxy", "resources"), "gateway.proxyResources"),
            (("epp", "replicas"), "gateway.eppReplicas"),
            (("epp", "resources"), "gateway.eppResources"),
            (("epp", "image"), "nothing: the Endpoint Picker's image is pinned (config/facts/versions.py)"),
            (("epp", "affinity"), "nothing: the Endpoint Pickers run on the system nodes, whose capacity counts them"),
            (("epp", "pluginsConfigFile"), "models[].routing"),
            (("epp", "pluginsCustomConfig"), "models[].routing"),
            (("monitoring",), "nothing: Prometheus scrapes the pickers through the namespace's NetworkPolicies"),
            (("extraServicePorts",), "nothing: the proxies' Service is the model's front door, on port 8081"),
            (("tokenizer",), "models[].routing.prefixCache"),
        )
    },
    **{
        ("nodeMonitoring", path): "nothing: exactly one DCGM host engine per GPU node (the agent's dcgm-server, on every GPU "
        "pool's nodes, whatever their taints), which the GPU operator's exporter reads"
        for path in (("dcgmAgent", "tolerations"), ("dcgmAgent", "affinity"), ("dcgmAgent", "nodeSelector"))
    },
    **{
        ("nodeMonitoring", (agent, "image", "region")): "aws:region (the agent's image comes from the EKS registry of the "
        "stack's region, or us-west-2's: builders/node_monitoring.py; dcgm-server runs the same image)"
        for agent in ("nodeAgent",)
    },
    **{
        ("gpuOperator", path): "nodeMonitoring.enabled (on, the exporter reads the node monitoring agent's DCGM host engine; "
        "off, it embeds its own: one engine per GPU node either way)"
        for path in (("dcgm", "enabled"), ("dcgmExporter", "env"), ("dcgmExporter", "hostNetwork"))
    },
    ("gpuOperator", ("devicePlugin", "config")): "gpuPools[].sharing (the device-plugin configs are rendered from the pools)",
    ("gpuOperator", ("mig", "strategy")): "nothing: MIG slices are requested as nvidia.com/mig-<profile> (mixed strategy)",
}


_SECTION_VALUES = {
    "ingress": lambda cfg: cfg.ingress.extra_values,
    "karpenter": lambda cfg: cfg.karpenter.extra_values,
    "keda": lambda cfg: cfg.keda.extra_values,
    "observability": lambda cfg: cfg.observability.extra_values,
    "gpuOperator": lambda cfg: cfg.gpu_operator.extra_values,
    "nodeMonitoring": lambda cfg: cfg.node_monitoring.extra_values,
    "gateway": lambda cfg: cfg.gateway.extra_values,
}


def has_path(values: Any, path: tuple[str, ...]) -> bool:
    """Whether nested chart values set this dotted path."""
    for key in path:
        if not isinstance(values, dict) or key not in values:
            return False
        values = values[key]
    return True


def rule_escape_hatches(cfg: StackConfig) -> Iterator[Problem]:
    """extraValues may tune a chart, not replace what the program derives and other parts rely on."""
    for (section, path), reason in PROTECTED_VALUES.items():
        if has_path(_SECTION_VALUES[section](cfg), path):
            yield Problem(
                f"{section}.extraValues.{'.'.join(path)}",
                f"is pinned by the platform: {reason}. Fix: remove the override",
            )
    for (section, path), instead in DERIVED_VALUES.items():
        if has_path(_SECTION_VALUES[section](cfg), path):
            dotted = ".".join(path)
            fix = (
                f"remove the override ({instead.removeprefix('nothing: ')})"
                if instead.startswith("nothing:")
                else (f"remove the override and set {instead} instead")
            )
            yield Problem(
                f"{section}.extraValues.{dotted}",
                "is derived by the platform, and other resources rely on the value it sets (an override would point "
                f"them at something that does not exist). Fix: {fix}",
            )


def rule_gpu_operator(cfg: StackConfig) -> Iterator[Problem]:
    """The GPU operator must leave the AMI's driver alone and run on every GPU node."""
    extra = cfg.gpu_operator.extra_values
    for component in ("driver", "toolkit"):
        section = extra.get(component)
        if isinstance(section, dict) and section.get("enabled") is True:
            yield Problem(
                f"gpuOperator.extraValues.{component}.enabled",
                f"must be false on EKS accelerated AMIs, which ship the NVIDIA {component}; a second "
                "copy fights the first and GPUs never register. Fix: remove the override",
            )
    mig_manager = extra.get("migManager")
    if isinstance(mig_manager, dict) and mig_manager.get("enabled") is True:
        yield Problem(
            "gpuOperator.extraValues.migManager.enabled",
            "must stay false: with the AMI's host driver the MIG manager restarts kubelet to change MIG mode and "
            "Karpenter's nodes never come back Ready (NVIDIA/gpu-operator#2415); MIG pools are partitioned at boot "
            "by their EC2NodeClass instead. Fix: remove the override",
        )
    daemonsets = extra.get("daemonsets")
    if isinstance(daemonsets, dict) and "tolerations" in daemonsets:
        tolerations = daemonsets["tolerations"] if isinstance(daemonsets["tolerations"], list) else []
        for pool in cfg.gpu_pools:
            for taint in uncovered(pool.node_taints(), tolerations):
                shown = f"{taint['key']}={taint['value']}:{taint['effect']}" if taint.get("value") else f"{taint['key']}:{taint['effect']}"
                yield Problem(
                    "gpuOperator.extraValues.daemonsets.tolerations",
                    f"gpu NodePool '{pool.name}' taint {shown} is not tolerated by the GPU operator's daemonsets; "
                    "its GPUs would never register and Karpenter would never mark the nodes initialized. "
                    "Fix: remove the override (the platform tolerates every pool taint) or add a toleration for it",
                )


def rule_observability_overrides(cfg: StackConfig) -> Iterator[Problem]:
    """The monitoring escape hatch must not bring back what EKS cannot serve or what destroy leaks."""
    extra = cfg.observability.extra_values
    for component in EKS_UNREACHABLE_COMPONENTS:
        section = extra.get(component)
        if isinstance(section, dict) and section.get("enabled") is True:
            yield Problem(
                f"observability.extraValues.{component}.enabled",
                "EKS does not expose this component to scrape, so its Down alert would fire forever and page on "
                "nothing. Fix: remove the override",
            )
    spec = (extra.get("prometheus") or {}).get("prometheusSpec") if isinstance(extra.get("prometheus"), dict) else None
    policy = spec.get("persistentVolumeClaimRetentionPolicy") if isinstance(spec, dict) else None
    if isinstance(policy, dict) and policy.get("whenDeleted") == "Retain":
        yield Problem(
            "observability.extraValues.prometheus.prometheusSpec.persistentVolumeClaimRetentionPolicy.whenDeleted",
            "is Retain: `pulumi destroy` would leave Prometheus's EBS volume behind, billed and outside the stack. "
            "Fix: remove the override, or snapshot the volume before destroying if the metrics must be kept",
            "warning",
        )
