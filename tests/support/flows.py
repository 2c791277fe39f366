"""The world of a fixture's render that its NetworkPolicies are judged in, and the flows it needs and refuses.

A world is built from the render: the pods of every Deployment and Job it renders, the pods of
the charts it installs (their upstream labels, CHART_PODS), and the addresses outside every
policy (the load balancer in its subnets, the control plane in the cluster's subnets, nodes, the
internet, the API server's Service address, the Pod Identity agent). The evaluator
(tests/validators/netpol.py) then answers, for each flow the platform needs, whether it is open,
and for each flow it must refuse, whether it is shut. Needed flows come from the render where it
says them: every PodMonitor and ServiceMonitor is a scrape, every Ingress backend and health-check
port an ALB flow, every ScaledObject's Prometheus trigger a KEDA query.

Each check is shown failing on a broken copy of the render.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from builders import network_policies as netpol
from builders.network import subnet_plan
from config.derived.exposure import exposure
from config.facts.conventions import INTERCEPTOR_ADMIN, INTERCEPTOR_PROXY, KEDA_NAMESPACE, VLLM_PORT
from config.sections.network import ExistingVpc
from config.sections.stack import StackConfig
from offline import harness
from tests.conftest import fixture_run, parse, stack_data, values
from tests.validators.netpol import Cluster, Endpoint, Service

NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"

CHART_PODS: list[tuple[str, str, dict[str, str]]] = [
    # (name, namespace ("@monitoring", "@gpu-operator": the stack's), labels the upstream chart sets)
    (
        "prometheus",
        "@monitoring",
        {"app.kubernetes.io/name": "prometheus", "operator.prometheus.io/name": "kube-prometheus-stack-prometheus"},
    ),
    ("alertmanager", "@monitoring", {"app.kubernetes.io/name": "alertmanager"}),
    ("grafana", "@monitoring", {"app.kubernetes.io/name": "grafana"}),
    ("prometheus-operator", "@monitoring", {"app": "kube-prometheus-stack-operator"}),
    ("keda-operator", KEDA_NAMESPACE, {"app": "keda-operator"}),
    ("keda-metrics-apiserver", KEDA_NAMESPACE, {"app": "keda-operator-metrics-apiserver"}),
    ("keda-admission-webhooks", KEDA_NAMESPACE, {"app": "keda-admission-webhooks"}),
    ("interceptor", KEDA_NAMESPACE, {"app.kubernetes.io/component": "interceptor"}),
    ("gpu-operator", "@gpu-operator", {"app": "gpu-operator"}),
    ("dcgm-exporter", "@gpu-operator", {"app": "nvidia-dcgm-exporter"}),
    ("karpenter", "kube-system", {"app.kubernetes.io/name": "karpenter", "app.kubernetes.io/instance": "karpenter"}),
    ("alb-controller", "kube-system", {"app.kubernetes.io/name": "aws-load-balancer-controller"}),
    ("coredns", "kube-system", {"k8s-app": "kube-dns"}),
    ("stranger", "default", {"app": "stranger"}),
]
"""Pods the platform installs through charts (not rendered here), and one it does not know."""
CHART_PORTS = {"gpu-metrics": 9400, "http-metrics": 8080}
CHART_SERVICES = [
    # (name, namespace, selector, (port, targetPort) pairs) as the upstream charts render them
    (
        "kube-prometheus-stack-prometheus",
        "@monitoring",
        {"app.kubernetes.io/name": "prometheus", "operator.prometheus.io/name": "kube-prometheus-stack-prometheus"},
        ((9090, 9090),),
    ),
    ("kube-dns", "kube-system", {"k8s-app": "kube-dns"}, ((53, 53),)),
]
"""Services of the charts the platform reaches by address (Prometheus for KEDA and Grafana, CoreDNS)."""
"""Named metrics ports of the chart Services our ServiceMonitors scrape (dcgm-exporter, Karpenter)."""


@dataclass
class World:
    cfg: StackConfig
    cluster: Cluster
    pods: dict[str, Endpoint]
    """By name: `<namespace>/<workload>` for rendered workloads, the CHART_PODS name for chart pods."""
    hosts: dict[str, Endpoint]
    run: harness.RunResult
    policies: list[dict[str, Any]]
    services: dict[str, Service]
    """By `<namespace>/<name>`: the rendered Services and CHART_SERVICES."""

    def backends(self, service: Service) -> list[Endpoint]:
        return [
            p
            for p in self.pods.values()
            if p.namespace == service.namespace and all(p.labels.get(k) == v for k, v in service.selector.items())
        ]


def _host(network: str, offset: int) -> str:
    return str(ipaddress.IPv4Network(network)[offset])


def _pod_subnet(cfg: StackConfig) -> str:
    """Where pods get addresses: a secondary block when the VPC has one (custom networking), else the first private subnet."""
    network = cfg.network
    if isinstance(network, ExistingVpc):
        return str(
            next(ipaddress.IPv4Network(network.secondary_cidrs[0] if network.secondary_cidrs else network.vpc_cidr).subnets(new_prefix=20))
        )
    return subnet_plan(network.cidr, network.az_count)[0].private_cidr


def _node_subnet(cfg: StackConfig) -> str:
    network = cfg.network
    if isinstance(network, ExistingVpc):
        return str(next(ipaddress.IPv4Network(network.vpc_cidr).subnets(new_prefix=20)))
    return subnet_plan(network.cidr, network.az_count)[0].private_cidr


def build_world(stack: str, policies: list[dict[str, Any]] | None = None) -> World:
    cfg, run = parse(stack_data(stack)), fixture_run(stack)
    rendered = [values(r) for r in run.of_type(NETWORK_POLICY)]
    namespaces = {
        values(r)["metadata"]["name"]: values(r)["metadata"].get("labels") or {} for r in run.of_type("kubernetes:core/v1:Namespace")
    }
    subnet, n = _pod_subnet(cfg), 10
    pods: dict[str, Endpoint] = {}
    for r in [*run.of_type("kubernetes:apps/v1:Deployment"), *run.of_type("kubernetes:batch/v1:Job")]:
        doc = values(r)
        ns = doc["metadata"]["namespace"]
        name = f"{ns}/{doc['metadata']['name']}"
        pods[name] = Endpoint(name, _host(subnet, n), ns, doc["spec"]["template"]["metadata"]["labels"])
        n += 1
    for name, ns, labels in CHART_PODS:
        ns = {"@monitoring": cfg.observability.namespace, "@gpu-operator": cfg.gpu_operator.namespace}.get(ns, ns)
        pods[name] = Endpoint(name, _host(subnet, n), ns, labels)
        n += 1
    for client in sorted({ns for m in cfg.models for ns in m.client_namespaces}):
        pods[f"client:{client}"] = Endpoint(f"client:{client}", _host(subnet, n), client, {"app": "client"})
        n += 1
    alb_subnet = netpol.load_balancer_sources(cfg)[0]
    hosts = {
        "alb": Endpoint("alb", _host(alb_subnet, 200)),
        "control-plane": Endpoint("control-plane", _host(_node_subnet(cfg), 240)),
        "other-node": Endpoint("other-node", _host(_node_subnet(cfg), 250)),
        "api-service": Endpoint("api-service", "172.20.0.1"),
        "internet": Endpoint("internet", "93.184.216.34"),
        "pod-identity-agent": Endpoint("pod-identity-agent", "169.254.170.23"),
        "imds": Endpoint("imds", "169.254.169.254"),
    }
    services: dict[str, Service] = {}
    for r in run.of_type("kubernetes:core/v1:Service"):
        doc = values(r)
        ports = tuple((int(p["port"]), p["targetPort"]) for p in doc["spec"]["ports"])
        services[f"{doc['metadata']['namespace']}/{doc['metadata']['name']}"] = Service(
            doc["metadata"]["name"], doc["metadata"]["namespace"], doc["spec"]["selector"], ports
        )
    for name, ns, selector, ports in CHART_SERVICES:
        ns = {"@monitoring": cfg.observability.namespace}.get(ns, ns)
        services[f"{ns}/{name}"] = Service(name, ns, selector, ports)
    chosen = rendered if policies is None else policies
    return World(cfg, Cluster(chosen, namespaces), pods, hosts, run, chosen, services)


def _models(world: World) -> Iterator[tuple[Any, Endpoint]]:
    for model in world.cfg.models:
        yield model, world.pods[f"{model.name}/{model.name}"]


def _container_port(world: World, model_name: str, port_name: str) -> int:
    doc = values(world.run.one("kubernetes:apps/v1:Deployment", f"model-{model_name}-deployment"))
    for container in doc["spec"]["template"]["spec"]["containers"]:
        for p in container.get("ports") or []:
            if p.get("name") == port_name:
                return int(p["containerPort"])
    raise AssertionError(f"{model_name} has no port {port_name}")


def needed_flows(world: World) -> Iterator[tuple[str, Endpoint, Endpoint, int, str]]:
    """(why, source, destination, port, protocol) for every flow the platform depends on."""
    p, h = world.pods, world.hosts
    prometheus = p["prometheus"]
    # scrapes: every PodMonitor (the models) and ServiceMonitor we render
    for r in world.run.of_type("kubernetes:monitoring.coreos.com/v1:PodMonitor"):
        for endpoint in values(r)["spec"]["podMetricsEndpoints"]:
            for model, pod in _models(world):
                yield f"Prometheus scrapes {model.name}", prometheus, pod, _container_port(world, model.name, endpoint["port"]), "TCP"
    targets = {"dcgm-exporter": p["dcgm-exporter"], "karpenter": p["karpenter"]}
    for r in world.run.of_type("kubernetes:monitoring.coreos.com/v1:ServiceMonitor"):
        doc = values(r)
        for endpoint in doc["spec"]["endpoints"]:
            yield (
                f"Prometheus scrapes {doc['metadata']['name']}",
                prometheus,
                targets[doc["metadata"]["name"]],
                CHART_PORTS[endpoint["port"]],
                "TCP",
            )
    yield "Prometheus scrapes KEDA", prometheus, p["keda-operator"], netpol.CONTROLLER_METRICS_PORT, "TCP"
    for port in netpol.NODE_SCRAPE_PORTS:
        yield f"Prometheus scrapes nodes on {port}", prometheus, h["other-node"], port, "TCP"
    yield "Prometheus discovers targets", prometheus, h["api-service"], 443, "TCP"
    yield "Grafana queries Prometheus", p["grafana"], prometheus, netpol.PROMETHEUS_PORT, "TCP"
    yield "Prometheus alerts Alertmanager", prometheus, p["alertmanager"], 9093, "TCP"
    yield "Alertmanager notifies", p["alertmanager"], h["internet"], 443, "TCP"
    # KEDA: every ScaledObject's Prometheus trigger is a query from the operator
    for r in world.run.of_type("kubernetes:keda.sh/v1alpha1:ScaledObject"):
        for trigger in values(r)["spec"]["triggers"]:
            if trigger["type"] == "prometheus":
                port = int(trigger["metadata"]["serverAddress"].rsplit(":", 1)[1])
                yield "KEDA queries Prometheus", p["keda-operator"], prometheus, port, "TCP"
    # the control plane calls webhooks and API services
    for port in netpol.KEDA_CONTROL_PLANE_PORTS:
        target = p["keda-admission-webhooks"] if port == 9443 else p["keda-metrics-apiserver"]
        yield f"control plane calls KEDA on {port}", h["control-plane"], target, port, "TCP"
    yield (
        "control plane calls the Prometheus operator webhook",
        h["control-plane"],
        p["prometheus-operator"],
        netpol.PROMETHEUS_OPERATOR_WEBHOOK_PORT,
        "TCP",
    )
    # every Ingress: the ALB reaches its backend and health-checks it
    for r in world.run.of_type("kubernetes:networking.k8s.io/v1:Ingress"):
        doc = values(r)
        annotations = doc["metadata"].get("annotations") or {}
        for rule in doc["spec"]["rules"]:
            for path in rule["http"]["paths"]:
                service = path["backend"]["service"]
                if service["name"] == INTERCEPTOR_PROXY[0]:
                    target, port = p["interceptor"], INTERCEPTOR_PROXY[1]
                else:
                    target, port = p[f"{doc['metadata']['namespace']}/{service['name']}"], int(service["port"]["number"])
                yield f"ALB forwards to {target.name}", h["alb"], target, port, "TCP"
                check = annotations.get("alb.ingress.kubernetes.io/healthcheck-port", "traffic-port")
                health = port if check == "traffic-port" else int(check)
                if target.name == "interceptor":
                    assert health == INTERCEPTOR_ADMIN[1]
                yield f"ALB health-checks {target.name}", h["alb"], target, health, "TCP"
    for model, pod in _models(world):
        for client in model.client_namespaces:
            yield f"a pod in {client} calls {model.name}", p[f"client:{client}"], pod, VLLM_PORT, "TCP"
        if model.replicas.min == 0:
            yield f"interceptor forwards to {model.name}", p["interceptor"], pod, VLLM_PORT, "TCP"
        yield f"{model.name} fetches weights over HTTPS", pod, h["internet"], 443, "TCP"
        yield f"{model.name} resolves names", pod, p["coredns"], 53, "UDP"
        if model.streams_from_s3:
            yield f"{model.name} gets S3 credentials", pod, h["pod-identity-agent"], 80, "TCP"
            endpoints = netpol.interface_endpoints(world.cfg)
            s3 = Endpoint("s3-interface-endpoint", _host(endpoints[0], 10)) if endpoints else h["internet"]
            yield f"{model.name} streams from S3 ({s3.name})", pod, s3, 443, "TCP"
            for name, job in world.pods.items():
                if name.startswith(f"{model.name}/{model.name}-weights-"):
                    yield f"{name} downloads from Hugging Face", job, h["internet"], 443, "TCP"
                    yield f"{name} writes to S3 ({s3.name})", job, s3, 443, "TCP"
                    yield f"{name} gets S3 credentials", job, h["pod-identity-agent"], 80, "TCP"
    # controllers
    for name in ("karpenter", *(["alb-controller"] if world.run.of_type("kubernetes:networking.k8s.io/v1:Ingress") else [])):
        yield f"{name} calls the API server", p[name], h["api-service"], 443, "TCP"
        yield f"{name} calls AWS", p[name], h["internet"], 443, "TCP"
        yield f"{name} gets credentials", p[name], h["pod-identity-agent"], 80, "TCP"
        yield f"{name} resolves names", p[name], p["coredns"], 53, "UDP"
    if world.run.of_type("kubernetes:networking.k8s.io/v1:Ingress"):
        yield "control plane calls the load balancer webhook", h["control-plane"], p["alb-controller"], 9443, "TCP"
    for name in ("gpu-operator", "keda-operator", "prometheus-operator"):
        yield f"{name} calls the API server", p[name], h["api-service"], 443, "TCP"


def forbidden_flows(world: World) -> Iterator[tuple[str, Endpoint, Endpoint, int, str]]:
    """Flows the policies must refuse."""
    p, h = world.pods, world.hosts
    models = list(_models(world))
    for model, pod in models:
        yield f"the internet reaches {model.name}", h["internet"], pod, VLLM_PORT, "TCP"
        yield f"{model.name} calls the API server", pod, h["api-service"], 443, "TCP"
        yield f"{model.name} reads instance metadata", pod, h["imds"], 80, "TCP"
        yield f"{model.name} reaches Prometheus", pod, p["prometheus"], netpol.PROMETHEUS_PORT, "TCP"
        yield f"{model.name} reaches the VPC on 443", pod, h["other-node"], 443, "TCP"
        yield f"{model.name} reaches another pod on 443", pod, p["stranger"], 443, "TCP"
        for other, other_pod in models:
            if other.name != model.name:
                yield f"{model.name} reaches {other.name}", pod, other_pod, VLLM_PORT, "TCP"
        if model.replicas.min > 0:
            yield f"the interceptor reaches {model.name} (not at zero)", p["interceptor"], pod, VLLM_PORT, "TCP"
        # the rest of the VPC stays out, wherever the ALB's subnets do not hold the address
        alb_admitted = exposure(world.cfg, model).exposed and model.replicas.min > 0
        for source in (h["other-node"], p["stranger"]):
            if not (
                alb_admitted
                and any(ipaddress.ip_address(source.ip) in ipaddress.ip_network(c) for c in netpol.load_balancer_sources(world.cfg))
            ):
                yield f"{source.name} reaches {model.name}", source, pod, VLLM_PORT, "TCP"
    for name in ("prometheus", "grafana", "keda-operator", "gpu-operator", "dcgm-exporter"):
        yield f"{name} reaches the internet", p[name], h["internet"], 443, "TCP"
    yield "a stray pod queries Prometheus", p["stranger"], p["prometheus"], netpol.PROMETHEUS_PORT, "TCP"
    for name, port in (
        ("prometheus-operator", 10250),
        ("keda-admission-webhooks", 9443),
        ("keda-metrics-apiserver", 6443),
        ("alb-controller", 9443),
    ):
        yield f"the internet reaches {name} on {port}", h["internet"], p[name], port, "TCP"
    yield "a stray pod scrapes Karpenter", p["stranger"], p["karpenter"], netpol.CONTROLLER_METRICS_PORT, "TCP"
    # the interceptor forwards to vLLM for every model at zero: only the ALB's subnets reach it
    for port in (INTERCEPTOR_PROXY[1], INTERCEPTOR_ADMIN[1]):
        yield f"the internet reaches the interceptor on {port}", h["internet"], p["interceptor"], port, "TCP"
    # a populate Job reaches DNS, HTTPS outside the VPC, the S3 endpoint and the Pod Identity agent only
    for name, job in populate_jobs(world).items():
        for why, dst, port, proto in JOB_FORBIDDEN:
            yield f"{name} reaches {why}", job, _destination(world, dst), port, proto
    yield "a stray pod reaches the GPU operator", p["stranger"], p["dcgm-exporter"], netpol.DCGM_EXPORTER_PORT, "TCP"


def populate_jobs(world: World) -> dict[str, Endpoint]:
    """The weights populate Jobs' pods, by `<namespace>/<job>`."""
    return {name: pod for name, pod in world.pods.items() if pod.labels.get("app.kubernetes.io/name") == "weights-populate"}


JOB_FORBIDDEN: list[tuple[str, str, int, str]] = [
    # (what, destination: a host or pod name of the world, port, protocol)
    ("the API server", "api-service", 443, "TCP"),
    ("the control plane on 443", "control-plane", 443, "TCP"),
    ("other-node on 443", "other-node", 443, "TCP"),
    ("other-node on 10250", "other-node", 10250, "TCP"),
    ("other-node on 22", "other-node", 22, "TCP"),
    ("instance metadata", "imds", 80, "TCP"),
    ("another pod on 443", "stranger", 443, "TCP"),
    ("Prometheus", "prometheus", netpol.PROMETHEUS_PORT, "TCP"),
    ("the internet on 80", "internet", 80, "TCP"),
    ("the internet on 22", "internet", 22, "TCP"),
    ("CoreDNS on 443", "coredns", 443, "TCP"),
]
"""What a populate Job must not reach (it takes no traffic and needs only DNS, public HTTPS, S3 and its credentials)."""


def _destination(world: World, name: str) -> Endpoint:
    return world.hosts.get(name) or world.pods[name]


def job_reach(world: World, job: Endpoint) -> set[tuple[str, int, str]]:
    """Every (destination, port, protocol) of a probe grid a Job's policy opens: each host and chart pod
    of the world and the S3 interface endpoint, on the ports a Job could misuse."""
    endpoints = netpol.interface_endpoints(world.cfg)
    targets = {**world.hosts, **{n: p for n, p in world.pods.items() if n in {c[0] for c in CHART_PODS}}}
    if endpoints:
        targets["s3-interface-endpoint"] = Endpoint("s3-interface-endpoint", _host(endpoints[0], 10))
    ports = [(22, "TCP"), (53, "UDP"), (53, "TCP"), (80, "TCP"), (443, "TCP"), (6443, "TCP"), (8080, "TCP"), (9090, "TCP"), (10250, "TCP")]
    return {(name, port, proto) for name, dst in targets.items() for port, proto in ports if world.cluster.allowed(job, dst, port, proto)}


def job_may_reach(world: World) -> set[tuple[str, int, str]]:
    """The documented reach of a populate Job on that grid: DNS at CoreDNS, HTTPS to the internet and to
    the S3 interface endpoint (where the VPC has one), the Pod Identity agent."""
    allowed = {("coredns", 53, "UDP"), ("coredns", 53, "TCP"), ("internet", 443, "TCP"), ("pod-identity-agent", 80, "TCP")}
    if netpol.interface_endpoints(world.cfg):
        allowed.add(("s3-interface-endpoint", 443, "TCP"))
    return allowed


def needed_service_flows(world: World) -> Iterator[tuple[str, Endpoint, Service, int, str]]:
    """Connections the platform makes to a Service's address (judged before DNAT)."""
    p = world.pods
    for r in world.run.of_type("kubernetes:keda.sh/v1alpha1:ScaledObject"):
        for trigger in values(r)["spec"]["triggers"]:
            if trigger["type"] == "prometheus":
                host, port = trigger["metadata"]["serverAddress"].split("//", 1)[1].rsplit(":", 1)
                name, ns = host.split(".")[:2]
                yield "KEDA queries the Prometheus Service", p["keda-operator"], world.services[f"{ns}/{name}"], int(port), "TCP"
    prometheus = world.services[f"{world.cfg.observability.namespace}/kube-prometheus-stack-prometheus"]
    yield "Grafana queries the Prometheus Service", p["grafana"], prometheus, 9090, "TCP"
    for r in world.run.of_type("kubernetes:http.keda.sh/v1beta1:InterceptorRoute"):
        doc = values(r)
        target = doc["spec"]["target"]
        service = world.services[f"{doc['metadata']['namespace']}/{target['service']}"]
        yield f"the interceptor reaches the {service.name} Service", p["interceptor"], service, int(target["port"]), "TCP"
    for model, pod in _models(world):
        service = world.services[f"{model.name}/{model.name}"]
        for client in model.client_namespaces:
            yield f"a pod in {client} calls the {model.name} Service", p[f"client:{client}"], service, VLLM_PORT, "TCP"
        yield f"{model.name} resolves names through the kube-dns Service", pod, world.services["kube-system/kube-dns"], 53, "UDP"
    for name in ("keda-operator", "prometheus", "grafana", "gpu-operator", "karpenter"):
        yield f"{name} resolves names through the kube-dns Service", p[name], world.services["kube-system/kube-dns"], 53, "UDP"


def blocked(world: World) -> list[str]:
    direct = [why for why, src, dst, port, proto in needed_flows(world) if not world.cluster.allowed(src, dst, port, proto)]
    via = [
        why
        for why, src, svc, port, proto in needed_service_flows(world)
        if not world.cluster.allowed_via_service(src, svc, port, world.backends(svc), proto)
    ]
    return direct + via


def leaks(world: World) -> list[str]:
    return [why for why, src, dst, port, proto in forbidden_flows(world) if world.cluster.allowed(src, dst, port, proto)]


def undefended_namespaces(world: World) -> list[str]:
    """Namespaces the program creates without a default-deny policy (pods selector empty, both directions, no rules)."""
    deny = {
        p["metadata"]["namespace"]
        for p in world.policies
        if p["spec"].get("podSelector") in ({}, None)
        and set(p["spec"].get("policyTypes", [])) == {"Ingress", "Egress"}
        and not p["spec"].get("ingress")
        and not p["spec"].get("egress")
    }
    created = {values(r)["metadata"]["name"] for r in world.run.of_type("kubernetes:core/v1:Namespace")}
    return sorted(created - deny)
