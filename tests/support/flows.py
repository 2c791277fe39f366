"""The world of a fixture's render that its NetworkPolicies are judged in, and the flows it needs and refuses.

A world is built from the render: the pods of every Deployment and Job it renders, the pods and
Services of each model's router release (the llm-d router chart's Envoy proxies and Endpoint
Pickers, labelled and named as its templates do, GATEWAY_* below), the pods of the other charts
it installs (their upstream labels, CHART_PODS), and the addresses outside every policy (the load
balancer in its subnets, the control plane in the cluster's subnets, nodes, the internet, the API
server's Service address, the Pod Identity agent). The evaluator (tests/validators/netpol.py) then
answers, for each flow the platform needs, whether it is open, and for each flow it must refuse,
whether it is shut. Needed flows come from the render where it says them: every PodMonitor and
ServiceMonitor is a scrape, every Ingress backend and health-check port an ALB flow, every
ScaledObject's Prometheus trigger a KEDA query, every router release's InferencePool the pods its
proxies forward to and its pickers read, its Envoy config the picker's address.

The front door (issue 28): the ALB and the models' client namespaces reach a model's gateway (its
proxies), for every model, those at replicas.min 0 included (their gateway holds a request while KEDA
wakes a replica on the proxies' requests in flight); vLLM admits only its gateway and Prometheus.
Nothing of the KEDA HTTP add-on (its interceptor, its InterceptorRoutes) is rendered any more
(`http_add_on_remnants`). Each check is shown failing on a broken copy of the render.
"""

from __future__ import annotations

import copy
import functools
import ipaddress
import json
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import yaml

from builders import lws
from builders import network_policies as netpol
from builders.network import subnet_plan
from config import stack_file
from config.facts.conventions import KEDA_NAMESPACE, LWS_WORKER_INDEX_LABEL, VLLM_PORT
from config.sections.network import ExistingVpc
from config.sections.stack import StackConfig
from offline import harness
from policy.checks import LEADER_WORKER_SET
from tests.conftest import FIXTURES, fixture_input, fixture_run, parse, stack_data, values
from tests.support import gateway as gw
from tests.support.workloads import model_pod, running_pods
from tests.validators.netpol import Cluster, Endpoint, Service, selects

NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
RELEASE = "kubernetes:helm.sh/v3:Release"
INGRESS = "kubernetes:networking.k8s.io/v1:Ingress"
SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"
HTTP_ADD_ON_GROUP = "http.keda.sh"
"""The KEDA HTTP add-on's API group (InterceptorRoute, HTTPScaledObject): removed with the add-on."""
HTTP_ADD_ON_RELEASE = "keda-add-ons-http"
"""The add-on's chart and Helm release name, as the platform installed it in KEDA's namespace."""

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
    ("gpu-operator", "@gpu-operator", {"app": "gpu-operator"}),
    ("dcgm-exporter", "@gpu-operator", {"app": "nvidia-dcgm-exporter"}),
    ("karpenter", "kube-system", {"app.kubernetes.io/name": "karpenter", "app.kubernetes.io/instance": "karpenter"}),
    ("alb-controller", "kube-system", {"app.kubernetes.io/name": "aws-load-balancer-controller"}),
    ("coredns", "kube-system", {"k8s-app": "kube-dns"}),
    ("stranger", "default", {"app": "stranger"}),
]
"""Pods the platform installs through charts (not rendered here), and one it does not know."""
TORCH_MASTER_PORT = 29501
"""vLLM's default --master-port (vllm/engine/arg_utils.py): a group's workers meet their leader there."""
NCCL_BOOTSTRAP_PORT = 45123
"""A port NCCL might pick for its bootstrap sockets (an ephemeral one: the group's policy must admit them all)."""
DCGM_HOST_ENGINE_PORT = 5555
"""nv-hostengine on every GPU node (the node monitoring agent's dcgm-server, host port 5555)."""
CHART_PORTS = {"gpu-metrics": 9400, "http-metrics": 8080}
"""Named metrics ports of the chart Services our ServiceMonitors scrape (dcgm-exporter, Karpenter)."""
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

# The router chart (llm-d-router-standalone v0.10.0, routerlib templates at the tag): `llm-d-router.name`
# is the release name lower-cased, trimmed, cut to 40 characters; the picker is `<base>-epp`, the
# service-mode proxy `<base>-proxy`.
GATEWAY_NAME_LIMIT = 40
GATEWAY_PICKER_PORTS = {"grpc": 9002, "grpc-health": 9003, "metrics": 9090}
"""The EPP container's ports (routerlib `_deployment.yaml`); its Service serves 9002 and 9090 with no
targetPort (so the same numbers), plus `router.extraServicePorts` (`_service.yaml`)."""
GATEWAY_PICKER_SERVICE_PORTS = ((9002, 9002), (9090, 9090))


def gateway_base(release: str) -> str:
    return release.lower().strip()[:GATEWAY_NAME_LIMIT]


def picker_labels(release: str, creates_pool: bool = True) -> dict[str, str]:
    """The EPP pods' labels: `llm-d-router.selectorLabels` and `llm-d-router.modeLabels` (pool mode)."""
    mode = "llm-d-router-gateway" if creates_pool else "llm-d-router-standalone"
    return {mode: f"{gateway_base(release)}-epp", "llm-d.ai/igw-mode": mode}


def proxy_labels(release: str) -> dict[str, str]:
    """The proxy pods' labels: `llm-d-router.labels` (whose name is the picker's) and `llm-d-router.proxySelectorLabels`."""
    return {"app.kubernetes.io/name": f"{gateway_base(release)}-epp", "llm-d-router-proxy": f"{gateway_base(release)}-proxy"}


@dataclass(frozen=True)
class Gateway:
    """One model's router release as the chart renders it in the world."""

    release: str
    namespace: str
    values: dict[str, Any]
    """The release's chart values."""
    proxy: str
    """The proxies' pod (world.pods key) and Service (world.services key): `<namespace>/<base>-proxy`."""
    picker: str
    """The pickers' pod and Service: `<namespace>/<base>-epp`."""

    @property
    def envoy(self) -> dict[str, Any]:
        """The proxies' Envoy bootstrap (`router.proxy.presets.envoy.configMap.data["envoy.yaml"]`)."""
        doc = yaml.safe_load(self.values["router"]["proxy"]["presets"]["envoy"]["configMap"]["data"]["envoy.yaml"])
        assert isinstance(doc, dict)
        return doc

    @property
    def pool(self) -> tuple[dict[str, str], list[int]]:
        """The InferencePool the chart creates: its pods' labels and target ports."""
        servers = self.values["router"]["modelServers"]
        return {k: str(v) for k, v in servers["matchLabels"].items()}, [int(p["number"]) for p in servers["targetPorts"]]


@dataclass
class World:
    cfg: StackConfig
    cluster: Cluster
    pods: dict[str, Endpoint]
    """By name: `<namespace>/<workload>` for rendered workloads and the gateway's pods, the CHART_PODS name for chart pods."""
    hosts: dict[str, Endpoint]
    run: harness.RunResult
    policies: list[dict[str, Any]]
    services: dict[str, Service]
    """By `<namespace>/<name>`: the rendered Services, the gateways' and CHART_SERVICES."""
    gateways: dict[str, Gateway] = field(default_factory=dict)
    """By model (release) name."""
    ports: dict[str, dict[str, int]] = field(default_factory=dict)
    """Named container ports, by pod name."""

    def backends(self, service: Service) -> list[Endpoint]:
        return [
            p
            for p in self.pods.values()
            if p.namespace == service.namespace and all(p.labels.get(k) == v for k, v in service.selector.items())
        ]

    def selected(self, namespace: str | None, labels: dict[str, str]) -> list[Endpoint]:
        """The pods of a namespace (None: any) whose labels carry `labels`."""
        return [p for p in self.pods.values() if namespace in (None, p.namespace) and all(p.labels.get(k) == v for k, v in labels.items())]


def _chart_services(items: list[dict[str, Any]]) -> tuple[tuple[int, int | str], ...]:
    return tuple((int(p["port"]), p.get("targetPort", p["port"])) for p in items)


# -- stacks: the fixtures and a few variants of them ------------------------------------------------------


def _zero_with_clients(data: dict[str, Any]) -> dict[str, Any]:
    """scale-to-zero-dev with a client namespace for its model at zero (through its gateway), behind an
    internet-facing ALB: its subnets (the public ones) then hold no pod, so a client is told apart from the ALB."""
    data["models"][0]["clientNamespaces"] = ["chat-app"]
    ingress = {
        **data["ingress"],
        "scheme": "internet-facing",
        "allowedCidrs": ["198.51.100.0/24"],
        "certificateArn": "arn:aws:acm:us-east-1:123456789012:certificate/1b2c3d4e-5f6a-4b7c-8d9e-0f1a2b3c4d5e",
    }
    return {"llm-platform:models": data["models"], "llm-platform:ingress": ingress}


def _precise(data: dict[str, Any]) -> dict[str, Any]:
    """minimal-dev with its model on the precise prefix cache (vLLM's KV events to the pickers; the
    tokenizer sidecar beside each picker needs a third system node)."""
    data["models"][0]["routing"] = {"prefixCache": "precise"}
    data["cluster"]["systemNodeGroup"].update(minSize=3, desiredSize=3, maxSize=4)
    return {"llm-platform:models": data["models"], "llm-platform:cluster": data["cluster"]}


VARIANTS: dict[str, tuple[str, Callable[[dict[str, Any]], dict[str, Any]]]] = {
    "scale-to-zero-dev+clients": ("scale-to-zero-dev", _zero_with_clients),
    "minimal-dev+precise": ("minimal-dev", _precise),
}
"""Flows no fixture has: clients of a model at zero, and the precise prefix cache's KV events."""
WORLDS = (*FIXTURES, *VARIANTS)


@functools.cache
def stack_run(stack: str) -> tuple[StackConfig, harness.RunResult]:
    """A fixture or a variant: its parsed config and the real program's run."""
    if stack not in VARIANTS:
        return parse(stack_data(stack)), fixture_run(stack)
    base, change = VARIANTS[stack]
    inp = fixture_input(base, overrides=change(copy.deepcopy(stack_data(base))))
    data, _, _ = stack_file.split(inp.config, lambda key: key in inp.secret_keys)
    return parse(data), harness.run(inp)


def http_add_on_remnants(run: harness.RunResult) -> list[str]:
    """What the render still holds of the KEDA HTTP add-on: a resource of its API group (InterceptorRoute,
    HTTPScaledObject), its Helm release, the `interceptor` NetworkPolicy or any policy selecting its pods, an
    Ingress in KEDA's namespace or to one of its Services, a ScaledObject trigger its scaler serves."""
    found = [f"{r.type} {r.name}" for r in run.registrations if f":{HTTP_ADD_ON_GROUP}/" in r.type]
    for r in run.of_type(RELEASE):
        doc = values(r)
        if HTTP_ADD_ON_RELEASE in (doc.get("name"), str(doc.get("chart", "")).rsplit("/", 1)[-1]):
            found.append(f"{RELEASE} {r.name} ({doc.get('name')}, chart {doc.get('chart')})")
    for r in run.of_type(NETWORK_POLICY):
        doc = values(r)
        selector = (doc["spec"].get("podSelector") or {}).get("matchLabels") or {}
        if doc["metadata"]["name"] == "interceptor" or selector.get("app.kubernetes.io/component") == "interceptor":
            found.append(f"{NETWORK_POLICY} {doc['metadata']['namespace']}/{doc['metadata']['name']}")
    for r in run.of_type(INGRESS):
        doc = values(r)
        backends = [path["backend"]["service"]["name"] for rule in doc["spec"]["rules"] for path in rule["http"]["paths"]]
        if doc["metadata"]["namespace"] == KEDA_NAMESPACE or any(b.startswith(HTTP_ADD_ON_RELEASE) for b in backends):
            found.append(f"{INGRESS} {doc['metadata']['namespace']}/{doc['metadata']['name']} -> {', '.join(backends)}")
    for r in run.of_type(SCALED_OBJECT):
        for trigger in values(r)["spec"]["triggers"]:
            if trigger["type"].startswith("external") or "interceptorRoute" in (trigger.get("metadata") or {}):
                found.append(f"{SCALED_OBJECT} {r.name} trigger {trigger.get('name')} ({trigger['type']})")
    return found


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
    cfg, run = stack_run(stack)
    rendered = [values(r) for r in run.of_type(NETWORK_POLICY)]
    namespaces = {
        values(r)["metadata"]["name"]: values(r)["metadata"].get("labels") or {} for r in run.of_type("kubernetes:core/v1:Namespace")
    }
    subnet, n = _pod_subnet(cfg), 10
    pods: dict[str, Endpoint] = {}
    ports: dict[str, dict[str, int]] = {}

    def add(name: str, ns: str, labels: dict[str, str], named: dict[str, int] | None = None) -> None:
        nonlocal n
        pods[name] = Endpoint(name, _host(subnet, n), ns, labels)
        ports[name] = dict(named or {})
        n += 1

    workloads = [*run.of_type("kubernetes:apps/v1:Deployment"), *run.of_type(LEADER_WORKER_SET), *run.of_type("kubernetes:batch/v1:Job")]
    for r in workloads:
        doc = values(r)
        ns = doc["metadata"]["namespace"]
        for pod, template in running_pods(doc):
            named = {
                p["name"]: int(p["containerPort"]) for c in template["spec"]["containers"] for p in c.get("ports") or [] if "name" in p
            }
            labels = template["metadata"]["labels"]
            # the platform's proxies stand for the chart's (kept at zero): the world names them as the chart does
            key = f"{ns}/{labels['llm-d-router-proxy']}" if "llm-d-router-proxy" in labels else f"{ns}/{pod}"
            add(key, ns, labels, named)
    services: dict[str, Service] = {}
    gateways: dict[str, Gateway] = {}
    for release in (values(r) for r in gw.router_releases(run).values()):
        name, ns, chart_values = release["name"], release["namespace"], release["values"]
        router = chart_values["router"]
        base = gateway_base(name)
        creates_pool = (router.get("inferencePool") or {}).get("create") is not False
        extra = _chart_services(router.get("extraServicePorts") or [])
        proxy_pod = f"{ns}/{base}-proxy"
        if str(router["proxy"].get("replicas")) == "0":
            # the chart's proxies are kept at zero: the platform's own (builders/gateway/proxies.py) serve, added above
            assert proxy_pod in pods, f"{name}: the chart's proxies at zero and no proxies of the platform's"
        else:
            proxy_ports = {p["name"]: int(p["containerPort"]) for p in router["proxy"]["presets"]["envoy"]["ports"]}
            add(proxy_pod, ns, proxy_labels(name), proxy_ports)
        add(f"{ns}/{base}-epp", ns, picker_labels(name, creates_pool), GATEWAY_PICKER_PORTS)
        services[f"{ns}/{base}-proxy"] = Service(f"{base}-proxy", ns, {"llm-d-router-proxy": f"{base}-proxy"}, extra)
        picker_selector = {k: v for k, v in picker_labels(name, creates_pool).items() if k != "llm-d.ai/igw-mode"}
        services[f"{ns}/{base}-epp"] = Service(f"{base}-epp", ns, picker_selector, (*GATEWAY_PICKER_SERVICE_PORTS, *extra))
        gateways[name] = Gateway(name, ns, chart_values, proxy_pod, f"{ns}/{base}-epp")
    for name, ns, labels in CHART_PODS:
        if name == "dcgm-exporter" and cfg.node_monitoring.enabled:
            continue  # it reads the node monitoring agent's host engine at localhost: on the host network (a GPU node)
        ns = {"@monitoring": cfg.observability.namespace, "@gpu-operator": cfg.gpu_operator.namespace}.get(ns, ns)
        add(name, ns, labels)
    if any(m.multi_node for m in cfg.models):
        # the LeaderWorkerSet controller (its namespace's policies select every pod of it)
        add("lws-controller", lws.NAMESPACE, {"app.kubernetes.io/name": "lws"})
    for client in sorted({ns for m in cfg.models for ns in m.client_namespaces}):
        add(f"client:{client}", client, {"app": "client"})
    alb_subnet = netpol.load_balancer_sources(cfg)[0]
    hosts = {
        "alb": Endpoint("alb", _host(alb_subnet, 200)),
        "control-plane": Endpoint("control-plane", _host(_node_subnet(cfg), 240)),
        "other-node": Endpoint("other-node", _host(_node_subnet(cfg), 250)),
        "gpu-node": Endpoint("gpu-node", _host(_node_subnet(cfg), 251)),
        "api-service": Endpoint("api-service", "172.20.0.1"),
        "internet": Endpoint("internet", "93.184.216.34"),
        "pod-identity-agent": Endpoint("pod-identity-agent", "169.254.170.23"),
        "imds": Endpoint("imds", "169.254.169.254"),
    }
    for r in run.of_type("kubernetes:core/v1:Service"):
        doc = values(r)
        services[f"{doc['metadata']['namespace']}/{doc['metadata']['name']}"] = Service(
            doc["metadata"]["name"], doc["metadata"]["namespace"], doc["spec"]["selector"], _chart_services(doc["spec"]["ports"])
        )
    for name, ns, selector, pairs in CHART_SERVICES:
        ns = {"@monitoring": cfg.observability.namespace}.get(ns, ns)
        services[f"{ns}/{name}"] = Service(name, ns, selector, pairs)
    chosen = rendered if policies is None else policies
    return World(cfg, Cluster(chosen, namespaces), pods, hosts, run, chosen, services, gateways, ports)


def _models(world: World) -> Iterator[tuple[Any, Endpoint]]:
    for model in world.cfg.models:
        yield model, world.pods[f"{model.name}/{model.name}"]


def kv_events_port(world: World, model_name: str) -> int | None:
    """vLLM's KV-event port, read from its `--kv-events-config` (precise prefix-cache routing), else None."""
    for container in model_pod(world.run, model_name)["containers"]:
        args = container.get("args") or []
        if "--kv-events-config" in args:
            endpoint = json.loads(args[args.index("--kv-events-config") + 1])["endpoint"]
            return int(endpoint.rsplit(":", 1)[1])
    return None


def gateway_of(world: World, model_name: str) -> Gateway:
    """The model's gateway: every model has one, those at replicas.min 0 included."""
    gateway = world.gateways.get(model_name)
    assert gateway is not None, f"{model_name} renders no router release"
    return gateway


def vllm_admits(world: World, model: Any) -> set[str]:
    """Who may open vLLM's port of a model (world pod names): Prometheus and the model's gateway (proxies
    and pickers), at zero as at any other size. Nothing else, no address outside the cluster."""
    gateway = gateway_of(world, model.name)
    return {"prometheus", gateway.proxy, gateway.picker, *group_workers(world, model)}


def group_workers(world: World, model: Any) -> set[str]:
    """The headless workers of a multi-node model's groups (world pod names): pods of the replica itself, which
    reach their leader on every port (torch.distributed's rendezvous, NCCL's bootstrap), its API port among them."""
    leader = world.pods[f"{model.name}/{model.name}"]
    return {
        name
        for name, pod in world.pods.items()
        if pod.namespace == model.name
        and pod.labels.get(LWS_WORKER_INDEX_LABEL, "0") != "0"
        and pod.labels.get("app.kubernetes.io/instance") == leader.labels.get("app.kubernetes.io/instance")
    }


def _scrape_targets(world: World, selector: dict[str, Any], namespaces: dict[str, Any]) -> list[Endpoint]:
    names = namespaces.get("matchNames")
    return [
        p
        for p in world.pods.values()
        if p.namespace is not None and (namespaces.get("any") or (names and p.namespace in names)) and selects(selector, p.labels)
    ]


def needed_flows(world: World) -> Iterator[tuple[str, Endpoint, Endpoint, int, str]]:
    """(why, source, destination, port, protocol) for every flow the platform depends on."""
    p, h = world.pods, world.hosts
    prometheus = p["prometheus"]
    # scrapes: every pod each PodMonitor selects (vLLM, the gateways' proxies and pickers), on the port it names
    for r in world.run.of_type("kubernetes:monitoring.coreos.com/v1:PodMonitor"):
        doc = values(r)
        targets = _scrape_targets(world, doc["spec"]["selector"], doc["spec"].get("namespaceSelector") or {})
        assert targets, f"PodMonitor {doc['metadata']['name']} selects no pod of the world"
        for endpoint in doc["spec"]["podMetricsEndpoints"]:
            for pod in targets:
                if pod.labels.get(LWS_WORKER_INDEX_LABEL, "0") != "0":
                    # a LeaderWorkerSet's worker runs headless, without the port: the operator makes no target of
                    # a pod without the endpoint's named port
                    assert endpoint["port"] not in world.ports[pod.name], pod.name
                    continue
                port = world.ports[pod.name].get(endpoint["port"])
                assert port is not None, f"PodMonitor {doc['metadata']['name']} scrapes port {endpoint['port']}, which {pod.name} lacks"
                yield f"Prometheus scrapes {pod.name} on {port}", prometheus, pod, port, "TCP"
    targets = {"dcgm-exporter": dcgm_exporter(world), "karpenter": p["karpenter"]}
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
    for r in world.run.of_type(SCALED_OBJECT):
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
    # every Ingress: the ALB reaches each target of its backend (a gateway's proxies) and health-checks it
    for r in world.run.of_type(INGRESS):
        doc = values(r)
        annotations = doc["metadata"].get("annotations") or {}
        check = annotations.get("alb.ingress.kubernetes.io/healthcheck-port", "traffic-port")
        for rule in doc["spec"]["rules"]:
            for path in rule["http"]["paths"]:
                for target, port in ingress_targets(world, doc["metadata"]["namespace"], path["backend"]["service"]):
                    yield f"ALB forwards to {target.name}", h["alb"], target, port, "TCP"
                    health = port if check == "traffic-port" else int(check)
                    # the target is a gateway's proxies (at zero too), checked on their ready listener
                    gateway = next((g for g in world.gateways.values() if g.proxy == target.name), None)
                    assert gateway is not None, f"Ingress {doc['metadata']['name']} sends to {target.name}, no gateway's proxies"
                    assert health == ready_port(world, gateway), f"Ingress {doc['metadata']['name']} checks port {health}"
                    yield f"ALB health-checks {target.name}", h["alb"], target, health, "TCP"
    # each gateway: its proxies forward to the pool's pods and ask the picker; the pickers read the pool's pods
    for gateway in world.gateways.values():
        proxy, picker = p[gateway.proxy], p[gateway.picker]
        labels, pool_ports = gateway.pool
        pool = world.selected(gateway.namespace, labels)
        assert pool, f"{gateway.release}'s InferencePool selects no pod"
        for pod in pool:
            for port in pool_ports:
                yield f"{proxy.name} forwards to {pod.name}", proxy, pod, port, "TCP"
                yield f"{picker.name} reads {pod.name}'s metrics", picker, pod, port, "TCP"
            if (kv := kv_events_port(world, gateway.release)) is not None:
                yield f"{picker.name} reads {pod.name}'s KV events", picker, pod, kv, "TCP"
        yield f"{proxy.name} asks its picker", proxy, picker, GATEWAY_PICKER_PORTS["grpc"], "TCP"
        for source in (proxy, picker):
            yield f"{source.name} resolves names", source, p["coredns"], 53, "UDP"
        yield f"{picker.name} watches its pool's pods", picker, h["api-service"], 443, "TCP"
    for model, pod in _models(world):
        gateway = gateway_of(world, model.name)
        for client in model.client_namespaces:
            port = world.ports[gateway.proxy]["api"]
            yield f"a pod in {client} calls {model.name}'s gateway", p[f"client:{client}"], p[gateway.proxy], port, "TCP"
        yield f"{model.name} fetches weights over HTTPS", pod, h["internet"], 443, "TCP"
        yield f"{model.name} resolves names", pod, p["coredns"], 53, "UDP"
        if model.streams_from_s3:
            yield from _streams(world, model.name, pod)
            s3 = _s3(world)
            for name, job in world.pods.items():
                if name.startswith(f"{model.name}/{model.name}-weights-"):
                    yield f"{name} downloads from Hugging Face", job, h["internet"], 443, "TCP"
                    yield f"{name} writes to S3 ({s3.name})", job, s3, 443, "TCP"
                    yield f"{name} gets S3 credentials", job, h["pod-identity-agent"], 80, "TCP"
    # a multi-node model's groups: each worker reaches its leader's rendezvous, the leader each worker (NCCL's
    # bootstrap, on a port NCCL picks), and every worker reads its stage's weights as its leader does
    for model, leader in _models(world):
        for name in sorted(group_workers(world, model)):
            worker = p[name]
            yield f"{name} joins its leader's rendezvous", worker, leader, TORCH_MASTER_PORT, "TCP"
            yield f"{model.name} bootstraps NCCL with {name}", leader, worker, NCCL_BOOTSTRAP_PORT, "TCP"
            yield f"{name} resolves names", worker, p["coredns"], 53, "UDP"
            if model.streams_from_s3:
                yield from _streams(world, name, worker)
    if "lws-controller" in p:
        yield "lws-controller calls the API server", p["lws-controller"], h["api-service"], 443, "TCP"
        yield "control plane calls the LeaderWorkerSet webhook", h["control-plane"], p["lws-controller"], lws.WEBHOOK_PORT, "TCP"
    # controllers
    for name in ("karpenter", *(["alb-controller"] if world.run.of_type(INGRESS) else [])):
        yield f"{name} calls the API server", p[name], h["api-service"], 443, "TCP"
        yield f"{name} calls AWS", p[name], h["internet"], 443, "TCP"
        yield f"{name} gets credentials", p[name], h["pod-identity-agent"], 80, "TCP"
        yield f"{name} resolves names", p[name], p["coredns"], 53, "UDP"
    if world.run.of_type(INGRESS):
        yield "control plane calls the load balancer webhook", h["control-plane"], p["alb-controller"], 9443, "TCP"
    for name in ("gpu-operator", "keda-operator", "prometheus-operator"):
        yield f"{name} calls the API server", p[name], h["api-service"], 443, "TCP"


def _s3(world: World) -> Endpoint:
    """Where S3 is reached: an existing VPC's interface endpoint, else S3's public address (through the gateway endpoint)."""
    endpoints = netpol.interface_endpoints(world.cfg)
    return Endpoint("s3-interface-endpoint", _host(endpoints[0], 10)) if endpoints else world.hosts["internet"]


def _streams(world: World, who: str, pod: Endpoint) -> Iterator[tuple[str, Endpoint, Endpoint, int, str]]:
    """A pod that streams its weights from S3: its credentials from the Pod Identity agent, then S3."""
    yield f"{who} gets S3 credentials", pod, world.hosts["pod-identity-agent"], 80, "TCP"
    s3 = _s3(world)
    yield f"{who} streams from S3 ({s3.name})", pod, s3, 443, "TCP"


def ingress_targets(world: World, namespace: str, backend: dict[str, Any]) -> list[tuple[Endpoint, int]]:
    """The pods (and their ports) the ALB registers for an Ingress backend (target type ip): the
    Service's pods on its target port."""
    port = int(backend["port"]["number"])
    service = world.services[f"{namespace}/{backend['name']}"]
    target = next(t for s, t in service.ports if s == port)
    assert isinstance(target, int), f"{service.name}: a named target port"
    pods = world.backends(service)
    assert pods, f"Ingress backend {namespace}/{service.name} selects no pod"
    return [(pod, target) for pod in pods]


def forbidden_flows(world: World) -> Iterator[tuple[str, Endpoint, Endpoint, int, str]]:
    """Flows the policies must refuse."""
    p, h = world.pods, world.hosts
    for model, pod in _models(world):
        vllm_ports = sorted({VLLM_PORT, *world.ports[pod.name].values(), *([kv] if (kv := kv_events_port(world, model.name)) else [])})
        admitted = vllm_admits(world, model)
        gateway = gateway_of(world, model.name)
        # no address outside the cluster reaches vLLM on any of its ports: not the ALB, a node, the internet
        for host in ("alb", "other-node", "control-plane", "internet"):
            for port in vllm_ports:
                yield f"{host} reaches {model.name} on {port}", h[host], pod, port, "TCP"
        # no pod but its gateway and Prometheus (at zero too): not a client, not KEDA, not another model
        for name, source in p.items():
            if source is pod:
                continue
            if name not in admitted:
                yield f"{name} reaches {model.name} on {VLLM_PORT}", source, pod, VLLM_PORT, "TCP"
            for port in vllm_ports:
                if port != VLLM_PORT and name not in (gateway.proxy, gateway.picker):
                    yield f"{name} reaches {model.name} on {port}", source, pod, port, "TCP"
        yield f"{model.name} calls the API server", pod, h["api-service"], 443, "TCP"
        yield f"{model.name} reads instance metadata", pod, h["imds"], 80, "TCP"
        yield f"{model.name} reaches Prometheus", pod, p["prometheus"], netpol.PROMETHEUS_PORT, "TCP"
        yield f"{model.name} reaches the VPC on 443", pod, h["other-node"], 443, "TCP"
        yield f"{model.name} reaches a GPU node's DCGM host engine", pod, h["gpu-node"], DCGM_HOST_ENGINE_PORT, "TCP"
        yield f"{model.name} reaches another pod on 443", pod, p["stranger"], 443, "TCP"
    # a picker's ext_proc port: its own proxies only
    for gateway in world.gateways.values():
        picker, ext_proc = p[gateway.picker], GATEWAY_PICKER_PORTS["grpc"]
        for name, source in p.items():
            if name not in (gateway.proxy, gateway.picker):
                yield f"{name} reaches {gateway.picker} on {ext_proc}", source, picker, ext_proc, "TCP"
        for host in ("alb", "other-node", "internet"):
            yield f"{host} reaches {gateway.picker} on {ext_proc}", h[host], picker, ext_proc, "TCP"
        proxy = p[gateway.proxy]
        # the proxies take requests and health checks from the ALB's subnets (and the model's clients): not the internet
        for port in (world.ports[gateway.proxy]["api"], ready_port(world, gateway), envoy_metrics(world, gateway)):
            yield f"the internet reaches {gateway.proxy} on {port}", h["internet"], proxy, port, "TCP"
        yield f"a stray pod scrapes {gateway.proxy}", p["stranger"], proxy, envoy_metrics(world, gateway), "TCP"
        yield f"{gateway.proxy} reaches the API server", proxy, h["api-service"], 443, "TCP"
        yield f"{gateway.proxy} reaches the internet", proxy, h["internet"], 443, "TCP"
    for name in ("prometheus", "grafana", "keda-operator", "gpu-operator", "dcgm-exporter"):
        if name in p:  # a host-network exporter is outside every policy
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
    # wherever the ALB's subnets do not hold a pod's address: only a model's clients reach its front door (its
    # proxies' API port, at zero as at any other size), and no pod reaches the proxies' health port (the ALB's)
    for name, source in p.items():
        if in_load_balancer_subnets(world, source):
            continue
        for model in world.cfg.models:
            gateway = gateway_of(world, model.name)
            if source.namespace not in (*model.client_namespaces, gateway.namespace):
                port = world.ports[gateway.proxy]["api"]
                yield f"{name} reaches {gateway.proxy} on {port}", source, p[gateway.proxy], port, "TCP"
            ready = ready_port(world, gateway)
            yield f"{name} reaches {gateway.proxy}'s health port {ready}", source, p[gateway.proxy], ready, "TCP"
    # a populate Job reaches DNS, HTTPS outside the VPC, the S3 endpoint and the Pod Identity agent only
    for name, job in populate_jobs(world).items():
        for why, dst, port, proto in JOB_FORBIDDEN:
            yield f"{name} reaches {why}", job, _destination(world, dst), port, proto
    if "dcgm-exporter" in p:
        yield "a stray pod reaches the GPU operator", p["stranger"], p["dcgm-exporter"], netpol.DCGM_EXPORTER_PORT, "TCP"


def dcgm_exporter(world: World) -> Endpoint:
    """The GPU operator's exporter: a pod, or a GPU node's address when it reads the node monitoring agent's
    host engine (the operator then runs it on the host network)."""
    return world.pods.get("dcgm-exporter") or world.hosts["gpu-node"]


def in_load_balancer_subnets(world: World, endpoint: Endpoint) -> bool:
    """An address the ALB's subnets hold (internal ALBs share the private subnets with the pods: a policy
    cannot tell such a pod from the ALB)."""
    return any(ipaddress.ip_address(endpoint.ip) in ipaddress.ip_network(c) for c in netpol.load_balancer_sources(world.cfg))


def envoy_metrics(world: World, gateway: Gateway) -> int:
    return world.ports[gateway.proxy]["envoy-metrics"]


def ready_port(world: World, gateway: Gateway) -> int:
    """The proxies' ready listener (the ALB's health checks)."""
    return world.ports[gateway.proxy]["ready"]


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
    ("a GPU node's DCGM host engine", "gpu-node", DCGM_HOST_ENGINE_PORT, "TCP"),
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
    for r in world.run.of_type(SCALED_OBJECT):
        for trigger in values(r)["spec"]["triggers"]:
            if trigger["type"] == "prometheus":
                host, port = trigger["metadata"]["serverAddress"].split("//", 1)[1].rsplit(":", 1)
                name, ns = host.split(".")[:2]
                yield "KEDA queries the Prometheus Service", p["keda-operator"], world.services[f"{ns}/{name}"], int(port), "TCP"
    prometheus = world.services[f"{world.cfg.observability.namespace}/kube-prometheus-stack-prometheus"]
    yield "Grafana queries the Prometheus Service", p["grafana"], prometheus, 9090, "TCP"
    dns = world.services["kube-system/kube-dns"]
    for model, pod in _models(world):
        # the model's url output (its proxies' Service, at zero too): where its clients are told to call
        service, port = url_service(world, model.name)
        for client in model.client_namespaces:
            yield f"a pod in {client} calls the {service.name} Service", p[f"client:{client}"], service, port, "TCP"
        yield f"{model.name} resolves names through the kube-dns Service", pod, dns, 53, "UDP"
    for gateway in world.gateways.values():
        # Envoy's ext_proc cluster: the picker's Service, by the name its config holds
        for host, port in _cluster_addresses(gateway.envoy, "ext_proc"):
            name, ns = host.split(".")[:2]
            yield f"{gateway.proxy} asks the {name} Service", p[gateway.proxy], world.services[f"{ns}/{name}"], port, "TCP"
        for source in (gateway.proxy, gateway.picker):
            yield f"{source} resolves names through the kube-dns Service", p[source], dns, 53, "UDP"
    for name in ("keda-operator", "prometheus", "grafana", "gpu-operator", "karpenter"):
        yield f"{name} resolves names through the kube-dns Service", p[name], dns, 53, "UDP"


def url_service(world: World, model_name: str) -> tuple[Service, int]:
    """The Service and port the model's `url` output names (`http://<service>.<namespace>.svc...:<port>/v1`)."""
    url = urllib.parse.urlsplit(world.run.outputs["models"][model_name]["url"])
    assert url.hostname is not None, url
    assert url.port is not None, url
    name, ns = url.hostname.split(".")[:2]
    return world.services[f"{ns}/{name}"], url.port


def _cluster_addresses(envoy: dict[str, Any], cluster: str) -> list[tuple[str, int]]:
    (found,) = [c for c in envoy["static_resources"]["clusters"] if c["name"] == cluster]
    return [
        (e["endpoint"]["address"]["socket_address"]["address"], int(e["endpoint"]["address"]["socket_address"]["port_value"]))
        for group in found["load_assignment"]["endpoints"]
        for e in group["lb_endpoints"]
    ]


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
