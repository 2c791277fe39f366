"""The render's security and safety settings, each read from the rendered object (not a golden) and each
shown failing on a broken copy of the program (issue 49, item 2): the gateway's Envoy hardening, the
replicas' probes, drain and rollout, the populate Job's S3 scope and the picker's egress (the API key
fingerprint's cost: tests/components/test_serving_path.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from builders.gateway import envoy, router
from config.derived import engine
from config.facts import speed
from offline.mocks import Registration
from policy.checks import LEADER_WORKER_SET, pod_templates
from tests.conftest import FIXTURES, PROD, fixture_run, parse, stack_data, values
from tests.support.iam import s3_allows
from tests.support.program import run_patched

Check = Callable[[str, list[Registration]], list[str]]


def _of(regs: list[Registration], kind: str) -> list[dict[str, Any]]:
    return [values(r) for r in regs if r.type == kind]


def _bootstraps(regs: list[Registration]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (doc["metadata"]["name"], yaml.safe_load(text))
        for doc in _of(regs, "kubernetes:core/v1:ConfigMap")
        for key, text in (doc.get("data") or {}).items()
        if key == "envoy.yaml"
    ]


def _api_manager(bootstrap: dict[str, Any]) -> dict[str, Any]:
    (listener,) = [x for x in bootstrap["static_resources"]["listeners"] if x["name"] == "api"]
    return listener["filter_chains"][0]["filters"][0]["typed_config"]  # type: ignore[no-any-return]


# -- the gateway's Envoy --------------------------------------------------------------------------------
def envoy_headers(stack: str, regs: list[Registration]) -> list[str]:
    """A header name with an underscore is refused (not dropped or passed: a proxy and vLLM could read
    `x_api_key` and `x-api-key` differently), and X-Forwarded-For trusts the ALB's one hop only."""
    found = []
    for name, boot in _bootstraps(regs):
        hcm = _api_manager(boot)
        if hcm.get("common_http_protocol_options", {}).get("headers_with_underscores_action") != "REJECT_REQUEST":
            found.append(f"{name}: underscore headers not refused")
        if hcm.get("use_remote_address") is not True or hcm.get("xff_num_trusted_hops") != 1:
            found.append(f"{name}: X-Forwarded-For trusts {hcm.get('xff_num_trusted_hops')} hops")
    return found


def envoy_picker_tls(stack: str, regs: list[Registration]) -> list[str]:
    """The proxies reach the picker's ext_proc port over TLS (HTTP/2 by ALPN), as the picker serves it."""
    found = []
    for name, boot in _bootstraps(regs):
        (cluster,) = [c for c in boot["static_resources"]["clusters"] if c["name"] == envoy.EXT_PROC_CLUSTER]
        socket = cluster.get("transport_socket") or {}
        typed = socket.get("typed_config", {})
        if socket.get("name") != "envoy.transport_sockets.tls" or not typed.get("@type", "").endswith("UpstreamTlsContext"):
            found.append(f"{name}: ext_proc without TLS")
    return found


# -- the replicas -------------------------------------------------------------------------------------------
def _vllm(stack: str, regs: list[Registration]) -> list[tuple[Any, dict[str, Any], dict[str, Any]]]:
    """(model config, Deployment or LeaderWorkerSet, vLLM container of the serving pods) of each model."""
    cfg = parse(stack_data(stack))
    out = []
    for doc in [*_of(regs, "kubernetes:apps/v1:Deployment"), *_of(regs, LEADER_WORKER_SET)]:
        model = next((m for m in cfg.models if m.name == doc["metadata"]["name"] and doc["metadata"]["namespace"] == m.name), None)
        if model is not None:
            (container,) = [c for c in pod_templates(doc)[0]["spec"]["containers"] if c["name"] == "vllm"]
            out.append((model, doc, container))
    assert out
    return out


def probes_within_budget(stack: str, regs: list[Registration]) -> list[str]:
    """The readiness probe checks at least as often as the scale-up budget's probe term counts, and the
    startup probe waits at least the pessimistic load (a cold compile on the slowest host) before it kills a pod."""
    cfg = parse(stack_data(stack))
    found = []
    for model, _, c in _vllm(stack, regs):
        ready, start = c["readinessProbe"], c["startupProbe"]
        if ready["periodSeconds"] > speed.PROBE_PERIOD.value:
            found.append(f"{model.name}: readiness every {ready['periodSeconds']} s, the budget counts {speed.PROBE_PERIOD.value}")
        pool = cfg.pool(model.pool)
        assert pool is not None
        needed = engine.startup_budget_seconds(model, pool)
        allowed = start["periodSeconds"] * start["failureThreshold"] + start.get("initialDelaySeconds", 0)
        if allowed < needed:
            found.append(f"{model.name}: the startup probe allows {allowed} s, the slow start takes {needed} s")
    return found


def drain_and_rollout(stack: str, regs: list[Registration]) -> list[str]:
    """preStop sleeps before SIGTERM so the endpoints go first, the grace period covers that sleep and vLLM's
    shutdown, and a rollout never removes a serving replica before its replacement is ready."""
    found = []
    for model, doc, c in _vllm(stack, regs):
        sleep = c["lifecycle"]["preStop"]["sleep"]["seconds"] if "sleep" in c["lifecycle"]["preStop"] else None
        drain = model.drain
        if sleep is None or sleep < drain.pre_stop_sleep_seconds or sleep < 5:
            found.append(f"{model.name}: preStop sleeps {sleep}")
        for template in pod_templates(doc):  # a group's workers too
            grace = template["spec"]["terminationGracePeriodSeconds"]
            if grace < (sleep or 0) + drain.shutdown_timeout_seconds:
                found.append(f"{model.name}: grace {grace} s under preStop {sleep} s + shutdown {drain.shutdown_timeout_seconds} s")
        if doc["kind"] == "LeaderWorkerSet":  # a group per replica: a whole new group first
            strategy = doc["spec"]["rolloutStrategy"]
            rolling = strategy.get("rollingUpdateConfiguration") or {}
            if strategy["type"] != "RollingUpdate" or rolling.get("maxUnavailable") != 0 or rolling.get("maxSurge", 0) < 1:
                found.append(f"{model.name}: a rollout may remove a serving group first ({strategy})")
            continue
        strategy = doc["spec"]["strategy"]
        if strategy["type"] != "RollingUpdate" or strategy["rollingUpdate"]["maxUnavailable"] != 0:
            found.append(f"{model.name}: a rollout may remove a serving replica first ({strategy})")
    return found


# -- least privilege --------------------------------------------------------------------------------------------
def populate_list_scope(stack: str, regs: list[Registration]) -> list[str]:
    """A populate Job lists its own repository's keys only, never the bucket or another repository."""
    found = []
    for r in regs:
        if r.type == "aws:iam/rolePolicy:RolePolicy" and r.name.endswith("-weights-populate"):
            doc = json.loads(values(r)["policy"])
            buckets = {st["Resource"] for st in doc["Statement"] if "s3:ListBucket" in str(st["Action"])}
            assert len(buckets) == 1, buckets
            (bucket,) = buckets
            if s3_allows(doc, "s3:ListBucket", bucket) or s3_allows(doc, "s3:ListBucket", bucket, prefix="other-org/other-model/"):
                found.append(f"{r.name}: lists beyond its repository")
    return found


def picker_egress(stack: str, regs: list[Registration]) -> list[str]:
    """Only a picker under precise prefix-cache routing (its tokenizer downloads the tokenizer) may reach
    the internet; an approximate-mode picker reaches DNS, the API server and its model's pods only."""
    cfg = parse(stack_data(stack))
    found = []
    for model in cfg.models:
        (policy,) = [
            p for p in _of(regs, "kubernetes:networking.k8s.io/v1:NetworkPolicy") if p["metadata"]["name"] == router.picker_name(model)
        ]
        everywhere = any(
            peer.get("ipBlock", {}).get("cidr") == "0.0.0.0/0" for rule in policy["spec"].get("egress", []) for peer in rule.get("to", [])
        )
        if everywhere != (model.routing.prefix_cache == "precise"):
            found.append(f"{model.name}: picker internet egress {everywhere} with prefixCache {model.routing.prefix_cache}")
    return found


@dataclass(frozen=True)
class Property:
    check: Check
    target: str
    """The builder a broken copy changes (tests/support/program.py)."""
    edit: Callable[..., Any]
    stack: str = PROD


def _hcm_edit(result: dict[str, Any], *args: Any, **kwargs: Any) -> None:
    _api_manager(result)["common_http_protocol_options"]["headers_with_underscores_action"] = "DROP_HEADER"


def _xff_edit(result: dict[str, Any], *args: Any, **kwargs: Any) -> None:
    _api_manager(result)["xff_num_trusted_hops"] = 2


def _tls_edit(result: dict[str, Any], *args: Any, **kwargs: Any) -> None:
    for cluster in result["static_resources"]["clusters"]:
        cluster.pop("transport_socket", None)


def _probe_edit(result: dict[str, Any], *args: Any, **kwargs: Any) -> None:
    result["readinessProbe"]["periodSeconds"] = int(speed.PROBE_PERIOD.value) + 1


def _startup_edit(result: dict[str, Any], *args: Any, **kwargs: Any) -> None:
    result["startupProbe"]["failureThreshold"] = 2


def _rollout_edit(result: dict[str, Any], *args: Any, **kwargs: Any) -> None:
    result["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] = 1


def _grace_edit(result: dict[str, Any], *args: Any, **kwargs: Any) -> None:
    result["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 1


def _list_edit(result: dict[str, Any], *args: Any, **kwargs: Any) -> None:
    for statement in result["Statement"]:
        statement.pop("Condition", None)


def _egress_edit(result: dict[str, Any], *args: Any, **kwargs: Any) -> None:
    result["spec"]["egress"].append({"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}], "ports": [{"protocol": "TCP", "port": 443}]})


PROPERTIES = {
    "envoy refuses underscore headers": Property(envoy_headers, "builders.gateway.envoy.config", _hcm_edit),
    "envoy trusts one X-Forwarded-For hop": Property(envoy_headers, "builders.gateway.envoy.config", _xff_edit),
    "envoy reaches the picker over TLS": Property(envoy_picker_tls, "builders.gateway.envoy.config", _tls_edit),
    "readiness as often as the budget counts": Property(probes_within_budget, "builders.serving.workload.probes", _probe_edit),
    "the startup probe waits the slow start": Property(probes_within_budget, "builders.serving.workload.probes", _startup_edit),
    "a rollout keeps every serving replica": Property(drain_and_rollout, "builders.serving.workload.deployment", _rollout_edit),
    "the grace period covers preStop and shutdown": Property(drain_and_rollout, "builders.serving.workload.deployment", _grace_edit),
    "populate lists its repository only": Property(populate_list_scope, "builders.weights.populate_policy", _list_edit),
    "only a precise picker reaches the internet": Property(picker_egress, "builders.gateway.policies.picker_policy", _egress_edit),
}


@pytest.mark.parametrize("stack", FIXTURES)
@pytest.mark.parametrize("name", sorted({p.check.__name__: n for n, p in PROPERTIES.items()}.values()))
def test_the_render_holds_the_property(name: str, stack: str) -> None:
    regs = list(fixture_run(stack).registrations)
    assert PROPERTIES[name].check(stack, regs) == []


@pytest.mark.parametrize("name", sorted(PROPERTIES))
def test_a_broken_copy_breaks_the_property(name: str) -> None:
    prop = PROPERTIES[name]
    broken = run_patched(prop.stack, prop.target, prop.edit)
    assert prop.check(prop.stack, broken) != [], f"{name}: the check does not see the broken copy"
