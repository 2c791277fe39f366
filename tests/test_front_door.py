"""The front door at L7 (issue 28): who can make which of a model's vLLM routes answer.

vLLM checks its API key only under /v1 (and /v2, /inference, /cohere); POST /invocations (the
SageMaker route) serves chat completions with no key, and /tokenize, /pooling, /score are unguarded
too. So for every stack and every model, from (a) the ALB (through the rendered Ingress rules),
(b) a pod in a client namespace, (c) any other pod of the cluster, those routes must be unreachable
on the model's vLLM, path tricks included, and /v1 reachable only through the model's gateway (its
Envoy proxies), for a model at replicas.min 0 as for any other (its gateway holds the request while a
replica starts).

Composed from the render, each hop as its software routes:
- L4: the NetworkPolicies, in the world of tests/support/flows.py (every hop below is also a
  connection the evaluator must allow);
- the ALB: the Ingress rules as the load balancer controller (v3.5.0) turns them into listener
  rules: pathType Prefix `/p` is the path patterns `/p` and `/p/*` (`buildPathPatternsForPrefixPathType`),
  matched on the path as sent, case-sensitive; the `transforms.<name>` annotation applies to a
  backend whose Service is `<name>` (`enhanced_backend_builder.go` `buildTransforms`), a url-rewrite
  rewriting the path after the rule matched; the Host header passes unchanged;
- Envoy: the bootstrap in the router release's values (`router.proxy.presets.envoy.configMap`):
  its HTTP connection manager's escaped-slash action, `normalize_path` (RFC 3986 dot segments, with
  %2E as a dot) and `merge_slashes`, in that order, then the first route that matches; the
  normalized path is the one forwarded; an ORIGINAL_DST cluster forwards wherever the header names
  (the picker's choice, or a caller's), so wherever the proxy's egress lets it;
- vLLM (uvicorn, Starlette): the path percent-decoded once and matched literally, no dot segments
  resolved: `/v1/../invocations` is no route of vLLM.
Every trick path is shown to be harmless on the render and the check is shown failing on broken copies.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from config.facts.conventions import VLLM_APP_LABEL, VLLM_PORT
from tests.conftest import values
from tests.support.flows import (
    INGRESS,
    NETWORK_POLICY,
    WORLDS,
    World,
    build_world,
    group_workers,
    ingress_targets,
    stack_run,
    vllm_admits,
)
from tests.validators.netpol import Endpoint

UNGUARDED = ("/invocations", "/tokenize", "/pooling", "/score")
"""vLLM routes outside /v1 that serve without the API key (and are no part of the model's API)."""
API = "/v1/chat/completions"
A = "alb.ingress.kubernetes.io"
ENVOY_FILTERS = {"envoy.filters.http.health_check", "envoy.filters.http.ext_proc", "envoy.filters.http.router"}
"""The HTTP filters modelled here (ext_proc picks a destination, never a path): any other fails the test."""


def tricks(route: str) -> list[str]:
    """The route and spellings of it that a front door matching on raw paths would take for /v1 or a prefix of its own."""
    bare = route.lstrip("/")
    return [
        route,
        f"/v1{route}",
        f"/{route}",  # //invocations
        f"/v1/..{route}",
        f"/v1/./..{route}",
        f"/v1/%2e%2e{route}",
        f"/v1/%2E%2E/{bare}",
        f"/v1%2F..%2F{bare}",
        f"/v1/..%2f{bare}",
        f"/v1/..%5C{bare}",
        f"/v1/..\\{bare}",
        f"//v1/../{bare}",
        f"/v1/chat/../../{bare}",
        f"/v1/%2e%2e%2f{bare}",
    ]


# -- the door: the render's Ingresses and Envoy configs, in the world ---------------------------------------


@dataclass(frozen=True)
class Delivery:
    model: str
    """Whose vLLM answers."""
    path: str
    """The route vLLM matches (decoded once, literal)."""
    via: tuple[str, ...]
    """The relays in between (empty: straight to vLLM's port)."""


@dataclass
class Door:
    world: World
    ingresses: list[dict[str, Any]]
    envoy: dict[str, dict[str, Any]]
    """Each gateway's Envoy bootstrap, by its proxy pod's name."""
    vllm: dict[str, str] = field(default_factory=dict)
    """vLLM's pods (world names) to their model."""


def build_door(stack: str, policies: list[dict[str, Any]] | None = None) -> Door:
    world = build_world(stack, policies)
    run = world.run
    vllm = {
        name: pod.namespace or ""
        for name, pod in world.pods.items()
        if all(pod.labels.get(k) == v for k, v in VLLM_APP_LABEL.items()) and name == f"{pod.namespace}/{pod.namespace}"
    }
    return Door(
        world,
        [values(r) for r in run.of_type(INGRESS)],
        {g.proxy: g.envoy for g in world.gateways.values()},
        vllm,
    )


def vllm_route(path: str) -> str:
    """What vLLM's router matches: uvicorn percent-decodes the path once; Starlette matches it literally."""
    return urllib.parse.unquote(path.split("?", 1)[0])


def _direct(door: Door, source: Endpoint, path: str, via: tuple[str, ...]) -> Iterator[Delivery]:
    """Straight to a vLLM pod (its address, or its Service's) on vLLM's port: any path at all."""
    w = door.world
    for name, model in door.vllm.items():
        pod, service = w.pods[name], w.services[f"{model}/{model}"]
        if w.cluster.allowed(source, pod, VLLM_PORT) or w.cluster.allowed_via_service(source, service, VLLM_PORT, w.backends(service)):
            yield Delivery(model, vllm_route(path), via)


# Envoy


def remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4."""
    out: list[str] = []
    rest = path
    while rest:
        if rest.startswith("../"):
            rest = rest[3:]
        elif rest.startswith("./"):
            rest = rest[2:]
        elif rest.startswith("/./"):
            rest = "/" + rest[3:]
        elif rest == "/.":
            rest = "/"
        elif rest.startswith("/../") or rest == "/..":
            rest = "/" + rest[4:] if rest.startswith("/../") else "/"
            if out:
                out.pop()
        elif rest in (".", ".."):
            rest = ""
        else:
            cut = rest.find("/", 1)
            segment, rest = (rest, "") if cut < 0 else (rest[:cut], rest[cut:])
            out.append(segment)
    return "".join(out)


def envoy_path(path: str, hcm: dict[str, Any]) -> str | None:
    """The path Envoy routes on and forwards (None: refused), as its connection manager normalizes it."""
    action = hcm.get("path_with_escaped_slashes_action", "KEEP_UNCHANGED")
    escaped = re.compile(r"%(2f|5c)", re.IGNORECASE)
    if escaped.search(path):
        if action == "REJECT_REQUEST":
            return None
        if action in ("UNESCAPE_AND_REDIRECT", "UNESCAPE_AND_FORWARD"):
            # (a redirect sends the caller to the unescaped path: the same as asking for it)
            path = escaped.sub(lambda m: "/" if m.group(1).lower() == "2f" else "\\", path)
    if hcm.get("normalize_path"):
        # Envoy canonicalizes with Chromium's URL library: %2E is a dot, a backslash a slash
        path = remove_dot_segments(re.sub(r"%2e", ".", path, flags=re.IGNORECASE).replace("\\", "/"))
    if hcm.get("merge_slashes"):
        path = re.sub(r"/{2,}", "/", path)
    return path


def _route_matches(match: dict[str, Any], path: str) -> str | None:
    """The matched prefix (for prefix_rewrite), or None."""
    case = match.get("case_sensitive", True)
    p = path if case else path.lower()

    def norm(x: str) -> str:
        return x if case else x.lower()

    if "prefix" in match:
        return match["prefix"] if p.startswith(norm(match["prefix"])) else None
    if "path" in match:
        return match["path"] if p == norm(match["path"]) else None
    if "path_separated_prefix" in match:
        pre = norm(match["path_separated_prefix"])
        return match["path_separated_prefix"] if p == pre or p.startswith(pre + "/") else None
    if "safe_regex" in match:
        return "" if re.fullmatch(match["safe_regex"]["regex"], path) else None
    raise AssertionError(f"route match not modelled: {match}")


def _cluster_destinations(door: Door, proxy: str, cluster: dict[str, Any], path: str, via: tuple[str, ...]) -> Iterator[Delivery]:
    w = door.world
    source = w.pods[proxy]
    if cluster.get("type") == "ORIGINAL_DST":
        # wherever the destination header points (the picker writes it; a caller may send one): the proxy's egress decides
        for name, model in door.vllm.items():
            if w.cluster.allowed(source, w.pods[name], VLLM_PORT):
                yield Delivery(model, vllm_route(path), via)
        return
    for group in (cluster.get("load_assignment") or {}).get("endpoints") or []:
        for endpoint in group["lb_endpoints"]:
            address = endpoint["endpoint"]["address"]["socket_address"]
            host, port = str(address["address"]), int(address["port_value"])
            if host in ("127.0.0.1", "localhost", "::1"):
                continue  # Envoy's own admin interface
            name, ns = host.split(".")[:2] if ".svc" in host else (host, "")
            service = w.services.get(f"{ns}/{name}")
            assert service is not None, f"{proxy}: cluster {cluster['name']} reaches {host}, not modelled"
            backends = w.backends(service)
            if not w.cluster.allowed_via_service(source, service, port, backends):
                continue
            for pod in backends:
                if pod.name in door.vllm:
                    yield Delivery(door.vllm[pod.name], vllm_route(path), via)


def through_envoy(door: Door, proxy: str, port: int, path: str, via: tuple[str, ...]) -> Iterator[Delivery]:
    """A request on a listener of the gateway's proxies."""
    config = door.envoy[proxy]
    listeners = [x for x in config["static_resources"]["listeners"] if int(x["address"]["socket_address"]["port_value"]) == port]
    via = (*via, proxy)
    for listener in listeners:
        for chain in listener["filter_chains"]:
            for network_filter in chain["filters"]:
                assert network_filter["name"] == "envoy.filters.network.http_connection_manager", network_filter["name"]
                hcm = network_filter["typed_config"]
                routed = envoy_path(path, hcm)
                if routed is None:
                    continue
                filters = hcm.get("http_filters") or []
                assert {f["name"] for f in filters} <= ENVOY_FILTERS, [f["name"] for f in filters]
                if any(_answered_by_health_check(f, routed) for f in filters):
                    continue
                clusters = {c["name"]: c for c in config["static_resources"]["clusters"]}
                for host in hcm["route_config"]["virtual_hosts"]:  # the caller picks the Host header: any virtual host
                    for route in host["routes"]:
                        matched = _route_matches(route["match"], routed)
                        if matched is None:
                            continue
                        action = route.get("route")
                        if action is not None:
                            forwarded = routed
                            if "prefix_rewrite" in action:
                                forwarded = action["prefix_rewrite"] + routed[len(matched) :]
                            if "regex_rewrite" in action:
                                rewrite = action["regex_rewrite"]
                                forwarded = re.sub(rewrite["pattern"]["regex"], rewrite["substitution"].replace("\\", "\\\\"), forwarded)
                            names = (
                                [action["cluster"]]
                                if "cluster" in action
                                else [c["name"] for c in action.get("weighted_clusters", {}).get("clusters", [])]
                            )
                            if "cluster_header" in action:
                                names = list(clusters)
                            for name in names:
                                yield from _cluster_destinations(door, proxy, clusters[name], forwarded, via)
                        break  # direct_response or redirect: Envoy answers; in any case the first match decides


def _answered_by_health_check(http_filter: dict[str, Any], path: str) -> bool:
    if http_filter["name"] != "envoy.filters.http.health_check":
        return False
    typed = http_filter["typed_config"]
    if typed.get("pass_through_mode", True):
        return False
    return any(h["name"] == ":path" and (h.get("string_match") or {}).get("exact") == path for h in typed.get("headers") or [])


# the ALB


def _glob(pattern: str) -> re.Pattern[str]:
    return re.compile("".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern) + r"\Z")


def _patterns(path: dict[str, Any]) -> list[str]:
    value, kind = path["path"], path.get("pathType", "ImplementationSpecific")
    if kind == "Prefix":
        return ["/*"] if value == "/" else [value.rstrip("/"), value.rstrip("/") + "/*"]
    return [value]


def _rewrite(transforms: list[dict[str, Any]], path: str) -> str:
    for transform in transforms:
        assert transform["type"] == "url-rewrite", f"transform not modelled: {transform['type']}"
        for rewrite in transform["urlRewriteConfig"]["rewrites"]:
            m = re.search(rewrite["regex"], path)
            if m:
                replaced = re.sub(r"\$(\d)", lambda g, m=m: m.group(int(g.group(1))) or "", rewrite["replace"])
                path = path[: m.start()] + replaced + path[m.end() :]
    return path


def through_alb(door: Door, path: str) -> Iterator[Delivery]:
    """A request to the shared ALB, with whichever Host header picks a rule."""
    w, alb = door.world, door.world.hosts["alb"]
    for ingress in door.ingresses:
        annotations = ingress["metadata"].get("annotations") or {}
        for rule in ingress["spec"]["rules"]:
            for item in rule["http"]["paths"]:
                if not any(_glob(p).match(path) for p in _patterns(item)):
                    continue
                backend = item["backend"]["service"]
                raw = annotations.get(f"{A}/transforms.{backend['name']}")
                forwarded = _rewrite(json_list(raw), path) if raw else path
                for target, port in ingress_targets(w, ingress["metadata"]["namespace"], backend):
                    if not w.cluster.allowed(alb, target, port):
                        continue
                    if target.name in door.envoy:
                        yield from through_envoy(door, target.name, port, forwarded, ("alb",))
                    else:
                        yield Delivery(door.vllm.get(target.name, target.name), vllm_route(forwarded), ("alb",))


def json_list(text: str) -> list[dict[str, Any]]:
    doc = json.loads(text)
    assert isinstance(doc, list)
    return doc


# the callers


def from_pod(door: Door, source: Endpoint, path: str) -> Iterator[Delivery]:
    """Everything a pod can make a vLLM answer: directly, through any proxy listener it reaches (with any
    Host header), and through the ALB."""
    w = door.world
    yield from _direct(door, source, path, ())
    for proxy, config in door.envoy.items():
        for listener in config["static_resources"]["listeners"]:
            port = int(listener["address"]["socket_address"]["port_value"])
            if w.cluster.allowed(source, w.pods[proxy], port):
                yield from through_envoy(door, proxy, port, path, ())
    yield from through_alb(door, path)


def relays(door: Door) -> set[str]:
    """Pods whose own software decides what reaches vLLM (modelled above), and vLLM's other admitted peers:
    Prometheus (its scrapes are its config's, no caller's) and the pickers (their metrics and KV events)."""
    w = door.world
    return {"prometheus", *(g.proxy for g in w.gateways.values()), *(g.picker for g in w.gateways.values())}


def callers(door: Door) -> Iterator[tuple[str, Endpoint | None]]:
    """(a) the ALB (None), (b) the client namespaces' pods, (c) every other pod of the world."""
    yield "alb", None
    # vLLM's own pods are no callers: a model's replicas, and the headless workers of its groups (the replica itself)
    skip = relays(door) | set(door.vllm) | {n for m in door.world.cfg.models for n in group_workers(door.world, m)}
    for name, pod in door.world.pods.items():
        if name not in skip:
            yield name, pod


def deliveries(door: Door, paths: list[str]) -> Iterator[tuple[str, str, Delivery]]:
    """(caller, path sent, what reached a vLLM)."""
    for name, pod in callers(door):
        for path in paths:
            for d in through_alb(door, path) if pod is None else from_pod(door, pod, path):
                yield name, path, d


def probes(door: Door) -> list[str]:
    """Each unguarded route and its tricks, bare and under every model's path prefix (path routing)."""
    bare = [t for route in UNGUARDED for t in tricks(route)]
    return [*bare, *(f"/{m.name}{t}" for m in door.world.cfg.models for t in bare)]


def holes(door: Door) -> list[str]:
    return sorted(
        {
            f"{caller} -> {d.model} {d.path} (sent {sent!r}, via {' > '.join(d.via) or 'vLLM directly'})"
            for caller, sent, d in deliveries(door, probes(door))
            if d.path in UNGUARDED
        }
    )


def side_doors(door: Door) -> list[str]:
    """Deliveries of /v1 that did not come through the model's own gateway (at zero too)."""
    w = door.world
    out = set()
    for caller, sent, d in deliveries(door, [API, *(f"/{m.name}{API}" for m in w.cfg.models)]):
        gateway = w.gateways.get(d.model)
        if gateway is None or not d.via or d.via[-1] != gateway.proxy:
            out.add(f"{caller} -> {d.model} {d.path} (sent {sent!r}, via {' > '.join(d.via) or 'vLLM directly'})")
    return sorted(out)


# -- the checks -----------------------------------------------------------------------------------------


def test_vllm_normalization_and_envoy_normalization_as_specified() -> None:
    assert remove_dot_segments("/a/b/c/./../../g") == "/a/g"  # RFC 3986 5.2.4's example
    assert remove_dot_segments("mid/content=5/../6") == "mid/6"
    hcm = {"normalize_path": True, "merge_slashes": True, "path_with_escaped_slashes_action": "UNESCAPE_AND_REDIRECT"}
    assert envoy_path("/v1/../invocations", hcm) == "/invocations"
    assert envoy_path("//invocations", hcm) == "/invocations"
    assert envoy_path("/v1/%2e%2e/invocations", hcm) == "/invocations"
    assert envoy_path("/v1%2F..%2Finvocations", hcm) == "/invocations"
    assert envoy_path("/v1//chat/completions", hcm) == "/v1/chat/completions"
    assert envoy_path("/v1/..%2finvocations", {}) == "/v1/..%2finvocations"
    assert vllm_route("/v1/%2e%2e/invocations") == "/v1/../invocations"  # a route vLLM does not have


@pytest.mark.parametrize("stack", WORLDS)
def test_only_the_gateway_and_prometheus_reach_vllms_port(stack: str) -> None:
    """What makes the callers above complete: no pod but the relays and scrapers, no address outside, opens vLLM's port."""
    door = build_door(stack)
    w = door.world
    for model in w.cfg.models:
        pod = w.pods[f"{model.name}/{model.name}"]
        direct = {n for n, src in w.pods.items() if src is not pod and w.cluster.allowed(src, pod, VLLM_PORT)}
        outside = {n for n, h in w.hosts.items() if w.cluster.allowed(h, pod, VLLM_PORT)}
        assert (direct, outside) == (vllm_admits(w, model), set()), model.name
        gateway = w.gateways[model.name]
        assert direct == {"prometheus", gateway.proxy, gateway.picker, *group_workers(w, model)}, model.name


@pytest.mark.parametrize("stack", WORLDS)
def test_vllms_unguarded_routes_are_unreachable(stack: str) -> None:
    door = build_door(stack)
    assert len(probes(door)) >= len(UNGUARDED) * 10
    assert holes(door) == []


@pytest.mark.parametrize("stack", WORLDS)
def test_v1_reaches_vllm_only_through_the_models_front_door(stack: str) -> None:
    assert side_doors(build_door(stack)) == []


@pytest.mark.parametrize("stack", WORLDS)
def test_clients_reach_v1_through_the_front_door(stack: str) -> None:
    """Each client namespace's pod gets /v1 answered by its model, through the gateway's proxies (at zero too)."""
    door = build_door(stack)
    for model in door.world.cfg.models:
        for client in model.client_namespaces:
            got = {(d.model, d.path, d.via[-1]) for d in from_pod(door, door.world.pods[f"client:{client}"], API) if d.via}
            front = door.world.gateways[model.name].proxy
            assert (model.name, API, front) in got, (client, model.name, got)


PATH_ROUTED = {"minimal-dev", "existing-vpc-irsa-bottlerocket", "minimal-dev+precise", "multi-node-405b"}
"""Stacks without ingress.domain that expose a model: the ALB routes /<model>/v1 and must rewrite it to /v1."""


@pytest.mark.parametrize("stack", WORLDS)
def test_the_alb_reaches_v1_of_each_exposed_model(stack: str) -> None:
    cfg, run = stack_run(stack)
    exposed = [values(r)["metadata"]["name"] for r in run.of_type(INGRESS)]
    assert (stack in PATH_ROUTED) == (cfg.ingress.domain is None and bool(exposed))
    door = build_door(stack)
    for model in cfg.models:
        if model.name not in exposed:
            continue
        path = API if cfg.ingress.domain else f"/{model.name}{API}"
        assert any(d.model == model.name and d.path == API for d in through_alb(door, path)), model.name


# -- broken copies: the check reports the hole ---------------------------------------------------------


def _policies(stack: str) -> list[dict[str, Any]]:
    return copy.deepcopy([values(r) for r in stack_run(stack)[1].of_type(NETWORK_POLICY)])


def test_a_client_namespace_on_vllms_port_is_a_hole() -> None:
    policies = _policies("existing-vpc-irsa-bottlerocket")
    (vllm,) = [p for p in policies if (p["metadata"]["namespace"], p["metadata"]["name"]) == ("qwen-2-5-7b", "qwen-2-5-7b")]
    vllm["spec"]["ingress"][0]["from"].append({"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "chat-app"}}})
    door = build_door("existing-vpc-irsa-bottlerocket", policies)
    found = holes(door)
    assert "client:chat-app -> qwen-2-5-7b /invocations (sent '/invocations', via vLLM directly)" in found
    assert "client:chat-app -> qwen-2-5-7b /v1/chat/completions (sent '/v1/chat/completions', via vLLM directly)" in side_doors(door)


def _forwarding(hcm: dict[str, Any]) -> dict[str, Any]:
    """The API listener's route that forwards (the /v1 one); Envoy answers the others itself."""
    return next(r for r in hcm["route_config"]["virtual_hosts"][0]["routes"] if "route" in r)


def test_an_envoy_route_for_every_path_is_a_hole() -> None:
    door = build_door("full-prod")
    proxy = "qwen-2-5-7b/qwen-2-5-7b-proxy"
    config = copy.deepcopy(door.envoy[proxy])
    api = next(x for x in config["static_resources"]["listeners"] if x["name"] == "api")
    _forwarding(api["filter_chains"][0]["filters"][0]["typed_config"])["match"] = {"prefix": "/"}
    door = dataclasses.replace(door, envoy={**door.envoy, proxy: config})
    found = holes(door)
    assert "alb -> qwen-2-5-7b /invocations (sent '/v1/../invocations', via alb > qwen-2-5-7b/qwen-2-5-7b-proxy)" in found
    assert "client:team-chat -> qwen-2-5-7b /tokenize (sent '/tokenize', via qwen-2-5-7b/qwen-2-5-7b-proxy)" in found
    assert not any(" -> llama-3-1-8b " in f for f in found)


def test_envoy_without_path_normalization_is_no_hole_but_a_rewrite_out_of_v1_is() -> None:
    """`prefix: /v1` without normalization: `/v1/../invocations` passes Envoy as it is, and vLLM routes it
    literally (no hole). A route that strips /v1 on the way forwards the unguarded route itself."""
    door = build_door("internet-facing-tls")
    proxy = "llama-3-1-8b/llama-3-1-8b-proxy"
    config = copy.deepcopy(door.envoy[proxy])
    api = next(x for x in config["static_resources"]["listeners"] if x["name"] == "api")
    hcm = api["filter_chains"][0]["filters"][0]["typed_config"]
    hcm.update(normalize_path=False, merge_slashes=False)
    route = _forwarding(hcm)
    route["match"] = {"prefix": "/v1"}
    assert holes(dataclasses.replace(door, envoy={**door.envoy, proxy: config})) == []
    route["match"] = {"prefix": "/v1/"}
    route["route"]["prefix_rewrite"] = "/"
    found = holes(dataclasses.replace(door, envoy={**door.envoy, proxy: config}))
    assert "alb -> llama-3-1-8b /invocations (sent '/v1/invocations', via alb > llama-3-1-8b/llama-3-1-8b-proxy)" in found


def _every_path(door: Door, proxy: str) -> Door:
    """The door with the proxy's API route matching every path (not /v1 only)."""
    config = copy.deepcopy(door.envoy[proxy])
    api = next(x for x in config["static_resources"]["listeners"] if x["name"] == "api")
    _forwarding(api["filter_chains"][0]["filters"][0]["typed_config"])["match"] = {"prefix": "/"}
    return dataclasses.replace(door, envoy={**door.envoy, proxy: config})


def test_a_gateway_at_zero_routing_every_path_is_a_hole() -> None:
    """The client of a model at zero reaches its proxies, which route /v1 only: a route for every path
    forwards the unguarded routes."""
    door = build_door("scale-to-zero-dev+clients")
    assert holes(door) == []
    found = holes(_every_path(door, "llama-3-1-8b/llama-3-1-8b-proxy"))
    assert "client:chat-app -> llama-3-1-8b /invocations (sent '/invocations', via llama-3-1-8b/llama-3-1-8b-proxy)" in found
    # through the ALB only what its /v1 rule passes and the proxies normalize out of /v1
    assert "alb -> llama-3-1-8b /invocations (sent '/v1/../invocations', via alb > llama-3-1-8b/llama-3-1-8b-proxy)" in found
    assert "alb -> llama-3-1-8b /invocations (sent '/invocations', via alb > llama-3-1-8b/llama-3-1-8b-proxy)" not in found
    # a pod of no client namespace still reaches the proxies only through the ALB
    assert [f for f in found if f.startswith("stranger ->") and "via alb >" not in f] == []


def test_an_ingress_for_every_path_at_zero_is_a_hole() -> None:
    """Two locks on a model at zero as on any other: the ALB's rule (/v1) and the gateway's route (/v1)."""
    door = build_door("scale-to-zero-dev")
    ingresses = copy.deepcopy(door.ingresses)
    ingresses[0]["spec"]["rules"][0]["http"]["paths"][0]["path"] = "/"
    wide_alb = dataclasses.replace(door, ingresses=ingresses)
    assert holes(wide_alb) == []  # the gateway still routes /v1 only
    found = holes(_every_path(wide_alb, "llama-3-1-8b/llama-3-1-8b-proxy"))
    assert "alb -> llama-3-1-8b /score (sent '/score', via alb > llama-3-1-8b/llama-3-1-8b-proxy)" in found
