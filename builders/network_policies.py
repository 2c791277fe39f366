"""NetworkPolicies of every namespace the platform creates, and of its controllers in kube-system.

Enforced by the VPC CNI's network policy agent (the add-on runs with `enableNetworkPolicy`). Each
namespace starts from default deny; every flow the platform needs is then opened by name. What the
agent does that shapes these rules (aws/aws-network-policy-agent, amazon-network-policy-controller-k8s):

- traffic to and from the pod's own node IP is always allowed (kubelet probes need no rule);
- egress to a ClusterIP is judged before kube-proxy's DNAT, on the Service address: the API server
  is reached at the first address of the service range (EKS picks 10.100.0.0/16 or 172.20.0.0/16),
  and at its network interfaces in the cluster's subnets by clients that use the endpoint's name;
- the EKS control plane calls webhooks and API services from network interfaces in the cluster's
  subnets, which no pod or namespace selector matches: those ports admit the VPC's address range;
- link-local addresses are not exempt: the Pod Identity agent (169.254.170.23:80) needs a rule;
- host-network pods (node-exporter, the Pod Identity agent, the node monitoring agent and, reading its
  DCGM host engine, the GPU operator's dcgm-exporter) are outside every policy; Prometheus reaches
  them, and the kubelets, at node addresses in the VPC.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from builders import lws
from builders.network import subnet_plan
from config.derived.exposure import exposed_models
from config.facts.conventions import (
    KARPENTER_NAMESPACE,
    KEDA_NAMESPACE,
    KUBE_SYSTEM,
    LOAD_BALANCER_CONTROLLER_NAMESPACE,
    NAMESPACE_NAME_LABEL,
)
from config.sections.network import ExistingVpc
from config.sections.stack import StackConfig

API_SERVER_SERVICE_ADDRESSES = ("10.100.0.1/32", "172.20.0.1/32")
"""The `kubernetes` Service: the first address of whichever service range EKS chose for the cluster."""
POD_IDENTITY_AGENT = ("169.254.170.23/32", 80)
"""The EKS Pod Identity agent on every node (host network, link-local)."""
NOT_THE_INTERNET = ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "169.254.0.0/16")
"""Private, carrier-grade NAT and link-local ranges: 'HTTPS to the internet' excludes them (and the VPC)."""

PROMETHEUS_PORT = 9090
CONTROLLER_METRICS_PORT = 8080
"""Karpenter, the load balancer controller, KEDA's operator and metrics server, the GPU operator."""
DCGM_EXPORTER_PORT = 9400
NODE_SCRAPE_PORTS = (9100, 10250)
"""node-exporter (host network) and the kubelets, scraped at node addresses."""
KEDA_CONTROL_PLANE_PORTS = (9443, 6443)
"""KEDA's admission webhooks and its external metrics API server (called by the control plane)."""
PROMETHEUS_OPERATOR_WEBHOOK_PORT = 10250
LOAD_BALANCER_CONTROLLER_WEBHOOK_PORT = 9443
KARPENTER_POD = {"app.kubernetes.io/name": "karpenter"}
LOAD_BALANCER_CONTROLLER_POD = {"app.kubernetes.io/name": "aws-load-balancer-controller"}
ALERTMANAGER_POD = {"app.kubernetes.io/name": "alertmanager"}
PROMETHEUS_POD = {"app.kubernetes.io/name": "prometheus"}


def namespace_peer(name: str) -> dict[str, Any]:
    return {"namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: name}}}


def tcp(*ports: int) -> list[dict[str, Any]]:
    return [{"protocol": "TCP", "port": p} for p in ports]


def cidr_peers(cidrs: list[str] | tuple[str, ...]) -> list[dict[str, Any]]:
    return [{"ipBlock": {"cidr": c}} for c in cidrs]


def policy(name: str, namespace: str, pods: dict[str, str] | None, ingress: list[Any] | None, egress: list[Any] | None) -> dict[str, Any]:
    """A NetworkPolicy; a direction given (even empty) isolates the selected pods in that direction."""
    types = [t for t, rules in (("Ingress", ingress), ("Egress", egress)) if rules is not None]
    spec: dict[str, Any] = {"podSelector": {"matchLabels": dict(pods)} if pods else {}, "policyTypes": types}
    if ingress:
        spec["ingress"] = ingress
    if egress:
        spec["egress"] = egress
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def default_deny(namespace: str) -> dict[str, Any]:
    return policy("default-deny", namespace, None, [], [])


def dns_egress() -> dict[str, Any]:
    """CoreDNS, selected as its Service selects it (the agent then admits the kube-dns Service address too)."""
    return {
        "to": [{**namespace_peer(KUBE_SYSTEM), "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
        "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
    }


def api_server_egress(vpc: list[str]) -> dict[str, Any]:
    """The API server: its Service address, and its network interfaces in the VPC (endpoint name, post-DNAT)."""
    return {"to": cidr_peers([*API_SERVER_SERVICE_ADDRESSES, *vpc]), "ports": tcp(443)}


def internet_https_egress(vpc: list[str], allowed_inside: list[str] | None = None) -> list[dict[str, Any]]:
    """HTTPS to public addresses only (AWS APIs, S3, Hugging Face), never into the VPC or the cluster;
    plus, where S3 resolves inside the VPC, its interface endpoints' subnets."""
    excluded = sorted(set(NOT_THE_INTERNET) | set(vpc))
    excluded = [c for c in excluded if not _inside(c, [e for e in excluded if e != c])]
    rules = [{"to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": excluded}}], "ports": tcp(443)}]
    if allowed_inside:
        rules.append({"to": cidr_peers(allowed_inside), "ports": tcp(443)})
    return rules


def pod_identity_egress() -> dict[str, Any]:
    cidr, port = POD_IDENTITY_AGENT
    return {"to": cidr_peers([cidr]), "ports": tcp(port)}


def _inside(cidr: str, others: list[str]) -> bool:
    net = ipaddress.IPv4Network(cidr)
    return any(net.subnet_of(ipaddress.IPv4Network(o)) for o in others)


def load_balancer_sources(cfg: StackConfig) -> list[str]:
    """Where the shared ALB reaches its targets (the gateways' proxies) from: the
    subnets it places its interfaces in. vLLM itself admits no address range.

    Internet-facing ALBs sit in the public subnets, where no pod runs. Internal ALBs sit in the
    private subnets, which the pods share: there the rule cannot tell an ALB from a pod, and the
    front door's /v1-only routing and vLLM's API key are what guard the model. An existing VPC names the subnets' ranges in
    `network.loadBalancerSubnetCidrs`; without them, the VPC's ranges.
    """
    network = cfg.network
    if isinstance(network, ExistingVpc):
        return list(network.load_balancer_subnet_cidrs) or cfg.vpc_cidrs
    plan = subnet_plan(network.cidr, network.az_count)
    if cfg.ingress.scheme == "internet-facing":
        return [p.public_cidr for p in plan]
    return [p.private_cidr for p in plan]


def interface_endpoints(cfg: StackConfig) -> list[str]:
    """Subnets of an existing VPC's interface endpoints (S3 resolving inside the VPC)."""
    return list(cfg.network.interface_endpoint_cidrs) if isinstance(cfg.network, ExistingVpc) else []


def prometheus_peer(monitoring_namespace: str) -> dict[str, Any]:
    """The platform's Prometheus pods (prometheus-operator labels them), not every pod of the namespace."""
    return {**namespace_peer(monitoring_namespace), "podSelector": {"matchLabels": dict(PROMETHEUS_POD)}}


def _platform_namespace(namespace: str, vpc: list[str], ingress: list[Any], egress: list[Any]) -> list[dict[str, Any]]:
    """Default deny, traffic inside the namespace (one chart's parts), DNS and the API server, then the extras."""
    within: dict[str, Any] = {"podSelector": {}}
    return [
        default_deny(namespace),
        policy("within-namespace", namespace, None, [{"from": [within]}], [{"to": [within]}]),
        policy("dns-and-api-server", namespace, None, None, [dns_egress(), api_server_egress(vpc)]),
        *([policy("platform-flows", namespace, None, ingress, egress or None)] if ingress or egress else []),
    ]


def monitoring(cfg: StackConfig) -> list[dict[str, Any]]:
    ns, vpc = cfg.observability.namespace, cfg.vpc_cidrs
    ingress = [
        # the control plane calls the Prometheus operator's admission webhook
        {"from": cidr_peers(vpc), "ports": tcp(PROMETHEUS_OPERATOR_WEBHOOK_PORT)},
        # KEDA's scalers query Prometheus
        {"from": [namespace_peer(KEDA_NAMESPACE)], "ports": tcp(PROMETHEUS_PORT)},
    ]
    # Scraping is Prometheus' job: every pod that serves metrics admits it in its own ingress rules.
    # Prometheus reaches each target at its own address (pod IPs from the VPC's blocks, node-exporter
    # and the kubelets at node addresses, the API server's endpoints in the cluster's subnets), all
    # inside the VPC, so one ipBlock rule per block without ports covers them. Not a
    # `namespaceSelector: {}`: the controller would resolve that into every pod (and Service) IP of
    # the cluster, split over several PolicyEndpoints and rewritten on every pod change anywhere
    # (aws/aws-network-policy-agent#305: transient denies and probe failures with such a selector,
    # one PolicyEndpoint again once it became an ipBlock); the ipBlocks never change.
    scrapes = [{"to": cidr_peers(vpc)}]
    return [
        *_platform_namespace(ns, vpc, ingress, []),
        policy("prometheus-scrapes", ns, PROMETHEUS_POD, None, scrapes),
        # Alertmanager delivers notifications to HTTPS receivers (configured through extraValues)
        policy("alertmanager-notifications", ns, ALERTMANAGER_POD, None, internet_https_egress(vpc)),
    ]


def keda(cfg: StackConfig) -> list[dict[str, Any]]:
    vpc, scrape = cfg.vpc_cidrs, prometheus_peer(cfg.observability.namespace)
    ingress: list[Any] = [
        {"from": cidr_peers(vpc), "ports": tcp(*KEDA_CONTROL_PLANE_PORTS)},
        {"from": [scrape], "ports": tcp(CONTROLLER_METRICS_PORT)},
    ]
    egress: list[Any] = [{"to": [prometheus_peer(cfg.observability.namespace)], "ports": tcp(PROMETHEUS_PORT)}]
    policies = _platform_namespace(KEDA_NAMESPACE, vpc, ingress, egress)
    return policies


def gpu_operator(cfg: StackConfig) -> list[dict[str, Any]]:
    scrape = prometheus_peer(cfg.observability.namespace)
    # with the node monitoring agent the exporter runs on the host network (it reads the agent's engine at the node's
    # localhost: builders/gpu_operator.py), outside every policy: Prometheus reaches it at the GPU node's address;
    # else it is a pod of this namespace
    ports = (CONTROLLER_METRICS_PORT,) if cfg.node_monitoring.enabled else (DCGM_EXPORTER_PORT, CONTROLLER_METRICS_PORT)
    ingress = [{"from": [scrape], "ports": tcp(*ports)}]
    return _platform_namespace(cfg.gpu_operator.namespace, cfg.vpc_cidrs, ingress, [])


def controllers(cfg: StackConfig) -> list[dict[str, Any]]:
    """Karpenter and the load balancer controller share kube-system: policies select their pods only."""
    vpc, scrape = cfg.vpc_cidrs, prometheus_peer(cfg.observability.namespace)
    aws = [dns_egress(), api_server_egress(vpc), *internet_https_egress(vpc), pod_identity_egress()]
    karpenter = [
        policy(
            "karpenter",
            KARPENTER_NAMESPACE,
            KARPENTER_POD,
            [{"from": [scrape], "ports": tcp(CONTROLLER_METRICS_PORT)}],
            aws,
        )
    ]
    if not exposed_models(cfg):
        return karpenter  # no load balancer controller
    return [
        *karpenter,
        policy(
            "aws-load-balancer-controller",
            LOAD_BALANCER_CONTROLLER_NAMESPACE,
            LOAD_BALANCER_CONTROLLER_POD,
            [
                {"from": cidr_peers(vpc), "ports": tcp(LOAD_BALANCER_CONTROLLER_WEBHOOK_PORT)},
                {"from": [scrape], "ports": tcp(CONTROLLER_METRICS_PORT)},
            ],
            aws,
        ),
    ]


def leader_worker_sets(cfg: StackConfig) -> list[dict[str, Any]]:
    """The LeaderWorkerSet controller, where a model's replicas span nodes: the control plane calls its webhooks."""
    if not any(m.multi_node for m in cfg.models):
        return []
    ingress = [{"from": cidr_peers(cfg.vpc_cidrs), "ports": tcp(lws.WEBHOOK_PORT)}]
    return _platform_namespace(lws.NAMESPACE, cfg.vpc_cidrs, ingress, [])


def platform(cfg: StackConfig) -> list[dict[str, Any]]:
    """Every platform NetworkPolicy outside the model and headroom namespaces."""
    return [*monitoring(cfg), *keda(cfg), *gpu_operator(cfg), *controllers(cfg), *leader_worker_sets(cfg)]
