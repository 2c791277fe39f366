"""What the system node group must hold: a sourced table of every system pod's requests. Pure.

Karpenter, the monitoring stack, KEDA, the GPU operator's controllers, the load balancer
controller, CoreDNS, the EBS CSI controller and the DaemonSets of every node run on the
on-demand system node group, which nothing scales. Each row gives the CPU and memory one pod
requests (all its containers), how many run, and where the number comes from: the value this
program sets (then the builders read it from here), or the default of the pinned chart or EKS
add-on it relies on (then the tests compare it with `../shared/schemas/helm-values/` where that
chart's values file is kept). Later issues that add system pods add their rows here.

The rule (config/checks/fit.py rule_system_capacity): with one system node lost, the others' allocatable capacity still
holds every workload. Pods that must not share a node (Karpenter's required anti-affinity) count
once per surviving node at most.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from config.derived.exposure import exposed_models
from config.facts import catalog, versions
from config.sections.gateway import TOKENIZER_RESOURCES
from config.sections.stack import StackConfig
from config.sections.types import parse_quantity

MIB = 2**20


@dataclass(frozen=True)
class Requests:
    """CPU and memory one pod requests, as Kubernetes quantities."""

    cpu: str
    memory: str

    @property
    def cpu_millis(self) -> int:
        return round(parse_quantity(self.cpu) * 1000)

    @property
    def memory_mib(self) -> int:
        return math.ceil(parse_quantity(self.memory) / MIB)

    def as_values(self) -> dict[str, str]:
        return {"cpu": self.cpu, "memory": self.memory}


# -- requests this program sets (the builders read them from here) ----------------------------------
KARPENTER_CONTROLLER = Requests("1", "1Gi")
"""Karpenter's controller: the upstream guide's sizing (requests equal limits)."""
PROMETHEUS = Requests("500m", "2Gi")
"""Prometheus for a few models' and nodes' series at 10-15 s scrapes."""


@dataclass(frozen=True)
class SystemWorkload:
    """One system workload on the system node group."""

    name: str
    kind: Literal["Deployment", "StatefulSet", "DaemonSet"]
    replicas: int
    """Pods of a Deployment or StatefulSet; ignored for a DaemonSet (one per node)."""
    requests: Requests
    """Per pod, summed over its containers."""
    source: str
    one_per_node: bool = False
    """Required pod anti-affinity by hostname: replicas never share a node."""
    chart_default: tuple[str, tuple[str, ...]] | None = None
    """(chart values file, key path of the requests) the number is the default of, for the tests."""


Kind = Literal["Deployment", "StatefulSet", "DaemonSet"]


def _row(
    name: str, kind: Kind, replicas: int, cpu: str, memory: str, source: str, chart_default: tuple[str, tuple[str, ...]] | None = None
) -> SystemWorkload:
    return SystemWorkload(name, kind, replicas, Requests(cpu, memory), source, chart_default=chart_default)


KEDA = f"keda-{versions.KEDA_VERSION}"
GPU_OPERATOR = f"gpu-operator-{versions.GPU_OPERATOR_VERSION}"
NODE_MONITORING_AGENT = f"eks-node-monitoring-agent-{versions.NODE_MONITORING_AGENT_VERSION}"
LWS = f"lws-{versions.LWS_VERSION}"


def workloads(cfg: StackConfig) -> list[SystemWorkload]:
    """Every pod the platform puts on the system nodes for this stack (pods without requests left out)."""
    karpenter = SystemWorkload(
        "karpenter",
        "Deployment",
        cfg.karpenter.replicas,
        KARPENTER_CONTROLLER,
        "builders/karpenter/values.py controller.resources; chart karpenter-1.14.1 affinity requires one per node",
        one_per_node=True,
    )
    rows = [
        karpenter,
        SystemWorkload("prometheus", "StatefulSet", 1, PROMETHEUS, "builders/observability/values.py prometheusSpec.resources"),
        # kube-prometheus-stack 88.5.3 sets no requests for the operator, kube-state-metrics, Grafana,
        # node-exporter or the config reloaders (their flags are passed as 0); prometheus-operator
        # v0.93 gives Alertmanager 200Mi of memory itself (pkg/alertmanager/statefulset.go).
        _row("alertmanager", "StatefulSet", 1, "0", "200Mi", "prometheus-operator v0.93 default for Alertmanager"),
        _row(
            "keda-operator",
            "Deployment",
            cfg.keda.operator_replicas,
            "100m",
            "100Mi",
            f"chart {KEDA} resources.operator",
            (KEDA, ("resources", "operator", "requests")),
        ),
        _row(
            "keda-metrics-apiserver",
            "Deployment",
            1,
            "100m",
            "100Mi",
            f"chart {KEDA} resources.metricServer",
            (KEDA, ("resources", "metricServer", "requests")),
        ),
        _row(
            "keda-admission-webhooks",
            "Deployment",
            1,
            "100m",
            "100Mi",
            f"chart {KEDA} resources.webhooks",
            (KEDA, ("resources", "webhooks", "requests")),
        ),
        _row(
            "gpu-operator",
            "Deployment",
            1,
            "200m",
            "100Mi",
            f"chart {GPU_OPERATOR} operator.resources",
            (GPU_OPERATOR, ("operator", "resources", "requests")),
        ),
        _row("nfd-master", "Deployment", 1, "100m", "128Mi", "node-feature-discovery 0.19.0 (gpu-operator subchart) master.resources"),
        _row("nfd-gc", "Deployment", 1, "10m", "128Mi", "node-feature-discovery 0.19.0 gc.resources"),
        # EKS managed add-ons: AWS does not publish their manifests; eksctl's copies and the charts they follow
        _row("coredns", "Deployment", 2, "100m", "70Mi", "EKS CoreDNS add-on v1.13.2 (eksctl coredns-1.35.json)"),
        _row("ebs-csi-controller", "Deployment", 2, "60m", "240Mi", "aws-ebs-csi-driver chart 2.56.0: six containers at 10m/40Mi"),
        _row("aws-node", "DaemonSet", 0, "50m", "0", "VPC CNI v1.23.1: aws-node and network policy agent at 25m each"),
        _row("kube-proxy", "DaemonSet", 0, "100m", "0", "EKS kube-proxy add-on (100m in every published EKS manifest; 1.35 unpublished)"),
        _row("ebs-csi-node", "DaemonSet", 0, "30m", "120Mi", "aws-ebs-csi-driver chart 2.56.0: three containers at 10m/40Mi"),
        _row("nfd-worker", "DaemonSet", 0, "5m", "64Mi", "node-feature-discovery 0.19.0 worker.resources"),
    ]
    if cfg.node_monitoring.enabled:
        # its dcgm-server (no requests) runs on the GPU pools' nodes only (builders/node_monitoring.py)
        rows.append(
            _row(
                "eks-node-monitoring-agent",
                "DaemonSet",
                0,
                "10m",
                "30Mi",
                f"chart {NODE_MONITORING_AGENT} nodeAgent.resources",
                (NODE_MONITORING_AGENT, ("nodeAgent", "resources", "requests")),
            )
        )
    if any(m.multi_node for m in cfg.models):
        # the EFA device plugin runs on the EFA pools' nodes only (builders/efa.py)
        rows.append(_row("lws-controller-manager", "Deployment", 1, "1", "1Gi", f"chart {LWS} resources", (LWS, ("resources", "requests"))))
    if exposed_models(cfg):
        rows.append(_row("aws-load-balancer-controller", "Deployment", 2, "0", "0", "chart 3.5.0: no default requests"))
    rows += gateway_rows(cfg)
    return rows


def gateway_rows(cfg: StackConfig) -> list[SystemWorkload]:
    """Per model: its gateway's Endpoint Pickers (with the tokenizer sidecar
    under precise prefix-cache routing) and its Envoy proxies, sized by `gateway` (config/sections/gateway.py)."""
    gw = cfg.gateway
    rows: list[SystemWorkload] = []
    tokenizer = Requests(TOKENIZER_RESOURCES.cpu, TOKENIZER_RESOURCES.memory)
    for m in cfg.models:
        picker = Requests(gw.epp_resources.cpu, gw.epp_resources.memory)
        if m.routing.prefix_cache == "precise":
            picker = Requests(f"{picker.cpu_millis + tokenizer.cpu_millis}m", f"{picker.memory_mib + tokenizer.memory_mib}Mi")
        rows += [
            SystemWorkload(
                f"{m.name}-epp", "Deployment", gw.epp_replicas or 1, picker, "gateway.eppResources (builders/gateway/router.py)"
            ),
            SystemWorkload(
                f"{m.name}-proxy",
                "Deployment",
                gw.proxy_replicas,
                # memory requested at its limit: the platform's proxies (builders/gateway/proxies.py resources)
                Requests(gw.proxy_resources.cpu, gw.proxy_resources.memory_limit),
                "gateway.proxyResources (builders/gateway/proxies.py)",
            ),
        ]
    return rows


# -- what a node offers ---------------------------------------------------------------------------
MAX_PODS = {"m7i.large": 29, "m7i.xlarge": 58, "m7i.2xlarge": 58, "m6i.large": 29, "m6i.xlarge": 58}
"""Pods per node with the VPC CNI's secondary IPs (awslabs/amazon-eks-ami eni-max-pods.txt)."""
EVICTION_HARD_MIB = 100
VM_MEMORY_OVERHEAD = 0.075
"""The kernel keeps part of the EC2 memory: Karpenter plans with 7.5 % less until it has seen a node."""


def kube_reserved_cpu_millis(vcpus: int) -> int:
    """kubelet's reserved CPU on EKS AMIs (nodeadm, and Karpenter's own estimate): 6 % of the first
    core, 1 % of the second, 0.5 % of the next two, 0.25 % of the rest."""
    shares = (60.0, 10.0, 5.0, 5.0)
    return math.ceil(sum(shares[i] if i < len(shares) else 2.5 for i in range(vcpus)))


def kube_reserved_memory_mib(max_pods: int) -> int:
    """kubelet's reserved memory on EKS AMIs: 11 MiB per pod plus 255 MiB."""
    return 11 * max_pods + 255


def _memory_capacity_mib(instance: catalog.InstanceType) -> int:
    nominal = instance.memory_gib * 1024
    return nominal - math.ceil(nominal * VM_MEMORY_OVERHEAD)


@dataclass(frozen=True)
class Allocatable:
    cpu_millis: int
    memory_mib: int


def allocatable(instance: catalog.InstanceType) -> Allocatable:
    """What pods can request on one node of this type."""
    max_pods = MAX_PODS[instance.name]
    return Allocatable(
        cpu_millis=instance.vcpus * 1000 - kube_reserved_cpu_millis(instance.vcpus),
        memory_mib=_memory_capacity_mib(instance) - kube_reserved_memory_mib(max_pods) - EVICTION_HARD_MIB,
    )


@dataclass(frozen=True)
class Shortfall:
    """Why the surviving system nodes cannot hold the system pods."""

    nodes: int
    instance: catalog.InstanceType
    need: Allocatable
    room: Allocatable


def shortfall(cfg: StackConfig) -> Shortfall | None:
    """None when minSize - 1 nodes of the group's smallest type hold every system pod."""
    group = cfg.cluster.system_node_group
    instance = min((catalog.INSTANCE_TYPES[t] for t in group.instance_types), key=lambda t: (t.vcpus, t.memory_gib))
    nodes = max(1, group.min_size - 1)
    per_node = allocatable(instance)
    rows = workloads(cfg)
    daemon_cpu = sum(w.requests.cpu_millis for w in rows if w.kind == "DaemonSet")
    daemon_mem = sum(w.requests.memory_mib for w in rows if w.kind == "DaemonSet")
    pods = [(w, min(w.replicas, nodes) if w.one_per_node else w.replicas) for w in rows if w.kind != "DaemonSet"]
    need = Allocatable(
        cpu_millis=sum(w.requests.cpu_millis * n for w, n in pods),
        memory_mib=sum(w.requests.memory_mib * n for w, n in pods),
    )
    room = Allocatable(
        cpu_millis=nodes * (per_node.cpu_millis - daemon_cpu),
        memory_mib=nodes * (per_node.memory_mib - daemon_mem),
    )
    largest_cpu = max((w.requests.cpu_millis for w, _ in pods), default=0)
    largest_mem = max((w.requests.memory_mib for w, _ in pods), default=0)
    fits = (
        need.cpu_millis <= room.cpu_millis
        and need.memory_mib <= room.memory_mib
        and largest_cpu <= per_node.cpu_millis - daemon_cpu
        and largest_mem <= per_node.memory_mib - daemon_mem
    )
    return None if fits else Shortfall(nodes, instance, need, room)
