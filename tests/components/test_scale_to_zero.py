"""Scale to zero, rendered (fixture scale-to-zero-dev): the add-on release against its chart values,
the InterceptorRoute against its upstream CRD, the Ingress to the interceptor, the ScaledObject's
wake and floors, the NetworkPolicy, and timeouts that cover a cold start."""

from __future__ import annotations

from typing import Any

import pytest

from builders.serving import scaling
from config.derived import scaleup
from config.facts import system_capacity, versions
from config.sections.types import duration_seconds
from offline import harness
from planner import hpa
from tests.conftest import DEV, fixture_run, parse, shared_path, stack_data, values
from tests.validators import crds, helm_values

STACK = "scale-to-zero-dev"
MODEL = "llama-3-1-8b"


@pytest.fixture(scope="module")
def run() -> harness.RunResult:
    return fixture_run(STACK)


def _doc(run: harness.RunResult, type_token: str, name: str) -> dict[str, Any]:
    return values(run.one(type_token, name))


def test_the_add_on_is_pinned_on_the_system_nodes_with_known_values(run: harness.RunResult) -> None:
    release = _doc(run, "kubernetes:helm.sh/v3:Release", "keda-http-add-on")
    assert (release["chart"], release["version"], release["namespace"]) == ("keda-add-ons-http", "0.15.0", "keda")
    upstream = helm_values.load(shared_path("helm-values", "keda-add-ons-http-0.15.0.values.yaml"))
    assert helm_values.unknown_keys(release["values"], upstream) == []
    v = release["values"]
    for part in ("operator", "scaler", "interceptor"):
        assert v[part]["nodeSelector"]["llm-platform.io/node-role"] == "system"
    assert v["scaler"]["resources"]["requests"] == system_capacity.HTTP_ADD_ON_SCALER.as_values()


def test_no_add_on_without_a_model_at_zero(dev_run: harness.RunResult) -> None:
    assert [r for r in dev_run.of_type("kubernetes:helm.sh/v3:Release") if r.name == "keda-http-add-on"] == []
    assert dev_run.of_type("kubernetes:http.keda.sh/v1beta1:InterceptorRoute") == []


def test_the_route_validates_against_the_upstream_crd(run: harness.RunResult) -> None:
    route = _doc(run, "kubernetes:http.keda.sh/v1beta1:InterceptorRoute", f"model-{MODEL}-interceptor-route")
    assert crds.errors(route, shared_path("crds", "http.keda.sh_interceptorroutes.yaml")) == []
    assert route["spec"]["target"] == {"service": MODEL, "port": 8000}
    # the host and /v1 only: vLLM's other routes (/invocations, /tokenize, ...) are not reachable through it
    assert route["spec"]["rules"] == [{"hosts": [f"{MODEL}.llm.dev.corp.internal"], "paths": [{"value": "/v1"}]}]
    # #1692 guard: concurrency on an InterceptorRoute, never requestRate or an HTTPScaledObject
    assert set(route["spec"]["scalingMetric"]) == {"concurrency"}
    assert run.of_type("kubernetes:http.keda.sh/v1alpha1:HTTPScaledObject") == []


def test_the_models_host_goes_to_the_interceptor(run: harness.RunResult) -> None:
    ingress = _doc(run, "kubernetes:networking.k8s.io/v1:Ingress", f"model-{MODEL}-ingress")
    assert ingress["metadata"]["namespace"] == "keda"  # where the interceptor's Service is
    (rule,) = ingress["spec"]["rules"]
    assert rule["host"] == f"{MODEL}.llm.dev.corp.internal"
    assert rule["http"]["paths"][0]["backend"] == {"service": {"name": "keda-add-ons-http-interceptor-proxy", "port": {"number": 8080}}}
    annotations = ingress["metadata"]["annotations"]
    # the ALB checks the interceptor's admin port: the proxy answers nothing on / without a route
    assert (annotations["alb.ingress.kubernetes.io/healthcheck-port"], annotations["alb.ingress.kubernetes.io/healthcheck-path"]) == (
        "9090",
        "/readyz",
    )
    assert annotations["alb.ingress.kubernetes.io/group.name"] == "llm-platform"


def test_the_scaled_object_wakes_on_requests_and_keeps_its_floors(run: harness.RunResult) -> None:
    so = _doc(run, "kubernetes:keda.sh/v1alpha1:ScaledObject", f"model-{MODEL}-scaledobject")
    assert crds.errors(so, shared_path("crds", "keda.sh_scaledobjects.yaml")) == []
    spec = so["spec"]
    assert spec["minReplicaCount"] == 0
    assert spec["cooldownPeriod"] == 20 * 60
    assert spec["fallback"]["replicas"] >= 1
    by_type = {t["type"]: t for t in spec["triggers"]}
    assert by_type["external-push"]["metadata"] == {
        "scalerAddress": "keda-add-ons-http-external-scaler.keda:9090",
        "interceptorRoute": MODEL,
    }
    assert by_type["cron"]["metadata"] == {
        "timezone": "Europe/Berlin",
        "start": "0 8 * * 1-5",
        "end": "0 18 * * 1-5",
        "desiredReplicas": "1",
    }
    # at zero the vLLM queries read 0 through kube-state-metrics; with replicas up a missing series stays an error
    queue = next(t for t in spec["triggers"] if t["name"] == "queue-depth")["metadata"]["query"]
    assert queue.endswith(f'or (sum(kube_deployment_status_replicas_available{{namespace="{MODEL}", deployment="{MODEL}"}}) == 0)')
    # the HPA arithmetic reads only the metric triggers
    assert [t.name for t in hpa.triggers(so)] == ["queue-depth", "kv-cache"]
    assert hpa.from_scaled_object(so, 1, {"queue-depth": 12, "kv-cache": 0.5}) == 3


def test_replicas_admit_the_interceptor(run: harness.RunResult) -> None:
    policy = _doc(run, "kubernetes:networking.k8s.io/v1:NetworkPolicy", f"model-{MODEL}-netpol-{MODEL}")
    sources = [peer for rule in policy["spec"]["ingress"] for peer in rule["from"]]
    assert {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "keda"}},
        "podSelector": {"matchLabels": {"app.kubernetes.io/component": "interceptor"}},
    } in sources
    # the ALB reaches the interceptor, not the replicas
    assert not any("ipBlock" in peer for peer in sources)


def test_every_wait_covers_a_cold_start_and_none_outlives_the_alb() -> None:
    cfg = parse(stack_data(STACK))
    model = cfg.models[0]
    miss = scaleup.budget(model, scrape_interval=cfg.observability.vllm_scrape_interval).miss
    run = fixture_run(STACK)
    release = _doc(run, "kubernetes:helm.sh/v3:Release", "keda-http-add-on")["values"]["interceptor"]
    route = _doc(run, "kubernetes:http.keda.sh/v1beta1:InterceptorRoute", f"model-{MODEL}-interceptor-route")
    idle = cfg.ingress.idle_timeout_seconds
    for waited in (duration_seconds(release["readinessTimeout"]), duration_seconds(route["spec"]["timeouts"]["readiness"])):
        assert miss < waited <= idle
    assert duration_seconds(model.autoscaling.idle_after) >= miss


def test_a_model_at_one_keeps_its_plain_triggers() -> None:
    model = parse(stack_data(DEV)).models[0]
    so = scaling.scaled_object(model, "http://prometheus:9090", scales_to_zero=False)
    assert [t["type"] for t in so["spec"]["triggers"]] == ["prometheus", "prometheus"]
    assert "cooldownPeriod" not in so["spec"]
    assert "kube_deployment_status_replicas_available" not in so["spec"]["triggers"][0]["metadata"]["query"]


def test_the_add_on_pods_are_counted_on_the_system_nodes() -> None:
    names = {w.name for w in system_capacity.workloads(parse(stack_data(STACK)))}
    assert {"http-add-on-operator", "http-add-on-scaler", "http-add-on-interceptor"} <= names
    assert not {"http-add-on-interceptor"} & {w.name for w in system_capacity.workloads(parse(stack_data(DEV)))}
    assert versions.KEDA_HTTP_ADD_ON.version == "0.15.0"


def test_interceptors_drain_like_the_models_and_are_gated_on_alb_health(run: harness.RunResult) -> None:
    interceptor = _doc(run, "kubernetes:helm.sh/v3:Release", "keda-http-add-on")["values"]["interceptor"]
    model = parse(stack_data(STACK)).models[0]
    assert duration_seconds(interceptor["shutdownDelay"]) >= model.drain.pre_stop_sleep_seconds
    assert duration_seconds(interceptor["drainTimeout"]) >= model.drain.shutdown_timeout_seconds
    assert interceptor["terminationGracePeriodSeconds"] > duration_seconds(interceptor["shutdownDelay"]) + duration_seconds(
        interceptor["drainTimeout"]
    )
    assert interceptor["replicas"]["min"] == interceptor["replicas"]["max"] == system_capacity.HTTP_ADD_ON_INTERCEPTORS
    namespace = _doc(run, "kubernetes:core/v1:Namespace", "keda-namespace")
    assert namespace["metadata"]["labels"]["elbv2.k8s.aws/pod-readiness-gate-inject"] == "enabled"
    # the held request's wait ends 30 s before the ALB would cut it
    assert duration_seconds(interceptor["readinessTimeout"]) <= parse(stack_data(STACK)).ingress.idle_timeout_seconds - 30


@pytest.mark.parametrize(
    ("expression", "minutes"),
    [("5/15 * * * *", {5, 20, 35, 50}), ("*/20 * * * *", {0, 20, 40}), ("10-30/10 * * * *", {10, 20, 30}), ("7 * * * *", {7})],
)
def test_cron_steps_read_as_keda_reads_them(expression: str, minutes: set[int]) -> None:
    from config.sections import cron

    assert cron.parse(expression).minutes == frozenset(minutes)


def test_cron_day_of_month_and_week_are_either_unless_one_is_any() -> None:
    import datetime as dt

    from config.sections import cron

    monday_the_5th = dt.datetime(2026, 1, 5, 8, 0)
    assert cron.parse("0 8 1 * 1").matches(monday_the_5th)  # the 1st or a Monday
    assert not cron.parse("0 8 1 * *").matches(monday_the_5th)
    assert cron.parse("0 8 * * 1-5").matches(monday_the_5th)
