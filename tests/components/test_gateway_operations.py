"""The gateway in operation: what a rollout, a drain, a picker failover and `pulumi up` itself meet.

Each test pins a decision a review of the first cut found wrong (Envoy 1.33's API, the picker's health
service, Helm's wait on a Recreate Deployment with a standby, a budget over unready pickers, configs
read once at start, redirects under path routing)."""

from __future__ import annotations

import yaml

from builders.gateway import envoy, router
from config.derived import path as timeouts
from config.derived import state
from config.facts.conventions import CONFIG_HASH_ANNOTATION
from offline import harness
from tests.conftest import DEV, parse, stack_data, values
from tests.support import gateway as gw

RELEASE = "kubernetes:helm.sh/v3:Release"
BUDGET = "kubernetes:policy/v1:PodDisruptionBudget"


def _router_releases(run: harness.RunResult) -> dict[str, dict[str, object]]:
    return {values(r)["name"]: values(r) for r in gw.router_releases(run).values()}


def test_pulumi_does_not_wait_on_helm_for_a_router_but_still_does_for_the_rest(prod_run: harness.RunResult) -> None:
    # Helm's wait counts every replica of the pickers' Recreate Deployment; with a standby only the leader is ready
    for name, release in _router_releases(prod_run).items():
        assert release["skipAwait"] is True, name
    others = [values(r) for r in prod_run.of_type(RELEASE) if not r.name.endswith("-router")]
    assert others
    assert all("skipAwait" not in r for r in others)


def test_the_picker_serves_the_health_service_the_proxies_check(prod_run: harness.RunResult) -> None:
    for name, release in _router_releases(prod_run).items():
        epp = release["values"]["router"]["epp"]  # type: ignore[index]
        # and drains for 2 s on SIGTERM, not 30: a draining picker answers 503 to all it gets (v0.10.0)
        assert epp["flags"] == {"health-checking": True, "drain-timeout": "2s"}, name


def test_the_pickers_budget_never_blocks_an_eviction_and_unready_proxies_may_always_go(prod_run: harness.RunResult) -> None:
    cfg = parse(stack_data("full-prod"))
    assert cfg.gateway.epp_replicas == 2  # a standby: only one picker is ever ready
    budgets = {values(r)["metadata"]["name"]: values(r)["spec"] for r in prod_run.of_type(BUDGET)}
    for model in cfg.models:
        # minAvailable 0: the leader stays evictable (a drain moves it to the standby); the budget is there to be awaited
        assert budgets[router.picker_name(model)] == {"minAvailable": 0, "selector": {"matchLabels": router.picker_pods(model)}}
        proxy = budgets[router.proxy_name(model)]
        assert proxy["maxUnavailable"] == 1
        assert proxy["unhealthyPodEvictionPolicy"] == "AlwaysAllow"


def test_a_changed_config_rolls_the_pods_that_read_it_at_start() -> None:
    cfg = parse(stack_data(DEV))
    model = cfg.models[0]

    def hashes(idle: int) -> tuple[str, str]:
        v = router.values(model, cfg.gateway, alb_idle_timeout_seconds=idle, hold=state.of(cfg).model(model.name).hold)["router"]
        env = {e["name"]: e.get("value") for e in v["proxy"]["presets"]["envoy"]["env"]}
        text = v["proxy"]["presets"]["envoy"]["configMap"]["data"]["envoy.yaml"]
        assert env[router.CONFIG_HASH_ENV] == router.config_hash(text)
        picker = v["epp"]["pluginsCustomConfig"][router.EPP_CONFIG_FILE]
        assert v["epp"]["podAnnotations"][router.CONFIG_HASH_ANNOTATION] == router.config_hash(picker)
        # the preset's own variables stay beside the hash
        assert {"NS_NAME", "POD_NAME"} <= set(env)
        return env[router.CONFIG_HASH_ENV], v["epp"]["podAnnotations"][router.CONFIG_HASH_ANNOTATION]

    proxy_600, picker_600 = hashes(600)
    proxy_900, picker_900 = hashes(900)
    assert proxy_600 != proxy_900  # the timeout chain moved: the proxies roll
    assert picker_600 == picker_900  # the picker's config did not: it stays


def test_the_bootstrap_holds_only_what_envoy_1_33_knows() -> None:
    text = envoy.config_text("picker.ns.svc.cluster.local", timeouts.chain(600))
    assert "&id" not in text  # no YAML anchors
    assert "status_on_error" not in text  # ext_proc field of Envoy 1.36
    config = yaml.safe_load(text)
    api, ready, metrics = config["static_resources"]["listeners"]
    hcm = api["filter_chains"][0]["filters"][0]["typed_config"]
    # refused, never redirected: a redirect to /v1/... would drop path routing's /<model> prefix
    assert hcm["path_with_escaped_slashes_action"] == "REJECT_REQUEST"
    ext_proc = hcm["http_filters"][0]["typed_config"]
    assert ext_proc["message_timeout"] == f"{timeouts.PICK_TIMEOUT_SECONDS}s"
    # /ready is Envoy's own: a picker gap never deregisters the proxies from the ALB
    health = ready["filter_chains"][0]["filters"][0]["typed_config"]["http_filters"][0]["typed_config"]
    assert "cluster_min_healthy_percentages" not in health
    assert metrics["address"]["socket_address"]["port_value"] == envoy.METRICS_PORT


def test_a_stuck_picker_ends_in_30_seconds_whatever_the_alb_allows() -> None:
    for idle in (60, 600, 4000):
        chain = timeouts.chain(idle)
        assert chain.ext_proc_message == min(30, idle - 30)
        assert chain.problems() == []


def test_the_ingress_waits_for_a_ready_picker_after_its_release(prod_run: harness.RunResult) -> None:
    """A router release is not awaited: the pickers' budget is, for one ready picker, after the release; the Ingress,
    vLLM's policies and the ScaledObject wait for it, so the ALB's rule never moves to proxies whose picker crash-loops."""
    cfg = parse(stack_data("full-prod"))
    for model in cfg.models:
        name = f"model-{model.name}"
        (budget,) = [r for r in prod_run.of_type(BUDGET) if values(r)["metadata"]["name"] == router.picker_name(model)]
        meta = values(budget)["metadata"]
        assert meta["annotations"]["pulumi.com/waitFor"] == "jsonpath={.status.currentHealthy}=1"
        release = next(r for r in prod_run.of_type(RELEASE) if r.name == f"{name}-router")
        assert f"{RELEASE}::{release.name}" in budget.dependencies
        # the config's hash, as on the picker pods: a config change re-awaits the budget
        picker = values(release)["values"]["router"]["epp"]["podAnnotations"]
        assert meta["annotations"][CONFIG_HASH_ANNOTATION] == picker[CONFIG_HASH_ANNOTATION]
        budget_urn = f"{BUDGET}::{budget.name}"
        ingress = [r for r in prod_run.of_type("kubernetes:networking.k8s.io/v1:Ingress") if r.name.startswith(name)]
        scaled = [r for r in prod_run.of_type("kubernetes:keda.sh/v1alpha1:ScaledObject") if r.name.startswith(name)]
        vllm_policy = [
            r for r in prod_run.of_type("kubernetes:networking.k8s.io/v1:NetworkPolicy") if r.name == f"{name}-netpol-{model.name}"
        ]
        assert ingress
        assert scaled
        assert vllm_policy
        for dependant in [*ingress, *scaled, *vllm_policy]:
            assert budget_urn in dependant.dependencies, dependant.name
