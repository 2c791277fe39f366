"""Relational checks over the rendered NetworkPolicies of every fixture stack: every flow the platform
needs is open, every flow it must refuse is shut, in the world tests/support/flows.py builds from
the render and the evaluator of tests/validators/netpol.py judges. Each check is shown failing on a
broken copy of the render.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from builders import network_policies as netpol
from offline import harness
from tests.conftest import FIXTURES, values
from tests.support.flows import (
    HTTP_ADD_ON_RELEASE,
    NETWORK_POLICY,
    RELEASE,
    SCALED_OBJECT,
    WORLDS,
    World,
    blocked,
    build_world,
    gateway_of,
    group_workers,
    http_add_on_remnants,
    job_may_reach,
    job_reach,
    kv_events_port,
    leaks,
    needed_flows,
    needed_service_flows,
    populate_jobs,
    ready_port,
    stack_run,
    undefended_namespaces,
    url_service,
    vllm_admits,
)
from tests.validators.netpol import Cluster, Endpoint


@pytest.mark.parametrize("stack", WORLDS)
def test_every_needed_flow_is_open(stack: str) -> None:
    world = build_world(stack)
    assert len(list(needed_flows(world))) > 20
    assert blocked(world) == []


@pytest.mark.parametrize("stack", WORLDS)
def test_every_forbidden_flow_is_shut(stack: str) -> None:
    assert leaks(build_world(stack)) == []


@pytest.mark.parametrize("stack", WORLDS)
def test_the_world_holds_each_models_front_door(stack: str) -> None:
    """A gateway (proxies and pickers, as the router chart labels them) per model, those at replicas.min 0
    included; every vLLM pod, proxy and picker scraped; the flows that matter for the front door are among
    the needed ones (an empty selector would make the flow checks vacuous)."""
    world = build_world(stack)
    assert sorted(world.gateways) == sorted(m.name for m in world.cfg.models)
    needed = {why for why, *_ in needed_flows(world)}
    scraped = {dst.name for why, src, dst, *_ in needed_flows(world) if why.startswith("Prometheus scrapes ") and src.name == "prometheus"}
    for model in world.cfg.models:
        assert f"{model.name}/{model.name}" in scraped, model.name
        gateway = world.gateways[model.name]
        assert {gateway.proxy, gateway.picker} <= scraped
        assert {
            f"{gateway.proxy} forwards to {model.name}/{model.name}",
            f"{gateway.picker} reads {model.name}/{model.name}'s metrics",
        } <= needed
        assert all(f"a pod in {c} calls {model.name}'s gateway" in needed for c in model.client_namespaces)
        workers = group_workers(world, model)
        # a multi-node model's headless workers are pods of its replicas (one per stage beyond the leader's)
        assert len(workers) == (1 if model.multi_node else 0), model.name
        assert vllm_admits(world, model) == {"prometheus", gateway.proxy, gateway.picker, *workers}


@pytest.mark.parametrize("stack", WORLDS)
def test_service_flows_reach_pods(stack: str) -> None:
    """Every Service the platform reaches by address has pods behind it in the world (a flow to an empty Service proves nothing)."""
    world = build_world(stack)
    for why, _, service, _, _ in needed_service_flows(world):
        assert world.backends(service), why


@pytest.mark.parametrize("stack", FIXTURES)
def test_every_namespace_the_program_creates_denies_by_default(stack: str) -> None:
    world = build_world(stack)
    assert undefended_namespaces(world) == []
    assert {"keda", world.cfg.observability.namespace, world.cfg.gpu_operator.namespace} <= {
        values(r)["metadata"]["name"] for r in world.run.of_type("kubernetes:core/v1:Namespace")
    }


def test_every_policy_port_is_a_number() -> None:
    """The agent drops named ports from ipBlock rules: every port the platform writes is numeric."""
    for stack in WORLDS:
        for policy in build_world(stack).policies:
            for key in ("ingress", "egress"):
                for rule in policy["spec"].get(key) or []:
                    assert all(isinstance(p["port"], int) for p in rule.get("ports") or []), policy["metadata"]


def _broken(stack: str, *changes: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]) -> World:
    policies = copy.deepcopy([values(r) for r in stack_run(stack)[1].of_type(NETWORK_POLICY)])
    for change in changes:
        policies = change(policies)
    return build_world(stack, policies)


def _edit(namespace: str, name: str, mutate: Callable[[dict[str, Any]], object]) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
    def change(ps: list[dict[str, Any]]) -> list[dict[str, Any]]:
        (found,) = [p for p in ps if (p["metadata"]["namespace"], p["metadata"]["name"]) == (namespace, name)]
        mutate(found["spec"])
        return ps

    return change


def _without(namespace: str, name: str) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
    return lambda ps: [p for p in ps if (p["metadata"]["namespace"], p["metadata"]["name"]) != (namespace, name)]


def test_a_closed_needed_flow_is_found() -> None:
    world = _broken("minimal-dev", _without("monitoring", "platform-flows"))
    assert "KEDA queries Prometheus" in blocked(world)


def test_a_missing_health_check_of_a_model_at_zero_is_found() -> None:
    """The ALB checks the proxies of a model at zero on their ready listener, as for any model."""
    world = build_world("scale-to-zero-dev")
    (model,) = [m for m in world.cfg.models if m.replicas.min == 0]
    gateway = gateway_of(world, model.name)
    ready = ready_port(world, gateway)
    needed = {why for why, *_ in needed_flows(world)}
    assert {f"ALB forwards to {gateway.proxy}", f"ALB health-checks {gateway.proxy}"} <= needed

    def no_ready_port(ps: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for p in ps:
            if p["metadata"]["namespace"] == model.name:
                # (a rule left without ports would admit every port: drop it)
                rules = [{**r, "ports": [x for x in r.get("ports") or [] if x["port"] != ready]} for r in p["spec"].get("ingress") or []]
                p["spec"]["ingress"] = [r for r in rules if r["ports"]]
        return ps

    found = blocked(_broken("scale-to-zero-dev", no_ready_port))
    assert f"ALB health-checks {gateway.proxy}" in found
    assert f"ALB forwards to {gateway.proxy}" not in found


def test_vllm_open_to_the_vpc_is_found() -> None:
    def from_the_vpc(ps: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for p in ps:
            if p["metadata"]["name"] == "llama-3-1-8b" and p["metadata"]["namespace"] == "llama-3-1-8b":
                p["spec"]["ingress"][0]["from"].append({"ipBlock": {"cidr": "10.70.0.0/16"}})
        return ps

    found = leaks(_broken("internet-facing-tls", from_the_vpc))
    assert {"other-node reaches llama-3-1-8b on 8000", "stranger reaches llama-3-1-8b on 8000"} <= set(found)


def test_vllm_open_to_the_load_balancer_is_found() -> None:
    """The ALB's subnets reach the gateway, never vLLM (any port)."""
    subnets = [{"ipBlock": {"cidr": c}} for c in netpol.load_balancer_sources(build_world("full-prod").cfg)]
    found = leaks(_broken("full-prod", _edit("qwen-2-5-7b", "qwen-2-5-7b", lambda s: s["ingress"].append({"from": subnets}))))
    assert {"alb reaches qwen-2-5-7b on 8000", "stranger reaches qwen-2-5-7b on 8000"} <= set(found)


def test_a_client_namespace_admitted_to_vllm_is_found() -> None:
    """The model's clients call its gateway: a client namespace on vLLM's port is a leak."""
    add = _edit("qwen-2-5-7b", "qwen-2-5-7b", lambda s: s["ingress"][0]["from"].append(netpol.namespace_peer("chat-app")))
    assert "client:chat-app reaches qwen-2-5-7b on 8000" in leaks(_broken("existing-vpc-irsa-bottlerocket", add))


def test_another_pod_on_the_picker_port_is_found() -> None:
    """The picker's ext_proc port admits its own proxies only."""
    widen = _edit("qwen-2-5-7b", "qwen-2-5-7b-epp", lambda s: s["ingress"][0]["from"].append({"namespaceSelector": {}}))
    found = leaks(_broken("full-prod", widen))
    assert {"stranger reaches qwen-2-5-7b/qwen-2-5-7b-epp on 9002", "client:team-chat reaches qwen-2-5-7b/qwen-2-5-7b-epp on 9002"} <= set(
        found
    )
    # the proxies of another model too, where their egress goes beyond their own picker
    cross = _edit("llama-3-1-8b", "llama-3-1-8b-proxy", lambda s: s["egress"].append({"to": [{"namespaceSelector": {}}]}))
    assert "llama-3-1-8b/llama-3-1-8b-proxy reaches qwen-2-5-7b/qwen-2-5-7b-epp on 9002" in leaks(_broken("full-prod", widen, cross))


def test_a_proxy_cut_off_from_its_picker_is_found() -> None:
    cut = _edit("llama-3-1-8b", "llama-3-1-8b-proxy", lambda s: s["egress"].pop(1))
    found = blocked(_broken("minimal-dev", cut))
    assert {"llama-3-1-8b/llama-3-1-8b-proxy asks its picker", "llama-3-1-8b/llama-3-1-8b-proxy asks the llama-3-1-8b-epp Service"} <= set(
        found
    )


def test_the_precise_prefix_cache_needs_the_kv_event_rule_and_nothing_more() -> None:
    kv = kv_events_port(build_world("minimal-dev+precise"), "llama-3-1-8b")
    assert kv is not None
    assert kv_events_port(build_world("minimal-dev"), "llama-3-1-8b") is None
    closed = blocked(_broken("minimal-dev+precise", _edit("llama-3-1-8b", "llama-3-1-8b", lambda s: s["ingress"].pop(1))))
    assert "llama-3-1-8b/llama-3-1-8b-epp reads llama-3-1-8b/llama-3-1-8b's KV events" in closed
    opened = _edit("llama-3-1-8b", "llama-3-1-8b", lambda s: s["ingress"][1]["from"].append({"ipBlock": {"cidr": "0.0.0.0/0"}}))
    assert {f"stranger reaches llama-3-1-8b on {kv}", f"alb reaches llama-3-1-8b on {kv}"} <= set(
        leaks(_broken("minimal-dev+precise", opened))
    )


def test_model_egress_into_the_cluster_is_found() -> None:
    def https_anywhere(ps: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for p in ps:
            if p["metadata"]["name"] == "llama-3-1-8b":
                p["spec"]["egress"][1] = {"ports": [{"protocol": "TCP", "port": 443}]}
        return ps

    found = leaks(_broken("minimal-dev", https_anywhere))
    assert "llama-3-1-8b calls the API server" in found


def test_a_namespace_without_default_deny_is_found() -> None:
    world = _broken("minimal-dev", _without("keda", "default-deny"))
    assert undefended_namespaces(world) == ["keda"]


def test_s3_through_an_interface_endpoint_needs_its_rule() -> None:
    def no_endpoint(ps: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for p in ps:
            p["spec"]["egress"] = [r for r in p["spec"].get("egress") or [] if r.get("to") != [{"ipBlock": {"cidr": "10.60.192.0/24"}}]]
        return ps

    found = blocked(_broken("existing-vpc-irsa-bottlerocket", no_endpoint))
    assert "qwen-2-5-1-5b streams from S3 (s3-interface-endpoint)" in found


def test_a_client_namespace_left_out_is_found() -> None:
    # (the existing VPC names no load balancer subnets, so its whole range reaches the proxies: the
    # internet-facing stack's ALB sits in public subnets and tells a client apart)
    assert "a pod in batch-jobs calls mistral-7b's gateway" in blocked(
        _broken("internet-facing-tls", lambda ps: [{**p, "spec": _no_peer(p["spec"], "batch-jobs")} for p in ps])
    )
    # a model at zero is called through its gateway like any other
    assert {"a pod in chat-app calls llama-3-1-8b's gateway", "a pod in chat-app calls the llama-3-1-8b-proxy Service"} <= set(
        blocked(_broken("scale-to-zero-dev+clients", lambda ps: [{**p, "spec": _no_peer(p["spec"], "chat-app")} for p in ps]))
    )


def _no_peer(spec: dict[str, Any], namespace: str) -> dict[str, Any]:
    """The policy without the namespace among its ingress peers (a rule left with none dropped, not opened to all)."""
    rules = []
    for rule in spec.get("ingress") or []:
        peers = [peer for peer in rule.get("from") or [] if peer != netpol.namespace_peer(namespace)]
        if "from" not in rule or peers:
            rules.append({**rule, **({"from": peers} if "from" in rule else {})})
    return {**spec, "ingress": rules} if spec.get("ingress") else spec


def test_clients_of_a_model_at_zero_reach_its_proxies_only_on_the_api_port() -> None:
    """The client of a model at zero calls its gateway's proxies on 8081; not their health or metrics port, not vLLM."""
    world = build_world("scale-to-zero-dev+clients")
    client, proxy = world.pods["client:chat-app"], world.pods["llama-3-1-8b/llama-3-1-8b-proxy"]
    gateway = gateway_of(world, "llama-3-1-8b")
    assert world.ports[gateway.proxy]["api"] == 8081
    assert world.cluster.allowed(client, proxy, 8081)
    assert world.cluster.allowed_via_service(client, world.services[gateway.proxy], 8081, world.backends(world.services[gateway.proxy]))
    assert not world.cluster.allowed(client, proxy, ready_port(world, gateway))
    assert not world.cluster.allowed(client, proxy, world.ports[gateway.proxy]["envoy-metrics"])
    assert not world.cluster.allowed(client, world.pods["llama-3-1-8b/llama-3-1-8b"], 8000)
    (rule,) = [r for r in _proxy_policy(world)["spec"]["ingress"] if netpol.namespace_peer("chat-app") in r["from"]]
    index = _proxy_policy(world)["spec"]["ingress"].index(rule)
    wider = _edit("llama-3-1-8b", "llama-3-1-8b-proxy", lambda s: s["ingress"][index]["ports"].append({"protocol": "TCP", "port": 19001}))
    assert "client:chat-app reaches llama-3-1-8b/llama-3-1-8b-proxy's health port 19001" in leaks(
        _broken("scale-to-zero-dev+clients", wider)
    )


def _proxy_policy(world: World) -> dict[str, Any]:
    (policy,) = [p for p in world.policies if (p["metadata"]["namespace"], p["metadata"]["name"]) == ("llama-3-1-8b", "llama-3-1-8b-proxy")]
    return policy


def test_a_named_target_port_on_a_model_service_is_found() -> None:
    """The policy controller maps a rule's port to a Service only through a numeric target port: the proxies
    of a model at zero ask its picker's Service, and a named target port there would cut them off."""
    world = build_world("scale-to-zero-dev")
    why = "llama-3-1-8b/llama-3-1-8b-proxy asks the llama-3-1-8b-epp Service"
    assert why in {w for w, *_ in needed_service_flows(world)}
    assert why not in blocked(world)
    service = world.services["llama-3-1-8b/llama-3-1-8b-epp"]
    world.services["llama-3-1-8b/llama-3-1-8b-epp"] = dataclasses.replace(
        service, ports=tuple((port, "grpc" if port == 9002 else target) for port, target in service.ports)
    )
    assert why in blocked(world)


# -- the evaluator itself, on hand-written policies --------------------------------------------------------


def _np(ns: str, pods: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": ns}, "spec": {"podSelector": pods, **spec}}


def test_evaluator_semantics() -> None:
    a = Endpoint("a", "10.0.0.10", "ns-a", {"app": "a"})
    b = Endpoint("b", "10.0.0.11", "ns-b", {"app": "b", "tier": "api"})
    outside = Endpoint("outside", "203.0.113.5")
    open_cluster = Cluster([], {})
    assert open_cluster.allowed(a, b, 80)  # no policy: open
    # policyTypes omitted: Ingress only, so egress stays open
    ingress_only = Cluster(
        [_np("ns-b", {}, {"ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"team": "x"}}}]}]})], {"ns-a": {"team": "x"}}
    )
    assert ingress_only.allowed(a, b, 80)
    assert not ingress_only.allowed(outside, b, 80)
    # namespace AND pod selector in one peer; matchExpressions; ports with endPort; protocol defaults to TCP
    peer = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ns-b"}},
        "podSelector": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["api"]}]},
    }
    egress = Cluster(
        [_np("ns-a", {}, {"policyTypes": ["Egress"], "egress": [{"to": [peer], "ports": [{"port": 8000, "endPort": 8010}]}]})], {}
    )
    assert egress.allowed(a, b, 8005)
    assert not egress.allowed(a, b, 8011)
    assert not egress.allowed(a, b, 8005, "UDP")
    assert not egress.allowed(a, Endpoint("c", "10.0.0.12", "ns-b", {"tier": "web"}), 8005)
    # ipBlock with except; an empty `to` admits every destination
    blocks = Cluster(
        [
            _np(
                "ns-a",
                {},
                {
                    "policyTypes": ["Egress"],
                    "egress": [
                        {"to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": ["10.0.0.0/8"]}}]},
                        {"to": [], "ports": [{"port": 53, "protocol": "UDP"}]},
                    ],
                },
            )
        ],
        {},
    )
    assert blocks.allowed(a, outside, 443)
    assert not blocks.allowed(a, b, 443)
    assert blocks.allowed(a, b, 53, "UDP")
    # both ends must agree: an open egress does not pass a closed ingress
    both = Cluster([_np("ns-b", {"matchLabels": {"app": "b"}}, {"policyTypes": ["Ingress"]})], {})
    assert not both.allowed(a, b, 80)


def _cluster_wide(policies: list[dict[str, Any]]) -> list[str]:
    """Peers that select pods in every namespace (an empty namespaceSelector): the controller resolves
    such a peer into every pod IP of the cluster and rewrites the PolicyEndpoint on every pod change
    anywhere (aws/aws-network-policy-agent#305)."""
    return [
        f"{p['metadata']['namespace']}/{p['metadata']['name']} {key}"
        for p in policies
        for key, side in (("ingress", "from"), ("egress", "to"))
        for rule in p["spec"].get(key) or []
        for peer in rule.get(side) or []
        if "namespaceSelector" in peer and not any(peer["namespaceSelector"].values())
    ]


@pytest.mark.parametrize("stack", WORLDS)
def test_no_policy_selects_every_namespace(stack: str) -> None:
    world = build_world(stack)
    assert _cluster_wide(world.policies) == []
    (scrapes,) = [p for p in world.policies if p["metadata"]["name"] == "prometheus-scrapes"]
    # Prometheus reaches every target (pods, nodes, the API server's endpoints) inside the VPC's blocks, on any port
    assert scrapes["spec"]["egress"] == [{"to": [{"ipBlock": {"cidr": c}} for c in world.cfg.vpc_cidrs]}]


def test_a_cluster_wide_prometheus_egress_is_found() -> None:
    def widen(ps: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for p in ps:
            if p["metadata"]["name"] == "prometheus-scrapes":
                p["spec"]["egress"].append({"to": [{"namespaceSelector": {}}]})
        return ps

    assert _cluster_wide(_broken("minimal-dev", widen).policies) == ["monitoring/prometheus-scrapes egress"]


def test_scrapes_need_the_vpc_rule() -> None:
    def narrow(ps: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for p in ps:
            if p["metadata"]["name"] == "prometheus-scrapes":
                p["spec"]["egress"] = [{"to": [{"ipBlock": {"cidr": "192.0.2.0/24"}}]}]
        return ps

    closed = blocked(_broken("existing-vpc-irsa-bottlerocket", narrow))
    # (its API calls, discovery included, go through the namespace's API server rule)
    assert {"Prometheus scrapes KEDA", "Prometheus scrapes nodes on 9100", "Prometheus scrapes nodes on 10250"} <= set(closed)


# -- every workload as a source and a target: the populate Jobs, the gateways' proxies ---------------------


@pytest.mark.parametrize("stack", WORLDS)
def test_populate_jobs_reach_only_dns_public_https_s3_and_their_credentials(stack: str) -> None:
    world = build_world(stack)
    jobs = populate_jobs(world)
    assert bool(jobs) == any(m.streams_from_s3 for m in world.cfg.models)
    for name, job in jobs.items():
        assert job_reach(world, job) == job_may_reach(world), name


def test_every_fixture_with_s3_weights_has_its_jobs_in_the_world() -> None:
    assert len(populate_jobs(build_world("full-prod"))) >= 2
    assert populate_jobs(build_world("existing-vpc-irsa-bottlerocket"))


def _job_to_every_kubelet(ps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for p in ps:
        if p["metadata"]["name"].endswith("-weights"):
            p["spec"]["egress"].append({"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}], "ports": [{"protocol": "TCP", "port": 10250}]})
    return ps


def test_a_populate_job_admitted_to_every_kubelet_is_found() -> None:
    world = _broken("full-prod", _job_to_every_kubelet)
    jobs = populate_jobs(world)
    found = leaks(world)
    assert all(f"{name} reaches other-node on 10250" in found for name in jobs)
    assert all(("other-node", 10250, "TCP") in job_reach(world, job) - job_may_reach(world) for job in jobs.values())


def test_the_proxies_of_a_model_at_zero_open_to_the_internet_are_found() -> None:
    def open_proxies(ps: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for p in ps:
            if (p["metadata"]["namespace"], p["metadata"]["name"]) == ("llama-3-1-8b", "llama-3-1-8b-proxy"):
                for rule in p["spec"]["ingress"][:2]:
                    rule["from"].append({"ipBlock": {"cidr": "0.0.0.0/0"}})
        return ps

    found = leaks(_broken("scale-to-zero-dev", open_proxies))
    assert "the internet reaches llama-3-1-8b/llama-3-1-8b-proxy on 8081" in found
    assert "the internet reaches llama-3-1-8b/llama-3-1-8b-proxy on 19001" in found


# -- a model at zero: its gateway, its wake, nothing of the KEDA HTTP add-on ---------------------------------


def test_a_model_at_zero_is_served_and_woken_through_its_gateway() -> None:
    """scale-to-zero-dev: the model at zero has its gateway (proxies, pickers), vLLM admits nothing else,
    and its wake trigger is a Prometheus query KEDA makes on the series the proxies' scrape brings."""
    world = build_world("scale-to-zero-dev")
    (model,) = [m for m in world.cfg.models if m.replicas.min == 0]
    gateway = gateway_of(world, model.name)
    assert vllm_admits(world, model) == {"prometheus", gateway.proxy, gateway.picker}
    # its clients are told to call the proxies' Service on the API port, with no Host header to send
    service, port = url_service(world, model.name)
    assert (f"{service.namespace}/{service.name}", port) == (gateway.proxy, world.ports[gateway.proxy]["api"])
    assert world.run.outputs["models"][model.name]["host"] is None
    (scaled,) = [values(r) for r in world.run.of_type(SCALED_OBJECT) if values(r)["metadata"]["namespace"] == model.name]
    (wake,) = [t for t in scaled["spec"]["triggers"] if "envoy_http_downstream_rq_active" in t["metadata"].get("query", "")]
    assert wake["type"] == "prometheus"
    assert f'namespace="{model.name}"' in wake["metadata"]["query"]
    assert not any(t["type"].startswith("external") for t in scaled["spec"]["triggers"])
    needed = {why for why, *_ in needed_flows(world)}
    metrics = world.ports[gateway.proxy]["envoy-metrics"]
    assert {f"Prometheus scrapes {gateway.proxy} on {metrics}", "KEDA queries Prometheus"} <= needed
    assert blocked(world) == []
    # the wake depends on that scrape: a proxy policy without Prometheus on its metrics port cuts it
    no_scrape = _edit(model.name, f"{model.name}-proxy", lambda s: s["ingress"].pop(2))
    assert f"Prometheus scrapes {gateway.proxy} on {metrics}" in blocked(_broken("scale-to-zero-dev", no_scrape))


@pytest.mark.parametrize("stack", WORLDS)
def test_nothing_of_the_http_add_on_is_rendered(stack: str) -> None:
    """No InterceptorRoute, no `keda-add-ons-http` release, no `interceptor` NetworkPolicy, no Ingress in KEDA's
    namespace, no external scaler trigger; scale-to-zero-dev (a model at zero) above all."""
    cfg, run = stack_run(stack)
    assert http_add_on_remnants(run) == []
    if stack.startswith("scale-to-zero-dev"):
        assert any(m.replicas.min == 0 for m in cfg.models)
        assert not run.of_type("kubernetes:http.keda.sh/v1beta1:InterceptorRoute")
        assert HTTP_ADD_ON_RELEASE not in {values(r).get("name") for r in run.of_type(RELEASE)}
        assert ("keda", "interceptor") not in {
            (values(r)["metadata"]["namespace"], values(r)["metadata"]["name"]) for r in run.of_type(NETWORK_POLICY)
        }


def test_a_remnant_of_the_http_add_on_is_found() -> None:
    """The check above, on a render with each of the add-on's resources put back."""
    run = stack_run("scale-to-zero-dev")[1]

    def put_back(type_: str, name: str, inputs: dict[str, Any]) -> Any:
        return dataclasses.replace(run.registrations[0], type=type_, name=name, inputs=inputs)

    backend = {"service": {"name": f"{HTTP_ADD_ON_RELEASE}-interceptor-proxy", "port": {"number": 8080}}}
    add_on = [
        put_back(
            "kubernetes:http.keda.sh/v1beta1:InterceptorRoute",
            "model-llama-3-1-8b-interceptor-route",
            {"metadata": {"name": "llama-3-1-8b", "namespace": "llama-3-1-8b"}, "spec": {}},
        ),
        put_back(RELEASE, "keda-http-add-on", {"name": HTTP_ADD_ON_RELEASE, "chart": HTTP_ADD_ON_RELEASE, "namespace": "keda"}),
        put_back(
            NETWORK_POLICY, "network-policies-keda-interceptor", {"metadata": {"name": "interceptor", "namespace": "keda"}, "spec": {}}
        ),
        put_back(
            "kubernetes:networking.k8s.io/v1:Ingress",
            "model-llama-3-1-8b-ingress-at-zero",
            {"metadata": {"name": "llama-3-1-8b", "namespace": "keda"}, "spec": {"rules": [{"http": {"paths": [{"backend": backend}]}}]}},
        ),
    ]
    broken = harness.RunResult([*run.registrations, *add_on], run.outputs, run.secret_outputs, run.logs)
    assert http_add_on_remnants(broken) == [
        "kubernetes:http.keda.sh/v1beta1:InterceptorRoute model-llama-3-1-8b-interceptor-route",
        f"{RELEASE} keda-http-add-on ({HTTP_ADD_ON_RELEASE}, chart {HTTP_ADD_ON_RELEASE})",
        f"{NETWORK_POLICY} keda/interceptor",
        f"kubernetes:networking.k8s.io/v1:Ingress keda/llama-3-1-8b -> {HTTP_ADD_ON_RELEASE}-interceptor-proxy",
    ]
