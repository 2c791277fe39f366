"""Model endpoints: the controller's IAM and values, the shared ALB Ingresses, API keys."""

from __future__ import annotations

import json
from typing import Any

import pytest
from parliament import analyze_policy_string

from builders.ingress import endpoints as builders
from builders.ingress.iam import controller_policy
from offline import harness
from tests.conftest import DEV, FIXTURES, PROD, fixture_input, fixture_run, new_problems_after, parse, shared_path, stack_data, values
from tests.validators import cloudformation, crds, helm_values, netpol

INGRESS = "kubernetes:networking.k8s.io/v1:Ingress"
RELEASE = "kubernetes:helm.sh/v3:Release"
CHART_VALUES = ("helm-values", "aws-load-balancer-controller-3.5.0.values.yaml")
# Not yet among the shared CRDs: kubernetes-sigs/aws-load-balancer-controller v3.5.0,
# config/crd/bases/elbv2.k8s.aws_ingressclassparams.yaml (the chart's crds/crds.yaml holds the same spec).
ICP_CRD = ("crds", "elbv2.k8s.aws_ingressclassparams.yaml")
NAME_LABEL = "kubernetes.io/metadata.name"
MEMBER = {"llm-platform.io/ingress-group": "llm-platform"}
"""The label the platform puts on the namespaces it creates for the group's Ingresses."""
A = "alb.ingress.kubernetes.io"
# Annotations that configure the shared ALB itself: every Ingress of the group must agree.
LB_LEVEL = (
    "group.name",
    "scheme",
    "inbound-cidrs",
    "listen-ports",
    "certificate-arn",
    "ssl-policy",
    "load-balancer-attributes",
    "ssl-redirect",
)


def test_controller_policy_equals_the_upstream_document() -> None:
    upstream = json.loads(shared_path("iam", "aws-load-balancer-controller_iam_policy.json").read_text())
    assert cloudformation.normalize(controller_policy("aws")) == cloudformation.normalize(upstream)
    assert len(controller_policy()["Statement"]) == len(upstream["Statement"]) == 16


def test_parliament_on_the_controller_policy() -> None:
    findings = analyze_policy_string(json.dumps(controller_policy())).findings
    by_issue: dict[str, list[Any]] = {}
    for f in findings:
        by_issue.setdefault(f.issue, []).append(f.detail)
    # parliament 1.6.4's IAM database predates two things the v3.5.0 policy uses:
    assert by_issue.pop("UNKNOWN_ACTION") == ["Unknown action elasticloadbalancing:ModifyIpPools"]
    assert set(by_issue.pop("UNKNOWN_CONDITION_FOR_ACTION")) == {
        "Unknown condition elasticloadbalancing:CreateAction for action elasticloadbalancing:AddTags"
    }
    # and upstream grants these actions on "*" (scoped by the elbv2.k8s.aws/cluster tag conditions
    # where the API allows it); nothing else is reported.
    assert set(by_issue) == {"RESOURCE_STAR"}


def test_controller_release(prod_run: harness.RunResult) -> None:
    release = values(prod_run.one("kubernetes:helm.sh/v3:Release", "alb-controller-release"))
    assert (release["name"], release["chart"], release["version"], release["namespace"]) == (
        "aws-load-balancer-controller",
        "aws-load-balancer-controller",
        "3.5.0",
        "kube-system",
    )
    assert release["repositoryOpts"] == {"repo": "https://aws.github.io/eks-charts"}
    v = release["values"]
    # IMDS hop limit 1 hides region and VPC from the controller: both come from the stack
    assert v["clusterName"] == "llm-prod"
    assert v["region"] == "us-east-1"
    assert v["vpcId"] == prod_run.outputs["vpcId"]
    assert v["keepTLSSecret"] is True
    assert v["serviceAccount"] == {"create": True, "name": "aws-load-balancer-controller"}
    upstream = helm_values.load(shared_path("helm-values", "aws-load-balancer-controller-3.5.0.values.yaml"))
    assert helm_values.unknown_keys(v, upstream) == []


def _controller_values(run: harness.RunResult) -> dict[str, Any]:
    v = values(run.one(RELEASE, "alb-controller-release"))["values"]
    assert isinstance(v, dict)
    return v


def _class_params(v: dict[str, Any]) -> dict[str, Any]:
    """The IngressClassParams the chart's templates/ingressclass.yaml renders from these values."""
    params = v["ingressClassParams"]
    return {
        "apiVersion": "elbv2.k8s.aws/v1beta1",
        "kind": "IngressClassParams",
        "metadata": {"name": params["name"]},
        "spec": params["spec"],
    }


@pytest.mark.parametrize("stack", FIXTURES)
def test_the_ingress_group_admits_only_the_platforms_namespaces(stack: str) -> None:
    v = _controller_values(fixture_run(stack))
    assert v["ingressClass"] == "alb"
    assert v["createIngressClassResource"] is True
    # the legacy class annotation bypasses the IngressClassParams: no new Ingress may use it
    assert v["disableIngressClassAnnotation"] is True
    assert v["ingressClassParams"] == {
        "create": True,
        "name": "alb",
        "spec": {"group": {"name": "llm-platform"}, "namespaceSelector": {"matchLabels": MEMBER}},
    }
    upstream = helm_values.load(shared_path(*CHART_VALUES))
    assert helm_values.unknown_keys(v, upstream) == []


def test_the_chart_keys_behind_the_group() -> None:
    upstream = helm_values.load(shared_path(*CHART_VALUES))
    # the class name the Ingresses use is the chart's default one, and the chart creates both objects
    assert upstream["ingressClass"] == "alb"
    assert upstream["createIngressClassResource"] is True
    assert upstream["ingressClassParams"]["create"] is True
    # spec is free-form to the values check ({} upstream): the CRD schema checks it instead
    assert upstream["ingressClassParams"]["spec"] == {}


@pytest.mark.parametrize("stack", FIXTURES)
def test_the_class_params_match_the_crd(stack: str) -> None:
    manifest = _class_params(_controller_values(fixture_run(stack)))
    assert crds.errors(manifest, shared_path(*ICP_CRD)) == []


def test_the_crd_check_sees_a_broken_params() -> None:
    manifest = _class_params(_controller_values(fixture_run(DEV)))
    manifest["spec"]["namespaceSelector"] = {"matchExpressions": [{"key": "x"}]}
    manifest["spec"]["group"] = {}
    assert crds.errors(manifest, shared_path(*ICP_CRD)) == [
        "spec.group: 'name' is a required property",
        "spec.namespaceSelector.matchExpressions.0: 'operator' is a required property",
    ]


@pytest.mark.parametrize("stack", FIXTURES)
def test_the_selector_admits_the_groups_namespaces_and_no_other(stack: str) -> None:
    """The selector judged as the controller judges it (a label selector on the Ingress's namespace),
    against the namespaces the program renders: every rendered Ingress is admitted, so is every
    model's namespace (exposed or not: a label that followed `expose` would leave an Ingress being
    deleted in a refused namespace) and KEDA's; no namespace of another team, nor a platform one
    that holds no Ingress of the group."""
    run = fixture_run(stack)
    v = _controller_values(run)
    spec = v["ingressClassParams"]["spec"]
    rendered = {
        values(r)["metadata"]["name"]: {**(values(r)["metadata"].get("labels") or {}), NAME_LABEL: values(r)["metadata"]["name"]}
        for r in run.of_type("kubernetes:core/v1:Namespace")
    }
    ingresses = [values(r) for r in run.of_type(INGRESS)]
    holding = {i["metadata"]["namespace"] for i in ingresses}
    assert holding
    for i in ingresses:
        assert i["spec"]["ingressClassName"] == v["ingressClass"]
        # redundant with spec.group (which wins), never different from it
        assert i["metadata"]["annotations"][f"{A}/group.name"] == spec["group"]["name"]
    foreign = {ns: {NAME_LABEL: ns} for ns in ("default", "kube-system", "team-a")}
    admitted = {ns for ns, ls in {**foreign, **rendered}.items() if netpol.selects(spec["namespaceSelector"], ls)}
    models = {m.name for m in parse(stack_data(stack)).models}
    assert holding <= admitted
    assert admitted == models | {"keda"}


def test_a_removed_model_keeps_its_namespace_in_the_group_until_it_is_gone() -> None:
    """Removing a model drops its namespace and its Ingress together: the controller's parameters do
    not change (nothing is refused while the Ingress waits for its deletion at the end of the run)."""
    models = stack_data(PROD)["models"]
    smaller = harness.run(fixture_input(PROD, overrides={"llm-platform:models": models[:2]}))
    assert _controller_values(smaller)["ingressClassParams"] == _controller_values(fixture_run(PROD))["ingressClassParams"]


def test_controller_identity(prod_run: harness.RunResult) -> None:
    association = values(prod_run.one("aws:eks/podIdentityAssociation:PodIdentityAssociation", "alb-controller-identity"))
    assert (association["namespace"], association["serviceAccount"]) == ("kube-system", "aws-load-balancer-controller")
    (statement,) = json.loads(values(prod_run.one("aws:iam/role:Role", "alb-controller-role"))["assumeRolePolicy"])["Statement"]
    assert statement["Condition"] == {
        "StringEquals": {
            "aws:RequestTag/eks-cluster-name": association["clusterName"],
            "aws:RequestTag/kubernetes-namespace": "kube-system",
            "aws:RequestTag/kubernetes-service-account": "aws-load-balancer-controller",
        }
    }
    policy = json.loads(values(prod_run.one("aws:iam/policy:Policy", "alb-controller-policy"))["policy"])
    assert policy == controller_policy("aws")


def _ingresses(run: harness.RunResult) -> dict[str, dict[str, Any]]:
    return {r.name: values(r) for r in run.of_type(INGRESS)}


def test_prod_ingress_exactly(prod_run: harness.RunResult) -> None:
    ingress = _ingresses(prod_run)["model-llama-3-1-8b-ingress"]
    assert ingress["metadata"]["annotations"] == {
        f"{A}/group.name": "llm-platform",
        f"{A}/group.order": "-1",
        f"{A}/scheme": "internal",
        f"{A}/target-type": "ip",
        f"{A}/backend-protocol": "HTTP",
        f"{A}/inbound-cidrs": "10.0.0.0/8",
        # the gateway proxies' ready listener: 200 while the model's Endpoint Picker answers
        f"{A}/healthcheck-path": "/ready",
        f"{A}/healthcheck-port": "19001",
        f"{A}/success-codes": "200",
        f"{A}/healthcheck-interval-seconds": "5",
        f"{A}/healthcheck-timeout-seconds": "3",
        f"{A}/healthy-threshold-count": "2",
        f"{A}/load-balancer-attributes": "idle_timeout.timeout_seconds=600,routing.http2.enabled=true",
        f"{A}/target-group-attributes": "deregistration_delay.timeout_seconds=60",
        f"{A}/listen-ports": '[{"HTTP": 80}, {"HTTPS": 443}]',
        f"{A}/ssl-redirect": "443",
        f"{A}/certificate-arn": "arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d",
        f"{A}/ssl-policy": "ELBSecurityPolicy-TLS13-1-2-2021-06",
    }
    assert ingress["spec"] == {
        "ingressClassName": "alb",
        "rules": [
            {
                "host": "llama-3-1-8b.llm.internal.example.com",
                "http": {
                    "paths": [
                        {
                            "path": "/v1",
                            "pathType": "Prefix",
                            "backend": {"service": {"name": "llama-3-1-8b-proxy", "port": {"number": 8081}}},
                        }
                    ]
                },
            }
        ],
    }


def test_one_alb_for_every_model(prod_run: harness.RunResult) -> None:
    ingresses = _ingresses(prod_run)
    assert len(ingresses) == 4
    for key in LB_LEVEL:
        assert len({i["metadata"]["annotations"].get(f"{A}/{key}") for i in ingresses.values()}) == 1, key


def test_only_v1_is_routed(dev_run: harness.RunResult, prod_run: harness.RunResult) -> None:
    for run in (dev_run, prod_run):
        for ingress in _ingresses(run).values():
            for rule in ingress["spec"]["rules"]:
                for path in rule["http"]["paths"]:
                    assert path["path"].endswith("/v1"), path
                    assert path["pathType"] == "Prefix"


def test_dev_routes_by_path_and_rewrites_to_v1(dev_run: harness.RunResult) -> None:
    ingress = _ingresses(dev_run)["model-llama-3-1-8b-ingress"]
    assert ingress["spec"]["rules"][0]["http"]["paths"][0]["path"] == "/llama-3-1-8b/v1"
    # keyed by the backend Service (the gateway's proxies), as the controller reads it (v3.5.0 enhanced_backend_builder.go)
    assert f"{A}/transforms.llama-3-1-8b" not in ingress["metadata"]["annotations"]
    transform = json.loads(ingress["metadata"]["annotations"][f"{A}/transforms.llama-3-1-8b-proxy"])
    assert transform == [
        {"type": "url-rewrite", "urlRewriteConfig": {"rewrites": [{"regex": "^/llama-3-1-8b/v1(/.*)?$", "replace": "/v1$1"}]}}
    ]
    assert ingress["metadata"]["annotations"][f"{A}/listen-ports"] == '[{"HTTP": 80}]'
    assert ingress["metadata"]["annotations"][f"{A}/inbound-cidrs"] == "10.40.0.0/16"  # internal default: the VPC


def test_deregistration_delay_fits_the_drain() -> None:
    for model in parse(stack_data(PROD)).models:
        delay = builders.deregistration_delay(model)
        assert model.drain.pre_stop_sleep_seconds <= delay <= model.drain.termination_grace_period_seconds


def test_ingresses_wait_for_the_controller(prod_run: harness.RunResult) -> None:
    for r in prod_run.of_type(INGRESS):
        assert "kubernetes:helm.sh/v3:Release::alb-controller-release" in r.dependencies


def test_no_service_is_exposed_directly(dev_run: harness.RunResult, prod_run: harness.RunResult) -> None:
    for run in (dev_run, prod_run):
        for r in run.of_type("kubernetes:core/v1:Service"):
            assert values(r)["spec"]["type"] == "ClusterIP", r.name


def test_base_urls(dev_run: harness.RunResult, prod_run: harness.RunResult) -> None:
    assert prod_run.outputs["models"]["llama-3-3-70b"]["baseUrl"] == "https://llama-3-3-70b.llm.internal.example.com/v1"
    dev = dev_run.outputs["models"]["llama-3-1-8b"]["baseUrl"]
    assert dev.startswith("http://internal-k8s-llmplatform-")
    assert dev.endswith(".us-east-1.elb.amazonaws.com/llama-3-1-8b/v1")


def test_internet_facing_models_require_their_api_key() -> None:
    ingress = {
        "scheme": "internet-facing",
        "allowedCidrs": ["198.51.100.0/24"],
        "certificateArn": "arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d",
    }
    run = harness.run(fixture_input(DEV, overrides={"llm-platform:ingress": ingress}))
    container = values(run.one("kubernetes:apps/v1:Deployment", "model-llama-3-1-8b-deployment"))["spec"]["template"]["spec"]["containers"][
        0
    ]
    assert {"name": "VLLM_API_KEY", "valueFrom": {"secretKeyRef": {"name": "vllm-api-key", "key": "api-key"}}} in container["env"]
    assert not any(a.startswith("--api-key") for a in container["args"])
    secret = run.one("kubernetes:core/v1:Secret", "model-llama-3-1-8b-api-key")
    assert values(secret)["stringData"] == {"api-key": harness.PLACEHOLDER}
    assert secret.redacted()["inputs"]["stringData"] == {"api-key": "[secret]"}
    annotations = values(run.one(INGRESS))["metadata"]["annotations"]
    assert annotations[f"{A}/scheme"] == "internet-facing"
    assert annotations[f"{A}/inbound-cidrs"] == "198.51.100.0/24"
    for r in run.registrations:
        assert harness.PLACEHOLDER not in json.dumps(r.redacted())


def test_unexposed_models_get_no_ingress_and_no_controller() -> None:
    models = stack_data(DEV)["models"]
    models[0]["expose"] = False
    run = harness.run(fixture_input(DEV, overrides={"llm-platform:models": models}))
    assert run.of_type(INGRESS) == []
    # no controller, so no IngressClass and no IngressClassParams to close
    assert [r.name for r in run.of_type(RELEASE) if r.name.startswith("alb")] == []
    assert run.outputs["models"]["llama-3-1-8b"]["baseUrl"] is None


def test_extra_values_cannot_reopen_the_group() -> None:
    assert new_problems_after(lambda d: d.setdefault("ingress", {}).update(extraValues={"ingressClassParams": {"spec": {}}})) == [
        "ingress.extraValues.ingressClassParams: is derived by the platform, and other resources rely on the value it sets "
        "(an override would point them at something that does not exist). Fix: remove the override (the `alb` class's "
        "parameters close the model IngressGroup to the platform's namespaces)"
    ]
