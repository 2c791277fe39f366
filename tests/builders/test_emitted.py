"""What the builders emit is what the lists say, read off the render of every fixture stack.

MANAGED_FLAGS (config/sections/models.py) are the vLLM flags refused in extraArgs because the
platform sets them; PROTECTED_VALUES and DERIVED_VALUES (config/checks/escape_hatches.py) are the
Helm values an escape hatch may not override. All three are kept by hand (they carry the messages a
user reads), so these tests tie them to the rendered Deployments and Helm releases both ways: a
flag or key the builders start setting, stop setting or rename fails here, not silently in a stack.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import Any

import pytest

from config.checks.escape_hatches import DERIVED_VALUES, PROTECTED_VALUES, has_path
from config.derived import state
from config.facts import versions
from config.facts.conventions import PROJECT
from config.sections.models import MANAGED_FLAGS
from offline import harness, render
from policy.checks import LEADER_WORKER_SET, pod_templates
from tests.conftest import DEV, FIXTURES, fixture_input, fixture_run, parse, problems_after, shared_path, stack_data, values
from tests.validators import helm_values

DEPLOYMENT = "kubernetes:apps/v1:Deployment"
RELEASE = "kubernetes:helm.sh/v3:Release"
VLLM_CONTAINER = "vllm"

REFUSED_NOT_EMITTED = {
    "--model": "the model is the positional argument the platform passes first",
    "-tp": "the short form of --tensor-parallel-size",
    "-pp": "the short form of --pipeline-parallel-size",
    "-q": "the short form of --quantization",
    "--api-key": "the key reaches vLLM as VLLM_API_KEY from a Secret, never in args",
    "--hf-token": "the token is mounted as a file (HF_TOKEN_PATH), never in args",
    "--disable-log-stats": "it also turns off the Prometheus metrics KEDA scales on",
}
"""MANAGED_FLAGS entries the builders never emit, and why each is refused all the same."""
SHORT_FORMS = {"-tp": "--tensor-parallel-size", "-pp": "--pipeline-parallel-size", "-q": "--quantization"}

WHEN_SET = {"--kv-cache-dtype": ("kvCacheDtype", "fp8"), "--max-num-seqs": ("maxNumSeqs", 64)}
"""Flags emitted only when a model sets a field no fixture sets: flag -> (field, value)."""

RULE_GUARDED = {
    "--load-format": ["--load-format", "pt"],
    "--model-loader-extra-config": ['--model-loader-extra-config={"concurrency": 4}'],
}
"""Flags the builders emit for S3 weights that a rule guards instead of MANAGED_FLAGS
(config/checks/artifacts.py rule_streamer_flags: an S3 model may pick the sharded streamer, a
Hugging Face model its own load format): flag -> extraArgs the rule refuses on an S3 model."""

RELEASES = {
    "ingress": "aws-load-balancer-controller",
    "karpenter": "karpenter",
    "keda": "keda",
    "observability": "kube-prometheus-stack",
    "gpuOperator": "gpu-operator",
    "nodeMonitoring": "eks-node-monitoring-agent",
    # every model's router release; the fixtures' llama-3-1-8b keeps replicas, so it has one
    "gateway": "llama-3-1-8b",
}
"""The Helm release each escape hatch (`<section>.extraValues`) is merged into."""

HELM_WHEN_SET = {("observability", ("prometheus", "prometheusSpec", "retentionSize")): ("retentionSize", "40GB")}
"""Listed values the builders set only when a field no fixture sets is set: -> (observability field, value)."""

PRECISE_ONLY = {("gateway", ("router", "tokenizer"))}
"""Listed values a router release sets only for a model routed on the precise prefix cache (no fixture's is)."""

SELECTORS = ("podMonitorSelector", "serviceMonitorSelector", "ruleSelector")
CHART_DEFAULTS = {
    **{
        ("observability", ("prometheus", "prometheusSpec", key)): "left empty: with <key>NilUsesHelmValues false Prometheus "
        "selects every monitor and rule, the platform's among them"
        for key in SELECTORS
    },
    ("observability", ("prometheus", "service", "port")): "the chart's 9090, which the Prometheus address includes",
    ("nodeMonitoring", ("nodeAgent", "tolerations")): "the chart's `operator: Exists`: the agent on every node",
    ("nodeMonitoring", ("dcgmAgent", "nodeSelector")): "the chart's {}: the platform's affinity alone places the engine",
}
"""Listed values the builders rely on the chart for instead of setting, and what they rely on."""
SERVICE_ACCOUNT_SUBJECT = re.compile(r"system:serviceaccount:([a-z0-9-]+):([a-z0-9-]+)")


def _is_flag(arg: str) -> bool:
    return re.match(r"^--?[A-Za-z]", arg) is not None


def platform_args(stack: str) -> dict[str, list[str]]:
    """The arguments the builders pass to each model's vLLM container (its extraArgs taken off the end)."""
    extra = {m.name: m.extra_args for m in parse(stack_data(stack)).models}
    return _platform_args(fixture_run(stack), extra)


def _platform_args(run: harness.RunResult, extra: dict[str, list[str]]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for r in [*run.of_type(DEPLOYMENT), *run.of_type(LEADER_WORKER_SET)]:
        doc = values(r)
        name = doc["metadata"]["name"]
        # a LeaderWorkerSet's leader, then its workers: the workers' own flags are added to the leader's
        for template in pod_templates(doc):
            for container in template["spec"]["containers"]:
                if container["name"] != VLLM_CONTAINER:
                    continue
                args, tail = container["args"], extra[name]
                assert args[len(args) - len(tail) :] == tail, f"{name}: extraArgs are not passed last"
                before = found.setdefault(name, [])
                found[name] = [*before, *(a for a in args[: len(args) - len(tail)] if a not in before)]
    return found


def flags(args: list[str]) -> set[str]:
    return {a.split("=", 1)[0] for a in args if _is_flag(a)}


@functools.cache
def emitted() -> dict[str, set[str]]:
    """Every flag the builders emit on some fixture, with the fixtures that emit it."""
    out: dict[str, set[str]] = {}
    for stack in FIXTURES:
        for args in platform_args(stack).values():
            for flag in flags(args):
                out.setdefault(flag, set()).add(stack)
    return out


# -- vLLM flags ---------------------------------------------------------------------------------------


def test_every_fixture_renders_vllm_containers_with_the_model_first() -> None:
    for stack in FIXTURES:
        found = platform_args(stack)
        assert sorted(found) == sorted(m.name for m in parse(stack_data(stack)).models), stack
        # the model is positional: --model would set it a second time
        assert all(not _is_flag(args[0]) for args in found.values()), stack


def test_every_flag_the_builders_emit_is_refused_in_extra_args() -> None:
    unlisted = {f: sorted(s) for f, s in emitted().items() if f not in MANAGED_FLAGS and f not in RULE_GUARDED}
    assert unlisted == {}, "add these to MANAGED_FLAGS (config/sections/models.py): a user's copy in extraArgs would override them"


def test_every_managed_flag_is_emitted_or_says_why_not() -> None:
    unexplained = sorted(f for f in MANAGED_FLAGS if f not in emitted() and f not in WHEN_SET and f not in REFUSED_NOT_EMITTED)
    assert unexplained == [], "no fixture emits these: drop them from MANAGED_FLAGS, or list them here with a reason"
    stale = sorted(f for f in [*REFUSED_NOT_EMITTED, *WHEN_SET] if f in emitted() or f not in MANAGED_FLAGS)
    assert stale == [], "listed as not emitted (or not managed) but emitted, or no longer in MANAGED_FLAGS"
    assert not set(RULE_GUARDED) & set(MANAGED_FLAGS)


def test_short_forms_stand_for_flags_the_builders_emit() -> None:
    for short, long in SHORT_FORMS.items():
        assert short in REFUSED_NOT_EMITTED
        assert long in MANAGED_FLAGS
        assert long in emitted() or long in WHEN_SET, long


@functools.cache
def variant() -> tuple[dict[str, Any], harness.RunResult]:
    """The small fixture with every field set that WHEN_SET and HELM_WHEN_SET name, rendered."""
    data = stack_data(DEV)
    for field, value in WHEN_SET.values():
        data["models"][0][field] = value
    for field, value in HELM_WHEN_SET.values():
        data["observability"][field] = value
    overrides = {f"{PROJECT}:models": data["models"], f"{PROJECT}:observability": data["observability"]}
    return data, harness.run(fixture_input(DEV, overrides=overrides))


def test_flags_emitted_only_when_set_are_emitted_when_set() -> None:
    data, run = variant()
    name = data["models"][0]["name"]
    args = _platform_args(run, {m["name"]: m.get("extraArgs", []) for m in data["models"]})
    assert set(WHEN_SET) <= flags(args[name])
    assert not set(WHEN_SET) & flags(platform_args(DEV)[name])


@pytest.mark.parametrize("flag", sorted(RULE_GUARDED))
def test_rule_guarded_flags_are_emitted_and_refused_on_s3_models(flag: str) -> None:
    assert flag in emitted(), f"{flag}: no fixture emits it; drop it from RULE_GUARDED"

    def copy_it(data: dict[str, Any]) -> None:
        data["models"][0].update(weights={"source": "s3"}, extraArgs=RULE_GUARDED[flag])

    found = [p for p in problems_after(copy_it) if ".extraArgs[0]:" in p]
    assert len(found) == 1
    assert flag in found[0]


def test_secrets_never_ride_in_args_but_reach_vllm_another_way() -> None:
    env: set[str] = set()
    for stack in FIXTURES:
        for r in fixture_run(stack).of_type(DEPLOYMENT):
            for c in values(r)["spec"]["template"]["spec"]["containers"]:
                if c["name"] == VLLM_CONTAINER:
                    env |= {e["name"] for e in c["env"]}
    assert {"VLLM_API_KEY", "HF_TOKEN_PATH"} <= env
    assert not {"--api-key", "--hf-token"} & set(emitted())


# -- Helm values --------------------------------------------------------------------------------------


def releases(stack: str) -> dict[str, dict[str, Any]]:
    """Rendered Helm releases by name: namespace and values."""
    return _releases(fixture_run(stack))


def _releases(run: harness.RunResult) -> dict[str, dict[str, Any]]:
    out = {}
    for r in run.of_type(RELEASE):
        name, doc = render.helm_release(r)
        out[name] = doc
    return out


def _leaves(value: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, (*path, key))
    else:
        yield path, value


LISTED = {**PROTECTED_VALUES, **DERIVED_VALUES}


def _set_on_a_fixture(section: str, path: tuple[str, ...]) -> bool:
    return any(has_path(releases(stack).get(RELEASES[section], {}).get("values"), path) for stack in FIXTURES)


def test_every_listed_helm_value_is_one_the_builders_set() -> None:
    assert set(RELEASES) >= {section for section, _ in LISTED}
    unset = [
        f"{section}.extraValues.{'.'.join(path)}"
        for section, path in LISTED
        if (section, path) not in HELM_WHEN_SET
        and (section, path) not in CHART_DEFAULTS
        and (section, path) not in PRECISE_ONLY
        and not _set_on_a_fixture(section, path)
    ]
    assert unset == [], "no fixture's render sets these: the rule guards nothing (a renamed or dropped chart key?)"
    assert set(HELM_WHEN_SET) <= set(LISTED)
    assert set(CHART_DEFAULTS) <= set(LISTED)


def test_listed_router_values_of_precise_routing_are_set_then() -> None:
    from builders.gateway import router

    data = stack_data(DEV)
    data["models"][0]["routing"] = {"prefixCache": "precise"}
    data["cluster"]["systemNodeGroup"].update(minSize=3, desiredSize=3)
    cfg = parse(data)
    model = cfg.models[0]
    values = router.values(
        model, cfg.gateway, alb_idle_timeout_seconds=cfg.ingress.idle_timeout_seconds, hold=state.of(cfg).model(model.name).hold
    )
    assert set(LISTED) >= PRECISE_ONLY
    for section, path in PRECISE_ONLY:
        assert section == "gateway"
        assert has_path(values, path)


def test_listed_helm_values_set_only_when_configured_are_set_then() -> None:
    _, run = variant()
    rendered = _releases(run)
    for section, path in HELM_WHEN_SET:
        assert has_path(rendered[RELEASES[section]]["values"], path), path
        assert not _set_on_a_fixture(section, path), f"{path}: a fixture sets it; drop it from HELM_WHEN_SET"


def test_listed_helm_values_left_to_the_chart_are_left_to_it() -> None:
    for section, path in CHART_DEFAULTS:
        assert not _set_on_a_fixture(section, path), f"{path}: the builders set it now; drop it from CHART_DEFAULTS"
    for stack in FIXTURES:
        spec = releases(stack)[RELEASES["observability"]]["values"]["prometheus"]["prometheusSpec"]
        assert all(spec[f"{key}NilUsesHelmValues"] is False for key in SELECTORS), stack
        assert fixture_run(stack).outputs["prometheusUrl"].endswith(":9090"), stack
    chart = helm_values.load(shared_path("helm-values", f"kube-prometheus-stack-{versions.KUBE_PROMETHEUS_STACK_VERSION}.values.yaml"))
    assert chart["prometheus"]["service"]["port"] == 9090
    assert all(chart["prometheus"]["prometheusSpec"][key] == {} for key in SELECTORS)


def _references(stack: str) -> tuple[set[str], set[tuple[str, str]]]:
    """What names another resource of the stack: the cluster, its region and VPC; and the service
    accounts (namespace, name) that a Pod Identity association or an IRSA trust names."""
    run = fixture_run(stack)
    cfg = parse(stack_data(stack))
    names = {cfg.cluster.name, cfg.region, str(run.outputs["vpcId"])}
    accounts: set[tuple[str, str]] = set()
    for r in run.registrations:
        if r.type == "aws:eks/podIdentityAssociation:PodIdentityAssociation":
            accounts.add((values(r)["namespace"], values(r)["serviceAccount"]))
        elif r.type == "aws:iam/role:Role":
            accounts |= set(SERVICE_ACCOUNT_SUBJECT.findall(str(values(r).get("assumeRolePolicy"))))
    return names, accounts


@pytest.mark.parametrize("stack", FIXTURES)
def test_every_helm_value_that_names_another_resource_is_derived(stack: str) -> None:
    names, accounts = _references(stack)
    sections = {release: section for section, release in RELEASES.items()}
    unlisted = []
    for release, doc in releases(stack).items():
        if release not in sections:
            continue  # no escape hatch reaches it
        for path, value in _leaves(doc["values"]):
            refers = isinstance(value, str) and (value in names or value.startswith("arn:aws:"))
            refers = refers or (path[-2:] == ("serviceAccount", "name") and (doc["namespace"], value) in accounts)
            if refers and not any(path[: len(p)] == p for s, p in LISTED if s == sections[release]):
                unlisted.append(f"{sections[release]}.extraValues.{'.'.join(path)} = {value}")
    assert unlisted == [], "add these to DERIVED_VALUES: an override would point them at something that does not exist"
