"""The inference gateway as the program renders it, and what the llm-d router chart (v0.10.0) and its
Endpoint Picker would make of it: each model's router release, its effective values, the chart's
render-time failures, the picker config's problems, the Envoy bootstrap."""

from __future__ import annotations

import copy
import functools
from typing import Any

import yaml

from builders.gateway import router
from builders.helm import deep_merge
from config.facts import versions
from offline import harness
from offline.mocks import Registration
from policy.checks import pod_templates
from tests.conftest import DEV, fixture_input, shared_path, stack_data, values
from tests.support.mutations import m0
from tests.validators import helm_values

RELEASE = "kubernetes:helm.sh/v3:Release"
CONFIG_FILE = "kubernetes:yaml/v2:ConfigFile"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
LEADER_WORKER_SET = "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"
NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
DEPRECATED_TOP_LEVEL = ("inferenceExtension", "inferencePool", "inferenceObjectives", "experimentalHttpRoute")
"""GIE-chart names the router charts refuse at render time (routerlib `_helpers.tpl`, `llm-d-router.validations.deprecations`)."""


def router_releases(run: harness.RunResult) -> dict[str, Registration]:
    """The router release of each model, by model name (the release is a child of the model's component)."""
    found: dict[str, Registration] = {}
    for r in run.of_type(RELEASE):
        if values(r)["chart"] == versions.LLM_D_ROUTER.name:
            model = (r.parent or "").removeprefix("llmplatform:index:VllmModel::model-")
            assert model not in found, f"{model} has two router releases"
            found[model] = r
    return found


def release_values(r: Registration) -> dict[str, Any]:
    chart_values = values(r)["values"]
    assert isinstance(chart_values, dict)
    return chart_values


def model_deployment(run: harness.RunResult, model: str) -> dict[str, Any]:
    """The model's vLLM workload: the one Deployment its component creates, or its LeaderWorkerSet."""
    found = [
        values(r)
        for r in [*run.of_type(DEPLOYMENT), *run.of_type(LEADER_WORKER_SET)]
        if r.parent == f"llmplatform:index:VllmModel::model-{model}" and values(r)["metadata"]["name"] == model
    ]
    assert len(found) == 1, [d["metadata"]["name"] for d in found]
    return found[0]


def vllm_container(deployment: dict[str, Any]) -> dict[str, Any]:
    """The vLLM container of a model's serving pods (a LeaderWorkerSet's leaders)."""
    containers = [c for c in pod_templates(deployment)[0]["spec"]["containers"] if c["name"] == "vllm"]
    assert len(containers) == 1
    return containers[0]


def arg(container: dict[str, Any], flag: str) -> str:
    """The value after `flag` in a container's args (exactly once)."""
    args = container["args"]
    assert args.count(flag) == 1, f"{flag} appears {args.count(flag)} times"
    value = args[args.index(flag) + 1]
    assert isinstance(value, str)
    return value


@functools.cache
def precise_run() -> tuple[str, harness.RunResult]:
    """The dev fixture with its first model on the precise prefix cache (the tokenizer sidecar beside
    each picker needs a third system node), run through the real program: (model name, run)."""
    data = copy.deepcopy(stack_data(DEV))
    m0(data)["routing"] = {"prefixCache": "precise"}
    data["cluster"]["systemNodeGroup"].update(minSize=3, desiredSize=3, maxSize=4)
    overrides = {"llm-platform:models": data["models"], "llm-platform:cluster": data["cluster"]}
    return m0(data)["name"], harness.run(fixture_input(DEV, overrides=overrides))


# -- the chart --------------------------------------------------------------------------------------


@functools.cache
def _chart_values() -> dict[str, Any]:
    standalone = helm_values.load(shared_path("helm-values", "llm-d-router-standalone-v0.10.0.values.yaml"))
    library = helm_values.load(shared_path("helm-values", "routerlib-v0.10.0.values.yaml"))
    merged = helm_values.union(standalone, {"router": library})
    assert isinstance(merged, dict)
    return merged


def chart_values() -> dict[str, Any]:
    """The standalone chart's defaults: its own values.yaml over routerlib's under `router` (the
    dependency alias), which are also its valid keys (helm-values README, "Provenance notes (2026-12-01)")."""
    return copy.deepcopy(_chart_values())


def effective(release: dict[str, Any]) -> dict[str, Any]:
    """What the templates read: a release's values merged over the chart's defaults."""
    return deep_merge(chart_values(), release)


def _http_port(ports: list[dict[str, Any]]) -> bool:
    return any(str(p.get("name")) == "http" for p in ports)


def render_failures(release: dict[str, Any]) -> list[str]:
    """Why `helm template` of llm-d-router-standalone v0.10.0 would fail with these values (empty
    when it renders): the standalone chart's `_validations.tpl` and routerlib's `llm-d-router.validations.*`."""
    out = [
        f"top-level '{k}' is deprecated (routerlib _helpers.tpl, validations.deprecations)" for k in DEPRECATED_TOP_LEVEL if release.get(k)
    ]
    r = effective(release)["router"]
    creates_pool = (r.get("inferencePool") or {}).get("create") is not False
    proxy = r.get("proxy") or {}
    mode = str(proxy.get("mode") or "sidecar").lower()
    if not (r.get("modelServers") or {}).get("matchLabels"):
        out.append("router.modelServers.matchLabels is required (_validations.tpl)")
    if mode not in ("sidecar", "service"):
        out.append(f"router.proxy.mode must be one of [sidecar, service], got {mode!r} (_validations.tpl)")
    if "failOpen" in proxy and proxy["failOpen"] is not None and not isinstance(proxy["failOpen"], bool):
        out.append(f"router.proxy.failOpen must be a boolean, got {proxy['failOpen']!r} (_validations.tpl)")
    if mode == "service" and not proxy.get("enabled"):
        out.append("router.proxy.enabled must be true when router.proxy.mode=service (_validations.tpl)")
    if mode == "service" and not _http_port(r.get("extraServicePorts") or []):
        out.append('router.extraServicePorts must contain a port named "http" in service mode (_validations.tpl)')
    if proxy.get("enabled") and str(proxy.get("proxyType") or "envoy").lower() not in ("envoy", "agentgateway"):
        out.append(f"router.proxy.proxyType must be one of [envoy, agentgateway], got {proxy.get('proxyType')!r} (_validations.tpl)")
    requests = ((r.get("epp") or {}).get("resources") or {}).get("requests") or {}
    out += [f"router.epp.resources.requests.{k} is required (validations.epp.resources)" for k in ("cpu", "memory") if not requests.get(k)]
    tokenizer = r.get("tokenizer") or {}
    if tokenizer.get("enabled") and not tokenizer.get("modelName"):
        out.append("router.tokenizer.modelName is required when the tokenizer is enabled (validations.epp.tokenizer)")
    if not creates_pool and r.get("inferenceObjectives"):
        out.append("router.inferenceObjectives need router.inferencePool.create (validations.epp.inferenceObjectives)")
    return out


def epp_service(release_name: str) -> str:
    """The Endpoint Picker's Service as the chart names it (routerlib `_helpers.tpl` `llm-d-router.name`:
    the release name lower-cased, trimmed, cut to 40 characters, plus `-epp`)."""
    return f"{release_name.lower().strip()[:40]}-epp"


# -- what the release carries -----------------------------------------------------------------------


def epp_config(release: dict[str, Any]) -> dict[str, Any]:
    """The EndpointPickerConfig the picker loads: the file `router.epp.pluginsConfigFile` names."""
    epp = release["router"]["epp"]
    doc = yaml.safe_load(epp["pluginsCustomConfig"][epp["pluginsConfigFile"]])
    assert isinstance(doc, dict)
    return doc


def envoy_text(release: dict[str, Any]) -> str:
    text = release["router"]["proxy"]["presets"]["envoy"]["configMap"]["data"]["envoy.yaml"]
    assert isinstance(text, str)
    return text


def envoy_config(release: dict[str, Any]) -> dict[str, Any]:
    doc = yaml.safe_load(envoy_text(release))
    assert isinstance(doc, dict)
    return doc


def listener(config: dict[str, Any], port: int) -> dict[str, Any]:
    found = [x for x in config["static_resources"]["listeners"] if x["address"]["socket_address"]["port_value"] == port]
    assert len(found) == 1, f"{len(found)} listeners on {port}"
    return found[0]


def manager(listener_doc: dict[str, Any]) -> dict[str, Any]:
    """The listener's one HTTP connection manager."""
    (chain,) = listener_doc["filter_chains"]
    (hcm,) = chain["filters"]
    assert hcm["name"] == "envoy.filters.network.http_connection_manager"
    typed = hcm["typed_config"]
    assert isinstance(typed, dict)
    return typed


def cluster(config: dict[str, Any], name: str) -> dict[str, Any]:
    found = [c for c in config["static_resources"]["clusters"] if c["name"] == name]
    assert len(found) == 1, f"{len(found)} clusters named {name}"
    return found[0]


def routes(hcm: dict[str, Any]) -> list[dict[str, Any]]:
    (host,) = hcm["route_config"]["virtual_hosts"]
    assert host["domains"] == ["*"]
    found = host["routes"]
    assert isinstance(found, list)
    return found


def picker_ports(run: harness.RunResult, model: str) -> list[int]:
    """The ports the model's picker policy lets the pickers reach on vLLM's pods (router.picker_name)."""
    policies = [values(r) for r in run.of_type(NETWORK_POLICY) if r.parent == f"llmplatform:index:VllmModel::model-{model}"]
    (picker,) = [p for p in policies if p["spec"]["podSelector"].get("matchLabels") == {router.PICKER_SELECTOR_KEY: epp_service(model)}]
    ports: list[int] = []
    for rule in picker["spec"].get("egress") or []:
        if any("podSelector" in peer and "app.kubernetes.io/instance" in peer["podSelector"].get("matchLabels", {}) for peer in rule["to"]):
            ports += [int(p["port"]) for p in rule["ports"]]
    return ports
