"""Scale to zero, rendered (fixture scale-to-zero-dev): the model's gateway is its front door at zero,
its picker holds the first request through a cold start, and KEDA wakes the model on a signal that
exists while the pool has no endpoint (the proxies' requests in flight); the ScaledObject's floors,
the NetworkPolicy, and timeouts that cover a cold start. The wake query is run by promtool."""

from __future__ import annotations

import math
from typing import Any

import pytest

from builders.gateway import envoy
from builders.observability import rules
from builders.observability import values as monitor_values
from builders.serving import scaling
from config.derived import capacity, state
from config.derived import path as timeouts
from config.derived.hold import PICK_TIMEOUT_SECONDS, TTL_STEP_SECONDS
from config.derived.scaleup import HOLD_MARGIN_SECONDS
from config.sections.types import duration_seconds
from offline import harness
from planner import hpa
from tests.conftest import DEV, fixture_run, new_problems_after, parse, shared_path, stack_data, values
from tests.validators import crds, promtool

STACK = "scale-to-zero-dev"
MODEL = "llama-3-1-8b"
SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"


@pytest.fixture(scope="module")
def run() -> harness.RunResult:
    return fixture_run(STACK)


def _doc(run: harness.RunResult, type_token: str, name: str) -> dict[str, Any]:
    return values(run.one(type_token, name))


def _wake(run: harness.RunResult) -> dict[str, Any]:
    so = _doc(run, SCALED_OBJECT, f"model-{MODEL}-scaledobject")
    return next(t for t in so["spec"]["triggers"] if t["name"] == scaling.GATEWAY_REQUESTS_TRIGGER)


def test_no_http_add_on_is_rendered(run: harness.RunResult) -> None:
    """The add-on, its routes and its interceptor's policy are gone; nothing in KEDA's namespace serves traffic."""
    assert [r.name for r in run.of_type("kubernetes:helm.sh/v3:Release") if "keda-add-ons-http" in values(r)["chart"]] == []
    assert [r.type for r in run.registrations if "http.keda.sh" in r.type] == []
    keda_policies = [values(r)["metadata"]["name"] for r in run.of_type("kubernetes:networking.k8s.io/v1:NetworkPolicy")]
    assert "interceptor" not in keda_policies
    ingresses = [values(r)["metadata"]["namespace"] for r in run.of_type("kubernetes:networking.k8s.io/v1:Ingress")]
    assert "keda" not in ingresses


def test_the_scaled_object_wakes_on_the_gateways_requests_and_keeps_its_floors(run: harness.RunResult) -> None:
    so = _doc(run, SCALED_OBJECT, f"model-{MODEL}-scaledobject")
    assert crds.errors(so, shared_path("crds", "keda.sh_scaledobjects.yaml")) == []
    spec = so["spec"]
    assert spec["minReplicaCount"] == 0
    assert spec["cooldownPeriod"] == 20 * 60
    # a failing wake query at zero is answered by the fallback: a replica, never "idle"
    assert spec["fallback"]["replicas"] >= 1
    assert [t["type"] for t in spec["triggers"]] == ["prometheus", "prometheus", "prometheus", "cron"]
    wake = _wake(run)
    cfg = parse(stack_data(STACK))
    pool = cfg.pool(cfg.models[0].pool)
    assert pool is not None
    assert wake["metricType"] == "AverageValue"
    assert wake["metadata"]["activationThreshold"] == "0"  # one request in flight is above it
    assert wake["metadata"]["ignoreNullValues"] == "false"  # no series is an error, not a zero
    assert wake["metadata"]["threshold"] == str(capacity.max_num_seqs(cfg.models[0], pool))
    by_type = {t["type"]: t for t in spec["triggers"]}
    assert by_type["cron"]["metadata"] == {
        "timezone": "Europe/Berlin",
        "start": "0 8 * * 1-5",
        "end": "0 18 * * 1-5",
        "desiredReplicas": "1",
    }
    # at zero the vLLM queries read 0 through kube-state-metrics; with replicas up a missing series stays an error
    queue = next(t for t in spec["triggers"] if t["name"] == "queue-depth")["metadata"]["query"]
    assert queue.endswith(f'or (sum(kube_deployment_status_replicas_available{{namespace="{MODEL}", deployment="{MODEL}"}}) == 0)')
    # the HPA reads the wake too at one replica and above: in-flight requests over what a replica runs
    assert [t.name for t in hpa.triggers(so)] == ["queue-depth", "kv-cache", scaling.GATEWAY_REQUESTS_TRIGGER]
    assert hpa.from_scaled_object(so, 1, {"queue-depth": 12, "kv-cache": 0.5, scaling.GATEWAY_REQUESTS_TRIGGER: 0}) == 3


def test_the_wake_reads_the_proxies_api_listener_as_their_monitor_scrapes_it(run: harness.RunResult) -> None:
    """The series the query names is the one the proxies' PodMonitor collects: its fixed job label, the
    API listener's stat prefix, and a scrape of Envoy's whole /stats/prometheus (no `usedonly`, which would
    drop a gauge that never moved: the very series that must exist before any request)."""
    query = _wake(run)["metadata"]["query"]
    assert f'job="{rules.GATEWAY_PROXY_JOB}"' in query
    assert f'envoy_http_conn_manager_prefix="{envoy.API_STAT_PREFIX}"' in query
    assert f'namespace="{MODEL}"' in query
    (endpoint,) = monitor_values.gateway_proxy_pod_monitor("monitoring", "15s")["spec"]["podMetricsEndpoints"]
    assert endpoint["path"] == envoy.METRICS_PATH
    assert "params" not in endpoint
    api = envoy.config("picker", timeouts.chain(900))["static_resources"]["listeners"][0]
    manager = api["filter_chains"][0]["filters"][0]["typed_config"]
    assert manager["stat_prefix"] == envoy.API_STAT_PREFIX


def _wake_cases(model: str) -> list[dict[str, Any]]:
    """The KEDA activation test: the wake query, and `query > activationThreshold` (what activates the model)."""
    query = scaling.gateway_requests_query(parse(stack_data(STACK)).models[0])
    active = f"({query}) > {scaling.WAKE_ACTIVATION}"
    proxy = f'job="{rules.GATEWAY_PROXY_JOB}", namespace="{model}", envoy_http_conn_manager_prefix="{envoy.API_STAT_PREFIX}"'
    other = f'job="{rules.GATEWAY_PROXY_JOB}", namespace="other", envoy_http_conn_manager_prefix="{envoy.API_STAT_PREFIX}"'
    ready = f'job="{rules.GATEWAY_PROXY_JOB}", namespace="{model}", envoy_http_conn_manager_prefix="ready"'
    return [
        {
            # one held request on one of two proxies; the pool has never had an endpoint: no picker or vLLM
            # series at all (llm_d_epp_flow_control_queue_size would not exist), and the ALB's health checks
            # on the ready listener do not count
            "interval": "15s",
            "input_series": [
                {"series": f'envoy_http_downstream_rq_active{{{proxy}, pod="p1"}}', "values": "0x10 1x30"},
                {"series": f'envoy_http_downstream_rq_active{{{proxy}, pod="p2"}}', "values": "0x40"},
                {"series": f'envoy_http_downstream_rq_active{{{ready}, pod="p1"}}', "values": "3x40"},
                {"series": f'envoy_http_downstream_rq_active{{{other}, pod="o1"}}', "values": "7x40"},
            ],
            "promql_expr_test": [
                {"expr": active, "eval_time": "5m", "exp_samples": [{"labels": "{}", "value": 1}]},
                {"expr": query, "eval_time": "5m", "exp_samples": [{"labels": "{}", "value": 1}]},
                # before the request: the series exists at 0, and 0 does not activate
                {"expr": query, "eval_time": "1m", "exp_samples": [{"labels": "{}", "value": 0}]},
                {"expr": active, "eval_time": "1m", "exp_samples": []},
            ],
        },
        {
            # no request: the proxies run and report 0; another model's traffic does not wake this one
            "interval": "15s",
            "input_series": [
                {"series": f'envoy_http_downstream_rq_active{{{proxy}, pod="p1"}}', "values": "0x40"},
                {"series": f'envoy_http_downstream_rq_active{{{proxy}, pod="p2"}}', "values": "0x40"},
                {"series": f'envoy_http_downstream_rq_active{{{other}, pod="o1"}}', "values": "5x40"},
            ],
            "promql_expr_test": [
                {"expr": active, "eval_time": "5m", "exp_samples": []},
                {"expr": query, "eval_time": "5m", "exp_samples": [{"labels": "{}", "value": 0}]},
            ],
        },
        {
            # no proxy series at all (proxies down, or not scraped): the query returns nothing, never 0;
            # with ignoreNullValues false that is an error, and KEDA's fallback starts a replica
            "interval": "15s",
            "input_series": [{"series": f'envoy_http_downstream_rq_active{{{other}, pod="o1"}}', "values": "0x40"}],
            "promql_expr_test": [
                {"expr": query, "eval_time": "5m", "exp_samples": []},
                {"expr": active, "eval_time": "5m", "exp_samples": []},
            ],
        },
    ]


def test_promtool_the_wake_activates_on_one_held_request_with_no_pool_series() -> None:
    result = promtool.test_rules([{"name": "none", "rules": []}], _wake_cases(MODEL))
    assert result.returncode == 0, result.stdout + result.stderr


def test_promtool_the_wake_cases_can_fail() -> None:
    """The same cases with the wake read as `or vector(0)` (a missing series as 0): the third case fails."""
    broken = _wake_cases(MODEL)
    for case in broken:
        for t in case["promql_expr_test"]:
            if " > " not in t["expr"]:
                t["expr"] = f"({t['expr']}) or vector(0)"
    result = promtool.test_rules([{"name": "none", "rules": []}], broken)
    assert result.returncode != 0
    # exactly the missing-series case: no sample expected, a 0 got
    failure = result.stdout + result.stderr
    assert failure.count("FAILED:") == 1
    assert "exp: nil" in failure
    assert "got: {} 0E+00" in failure


def test_the_front_door_moves_only_once_the_gateway_serves(run: harness.RunResult) -> None:
    """The `up` that removes the HTTP add-on from a stack with a model at zero: the proxies' budget waits
    until every proxy is ready; vLLM's policy (which drops the interceptor) and the Ingress (which moves out
    of KEDA's namespace, the new one before the old goes) wait for it; the replicas never run without their policies."""
    budget = run.one("kubernetes:policy/v1:PodDisruptionBudget", f"model-{MODEL}-pdb-{MODEL}-proxy")
    assert values(budget)["metadata"]["annotations"] == {"pulumi.com/waitFor": "condition=DisruptionAllowed"}
    assert values(budget)["spec"]["maxUnavailable"] == 1  # DisruptionAllowed: every proxy the Deployment wants is ready
    router = f"kubernetes:helm.sh/v3:Release::model-{MODEL}-router"
    pdb = f"kubernetes:policy/v1:PodDisruptionBudget::model-{MODEL}-pdb-{MODEL}-proxy"
    ingress = run.one("kubernetes:networking.k8s.io/v1:Ingress", f"model-{MODEL}-ingress")
    assert {router, pdb} <= set(ingress.dependencies)
    # created before the old one is deleted, its rule first meanwhile: the group, and its ALB, never go away
    assert not ingress.delete_before_replace
    assert values(ingress)["metadata"]["annotations"]["alb.ingress.kubernetes.io/group.order"] == "-1"
    vllm_policy = run.one("kubernetes:networking.k8s.io/v1:NetworkPolicy", f"model-{MODEL}-netpol-{MODEL}")
    assert {router, pdb} <= set(vllm_policy.dependencies)
    deployment = run.one("kubernetes:apps/v1:Deployment", f"model-{MODEL}-deployment")
    policies = {f"kubernetes:networking.k8s.io/v1:NetworkPolicy::model-{MODEL}-netpol-{n}" for n in ("default-deny", MODEL)}
    assert policies <= set(deployment.dependencies)
    scaled = run.one(SCALED_OBJECT, f"model-{MODEL}-scaledobject")
    assert pdb in scaled.dependencies  # its wake reads the proxies' series


def test_replicas_admit_only_their_gateway_and_prometheus(run: harness.RunResult) -> None:
    policy = _doc(run, "kubernetes:networking.k8s.io/v1:NetworkPolicy", f"model-{MODEL}-netpol-{MODEL}")
    sources = [peer for rule in policy["spec"]["ingress"] for peer in rule["from"]]
    assert not any("ipBlock" in peer for peer in sources)
    named = {peer["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"] for peer in sources if "namespaceSelector" in peer}
    assert named == {"monitoring"}  # Prometheus; the gateway's pods are the namespace's own


def test_the_hold_covers_a_cold_start_and_ends_inside_the_alb() -> None:
    cfg = parse(stack_data(STACK))
    model = cfg.models[0]
    facts = state.of(cfg).model(model.name)
    held = facts.hold
    assert held.cold_start
    slow = facts.scale_up.pessimistic_budget
    assert held.wanted_seconds == slow.miss
    # the fixture's ALB covers the pessimistic cold start, rounded up to the TTL's 30 s steps
    assert held.ttl_seconds == math.ceil(slow.miss / TTL_STEP_SECONDS) * TTL_STEP_SECONDS
    idle = cfg.ingress.idle_timeout_seconds
    assert held.ttl_seconds + PICK_TIMEOUT_SECONDS + HOLD_MARGIN_SECONDS <= idle
    assert timeouts.chain(idle, held.ttl_seconds).problems() == []
    assert duration_seconds(model.autoscaling.idle_after) >= facts.scale_up.miss


@pytest.mark.parametrize(
    "extra",
    [
        {},  # the ALB's own name, path routing: no ingress.domain
        {"expose": False, "clientNamespaces": ["chat"]},  # in-cluster callers only
        {"routing": {"prefixCache": "precise"}},  # the gateway's precise routing works at zero as well
    ],
    ids=["no-domain", "not-exposed", "precise-routing"],
)
def test_a_model_at_zero_needs_neither_a_domain_nor_expose(extra: dict[str, Any]) -> None:
    """The rules that existed for the interceptor's host routing are gone: the gateway holds any caller's request."""

    def mutate(d: dict[str, Any]) -> None:
        d.setdefault("ingress", {}).update(idleTimeoutSeconds=900)
        d["models"][0].update(replicas={"min": 0, "max": 3}, **extra)

    problems = [p for p in new_problems_after(mutate, DEV) if "systemNodeGroup" not in p]
    assert problems == []


def test_a_model_at_one_keeps_its_plain_triggers() -> None:
    cfg = parse(stack_data(DEV))
    model = cfg.models[0]
    pool = cfg.pool(model.pool)
    assert pool is not None
    so = scaling.scaled_object(model, "http://prometheus:9090", pool, scales_to_zero=False)
    assert [t["type"] for t in so["spec"]["triggers"]] == ["prometheus", "prometheus"]
    assert "cooldownPeriod" not in so["spec"]
    assert "kube_deployment_status_replicas_available" not in so["spec"]["triggers"][0]["metadata"]["query"]


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
