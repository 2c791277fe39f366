"""VllmModelArgs says the modes: an exposed model's endpoint, S3 weights and the gateway are sub-objects,
present or absent as a whole, and the component builds exactly what a present mode asks for.

Each case runs a small program that creates one VllmModel under the recording mocks, with its
modes set by hand (the platform's wiring of them is covered by the golden renders).
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import itertools
import re
import textwrap
from pathlib import Path

import pytest

from components import serving
from config.derived import state
from offline import harness
from offline.mocks import Registration
from tests.conftest import DEV, PROD, parse, stack_data, values

PROGRAM = """
import pulumi
import pulumi_kubernetes as k8s

from builders.serving.workload import Sources
from components.serving import Endpoint, Gateway, S3Weights, VllmModel, VllmModelArgs
from config.derived import state
from tests.conftest import parse, stack_data

cfg = parse(stack_data("{stack}"))
model = cfg.models[0]
provider = k8s.Provider("k8s", kubeconfig="{{}}")
marker = k8s.core.v1.ConfigMap("marker", metadata={{"name": "marker"}}, opts=pulumi.ResourceOptions(provider=provider))
endpoint = Endpoint(ingress=cfg.ingress, load_balancer_sources=["10.0.96.0/24"], after=[marker])
gateway = Gateway(config=cfg.gateway, envoy_image="envoy:test", after=[marker])
weights = S3Weights(
    bucket_arn="arn:aws:s3:::weights", cluster_name="the-cluster", models=list(cfg.models), retired_revision_days=3, tags={{"mode": "s3"}}
)
VllmModel(
    "model",
    VllmModelArgs(
        model=model,
        pool=cfg.pool(model.pool),
        provider=provider,
        sources=pulumi.Output.from_input(Sources(image="vllm:test", bucket="weights" if {weights} else None, region=cfg.region)),
        prometheus_url="http://prometheus:9090",
        monitoring_namespace="monitoring",
        vpc_cidrs=["10.0.0.0/16"],
        hf_token=None,
        endpoint=endpoint if {endpoint} else None,
        weights=weights if {weights} else None,
        gateway=gateway,
        facts=state.of(cfg).model(model.name),
    ),
)
"""


def _run(tmp_path: Path, stack: str, *, endpoint: bool, weights: bool) -> list[Registration]:
    main = tmp_path / f"model-{stack}-{endpoint}-{weights}.py"
    main.write_text(textwrap.dedent(PROGRAM.format(stack=stack, endpoint=endpoint, weights=weights)))
    return harness.run_program(main, "modes-test", harness.StackInput("modes", {"aws:region": "us-east-1"}, [])).registrations


def _of(registrations: list[Registration], kind: str) -> list[Registration]:
    return [r for r in registrations if r.type == kind]


def _sources(registrations: list[Registration], policy: str) -> list[dict[str, object]]:
    """Every peer the named NetworkPolicy admits, over its rules."""
    for r in _of(registrations, "kubernetes:networking.k8s.io/v1:NetworkPolicy"):
        doc = values(r)
        if doc["metadata"]["name"] == policy:
            return [peer for rule in doc["spec"].get("ingress", []) for peer in rule["from"]]
    raise AssertionError(f"no NetworkPolicy {policy}")


def test_without_modes_there_is_no_ingress_no_role_and_no_load_balancer_source(tmp_path: Path) -> None:
    found = _run(tmp_path, DEV, endpoint=False, weights=False)
    assert _of(found, "kubernetes:networking.k8s.io/v1:Ingress") == []
    assert _of(found, "aws:iam/role:Role") == []
    assert _of(found, "kubernetes:batch/v1:Job") == []
    assert {"ipBlock": {"cidr": "10.0.96.0/24"}} not in _sources(found, "llama-3-1-8b")
    assert {"ipBlock": {"cidr": "10.0.96.0/24"}} not in _sources(found, "llama-3-1-8b-proxy")
    # without a route the pods wait for nothing outside the model (no load balancer controller to wait for):
    # their namespace and their own NetworkPolicies (the allow rules and the deny), so they never run unguarded
    (deployment,) = [d for d in _of(found, "kubernetes:apps/v1:Deployment") if d.name.endswith("-deployment")]
    policy = "kubernetes:networking.k8s.io/v1:NetworkPolicy::model-netpol-"
    assert deployment.dependencies == [
        "kubernetes:core/v1:Namespace::model-namespace",
        *(f"{policy}{n}" for n in ("default-deny", "llama-3-1-8b", "llama-3-1-8b-epp", "llama-3-1-8b-proxy")),
    ]


def test_an_endpoint_brings_the_ingress_its_sources_and_what_it_waits_for(tmp_path: Path) -> None:
    found = _run(tmp_path, DEV, endpoint=True, weights=False)
    (ingress,) = _of(found, "kubernetes:networking.k8s.io/v1:Ingress")
    assert "kubernetes:core/v1:ConfigMap::marker" in ingress.dependencies
    # the exposed pods wait for the controller's webhook too (the readiness gate)
    assert "kubernetes:core/v1:ConfigMap::marker" in _of(found, "kubernetes:apps/v1:Deployment")[0].dependencies
    # the load balancer reaches the gateway's proxies, never vLLM; the Ingress waits for the gateway's release
    assert {"ipBlock": {"cidr": "10.0.96.0/24"}} in _sources(found, "llama-3-1-8b-proxy")
    assert {"ipBlock": {"cidr": "10.0.96.0/24"}} not in _sources(found, "llama-3-1-8b")
    assert "kubernetes:helm.sh/v3:Release::model-router" in ingress.dependencies
    assert _of(found, "aws:iam/role:Role") == []


def test_a_gateway_brings_its_release_policies_and_budgets_after_what_it_needs(tmp_path: Path) -> None:
    found = _run(tmp_path, DEV, endpoint=True, weights=False)
    (release,) = _of(found, "kubernetes:helm.sh/v3:Release")
    assert release.name == "model-router"
    assert values(release)["name"] == values(release)["namespace"] == "llama-3-1-8b"
    # the CRDs (given as `after`), the namespace and the policies that open its paths come first
    assert "kubernetes:core/v1:ConfigMap::marker" in release.dependencies
    assert "kubernetes:core/v1:Namespace::model-namespace" in release.dependencies
    assert "kubernetes:networking.k8s.io/v1:NetworkPolicy::model-netpol-llama-3-1-8b-proxy" in release.dependencies
    assert "kubernetes:networking.k8s.io/v1:NetworkPolicy::model-netpol-llama-3-1-8b-epp" in release.dependencies
    budgets = sorted(values(r)["metadata"]["name"] for r in _of(found, "kubernetes:policy/v1:PodDisruptionBudget"))
    # two proxies: one may go at a time; the pickers' keeps nothing (minAvailable 0), it is there to be awaited
    assert budgets == ["llama-3-1-8b", "llama-3-1-8b-epp", "llama-3-1-8b-proxy"]


def test_s3_weights_bring_the_roles_their_associations_and_the_populate_job(tmp_path: Path) -> None:
    found = _run(tmp_path, PROD, endpoint=False, weights=True)
    roles = _of(found, "aws:iam/role:Role")
    # the compile warm-up's role beside them (engine.compileCache is on by default); its Jobs come with the pool's GPU types
    assert sorted(r.name for r in roles) == ["model-compile-warmup", "model-weights-populate", "model-weights-read"]
    assert all(values(r)["tags"] == {"mode": "s3"} for r in roles)
    associations = _of(found, "aws:eks/podIdentityAssociation:PodIdentityAssociation")
    assert [values(a)["clusterName"] for a in associations] == ["the-cluster"] * 3
    assert all(values(a)["tags"] == {"mode": "s3"} for a in associations)
    jobs = {j.name: j for j in _of(found, "kubernetes:batch/v1:Job")}
    command = values(jobs.pop("model-weights-job"))["spec"]["template"]["spec"]["containers"][0]["command"]
    assert command[command.index("--retire-days") + 1] == "3"
    # and one compile warm-up Job per GPU type of the pool's hosts (the model's derived state)
    labels = state.of(parse(stack_data(PROD))).model(parse(stack_data(PROD)).models[0].name).gpu_labels
    assert sorted(jobs) == sorted(f"model-warmup-{label}" for label in labels)
    assert _of(found, "kubernetes:networking.k8s.io/v1:Ingress") == []


# -- the args' shape ----------------------------------------------------------------------------------

ARGS = (serving.VllmModelArgs, serving.Endpoint, serving.S3Weights, serving.Gateway)


@pytest.mark.parametrize("cls", ARGS, ids=lambda c: c.__name__)
def test_args_are_frozen_keyword_only_dataclasses_with_a_docstring_per_field(cls: type) -> None:
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    assert params.frozen
    assert all(f.kw_only for f in dataclasses.fields(cls))
    body = next(n for n in ast.parse(textwrap.dedent(inspect.getsource(cls))).body if isinstance(n, ast.ClassDef)).body
    documented = {
        target.target.id
        for target, after in itertools.pairwise(body)
        if isinstance(target, ast.AnnAssign)
        and isinstance(target.target, ast.Name)
        and isinstance(after, ast.Expr)
        and isinstance(after.value, ast.Constant)
        and isinstance(after.value.value, str)
    }
    assert documented == {f.name for f in dataclasses.fields(cls)}


def test_the_only_optional_fields_are_whole_modes_and_secrets() -> None:
    # the annotations are strings (postponed evaluation), as written in components/serving/args.py
    optional = sorted(f.name for f in dataclasses.fields(serving.VllmModelArgs) if str(f.type).endswith("| None"))
    # a new optional field is a mode: give it its own sub-object, not a flat field and an assert; the
    # gateway is no mode (every model has one, those at zero included)
    assert optional == ["api_key", "endpoint", "hf_token", "weights"]


@pytest.mark.parametrize(
    ("stack", "weights", "zero", "endpoint", "expected"),
    [
        (DEV, True, False, False, "weights (S3) must be given exactly when the model streams from S3"),
        (PROD, False, False, False, "weights (S3) must be given exactly when the model streams from S3"),
    ],
)
def test_args_refuse_modes_the_model_does_not_have(stack: str, weights: bool, zero: bool, endpoint: bool, expected: str) -> None:
    cfg = parse(stack_data(stack))
    model = cfg.models[0]
    s3 = serving.S3Weights(bucket_arn="arn:aws:s3:::w", cluster_name="c", models=[model], retired_revision_days=3, tags={})
    with pytest.raises(ValueError, match=re.escape(expected)):
        serving.VllmModelArgs(
            model=model,
            pool=cfg.pool(model.pool),
            provider=None,  # type: ignore[arg-type]  # refused before anything uses it
            sources=None,  # type: ignore[arg-type]
            prometheus_url="http://prometheus:9090",
            monitoring_namespace="monitoring",
            vpc_cidrs=["10.0.0.0/16"],
            hf_token=None,
            endpoint=None,
            weights=s3 if weights else None,
            facts=state.of(cfg).model(model.name),
            gateway=serving.Gateway(config=cfg.gateway, envoy_image="envoy:test", after=[]),
        )
