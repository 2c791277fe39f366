"""The inference gateway (issue 28): each kept model's llm-d router release, checked against what the
chart (llm-d-router-standalone v0.10.0) and the Endpoint Picker accept upstream, the InferencePool the
chart will create, the CRDs installed once, and the Envoy bootstrap with its timeout chain.

Upstream data comes from ../shared/schemas (helm-values, helm-templates, crds, config); the tests that
need it skip with the reason when it is absent.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from builders.gateway import envoy, prefix, router
from components import gateway as gateway_component
from config.derived import path as timeouts
from config.facts import versions
from config.facts.conventions import VLLM_PORT
from config.sections.models import ModelConfig
from offline import harness, mocks, render
from tests.conftest import DEV, FIXTURES, PROD, ROOT, fixture_input, fixture_run, parse, shared_path, stack_data, values
from tests.support import gateway as gw
from tests.support import workloads
from tests.support.mutations import m0
from tests.validators import crds, helm_values

SCALE_TO_ZERO = "scale-to-zero-dev"
CRDS_COMPONENT = "llmplatform:index:GatewayCrds::gateway-crds"


def _releases(stack: str) -> dict[str, dict[str, Any]]:
    """Each kept model's router release inputs (name, chart, version, namespace, values), by model."""
    return {m: values(r) for m, r in gw.router_releases(fixture_run(stack)).items()}


def _every_release() -> list[tuple[str, str]]:
    """(stack, model) of every model of every fixture, those at zero included (read from config: collecting runs nothing)."""
    cases = [(stack, m.name) for stack in FIXTURES for m in parse(stack_data(stack)).models]
    assert cases
    return cases


def _release(stack: str, model: str) -> dict[str, Any]:
    if stack == "precise":
        return gw.release_values(gw.router_releases(gw.precise_run()[1])[model])
    return _releases(stack)[model]["values"]  # type: ignore[no-any-return]


def _run(stack: str) -> harness.RunResult:
    return gw.precise_run()[1] if stack == "precise" else fixture_run(stack)


def _model(stack: str, model: str) -> ModelConfig:
    return next(m for m in parse(stack_data(DEV if stack == "precise" else stack)).models if m.name == model)


def _alb_idle(stack: str) -> int:
    return parse(stack_data(DEV if stack == "precise" else stack)).ingress.idle_timeout_seconds


CASES = pytest.mark.parametrize(("stack", "model"), [*_every_release(), ("precise", m0(stack_data(DEV))["name"])])
"""Every router release of the fixtures, and one on the precise prefix cache."""


# -- one release per kept model, pinned -------------------------------------------------------------


@pytest.mark.parametrize("stack", FIXTURES)
def test_every_model_has_exactly_one_router_release(stack: str) -> None:
    cfg = parse(stack_data(stack))
    run = fixture_run(stack)
    kept = {m.name for m in cfg.models}
    found = gw.router_releases(run)  # refuses two releases of one model
    assert set(found) == kept
    for model, r in found.items():
        release = values(r)
        assert r.name == f"model-{model}-router"
        assert (release["name"], release["namespace"]) == (model, model)
        assert (release["chart"], release["version"]) == ("oci://ghcr.io/llm-d/charts/llm-d-router-standalone", "v0.10.0")
        assert (release["chart"], release["version"]) == (versions.LLM_D_ROUTER.name, versions.LLM_D_ROUTER.version)
        assert "repositoryOpts" not in release  # an OCI reference: no chart repository to resolve a range in
    # every router release in the render is one of these
    assert len([r for r in run.of_type(gw.RELEASE) if values(r)["chart"] == versions.LLM_D_ROUTER.name]) == len(kept)


def test_models_at_zero_have_their_gateway_and_no_http_add_on() -> None:
    """The gateway holds the requests of a model at zero: the KEDA HTTP add-on and its routes are gone."""
    cfg = parse(stack_data(SCALE_TO_ZERO))
    run = fixture_run(SCALE_TO_ZERO)
    at_zero = [m.name for m in cfg.models if m.replicas.min == 0]
    assert at_zero, "the scale-to-zero fixture lost its model at zero"
    assert set(at_zero) <= set(gw.router_releases(run))
    assert [values(r)["chart"] for r in run.of_type(gw.RELEASE) if "keda-add-ons-http" in values(r)["chart"]] == []
    assert [r.name for r in run.registrations if "http.keda.sh" in r.type] == []
    for name in at_zero:
        ingress = values(run.one("kubernetes:networking.k8s.io/v1:Ingress", f"model-{name}-ingress"))
        assert ingress["metadata"]["namespace"] == name
        backends = {p["backend"]["service"]["name"] for rule in ingress["spec"]["rules"] for p in rule["http"]["paths"]}
        assert backends == {f"{name}-proxy"}


SEMVER_TAG = re.compile(r"^v\d+\.\d+\.\d+$")


def _image_problems(release: dict[str, Any]) -> list[str]:
    """Images the release would pull unpinned: the EPP's (git default `main` / Always), Envoy's, the tokenizer's."""
    r = gw.effective(release)["router"]
    out = []
    epp = r["epp"]["image"]
    if not SEMVER_TAG.match(str(epp["tag"])) or epp["tag"] != versions.LLM_D_ROUTER_VERSION:
        out.append(f"EPP image tag {epp['tag']!r} is not the chart's release tag")
    if epp.get("pullPolicy") == "Always":
        out.append("EPP image pulled Always")
    image = str(r["proxy"]["presets"]["envoy"]["image"])
    repository, _, tag = image.rpartition(":")
    if not repository.endswith("envoyproxy/envoy") or tag != versions.ENVOY_IMAGE.rpartition(":")[2]:
        out.append(f"Envoy image {image!r} is not the pinned {versions.ENVOY_IMAGE}")
    if r["proxy"].get("imagePullPolicy") == "Always":
        out.append("Envoy image pulled Always")
    if r["tokenizer"].get("enabled"):
        tokenizer = r["tokenizer"]["image"]
        if tokenizer["tag"] in ("latest", "main", "") or tokenizer.get("pullPolicy") == "Always":
            out.append(f"tokenizer image {tokenizer} is not pinned")
    if r["latencyPredictor"].get("enabled"):
        out.append("the latency predictor's images are `latest` / Always in the chart")
    return out


@CASES
def test_images_are_pinned(stack: str, model: str) -> None:
    release = _release(stack, model)
    assert _image_problems(release) == []
    image = release["router"]["epp"]["image"]
    assert image == {
        "registry": "ghcr.io/llm-d",
        "repository": "llm-d-router-endpoint-picker",
        "tag": "v0.10.0",
        "pullPolicy": "IfNotPresent",
    }


@pytest.mark.parametrize(
    ("edit", "finding"),
    [
        (lambda r: r["router"]["epp"]["image"].update(tag="main"), "EPP image tag 'main'"),
        (lambda r: r["router"]["epp"]["image"].pop("tag"), "EPP image tag 'main'"),  # the chart's git default
        (lambda r: r["router"]["epp"]["image"].update(pullPolicy="Always"), "EPP image pulled Always"),
        (lambda r: r["router"]["proxy"]["presets"]["envoy"].update(image="envoyproxy/envoy:latest"), "Envoy image"),
        (lambda r: r["router"]["proxy"].update(imagePullPolicy="Always"), "Envoy image pulled Always"),
        (lambda r: r["router"].update(latencyPredictor={"enabled": True}), "latency predictor"),
    ],
)
def test_image_check_catches_an_unpinned_image(edit: Any, finding: str) -> None:
    release = copy.deepcopy(_releases(DEV)["llama-3-1-8b"]["values"])
    edit(release)
    assert any(finding in p for p in _image_problems(release)), _image_problems(release)


# -- the InferencePool the chart creates ------------------------------------------------------------


@CASES
def test_the_pool_validates_against_the_inference_pool_crd(stack: str, model: str) -> None:
    crd = shared_path("crds", "inference.networking.k8s.io_inferencepools.yaml")
    pool = router.inference_pool(_release(stack, model), model, model)
    assert crds.errors(pool, crd) == []
    assert (pool["apiVersion"], pool["kind"], pool["metadata"]) == (
        "inference.networking.k8s.io/v1",
        "InferencePool",
        {
            "name": model,
            "namespace": model,
            # routerlib `llm-d-router.labels`
            "labels": {"app.kubernetes.io/name": f"{model}-epp", "app.kubernetes.io/version": "v0.10.0"},
        },
    )


def test_the_crd_catches_a_broken_pool() -> None:
    crd = shared_path("crds", "inference.networking.k8s.io_inferencepools.yaml")
    pool = router.inference_pool(_releases(DEV)["llama-3-1-8b"]["values"], "llama-3-1-8b", "llama-3-1-8b")
    pool["spec"]["endpointPickerRef"]["failureMode"] = "FailSometimes"
    pool["spec"]["targetPorts"] = [{"number": 80000}]
    found = crds.errors(pool, crd)
    assert any("failureMode" in e for e in found), found
    assert any("targetPorts" in e for e in found), found


def _selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


@CASES
def test_the_pool_selects_the_model_pods_and_their_port_only(stack: str, model: str) -> None:
    run = _run(stack)
    pool = router.inference_pool(_release(stack, model), model, model)
    deployment = gw.model_deployment(run, model)
    selector = pool["spec"]["selector"]["matchLabels"]
    assert selector
    (serving, template), *group = workloads.running_pods(deployment)
    assert _selects(selector, template["metadata"]["labels"])
    if deployment["kind"] == "Deployment":
        assert _selects(selector, deployment["spec"]["selector"]["matchLabels"])
    vllm_ports = [p["containerPort"] for p in gw.vllm_container(deployment)["ports"]]
    assert [p["number"] for p in pool["spec"]["targetPorts"]] == [VLLM_PORT] == vllm_ports
    # no other pod of the namespace (the weights Job, the gateway's own, a group's headless workers) is picked from
    for name, worker in group:
        assert not _selects(selector, worker["metadata"]["labels"]), name
    vllm = f"{model}/{serving}"
    others = [(name, meta) for name, meta, _ in workloads.pods(run.registrations) if name.startswith(f"{model}/") and name != vllm]
    for name, meta in others:
        assert not _selects(selector, meta.get("labels") or {}), name


@CASES
def test_the_pool_names_the_epp_service_the_chart_renders(stack: str, model: str) -> None:
    release = _release(stack, model)
    pool = router.inference_pool(release, model, model)
    ref = pool["spec"]["endpointPickerRef"]
    service = gw.epp_service(model)  # routerlib `llm-d-router.name`
    assert ref["name"] == service == router.picker_name(_model(stack, model))
    # the Service's grpc-ext-proc port (routerlib `_service.yaml`: router.epp.extProcPort, default 9002)
    assert ref["port"] == {"number": gw.effective(release)["router"]["epp"]["extProcPort"]} == {"number": 9002}
    # fail closed in the pool and in the proxy that acts on it
    assert ref["failureMode"] == "FailClose"
    assert release["router"]["proxy"]["failOpen"] is False
    # Envoy reaches the same Service, in the release's namespace, on the same port
    ext_proc = gw.cluster(gw.envoy_config(release), envoy.EXT_PROC_CLUSTER)
    (endpoint,) = ext_proc["load_assignment"]["endpoints"][0]["lb_endpoints"]
    address = endpoint["endpoint"]["address"]["socket_address"]
    assert (address["address"], address["port_value"]) == (f"{service}.{model}.svc.cluster.local", 9002)


def test_the_render_writes_each_router_release_pool(tmp_path: Path) -> None:
    run = fixture_run(PROD)
    render.write(run, tmp_path / "out")
    written = sorted(
        p.relative_to(tmp_path / "out" / "manifests").as_posix() for p in (tmp_path / "out" / "manifests").rglob("inferencepool-*")
    )
    releases = _releases(PROD)
    assert written == sorted(f"{m}/inferencepool-{m}.yaml" for m in releases)
    for model, release in releases.items():
        text = (tmp_path / "out" / "manifests" / model / f"inferencepool-{model}.yaml").read_text()
        assert text.startswith(f"# Rendered by the chart of helm/{model}.yaml")
        assert yaml.safe_load(text) == router.inference_pool(release["values"], model, model)


# -- the CRDs, once, retained -----------------------------------------------------------------------


@pytest.mark.parametrize("stack", FIXTURES)
def test_the_crd_files_are_created_once_before_every_router_release(stack: str) -> None:
    run = fixture_run(stack)
    releases = gw.router_releases(run)
    files = [r for r in run.of_type(gw.CONFIG_FILE) if r.name.startswith("gateway-crds-")]
    if not releases:
        assert files == []
        assert run.of_type("llmplatform:index:GatewayCrds") == []
        return
    assert len(run.of_type("llmplatform:index:GatewayCrds")) == 1
    assert sorted(r.name for r in files) == sorted(f"gateway-crds-{crd}" for crd, _ in versions.GATEWAY_CRDS)
    assert sorted(values(r)["file"] for r in files) == sorted(url for _, url in versions.GATEWAY_CRDS)
    for r in files:
        assert r.parent == CRDS_COMPONENT
        assert r.provider == "pulumi:providers:kubernetes::cluster-k8s"
    refs = {r.ref for r in files}
    for model, release in releases.items():
        assert refs <= set(release.dependencies), model


GITHUB_RAW = re.compile(r"^https://raw\.githubusercontent\.com/(?P<owner>[^/]+)/(?P<repo>[^/]+)/(?P<ref>[^/]+)/(?P<path>.+)$")
BRANCHES = {"main", "master", "HEAD", "develop", "release"}


def _unpinned(url: str) -> list[str]:
    found = GITHUB_RAW.match(url)
    if not found:
        return [f"{url}: not a file of a GitHub tag"]
    ref = found["ref"]
    return [] if SEMVER_TAG.match(ref) and ref not in BRANCHES else [f"{url}: {ref} is not a release tag"]


def test_the_crd_urls_are_pinned_to_the_release_tags() -> None:
    tags = {"kubernetes-sigs/gateway-api-inference-extension": "v1.6.0", "llm-d/llm-d-router": "v0.10.0"}
    assert tags == {
        "kubernetes-sigs/gateway-api-inference-extension": versions.GATEWAY_API_INFERENCE_EXTENSION_VERSION,
        "llm-d/llm-d-router": versions.LLM_D_ROUTER_VERSION,
    }
    for crd, url in versions.GATEWAY_CRDS:
        assert _unpinned(url) == []
        found = GITHUB_RAW.match(url)
        assert found is not None
        assert found["ref"] == tags[f"{found['owner']}/{found['repo']}"], url
        # the very files ../shared/schemas/crds holds from those tags
        assert shared_path("crds", Path(found["path"]).name).exists()
        assert Path(found["path"]).name.split("_")[1].startswith(crd)


def test_the_pin_check_catches_a_branch() -> None:
    assert _unpinned("https://raw.githubusercontent.com/llm-d/llm-d-router/main/config/crd/bases/llm-d.ai_inferenceobjectives.yaml")
    assert _unpinned("https://github.com/llm-d/llm-d-router/releases/latest/download/crds.yaml")


def test_the_crd_files_are_retained_on_delete(monkeypatch: pytest.MonkeyPatch) -> None:
    # the recording mocks do not keep these options; read them off the engine requests
    seen: dict[str, tuple[bool, int]] = {}
    original = mocks.RecordingMonitor.RegisterResource

    def spy(self: mocks.RecordingMonitor, request: Any) -> Any:
        seen[f"{request.type}::{request.name}"] = (bool(request.retainOnDelete), len(request.transforms))
        return original(self, request)

    monkeypatch.setattr(mocks.RecordingMonitor, "RegisterResource", spy)
    harness.run(fixture_input(DEV))
    files = {k: v for k, v in seen.items() if k.startswith(f"{gw.CONFIG_FILE}::")}
    assert sorted(files) == sorted(f"{gw.CONFIG_FILE}::gateway-crds-{crd}" for crd, _ in versions.GATEWAY_CRDS)
    # retained themselves, and the transform that retains every object they create
    assert set(files.values()) == {(True, 1)}


def test_keep_on_delete_retains_and_keeps_the_rest() -> None:
    before = pulumi.ResourceOptions(retain_on_delete=False, protect=False, ignore_changes=["spec"])
    args = pulumi.ResourceTransformArgs(
        custom=True, type_="kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition", name="inferencepools", props={"a": 1}, opts=before
    )
    result = gateway_component.keep_on_delete(args)
    assert result is not None
    assert result.opts is not None
    assert result.opts.retain_on_delete is True
    assert result.props == {"a": 1}
    assert (result.opts.protect, result.opts.ignore_changes) == (False, ["spec"])


# -- the values against the chart (Build item 9) ----------------------------------------------------

TEMPLATE_READS: dict[str, tuple[tuple[str, int, str], ...]] = {
    # Paths under config/charts/ of llm-d/llm-d-router at tag v0.10.0, line, what the line reads.
    "router.modelServers.matchLabels": (
        ("llm-d-router-standalone/templates/_validations.tpl", 6, "Values.router.modelServers.matchLabels"),
        ("routerlib/templates/_inferencepool.yaml", 24, "Values.router.modelServers.matchLabels"),
        ("routerlib/templates/_deployment.yaml", 88, "Values.router.modelServers.matchLabels"),
    ),
    "router.epp.volumes": (("routerlib/templates/_deployment.yaml", 257, "Values.router.epp.volumes"),),
    "router.epp.volumeMounts": (("routerlib/templates/_deployment.yaml", 206, "Values.router.epp.volumeMounts"),),
    "router.metricsPort": (("routerlib/templates/_service.yaml", 62, "Values.router.metricsPort"),),
    # a map rendered as --key=value (routerlib values line 30 shows it only as a comment)
    "router.epp.flags": (("routerlib/templates/_deployment.yaml", 8, "Values.router.epp.flags"),),
    # the sidecar's resources go to the container whole (`toYaml`): a Kubernetes ResourceRequirements,
    # whose limits the routerlib default (requests only) leaves out
    "router.tokenizer.resources.limits": (("routerlib/templates/_deployment.yaml", 244, "with $tokenizer.resources"),),
}
"""Keys the chart's templates read though neither values file has them (matchLabels only as a comment:
standalone values line 3, routerlib line 167). The helm-values README, "Key lists (2026-12-01 charts)"."""
SHARED_TEMPLATES = {"llm-d-router-standalone/templates/": ("helm-templates", "llm-d-router-standalone-v0.10.0")}
"""The chart's template copies in ../shared/schemas (routerlib's were not copied)."""


@CASES
def test_every_router_values_key_exists_in_the_chart(stack: str, model: str) -> None:
    assert helm_values.unknown_keys(_release(stack, model), gw.chart_values(), allowed=tuple(TEMPLATE_READS)) == []


def test_a_misspelled_router_key_is_caught() -> None:
    release = copy.deepcopy(_releases(DEV)["llama-3-1-8b"]["values"])
    epp = release["router"]["epp"]
    epp["pluginConfigFile"] = epp.pop("pluginsConfigFile")
    release["router"]["proxy"]["presets"]["envoy"]["configmap"] = release["router"]["proxy"]["presets"]["envoy"].pop("configMap")
    release["router"]["modelServers"]["matchLabel"] = release["router"]["modelServers"].pop("matchLabels")
    release["router"]["proxy"]["failopen"] = release["router"]["proxy"].pop("failOpen")
    assert sorted(helm_values.unknown_keys(release, gw.chart_values(), allowed=tuple(TEMPLATE_READS))) == [
        "router.epp.pluginConfigFile",
        "router.modelServers.matchLabel",
        "router.proxy.failopen",
        "router.proxy.presets.envoy.configmap",
    ]


def _absent(path: str, tree: Any) -> bool:
    for key in path.split("."):
        if not isinstance(tree, dict) or key not in tree:
            return True
        tree = tree[key]
    return False


def test_the_allow_list_holds_only_keys_the_files_lack_each_cited() -> None:
    chart = gw.chart_values()
    checked = 0
    for key, citations in TEMPLATE_READS.items():
        assert _absent(key, chart), f"{key} is in the values files: no allow-list entry needed"
        assert citations
        for path, line, reads in citations:
            for prefix_path, folder in SHARED_TEMPLATES.items():
                if path.startswith(prefix_path):
                    text = shared_path(*folder, path.removeprefix(prefix_path)).read_text().splitlines()
                    assert reads in text[line - 1], f"{path}:{line} does not read {key}"
                    checked += 1
    assert checked >= 1


@CASES
def test_the_chart_renders_these_values(stack: str, model: str) -> None:
    release = _release(stack, model)
    assert set(release) == {"router"}
    assert not set(gw.DEPRECATED_TOP_LEVEL) & set(release)
    assert gw.render_failures(release) == []
    r = release["router"]
    assert r["proxy"]["mode"] == "service"
    assert isinstance(r["proxy"]["failOpen"], bool)
    assert {"cpu", "memory"} <= set(r["epp"]["resources"]["requests"])


@pytest.mark.parametrize(
    ("edit", "finding"),
    [
        (lambda v: v.update(inferencePool={"create": True}), "top-level 'inferencePool' is deprecated"),
        (lambda v: v.update(inferenceExtension={"replicas": 1}), "top-level 'inferenceExtension' is deprecated"),
        (lambda v: v["router"]["modelServers"].update(matchLabels={}), "router.modelServers.matchLabels is required"),
        (lambda v: v["router"]["proxy"].update(mode="daemonset"), "router.proxy.mode must be one of"),
        (lambda v: v["router"]["proxy"].update(failOpen="false"), "router.proxy.failOpen must be a boolean"),
        (lambda v: v["router"]["extraServicePorts"][0].update(name="api"), 'a port named "http"'),
        (lambda v: v["router"]["proxy"].update(enabled=False), "router.proxy.enabled must be true"),
        (lambda v: v["router"]["proxy"].update(proxyType="nginx"), "router.proxy.proxyType must be one of"),
        (lambda v: v["router"]["epp"]["resources"]["requests"].update(cpu=None), "router.epp.resources.requests.cpu is required"),
        (lambda v: v["router"]["epp"]["resources"]["requests"].update(memory=None), "router.epp.resources.requests.memory is required"),
        (lambda v: v["router"].update(tokenizer={"enabled": True}), "router.tokenizer.modelName is required"),
    ],
)
def test_the_render_checks_catch_each_broken_copy(edit: Any, finding: str) -> None:
    release = copy.deepcopy(_releases(DEV)["llama-3-1-8b"]["values"])
    edit(release)
    assert any(finding in p for p in gw.render_failures(release)), gw.render_failures(release)


# -- the Endpoint Picker's config -------------------------------------------------------------------

REGISTERED_PLUGIN_TYPES = frozenset(yaml.safe_load((ROOT / "tests" / "fixtures" / "epp-plugin-types-v0.10.0.yaml").read_text()))
"""The plugin types the Endpoint Picker registers at llm-d/llm-d-router v0.10.0 (`registerInTreePlugins` in
cmd/epp/runner/runner.go, the deprecated ones left out): the list, and where each comes from, is
tests/fixtures/epp-plugin-types-v0.10.0.yaml."""
TOP_LEVEL = frozenset({"apiVersion", "kind", "featureGates", "plugins", "schedulingProfiles", "dataLayer", "flowControl", "requestHandler"})
"""apix/config/v1alpha1/endpointpickerconfig_types.go at v0.10.0 (config README), without the
deprecated `saturationDetector` and `parser`."""
SAMPLES = (
    "epp-config.yaml",
    "pd-epp-config.yaml",
    "dp-epp-config.yaml",
    "epp-precise-prefix-cache-config.yaml",
    "soft-reflective-ceiling-epp-config.yaml",
)


def _sample(name: str) -> dict[str, Any]:
    doc = yaml.safe_load(shared_path("config", "llm-d-router-v0.10.0", name).read_text())
    assert isinstance(doc, dict)
    return doc


def _refs(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """(where, plugin name) of every reference to a plugin in an EndpointPickerConfig."""
    found = []
    for profile in doc.get("schedulingProfiles") or []:
        found += [(f"schedulingProfiles[{profile['name']}]", p["pluginRef"]) for p in profile.get("plugins") or []]
    for source in (doc.get("dataLayer") or {}).get("sources") or []:
        found.append(("dataLayer.sources", source["pluginRef"]))
        found += [(f"dataLayer.sources[{source['pluginRef']}].extractors", e["pluginRef"]) for e in source.get("extractors") or []]
    found += [("requestHandler.parsers", p["pluginRef"]) for p in (doc.get("requestHandler") or {}).get("parsers") or []]
    if "usageLimitPolicyPluginRef" in (doc.get("flowControl") or {}):
        found.append(("flowControl.usageLimitPolicyPluginRef", doc["flowControl"]["usageLimitPolicyPluginRef"]))
    for plugin in doc.get("plugins") or []:
        producer = (plugin.get("parameters") or {}).get("prefixMatchInfoProducerName")
        if producer is not None:
            found.append((f"{plugin['type']}.prefixMatchInfoProducerName", producer))
    return found


def _epp_problems(doc: dict[str, Any], api: tuple[str, str]) -> list[str]:
    out = []
    if (doc.get("apiVersion"), doc.get("kind")) != api:
        out.append(f"apiVersion/kind {doc.get('apiVersion')}/{doc.get('kind')} is not the samples' {api[0]}/{api[1]}")
    out += [f"unknown top-level field {k}" for k in doc if k not in TOP_LEVEL]
    out += [f"{k} is required" for k in ("plugins", "schedulingProfiles") if not doc.get(k)]
    names = [p.get("name", p.get("type")) for p in doc.get("plugins") or []]
    out += [f"plugin {n} declared twice" for n in sorted({n for n in names if names.count(n) > 1})]
    out += [
        f"plugin type {p.get('type')} is not registered at v0.10.0"
        for p in doc.get("plugins") or []
        if p.get("type") not in REGISTERED_PLUGIN_TYPES
    ]
    out += [f"{where} refers to {ref}, which is not declared" for where, ref in _refs(doc) if ref not in names]
    return out


def _samples_api() -> tuple[str, str]:
    apis = {(_sample(s)["apiVersion"], _sample(s)["kind"]) for s in SAMPLES}
    assert len(apis) == 1, apis
    return apis.pop()


def test_the_registered_types_cover_the_upstream_samples() -> None:
    """The literal set against upstream data: every sample of v0.10.0 passes the same checks."""
    api = _samples_api()
    assert api == ("llm-d.ai/v1alpha1", "EndpointPickerConfig")
    for name in SAMPLES:
        assert _epp_problems(_sample(name), api) == [], name


@CASES
def test_the_epp_config_is_one_upstream_accepts(stack: str, model: str) -> None:
    release = _release(stack, model)
    assert release["router"]["epp"]["pluginsConfigFile"] == router.EPP_CONFIG_FILE
    assert set(release["router"]["epp"]["pluginsCustomConfig"]) == {router.EPP_CONFIG_FILE}
    doc = gw.epp_config(release)
    assert _epp_problems(doc, _samples_api()) == []
    # the chart's default profile: queue 2, KV cache 2, prefix cache 3
    (profile,) = doc["schedulingProfiles"]
    assert [(p["pluginRef"], p["weight"]) for p in profile["plugins"]] == [
        ("queue-scorer", 2),
        ("kv-cache-utilization-scorer", 2),
        ("prefix-cache-scorer", 3),
    ]


@pytest.mark.parametrize(
    ("edit", "finding"),
    [
        (lambda d: d["plugins"][0].update(type="queue-scorrer"), "plugin type queue-scorrer is not registered"),
        (lambda d: d["plugins"].append({"type": "tokenizer"}), "plugin type tokenizer is not registered"),  # deprecated
        (lambda d: d["schedulingProfiles"][0]["plugins"].append({"pluginRef": "max-score-picker"}), "refers to max-score-picker"),
        (lambda d: d["plugins"][-1]["parameters"].update(prefixMatchInfoProducerName="x"), "prefixMatchInfoProducerName refers to x"),
        (lambda d: d.update(saturationDetector={}), "unknown top-level field saturationDetector"),
        (lambda d: d.update(apiVersion="inference.networking.x-k8s.io/v1alpha1"), "apiVersion/kind"),
        (lambda d: d["plugins"].append({"type": "queue-scorer"}), "plugin queue-scorer declared twice"),
        (lambda d: d.pop("schedulingProfiles"), "schedulingProfiles is required"),
    ],
)
def test_the_epp_checks_catch_each_broken_copy(edit: Any, finding: str) -> None:
    doc = gw.epp_config(_releases(DEV)["llama-3-1-8b"]["values"])
    edit(doc)
    assert any(finding in p for p in _epp_problems(doc, _samples_api())), _epp_problems(doc, _samples_api())


def _plugin(doc: dict[str, Any], type_: str) -> dict[str, Any]:
    (found,) = [p for p in doc["plugins"] if p["type"] == type_]
    return found  # type: ignore[no-any-return]


@pytest.mark.parametrize("stack", FIXTURES)
def test_approximate_mode_indexes_up_to_the_context_window(stack: str) -> None:
    run = fixture_run(stack)
    for model, release in _releases(stack).items():
        doc = gw.epp_config(release["values"])
        vllm = gw.vllm_container(gw.model_deployment(run, model))
        producer = _plugin(doc, "approx-prefix-cache-producer")
        assert producer["parameters"]["maxPrefixTokensToMatch"] == int(gw.arg(vllm, "--max-model-len"))
        assert _plugin(doc, "prefix-cache-scorer")["parameters"] == {"prefixMatchInfoProducerName": "approx-prefix-cache-producer"}
        assert "token-producer" not in {p["type"] for p in doc["plugins"]}
        assert "tokenizer" not in release["values"]["router"]
        assert "--kv-events-config" not in vllm["args"]


def _precise() -> tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]:
    model, run = gw.precise_run()
    release = gw.release_values(gw.router_releases(run)[model])
    return model, release, gw.epp_config(release), gw.vllm_container(gw.model_deployment(run, model))


def test_precise_mode_tokenizes_beside_the_picker() -> None:
    model, release, doc, _ = _precise()
    cfg = parse(stack_data(DEV))
    hugging_face_id = next(m.hugging_face_id for m in cfg.models if m.name == model)
    tokenizer = gw.effective(release)["router"]["tokenizer"]
    assert (tokenizer["enabled"], tokenizer["modelName"]) == (True, hugging_face_id)
    token = _plugin(doc, "token-producer")["parameters"]
    assert token == {"modelName": hugging_face_id, "vllm": {"url": f"http://localhost:{tokenizer['port']}"}}
    assert "approx-prefix-cache-producer" not in {p["type"] for p in doc["plugins"]}
    assert _plugin(doc, "prefix-cache-scorer")["parameters"] == {"prefixMatchInfoProducerName": "precise-prefix-cache-producer"}
    # vLLM's KV events reach the producer through the endpoint notifications
    sources = {s["pluginRef"]: [e["pluginRef"] for e in s["extractors"]] for s in doc["dataLayer"]["sources"]}
    assert sources["endpoint-notification-source"] == ["precise-prefix-cache-producer"]


def test_precise_mode_hashes_blocks_as_vllm_does() -> None:
    _, _, doc, vllm = _precise()
    processor = _plugin(doc, "precise-prefix-cache-producer")["parameters"]["tokenProcessorConfig"]
    # blockSizeTokens, or the deprecated blockSize it is promoted from (pkg/kvcache/kvblock/token_processor.go)
    block_size = processor.get("blockSizeTokens") or processor.get("blockSize")
    assert block_size == int(gw.arg(vllm, "--block-size")) == prefix.PREFIX_BLOCK_SIZE
    assert gw.arg(vllm, "--prefix-caching-hash-algo") == "sha256_cbor"
    assert "--enable-prefix-caching" in vllm["args"]
    env = {e["name"]: e for e in vllm["env"]}
    assert env["PYTHONHASHSEED"] == {"name": "PYTHONHASHSEED", "value": prefix.PYTHON_HASH_SEED}
    assert prefix.PYTHON_HASH_SEED.isdigit()  # fixed: not `random`, the same in every replica


def test_precise_mode_publishes_kv_events_on_the_port_the_picker_may_reach() -> None:
    model, _, _, vllm = _precise()
    events = json.loads(gw.arg(vllm, "--kv-events-config"))
    assert events["publisher"] == "zmq"
    assert events["enable_kv_cache_events"] is True
    assert re.fullmatch(r"tcp://\*:(\d+)", events["endpoint"])
    assert int(events["endpoint"].rsplit(":", 1)[1]) == prefix.KV_EVENTS_PORT
    assert prefix.KV_EVENTS_PORT in gw.picker_ports(gw.precise_run()[1], model)
    assert prefix.KV_EVENTS_PORT not in gw.picker_ports(fixture_run(DEV), model)  # approximate: no KV-event port open
    # the POD_IP the topic names is defined on the container
    assert "$(POD_IP)" in events["topic"]
    assert any(e["name"] == "POD_IP" for e in vllm["env"])


SUBSCRIBER_DEFAULT_PORT = 5557
"""The port the precise-prefix-cache-producer dials on each pod unless kvEventsConfig.podDiscoveryConfig
.socketPort says otherwise: pkg/kvevents/pool.go DefaultPodReconcilerConfig at v0.10.0 (read by
pkg/epp/framework/plugins/requestcontrol/dataproducer/preciseprefixcache/extractor.go ensureSubscriber)."""


def test_precise_mode_the_picker_dials_the_kv_events_port() -> None:
    _, _, doc, _ = _precise()
    parameters = _plugin(doc, "precise-prefix-cache-producer")["parameters"]
    discovery = (parameters.get("kvEventsConfig") or {}).get("podDiscoveryConfig") or {}
    assert discovery.get("socketPort", SUBSCRIBER_DEFAULT_PORT) == prefix.KV_EVENTS_PORT


# -- Envoy ------------------------------------------------------------------------------------------


@CASES
def test_the_api_listener_routes_only_v1_to_the_chosen_pod(stack: str, model: str) -> None:
    release = _release(stack, model)
    config = gw.envoy_config(release)
    hcm = gw.manager(gw.listener(config, envoy.API_PORT))
    models, api, rest = gw.routes(hcm)
    # the model list, answered by Envoy (test_listing_the_models_is_answered_by_the_gateway_at_zero_too)
    assert models["match"]["path"] == envoy.MODELS_PATH
    assert "route" not in models
    assert api["match"] == {"path_separated_prefix": "/v1"}
    assert api["route"]["cluster"] == envoy.ENDPOINT_CLUSTER
    assert "typed_per_filter_config" not in api  # the picker chooses every /v1 request's pod
    assert rest["match"] == {"prefix": "/"}
    assert rest["direct_response"]["status"] == 404
    assert rest["typed_per_filter_config"]["envoy.filters.http.ext_proc"]["disabled"] is True
    assert "route" not in rest
    assert hcm["normalize_path"] is True
    assert hcm["merge_slashes"] is True
    endpoints = gw.cluster(config, envoy.ENDPOINT_CLUSTER)
    assert (endpoints["type"], endpoints["lb_policy"]) == ("ORIGINAL_DST", "CLUSTER_PROVIDED")
    assert endpoints["original_dst_lb_config"] == {"use_http_header": True, "http_header_name": "x-gateway-destination-endpoint"}
    # the other listeners: /ready and /stats/prometheus alone, never the API, never the picker's filter
    for port, allowed in ((envoy.READY_PORT, []), (envoy.METRICS_PORT, ["/stats/prometheus"])):
        other = gw.manager(gw.listener(config, port))
        paths = [r["match"].get("path") for r in gw.routes(other) if "route" in r]
        assert paths == allowed
        assert "envoy.filters.http.ext_proc" not in [f["name"] for f in other["http_filters"]]
    assert config["admin"]["address"]["socket_address"]["address"] == "127.0.0.1"
    # the Service's http port and the container ports lead to that listener
    (http,) = [p for p in release["router"]["extraServicePorts"] if p["name"] == "http"]
    preset = release["router"]["proxy"]["presets"]["envoy"]
    assert http["targetPort"] == envoy.API_PORT
    assert {p["containerPort"] for p in preset["ports"]} == {envoy.API_PORT, envoy.READY_PORT, envoy.METRICS_PORT}
    assert preset["readinessProbe"]["httpGet"] == {"path": "/ready", "port": envoy.READY_PORT, "scheme": "HTTP"}


@CASES
def test_ext_proc_fails_closed(stack: str, model: str) -> None:
    hcm = gw.manager(gw.listener(gw.envoy_config(_release(stack, model)), envoy.API_PORT))
    filters = [f["name"] for f in hcm["http_filters"]]
    assert filters == ["envoy.filters.http.ext_proc", "envoy.filters.http.router"]
    ext_proc = hcm["http_filters"][0]["typed_config"]
    assert ext_proc["failure_mode_allow"] is False
    # Envoy 1.33 has no status_on_error (1.36 adds it): the picker's failure is a local 500, mapped to 503
    assert "status_on_error" not in ext_proc
    mapper, *_ = hcm["local_reply_config"]["mappers"]  # first: the first matching mapper applies
    assert mapper["filter"]["status_code_filter"]["comparison"]["op"] == "EQ"
    assert mapper["filter"]["status_code_filter"]["comparison"]["value"]["default_value"] == 500
    assert mapper["filter"]["status_code_filter"]["comparison"]["value"]["runtime_key"]  # required by the API
    assert mapper["status_code"] == envoy.STATUS_ON_PICKER_ERROR == 503
    assert ext_proc["grpc_service"] == {"envoy_grpc": {"cluster_name": envoy.EXT_PROC_CLUSTER}}
    mode = ext_proc["processing_mode"]
    assert (mode["request_body_mode"], mode["response_body_mode"]) == ("FULL_DUPLEX_STREAMED", "FULL_DUPLEX_STREAMED")


def _seconds(text: str) -> int:
    assert re.fullmatch(r"\d+s", text), text
    return int(text[:-1])


@CASES
def test_the_envoy_timeouts_are_the_chain(stack: str, model: str) -> None:
    release = _release(stack, model)
    ttl = yaml.safe_load(release["router"]["epp"]["pluginsCustomConfig"][router.EPP_CONFIG_FILE])["flowControl"]["defaultRequestTTL"]
    # (that this chain holds is the router builder's own check: it refuses to render a broken one)
    chain = timeouts.chain(_alb_idle(stack), _seconds(ttl))
    config = gw.envoy_config(release)
    hcm = gw.manager(gw.listener(config, envoy.API_PORT))
    _, api, _ = gw.routes(hcm)
    ext_proc = hcm["http_filters"][0]["typed_config"]
    upstream = gw.cluster(config, envoy.ENDPOINT_CLUSTER)["typed_extension_protocol_options"][
        "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"
    ]
    found = {
        "envoy_downstream_idle": _seconds(hcm["common_http_protocol_options"]["idle_timeout"]),
        "envoy_stream_idle": _seconds(hcm["stream_idle_timeout"]),
        "route_idle": _seconds(api["route"]["idle_timeout"]),
        "ext_proc_message": _seconds(ext_proc["message_timeout"]),
        "envoy_upstream_idle": _seconds(upstream["common_http_protocol_options"]["idle_timeout"]),
    }
    assert found == {
        "envoy_downstream_idle": chain.envoy_downstream_idle,
        "envoy_stream_idle": chain.envoy_stream_idle,
        "route_idle": chain.envoy_stream_idle,
        "ext_proc_message": chain.ext_proc_message,
        "envoy_upstream_idle": chain.envoy_upstream_idle,
    }
    assert (api["route"]["timeout"], hcm["request_timeout"]) == ("0s", "0s")  # silence is bounded, not length
    # the vLLM end of the chain, as the model's Deployment runs it
    vllm = gw.vllm_container(gw.model_deployment(_run(stack), model))
    env = {e["name"]: e.get("value") for e in vllm["env"]}
    assert int(env["VLLM_HTTP_TIMEOUT_KEEP_ALIVE"]) == chain.vllm_keep_alive
    assert int(gw.arg(vllm, "--sse-keep-alive-interval")) == chain.sse_keep_alive


@pytest.mark.parametrize("stack", FIXTURES)
def test_the_chain_holds_for_every_fixture(stack: str) -> None:
    assert timeouts.chain(parse(stack_data(stack)).ingress.idle_timeout_seconds).problems() == []


@pytest.mark.parametrize("idle", [60, 61, 120, 600, 4000])
def test_the_chain_holds_across_the_allowed_idle_timeouts(idle: int) -> None:
    assert timeouts.chain(idle).problems() == []


@pytest.mark.parametrize(
    ("link", "value", "finding"),
    [
        ("envoy_downstream_idle", 600, "Envoy's downstream idle timeout (600 s) must exceed the ALB's (600 s)"),
        ("envoy_upstream_idle", 620, "Envoy's upstream idle timeout (620 s) must stay below vLLM's keep-alive (620 s)"),
        ("ext_proc_message", 600, "the ext_proc message timeout (600 s) must end 30 s before the ALB idle timeout (600 s)"),
        (
            "ext_proc_message",
            20,
            "the ext_proc message timeout (20 s) must cover the hold (0 s) and a pick (30 s), or a held request ends in a 503 before its TTL",
        ),
        ("sse_keep_alive", 600, "vLLM's SSE keep-alive (600 s) must be shorter than every idle timeout of the path"),
        ("envoy_stream_idle", 601, "Envoy's stream idle timeout (601 s) must not outlive the ALB's (600 s)"),
    ],
)
def test_each_broken_link_of_the_chain_is_reported(link: str, value: int, finding: str) -> None:
    broken = dataclasses.replace(timeouts.chain(600), **{link: value})
    assert broken.problems() == [finding]


@CASES
def test_the_envoy_text_has_no_template_braces(stack: str, model: str) -> None:
    text = gw.envoy_text(_release(stack, model))
    assert "{{" not in text
    assert "}}" not in text


def test_the_builder_refuses_template_braces() -> None:
    with pytest.raises(ValueError, match="template braces"):
        envoy.config_text("{{ .Release.Name }}-epp.ns.svc.cluster.local", timeouts.chain(600))


def test_the_gateways_own_answers_are_openai_errors_with_retry_after() -> None:
    """The picker's 429 and 503 and Envoy's own (picker down, no upstream) reach a client as OpenAI-shaped errors with
    Retry-After: a client SDK reads the message and backs off instead of retrying at once (or failing to parse)."""
    text = envoy.config_text("picker.ns.svc.cluster.local", timeouts.chain(600))
    hcm = yaml.safe_load(text)["static_resources"]["listeners"]
    (api,) = [listener for listener in hcm if listener["name"] == "api"]
    manager = api["filter_chains"][0]["filters"][0]["typed_config"]
    mappers = manager["local_reply_config"]["mappers"]
    matched = [m["filter"]["status_code_filter"]["comparison"]["value"]["default_value"] for m in mappers]
    assert matched == [500, 429, 503]
    for mapper, answered in zip(mappers, (503, 429, 503), strict=True):
        body = mapper["body_format_override"]
        assert body["content_type"] == "application/json"
        error = body["json_format"]["error"]
        assert error["code"] == {429: "rate_limit_exceeded", 503: "service_unavailable"}[answered]
        assert error["message"] == "%LOCAL_REPLY_BODY%"
        assert set(error) == {"message", "type", "code"}
        assert all(isinstance(v, str) for v in error.values())  # Envoy's formats take no null
        (header,) = mapper["headers_to_add"]
        assert header["header"] == {"key": "retry-after", "value": str(envoy.RETRY_AFTER_SECONDS)}
    # the 404 of paths outside /v1 is not rewritten: no mapper matches it
    assert 404 not in matched
    # an access log line per request, never the key or the query string
    (log,) = manager["access_log"]
    fields = log["typed_config"]["log_format"]["json_format"]
    assert {"status", "flags", "upstream", "duration_ms"} <= set(fields)
    assert not any("AUTHORIZATION" in str(v).upper() for v in fields.values())
    assert fields["path"] == "%REQ_WITHOUT_QUERY(:PATH)%"


def test_flow_controls_caps_fit_the_pickers_memory(prod_run: harness.RunResult) -> None:
    from config.derived import hold as flow
    from config.sections.types import parse_quantity

    cfg = parse(stack_data("full-prod"))
    limit = parse_quantity(cfg.gateway.epp_resources.memory_limit)
    for release in prod_run.of_type("kubernetes:helm.sh/v3:Release"):
        if not release.name.endswith("-router"):
            continue
        picker = yaml.safe_load(values(release)["values"]["router"]["epp"]["pluginsCustomConfig"][router.EPP_CONFIG_FILE])
        control = picker["flowControl"]
        held_bytes, held_requests = int(control["maxBytes"]), int(control["maxRequests"])
        assert held_bytes * flow.PICKER_BYTES_PER_HELD_BYTE <= limit * flow.PICKER_HELD_SHARE
        assert held_requests * flow.PICKER_BYTES_PER_HELD_REQUEST <= limit * flow.PICKER_HELD_SHARE
        assert 0 < held_requests <= flow.UPSTREAM_MAX_REQUESTS


def test_listing_the_models_is_answered_by_the_gateway_at_zero_too(prod_run: harness.RunResult) -> None:
    """`GET /v1/models` has no body, so the picker would not hold it: at zero it would get a 503 at once and never
    wake the model. Envoy answers it (the served name only), ahead of the /v1 route, without the picker."""
    cfg = parse(stack_data("full-prod"))
    for model in cfg.models:
        (config_map,) = [r for r in prod_run.of_type("kubernetes:core/v1:ConfigMap") if r.name == f"model-{model.name}-proxy-config"]
        bootstrap = yaml.safe_load(next(iter(values(config_map)["data"].values())))
        (api,) = [listener for listener in bootstrap["static_resources"]["listeners"] if listener["name"] == "api"]
        routes = api["filter_chains"][0]["filters"][0]["typed_config"]["route_config"]["virtual_hosts"][0]["routes"]
        first, second = routes[0], routes[1]
        assert first["match"] == {"path": "/v1/models", "headers": [{"name": ":method", "string_match": {"exact": "GET"}}]}
        assert second["match"] == {"path_separated_prefix": "/v1"}  # only the exact GET is taken from the picker
        assert first["typed_per_filter_config"]["envoy.filters.http.ext_proc"]["disabled"] is True
        body = json.loads(first["direct_response"]["body"]["inline_string"])
        assert [m["id"] for m in body["data"]] == [model.name]
        assert body["data"][0]["max_model_len"] == model.max_model_len
