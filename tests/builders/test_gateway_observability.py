"""The gateway's observability: its PodMonitors select the pods the router chart labels and scrape
the ports its NetworkPolicies open to Prometheus; its alerts fire on broken series and stay silent
on healthy ones (promtool); the names the rules and dashboards use are the ones the router, Envoy's
config and the render give."""

from __future__ import annotations

from typing import Any

import pytest

from builders.gateway import envoy, proxies, router
from builders.observability import dashboards, rules
from builders.observability import values as monitors
from builders.serving.workload import selector
from config.derived.path import chain
from config.facts.conventions import VLLM_PORT
from config.sections.models import ModelConfig
from config.sections.observability import AlertTuning, Slo
from offline import harness
from tests.conftest import FIXTURES, PROD, fixture_run, parse, stack_data, values
from tests.support.alerts import GATEWAY_PANELS, GROUPS, MODELS, NS, AlertCase, check_alert, series

POD_MONITOR = "kubernetes:monitoring.coreos.com/v1:PodMonitor"
NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
MODEL = MODELS[0]
"""`chat` in namespace `chat`: like every model, it has a gateway."""


def models(stack: str) -> list[ModelConfig]:
    return list(parse(stack_data(stack)).models)


def gateway_models(stack: str) -> list[ModelConfig]:
    """Every model has a gateway, those at replicas.min 0 included."""
    return models(stack)


# What the router chart (llm-d-router-standalone v0.10.0, routerlib templates) puts on the pods:
# the picker's pod template carries `llm-d-router.selectorLabels` and `llm-d-router.modeLabels`
# (_deployment.yaml); the proxies' carries `llm-d-router.labels` (app.kubernetes.io/name, the picker's
# name) and `llm-d-router.proxySelectorLabels` (_proxy-deployment.yaml).
def picker_pod_labels(model: ModelConfig) -> dict[str, str]:
    key, value = router.MODE_LABEL
    return {**router.picker_pods(model), key: value}


def proxy_pod_labels(model: ModelConfig) -> dict[str, str]:
    return {"app.kubernetes.io/name": router.picker_name(model), **router.proxy_pods(model)}


def selects(selector_: dict[str, Any], labels: dict[str, str]) -> bool:
    """A Kubernetes label selector (matchLabels, matchExpressions In/NotIn/Exists/DoesNotExist) on a pod's labels."""
    if any(labels.get(k) != v for k, v in (selector_.get("matchLabels") or {}).items()):
        return False
    for e in selector_.get("matchExpressions") or []:
        key, op = e["key"], e["operator"]
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
        if op == "In" and labels.get(key) not in e["values"]:
            return False
        if op == "NotIn" and labels.get(key) in e["values"]:
            return False
    return True


def test_the_selector_check_can_fail() -> None:
    assert not selects({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"b": "1"})
    assert not selects({"matchLabels": {"a": "1"}}, {"a": "2"})
    assert selects({"matchLabels": {"a": "1"}, "matchExpressions": [{"key": "b", "operator": "Exists"}]}, {"a": "1", "b": ""})


def _monitors(run: harness.RunResult) -> dict[str, dict[str, Any]]:
    return {values(r)["metadata"]["name"]: values(r) for r in run.of_type(POD_MONITOR)}


@pytest.mark.parametrize("stack", FIXTURES)
def test_the_monitors_select_every_gateway_pod_and_nothing_else(stack: str) -> None:
    found = _monitors(fixture_run(stack))
    served = gateway_models(stack)
    assert served  # every fixture serves a model
    assert set(found) == {"vllm", rules.GATEWAY_PICKER_JOB, rules.GATEWAY_PROXY_JOB}
    picker, proxy = found[rules.GATEWAY_PICKER_JOB]["spec"], found[rules.GATEWAY_PROXY_JOB]["spec"]
    assert picker["namespaceSelector"] == proxy["namespaceSelector"] == {"any": True}
    for model in models(stack):
        vllm_pod = selector(model)
        assert not selects(picker["selector"], vllm_pod)
        assert not selects(proxy["selector"], vllm_pod)
    for model in served:
        assert selects(picker["selector"], picker_pod_labels(model))
        assert not selects(picker["selector"], proxy_pod_labels(model))
        assert selects(proxy["selector"], proxy_pod_labels(model))
        assert not selects(proxy["selector"], picker_pod_labels(model))


def test_the_monitors_scrape_the_named_ports_at_their_paths() -> None:
    (model, *_) = gateway_models(PROD)
    found = _monitors(fixture_run(PROD))
    (picker,) = found[rules.GATEWAY_PICKER_JOB]["spec"]["podMetricsEndpoints"]
    (proxy,) = found[rules.GATEWAY_PROXY_JOB]["spec"]["podMetricsEndpoints"]
    assert (picker["port"], picker["path"]) == (router.EPP_METRICS_PORT_NAME, "/metrics")
    assert (proxy["port"], proxy["path"]) == (monitors.ENVOY_METRICS_PORT_NAME, envoy.METRICS_PATH)
    # the proxies' container port of that name is Envoy's metrics listener, which routes that path
    ports = {p["name"]: p["containerPort"] for p in router.envoy_preset(model, "envoy:test", 300, hold_seconds=1)["ports"]}
    assert ports[monitors.ENVOY_METRICS_PORT_NAME] == envoy.METRICS_PORT
    listeners = _listeners()
    manager = listeners[envoy.METRICS_PORT]["filter_chains"][0]["filters"][0]["typed_config"]
    paths = [r["match"].get("path") for vh in manager["route_config"]["virtual_hosts"] for r in vh["routes"]]
    assert envoy.METRICS_PATH in paths
    # the interval is the vLLM one, every target's job the one the alerts select
    assert picker["interval"] == proxy["interval"] == found["vllm"]["spec"]["podMetricsEndpoints"][0]["interval"]
    assert picker["relabelings"] == [{"targetLabel": "job", "replacement": rules.GATEWAY_PICKER_JOB}]
    assert proxy["relabelings"] == [{"targetLabel": "job", "replacement": rules.GATEWAY_PROXY_JOB}]


def _listeners() -> dict[int, dict[str, Any]]:
    """The proxies' Envoy listeners by port."""
    found = envoy.config("picker.test", chain(300))["static_resources"]["listeners"]
    return {listener["address"]["socket_address"]["port_value"]: listener for listener in found}


def _prometheus_ports(policy: dict[str, Any]) -> set[int]:
    """The ports an ingress rule opens to the monitoring namespace's Prometheus."""
    out: set[int] = set()
    for rule in policy["spec"].get("ingress") or []:
        prometheus = [
            p
            for p in rule.get("from") or []
            if p.get("podSelector", {}).get("matchLabels", {}).get("app.kubernetes.io/name") == "prometheus"
            and p.get("namespaceSelector", {}).get("matchLabels") == {"kubernetes.io/metadata.name": "monitoring"}
        ]
        if prometheus:
            out |= {p["port"] for p in rule["ports"]}
    return out


def test_the_network_policies_admit_prometheus_on_exactly_the_scraped_ports() -> None:
    run = fixture_run(PROD)
    policies = {(values(r)["metadata"]["namespace"], values(r)["metadata"]["name"]): values(r) for r in run.of_type(NETWORK_POLICY)}
    served = gateway_models(PROD)
    assert served
    for model in served:
        picker = policies[(model.name, router.picker_name(model))]
        proxy = policies[(model.name, router.proxy_name(model))]
        assert picker["spec"]["podSelector"] == {"matchLabels": router.picker_pods(model)}
        assert proxy["spec"]["podSelector"] == {"matchLabels": router.proxy_pods(model)}
        assert _prometheus_ports(picker) == {router.EPP_METRICS_PORT}
        assert _prometheus_ports(proxy) == {envoy.METRICS_PORT}
    # the check reads the policies: a policy without the Prometheus rule has no such port
    assert _prometheus_ports({"spec": {"ingress": [{"from": [{"podSelector": {}}], "ports": [{"port": 9090}]}]}}) == set()


@pytest.mark.parametrize("stack", FIXTURES)
def test_the_watch_names_are_the_routers(stack: str) -> None:
    for model in models(stack):
        watch = rules.ModelWatch(model.name, model.name, Slo(), scales_to_zero=model.replicas.min == 0)
        # the platform's proxies: the chart's Deployment is kept at zero, its readiness always 0
        assert (watch.picker, watch.proxy) == (router.picker_name(model), proxies.name(model))
        assert watch.proxy != router.proxy_name(model)


@pytest.mark.parametrize("stack", FIXTURES)
def test_the_rendered_rules_watch_every_gateway_and_only_those(stack: str) -> None:
    run = fixture_run(stack)
    rule = values(run.one("kubernetes:monitoring.coreos.com/v1:PrometheusRule"))
    alerts = [r for g in rule["spec"]["groups"] for r in g["rules"] if "alert" in r]
    down = sorted((r["labels"]["model_name"], r["labels"]["component"]) for r in alerts if r["alert"] == "GatewayUnavailable")
    blind = sorted(r["labels"]["model_name"] for r in alerts if r["alert"] == "EppCannotScrapePod")
    served = sorted(m.name for m in gateway_models(stack))
    assert down == sorted((name, c) for name in served for c in ("picker", "proxy"))
    assert blind == served
    # every rendered gateway Release is named after a watched model, in its namespace
    releases = [values(r) for r in run.of_type("kubernetes:helm.sh/v3:Release") if "llm-d-router" in values(r)["chart"]]
    assert sorted((v["name"], v["namespace"]) for v in releases) == [(n, n) for n in served]


def test_the_dashboard_names_are_the_proxies_config() -> None:
    listeners = _listeners()
    api = listeners[envoy.API_PORT]["filter_chains"][0]["filters"][0]["typed_config"]
    assert api["stat_prefix"] == dashboards.API_STAT_PREFIX
    clusters = {c["name"] for c in envoy.config("p", chain(300))["static_resources"]["clusters"]}
    assert {envoy.EXT_PROC_CLUSTER, envoy.ENDPOINT_CLUSTER} <= clusters
    exprs = " ".join(dashboards.expressions(dashboards.VLLM))
    for name in (envoy.EXT_PROC_CLUSTER, envoy.ENDPOINT_CLUSTER, dashboards.API_STAT_PREFIX):
        assert f'="{name}"' in exprs


def test_the_gateway_row_repeats_per_model() -> None:
    board = dashboards.grafana_json(dashboards.VLLM)
    rows = [p for p in board["panels"] if p["type"] == "row"]
    assert [(r["title"], r.get("repeat")) for r in rows] == [("Gateway: $model", "model")]
    after = [p["title"] for p in board["panels"][board["panels"].index(rows[0]) + 1 :]]
    assert after == GATEWAY_PANELS
    # the row spans the width below the vLLM panels; the panels under it restart in two columns
    (header,) = rows
    above = [p for p in board["panels"] if p["id"] < header["id"]]
    assert header["gridPos"] == {"h": 1, "w": 24, "x": 0, "y": max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in above)}
    first = board["panels"][board["panels"].index(header) + 1]
    assert first["gridPos"] == {"h": 8, "w": 12, "x": 0, "y": header["gridPos"]["y"] + 1}
    # the variable the row repeats on exists and is multi-valued
    assert any(v["name"] == "model" and v["multi"] for v in board["templating"]["list"])


# promtool: the alerts of model `chat` (namespace `chat`) on synthetic series.
def alert(name: str, component: str | None = None) -> dict[str, Any]:
    """The rule object, to take its annotations (constant text) from."""
    (found,) = [
        r for r in rules.gateway_alerts(MODEL) if r["alert"] == name and (component is None or r["labels"].get("component") == component)
    ]
    return found


def expected(name: str, component: str | None = None, **annotations: str) -> dict[str, Any]:
    rule = alert(name, component)
    return {"exp_labels": dict(rule["labels"]), "exp_annotations": {**rule["annotations"], **annotations}}


def deployment_ready(deployment: str, values_: str) -> dict[str, str]:
    """kube_deployment_status_replicas_ready as Prometheus stores it: kube-prometheus-stack 88.5.3 scrapes
    kube-state-metrics with honorLabels (values.yaml kube-state-metrics.prometheus.monitor.http), so
    `namespace` is the Deployment's."""
    return series(
        f'kube_deployment_status_replicas_ready{{job="kube-state-metrics", namespace="{NS}", deployment="{deployment}"}}', values_
    )


def target(job: str, pod: str, values_: str) -> dict[str, str]:
    port = {rules.GATEWAY_PICKER_JOB: "metrics", rules.GATEWAY_PROXY_JOB: "envoy-metrics"}[job]
    return series(f'up{{job="{job}", namespace="{NS}", pod="{pod}", endpoint="{port}", instance="{pod}:1"}}', values_)


def healthy_picker(values_: str = "1x80") -> list[dict[str, str]]:
    return [deployment_ready(MODEL.picker, values_), target(rules.GATEWAY_PICKER_JOB, "chat-epp-a", values_)]


def healthy_proxies(values_: str = "2x80") -> list[dict[str, str]]:
    return [
        deployment_ready(MODEL.proxy, values_),
        target(rules.GATEWAY_PROXY_JOB, "chat-proxy-a", "1x80"),
        target(rules.GATEWAY_PROXY_JOB, "chat-proxy-b", "1x80"),
    ]


def vllm_ready(pod: str, values_: str) -> dict[str, str]:
    return series(
        f'kube_pod_container_status_ready{{job="kube-state-metrics", namespace="{NS}", pod="{pod}", container="vllm", uid="u-{pod}"}}',
        values_,
    )


def picker_sees(pod: str, values_: str) -> dict[str, str]:
    labels = f'job="{rules.GATEWAY_PICKER_JOB}", namespace="{NS}", pod="{pod}", endpoint="metrics", name="{MODEL.name}"'
    return series(f"llm_d_epp_ready_endpoints{{{labels}}}", values_)


def flow_outcome(outcome: str, values_: str) -> dict[str, str]:
    labels = f'job="{rules.GATEWAY_PICKER_JOB}", namespace="{NS}", pod="chat-epp-a", outcome="{outcome}", priority="0", inference_pool="{MODEL.name}"'
    return series(f"llm_d_epp_flow_control_requests_total{{{labels}}}", values_)


GATEWAY_CASES: dict[str, list[AlertCase]] = {
    "GatewayShedding": [
        AlertCase(
            # 20 min at 15 s: requests dispatched throughout; from minute 2 some are held past their TTL (429)
            [flow_outcome("Dispatched", "0+10x80"), flow_outcome("EvictedTTL", "0x8 0+1x72")],
            {
                "2m": [],
                "12m": [
                    expected(
                        "GatewayShedding",
                        None,
                        summary=alert("GatewayShedding")["annotations"]["summary"].replace("{{ $value | humanize }}", "66.67m"),
                    )
                ],
            },
        ),
        AlertCase(
            # everything dispatched: silent
            [flow_outcome("Dispatched", "0+10x80"), flow_outcome("EvictedTTL", "0x80")],
            {"19m": []},
        ),
    ],
    "GatewayUnavailable": [
        AlertCase(
            # 20 min at 15 s. The proxies go unready after 2 min (say their /ready fails) and stay scraped.
            [*healthy_picker(), deployment_ready(MODEL.proxy, "2x8 0x72"), *healthy_proxies()[1:]],
            {"4m": [], "6m": [expected("GatewayUnavailable", "proxy")]},
        ),
        AlertCase(
            # the picker's Deployment is deleted after 2 min: its series go stale, no target is left
            [
                deployment_ready(MODEL.picker, "1x8 stale"),
                target(rules.GATEWAY_PICKER_JOB, "chat-epp-a", "1x8 stale"),
                *healthy_proxies(),
            ],
            {"4m": [], "8m": [expected("GatewayUnavailable", "picker")]},
        ),
        AlertCase(
            # the picker is ready but Prometheus cannot scrape it (a NetworkPolicy): its targets down
            [
                deployment_ready(MODEL.picker, "1x80"),
                target(rules.GATEWAY_PICKER_JOB, "chat-epp-a", "1x8 0x72"),
                *healthy_proxies(),
            ],
            {"8m": [expected("GatewayUnavailable", "picker")]},
        ),
        AlertCase(
            # healthy: one ready picker (a standby would be unready: leader election), two proxies, one
            # proxy restarting for a minute; and without kube-state-metrics nothing fires either
            [
                *healthy_picker(),
                deployment_ready(MODEL.proxy, "2x20 1x4 2x56"),
                target(rules.GATEWAY_PROXY_JOB, "chat-proxy-a", "1x20 0x4 1x56"),
                target(rules.GATEWAY_PROXY_JOB, "chat-proxy-b", "1x80"),
            ],
            {"19m": []},
        ),
        AlertCase(
            [
                target(rules.GATEWAY_PICKER_JOB, "chat-epp-a", "1x80"),
                target(rules.GATEWAY_PROXY_JOB, "chat-proxy-a", "1x80"),
            ],
            {"19m": []},
        ),
    ],
    "EppCannotScrapePod": [
        AlertCase(
            # three ready vLLM pods; after 2 min the picker (leader) sees two, the standby none
            [
                *healthy_picker(),
                vllm_ready("chat-a", "1x80"),
                vllm_ready("chat-b", "1x80"),
                vllm_ready("chat-c", "1x80"),
                picker_sees("chat-epp-a", "3x8 2x72"),
                picker_sees("chat-epp-b", "0x80"),
            ],
            {
                "6m": [],
                "9m": [
                    expected(
                        "EppCannotScrapePod",
                        summary="1 ready vLLM pods of model chat are not among its Endpoint Picker's endpoints",
                    )
                ],
            },
        ),
        AlertCase(
            # the picker is up and reports no endpoints at all (it has not found its pool): every ready pod
            [*healthy_picker(), vllm_ready("chat-a", "1x80"), vllm_ready("chat-b", "1x80")],
            {
                "9m": [
                    expected(
                        "EppCannotScrapePod",
                        summary="2 ready vLLM pods of model chat are not among its Endpoint Picker's endpoints",
                    )
                ]
            },
        ),
        AlertCase(
            # healthy: a loading pod (not ready) is not expected among the endpoints; a pod the picker drops
            # for a minute while it drains is not an alert; a picker that is down is GatewayUnavailable's
            [
                *healthy_picker(),
                vllm_ready("chat-a", "1x80"),
                vllm_ready("chat-b", "1x80"),
                vllm_ready("chat-c", "0x80"),
                vllm_ready("chat-d", "1x40 0x40"),
                picker_sees("chat-epp-a", "3x36 2x44"),
            ],
            {"19m": []},
        ),
        AlertCase([vllm_ready("chat-a", "1x80"), deployment_ready(MODEL.picker, "0x80")], {"19m": []}),
    ],
}


def test_every_gateway_alert_has_unit_tests() -> None:
    assert set(GATEWAY_CASES) == {r["alert"] for r in rules.gateway_alerts(MODEL)}
    assert set(GATEWAY_CASES) <= {r["alert"] for g in GROUPS for r in g["rules"] if "alert" in r}


@pytest.mark.parametrize("name", sorted(GATEWAY_CASES))
def test_gateway_alert(name: str) -> None:
    check_alert(name, GATEWAY_CASES[name])


def test_a_model_at_zero_has_the_gateway_alerts_too() -> None:
    """Its gateway is its front door at zero as well: a proxy or picker down is an outage there too."""
    idle = rules.ModelWatch("chat", NS, Slo(), scales_to_zero=True)
    kept = rules.ModelWatch("chat", NS, Slo())
    assert rules.gateway_alerts(idle) == rules.gateway_alerts(kept)
    names = {r["alert"] for g in rules.rule_groups([idle], AlertTuning()) for r in g["rules"] if "alert" in r}
    assert {"GatewayUnavailable", "GatewayShedding", "EppCannotScrapePod"} <= names


def test_the_alerts_name_the_ports_and_objects_to_check() -> None:
    proxy, picker = alert("GatewayUnavailable", "proxy"), alert("GatewayUnavailable", "picker")
    assert str(envoy.METRICS_PORT) in proxy["annotations"]["description"]
    assert MODEL.proxy in proxy["annotations"]["summary"]
    assert str(router.EPP_METRICS_PORT) in picker["annotations"]["description"]
    assert MODEL.picker in picker["annotations"]["summary"]
    blind = alert("EppCannotScrapePod")
    assert str(VLLM_PORT) in blind["annotations"]["description"]
    assert f'container="{rules.VLLM_CONTAINER}"' in blind["expr"]
    for rule in (proxy, picker, blind):
        assert f'namespace="{NS}"' in rule["expr"]
