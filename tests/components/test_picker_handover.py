"""What a caller sees while a model's Endpoint Picker stops (issue 44, item 1), worked out from the render.

The sequence at llm-d-router v0.10.0, with the figure each step takes and its source:

- SIGTERM: the leader's flow controller stops at once (cmd/epp/runner/runner.go builds it on the signal
  context): whatever reaches it gets 503 `rejected-shutting-down`, held requests are evicted with 503;
- it releases its lease at once (pkg/epp/server/controller_manager.go `LeaderElectionReleaseOnCancel`)
  and keeps its ext_proc server up for `--drain-timeout` (the release's flags), then GracefulStop sends
  GOAWAY and the proxies reconnect through the Service;
- the standby retries the lease every RETRY_PERIOD (controller-runtime's default), then passes its
  readiness probe (the chart's period, routerlib `_deployment.yaml`) and joins the Service's endpoints
  (ENDPOINTS_SECONDS, ../shared/reference/wave3-facts.md Part B 3.6: ~1 s from the endpoint change);
- a proxy's connection to the picker is renewed at least every `max_connection_duration` (the
  bootstrap), so none stays pinned to a pod that no longer leads.
"""

from __future__ import annotations

import pytest
import yaml

from builders.gateway import envoy, proxies, router
from builders.ingress.endpoints import deregistration_delay
from offline import harness
from tests.conftest import FIXTURES, fixture_run, parse, shared_path, stack_data, values
from tests.support.gateway import cluster, envoy_config, release_values, router_releases

RETRY_PERIOD = 2
"""controller-runtime's leader-election RetryPeriod default (the EPP sets none: controller_manager.go)."""
LEASE_DURATION = 15
"""controller-runtime's LeaseDuration default: how long a lost leader's lease outlives it."""
READINESS_PERIOD = 2
"""The chart's EPP readinessProbe periodSeconds (routerlib v0.10.0 `_deployment.yaml`)."""
ENDPOINTS_SECONDS = 1
"""A ready pod joining the Service's endpoints (wave3-facts Part B 3.6)."""
PLANNED_FAILOVER_TARGET = 5
"""What a planned stop of the leader may cost: the standby's own takeover (retry, probe, endpoints)."""


def _seconds(text: str) -> float:
    assert text.endswith("s"), text
    return float(text.removesuffix("s"))


def _handover(release: dict[str, object]) -> tuple[float, float]:
    """(503 window of a planned leader stop, the longest a proxy stays on one picker connection)."""
    router = release["router"]
    assert isinstance(router, dict)
    drain = _seconds(router["epp"]["flags"]["drain-timeout"])
    takeover = RETRY_PERIOD + READINESS_PERIOD + ENDPOINTS_SECONDS
    options = cluster(envoy_config(release), envoy.EXT_PROC_CLUSTER)["typed_extension_protocol_options"]
    protocol = options["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]
    pinned = _seconds(protocol["common_http_protocol_options"]["max_connection_duration"])
    return max(drain, takeover), pinned


@pytest.mark.parametrize("stack", FIXTURES)
def test_a_planned_stop_of_the_leader_answers_503_only_while_the_standby_takes_over(stack: str) -> None:
    run, cfg = fixture_run(stack), parse(stack_data(stack))
    for model, registration in router_releases(run).items():
        release = release_values(registration)
        window, pinned = _handover(release)
        drain = _seconds(release["router"]["epp"]["flags"]["drain-timeout"])
        if cfg.gateway.epp_replicas > 1:
            # the drain never outlasts the standby's takeover: it would only lengthen the 503s (v0.10.0 rejects while draining)
            assert drain <= RETRY_PERIOD + READINESS_PERIOD + ENDPOINTS_SECONDS, model
            assert window <= PLANNED_FAILOVER_TARGET, model
            # a lost node: until the lease expires, then the same takeover; a proxy is on the new leader within its renewal
            assert LEASE_DURATION + READINESS_PERIOD + ENDPOINTS_SECONDS + pinned <= 30, model
        else:
            # one picker: the gap is its own restart; the drain adds to it, so it is short
            assert drain <= 2, model
        assert pinned <= 10, model


def test_the_upstream_default_drain_would_be_30_s_of_503s(prod_run: harness.RunResult) -> None:
    """The counter-case: the chart's default `--drain-timeout` (30 s, pkg/epp/server/options.go) as the window."""
    release = release_values(next(iter(router_releases(prod_run).values())))
    release["router"]["epp"]["flags"].pop("drain-timeout")
    with pytest.raises(KeyError):
        _handover(release)
    release["router"]["epp"]["flags"]["drain-timeout"] = "30s"
    window, _ = _handover(release)
    assert window == 30 > PLANNED_FAILOVER_TARGET


def test_a_rollout_is_bounded_by_the_charts_grace_and_rolls_only_on_a_real_change(prod_run: harness.RunResult) -> None:
    """Recreate and the 130 s grace are the chart's at v0.10.0 (no value sets them): a rollout answers 503 until a
    new picker is ready, at most the grace plus a start. What keeps rollouts rare: the TTL in the picker's config
    moves in 30 s steps, so a scale-up figure a few seconds off changes no config hash (docs/gateway.md)."""
    for registration in router_releases(prod_run).values():
        release = release_values(registration)
        epp = release["router"]["epp"]
        assert "strategy" not in epp  # nothing to set at v0.10.0: the docs say what it costs
        config = epp["pluginsCustomConfig"][epp["pluginsConfigFile"]]
        ttl = next(line for line in config.splitlines() if "defaultRequestTTL" in line)
        assert int(ttl.split(":")[1].strip().strip("'\"").removesuffix("s")) % 30 == 0


def test_a_system_node_drain_keeps_a_proxy_serving_and_moves_the_leader(prod_run: harness.RunResult) -> None:
    """A drain evicts through the budgets: one proxy at a time (the other serves), the picker leader at once (its
    budget keeps nothing), which costs the planned handover above, not an outage."""
    cfg = parse(stack_data("full-prod"))
    budgets = {values(r)["metadata"]["name"]: values(r)["spec"] for r in prod_run.of_type("kubernetes:policy/v1:PodDisruptionBudget")}
    for model, registration in router_releases(prod_run).items():
        release = release_values(registration)
        assert release["router"]["proxy"]["replicas"] == "0"  # the chart's proxies: the platform runs its own
        (drained,) = [values(r) for r in prod_run.of_type("kubernetes:apps/v1:Deployment") if r.name == f"model-{model}-proxies"]
        proxies = drained["spec"]["replicas"]
        proxy_budget = budgets[f"{model}-proxy"]
        assert proxies - proxy_budget["maxUnavailable"] >= 1, model  # a proxy serves through the drain
        assert budgets[f"{model}-epp"]["minAvailable"] == 0, model  # the leader may go: the standby takes over
        window, _ = _handover(release)
        assert window <= PLANNED_FAILOVER_TARGET
    assert cfg.gateway.proxy_replicas >= 2


def test_a_stopping_proxy_leaves_the_alb_before_it_closes_its_listeners(prod_run: harness.RunResult) -> None:
    """The platform's proxies (the chart's at zero): a preStop sleep as long as the ALB's deregistration delay plus the
    controller's reaction, so the ALB stops sending new requests and lets relayed streams end while Envoy still serves;
    a grace period above it; spread over nodes and zones; the chart's labels, so its Service sends to them."""
    cfg = parse(stack_data("full-prod"))
    for model in cfg.models:
        (doc,) = [values(r) for r in prod_run.of_type("kubernetes:apps/v1:Deployment") if r.name == f"model-{model.name}-proxies"]
        pod = doc["spec"]["template"]["spec"]
        (envoy_container,) = pod["containers"]
        sleep = envoy_container["lifecycle"]["preStop"]["sleep"]["seconds"]
        assert sleep >= deregistration_delay(model) + proxies.CONTROLLER_REACTION_SECONDS
        assert pod["terminationGracePeriodSeconds"] > sleep
        spread = {c["topologyKey"]: c["whenUnsatisfiable"] for c in pod["topologySpreadConstraints"]}
        # never two on one node: a node's loss or drain leaves a proxy serving
        assert spread == {"kubernetes.io/hostname": "DoNotSchedule", "topology.kubernetes.io/zone": "ScheduleAnyway"}
        assert router.proxy_pods(model).items() <= doc["spec"]["template"]["metadata"]["labels"].items()
        assert doc["spec"]["replicas"] == cfg.gateway.proxy_replicas
        assert doc["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": 0}
        # the same bootstrap the chart would have mounted, from the platform's own ConfigMap
        (config,) = [values(r) for r in prod_run.of_type("kubernetes:core/v1:ConfigMap") if r.name == f"model-{model.name}-proxy-config"]
        release = release_values(router_releases(prod_run)[model.name])
        assert config["data"]["envoy.yaml"] == release["router"]["proxy"]["presets"]["envoy"]["configMap"]["data"]["envoy.yaml"]
        assert release["router"]["proxy"]["replicas"] == "0"


def test_the_release_waits_for_the_platforms_proxies(prod_run: harness.RunResult) -> None:
    """An upgrade starts them (and Pulumi awaits them ready) before the release stops the chart's: no empty front door."""
    for model, registration in router_releases(prod_run).items():
        assert f"kubernetes:apps/v1:Deployment::model-{model}-proxies" in registration.dependencies


def test_the_platforms_proxy_runs_the_charts_envoy_container() -> None:
    """Tied to the chart's own preset (llm-d-router-standalone v0.10.0 values), so a chart bump that changes how
    Envoy is started shows here: command, arguments and where the bootstrap is read from."""
    chart = yaml.safe_load(shared_path("helm-values", "llm-d-router-standalone-v0.10.0.values.yaml").read_text())
    preset = chart["router"]["proxy"]["presets"]["envoy"]
    assert [preset["command"]] == ["envoy"]
    assert list(proxies.ARGS) == preset["args"]
    (mount,) = preset["volumeMounts"]
    config_file = preset["args"][preset["args"].index("-c") + 1]
    assert config_file == f"{mount['mountPath']}/envoy.yaml"
    assert mount["mountPath"] == proxies.CONFIG_DIR
    assert preset["name"] == proxies.CONTAINER
