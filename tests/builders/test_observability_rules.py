"""Alert and recording rules: promtool checks them, and unit-tests every alert on synthetic
multi-pod, multi-engine vLLM series (fires when it should, silent when it should not)."""

from __future__ import annotations

from typing import Any

import pytest

from builders.observability import dashboards, metrics, rules
from config.sections.observability import AlertTuning, Slo
from offline import harness
from tests.conftest import values
from tests.support import gpu_faults
from tests.support.alerts import GROUPS, MODELS, NS, AlertCase, all_expressions, check_alert, raised, series
from tests.validators import promtool

POD_ENGINES = [("chat-a", "0"), ("chat-a", "1"), ("chat-b", "0"), ("chat-b", "1")]


CHAT_WARNING = {"severity": "warning", "namespace": NS, "model_name": "chat"}
"""The labels of a warning about the model `chat`."""

METRICS_ABSENT = raised(
    {"severity": "critical", "namespace": NS, "model_name": "chat"},
    "No vLLM metrics for model chat",
    "Model chat reports no metrics: no replica is running, or its served name or monitor is wrong. Autoscaling is blind until it returns.",
)
"""The alert VllmMetricsAbsent raises for the model `chat`."""


def vllm(metric: str, values_: str, **extra: str) -> list[dict[str, str]]:
    """The same series for 2 pods x 2 engines, as vLLM exposes it."""
    out = []
    for pod, engine in POD_ENGINES:
        labels = {"namespace": NS, "model_name": "chat", "pod": pod, "engine": engine, **extra}
        rendered = ", ".join(f'{k}="{v}"' for k, v in labels.items())
        out.append({"series": f"{metric}{{{rendered}}}", "values": values_})
    return out


def histogram(metric: str, bucket_with_mass: str, bounds: tuple[str, ...]) -> list[dict[str, str]]:
    """A histogram whose observations (10 per 15 s per series) all land at or below one bound."""
    series = []
    mass_from = bounds.index(bucket_with_mass)
    for i, le in enumerate((*bounds, "+Inf")):
        series += vllm(f"{metric}_bucket", "0+10x80" if i >= mass_from else "0x80", le=le)
    series += vllm(f"{metric}_count", "0+10x80")
    return series


def target(pod: str, *, up: str, ready: str) -> list[dict[str, str]]:
    """A vLLM pod as the PodMonitor's `up` and kube-state-metrics' container readiness see it."""
    return [
        series(f'up{{{TARGET_LABELS}, pod="{pod}", instance="{pod}:8000"}}', up),
        series(
            f'kube_pod_container_status_ready{{job="kube-state-metrics", namespace="{NS}", pod="{pod}", container="vllm", uid="uid-{pod}"}}',
            ready,
        ),
    ]


TARGET_LABELS = f'job="vllm", namespace="{NS}", container="vllm", endpoint="http"'
TARGET_DOWN_B = raised(
    {
        "severity": "warning",
        "job": "vllm",
        "namespace": NS,
        "pod": "chat-b",
        "container": "vllm",
        "endpoint": "http",
        "instance": "chat-b:8000",
    },
    "vLLM pod chat-b in chat is ready but not scrapeable",
    "Prometheus cannot scrape /metrics of this ready vLLM pod (a NetworkPolicy, the PodMonitor or a slow "
    "/metrics): it serves requests that the queue and cache sums KEDA scales on leave out.",
)
"""The alert VllmTargetDown raises for the ready, unscrapeable pod chat-b."""


def keda_errors(trigger: str, values_: str) -> dict[str, str]:
    """keda_scaler_detail_errors_total as Prometheus stores it: the operator's own target labels
    (namespace "keda"), the ScaledObject's namespace renamed to exported_namespace."""
    labels = (
        'job="keda-operator", namespace="keda", service="keda-operator", pod="keda-operator-5d9f", '
        f'exported_namespace="{NS}", scaledObject="chat", scaler="prometheusScaler", triggerIndex="{trigger}", '
        f'metric="s{trigger}-prometheus", type="scaledobject"'
    )
    return series(f"keda_scaler_detail_errors_total{{{labels}}}", values_)


def disrupted(reason: str, nodepool: str, capacity_type: str, values_: str) -> dict[str, str]:
    """Karpenter's count of a pool's NodeClaims it disrupted for this reason."""
    return series(
        f'karpenter_nodeclaims_disrupted_total{{reason="{reason}", nodepool="{nodepool}", capacity_type="{capacity_type}"}}', values_
    )


def pending(pod: str, container: str, resource: str) -> list[dict[str, str]]:
    """A pod Pending for the 30 minutes, and its container's request of this resource (kube-state-metrics)."""
    return [
        series(f'kube_pod_status_phase{{namespace="{NS}", pod="{pod}", phase="Pending"}}', "1x30"),
        series(
            f'kube_pod_container_resource_requests{{namespace="{NS}", pod="{pod}", container="{container}", resource="{resource}"}}', "1x30"
        ),
    ]


def initialized(nodeclaim: str, status: str, values_: str) -> dict[str, str]:
    """How long (seconds) a NodeClaim's Initialized condition has had this status."""
    labels = f'name="{nodeclaim}", type="Initialized", status="{status}"'
    return series(f"operator_nodeclaim_status_condition_current_status_seconds{{{labels}}}", values_)


def alert_names(groups: list[dict[str, Any]]) -> set[str]:
    return {r["alert"] for g in groups for r in g["rules"] if "alert" in r}


def run_tests(tests: list[dict[str, Any]]) -> None:
    result = promtool.test_rules(GROUPS, tests)
    assert result.returncode == 0, result.stdout + result.stderr


# Every alert: a case where it fires, a case where it stays silent.
CASES: dict[str, list[AlertCase]] = {
    "VllmTargetDown": [
        AlertCase(
            # 15 min at 15 s. chat-a loads for 10 min (not scrapeable, not ready), then serves;
            # chat-b is ready and stops being scrapeable after 30 s (a NetworkPolicy, say);
            # chat-c hangs: /health fails with /metrics, readiness takes it out, liveness's business.
            [
                *target("chat-a", up="0x40 1x20", ready="0x40 1x20"),
                *target("chat-b", up="1 1 0x58", ready="1x60"),
                *target("chat-c", up="1x7 0x53", ready="1x9 0x51"),
            ],
            {"2m": [], "7m": [TARGET_DOWN_B], "12m": [TARGET_DOWN_B]},
        ),
        AlertCase(
            # the old rule's false alarm: a load longer than `for`, with no kube-state-metrics readiness yet
            [series('up{job="vllm", namespace="chat", pod="chat-a"}', "0x60")],
            {"14m": []},
        ),
    ],
    "VllmRequestsRefused": [
        AlertCase(
            # 15 min at 15 s: refusals start after 5 minutes on every pod and engine (the bound is per replica)
            vllm("vllm:admission_rejections_total", "0x20 0+3x40"),
            {
                "5m": [],
                "14m": [
                    raised(
                        CHAT_WARNING,
                        "chat refuses 0.80 requests/s (HTTP 503)",
                        "Replicas are at their admission bound (--max-num-queued-reqs: the running "
                        "batch plus maxWaitingRequests) and answer 503: the model is at replicas.max, or new replicas "
                        "are still starting.",
                    )
                ],
            },
        ),
        AlertCase(
            # a counter that stands still (refusals long ago) pages nobody
            vllm("vllm:admission_rejections_total", "7x60"),
            {"14m": []},
        ),
    ],
    "KarpenterNodeRegistrationTimeouts": [
        AlertCase(
            # a MIG pool whose nodes miss the 15-minute registration twice in an hour; another pool's one miss is noise
            [
                disrupted("registration_timeout", "gpu-a100-mig", "on-demand", "0x10 1x20 2x30"),
                disrupted("registration_timeout", "gpu-l4", "spot", "0x10 1x50"),
            ],
            {
                "20m": [],
                "40m": [
                    raised(
                        {"severity": "warning", "nodepool": "gpu-a100-mig"},
                        "NodePool gpu-a100-mig: 2 nodes did not register within Karpenter's 15 minutes in the last hour",
                        "Karpenter terminates and relaunches them. On a MIG pool the boot-time "
                        "partitioning (a reboot included) may not fit in 15 minutes: see docs/upstream-facts.md "
                        "(NVIDIA GPU operator, item 7).",
                    )
                ],
            },
            interval="1m",
        ),
    ],
    "KarpenterNodeRepaired": [
        AlertCase(
            # one repair is worth a look (streams were cut); a registration timeout is not a repair
            [
                disrupted("unhealthy", "gpu-h100", "on-demand", "0x10 1x20"),
                disrupted("registration_timeout", "gpu-l4", "spot", "0x10 1x20"),
            ],
            {
                "5m": [],
                "15m": [
                    raised(
                        {"severity": "warning", "nodepool": "gpu-h100"},
                        "NodePool gpu-h100: 1 unhealthy nodes repaired in the last hour",
                        "Karpenter deleted them (karpenter.nodeRepair; on 1.14.1 with no drain: their "
                        "in-flight requests were cut) and launched new ones. Look at the node's conditions before it "
                        "went (AcceleratedHardwareReady, Ready) and at the GPU's XID errors; repeated repairs of one "
                        "pool point at its instance type or AMI.",
                    )
                ],
            },
            interval="1m",
        ),
    ],
    "VllmMetricsAbsent": [
        AlertCase(
            [series('vllm:num_requests_running{namespace="other", model_name="other", pod="x", engine="0"}', "1x60")],
            {"5m": [], "11m": [METRICS_ABSENT]},
        ),
        AlertCase(vllm("vllm:num_requests_running", "1x60"), {"12m": []}),
    ],
    "VllmQueueBacklog": [
        AlertCase(
            # 4 series x 12.5 waiting = 50 over 2 pods = 25 per replica > 10
            vllm("vllm:num_requests_waiting", "12.5x60") + vllm("vllm:num_requests_running", "8x60"),
            {
                "3m": [],
                "7m": [
                    raised(
                        CHAT_WARNING,
                        "chat has 25.0 waiting requests per replica",
                        "The queue stays long: autoscaling is at its maximum, capacity is short, or new replicas cannot start.",
                    )
                ],
            },
        ),
        AlertCase(
            # 4 x 2.5 = 10 over 2 pods = 5 per replica: under the threshold
            vllm("vllm:num_requests_waiting", "2.5x60") + vllm("vllm:num_requests_running", "8x60"),
            {"10m": []},
        ),
    ],
    "VllmKvCacheSaturated": [
        AlertCase(
            vllm("vllm:kv_cache_usage_perc", "0.97x60"),
            {
                "5m": [],
                "12m": [
                    raised(
                        CHAT_WARNING,
                        "chat KV cache is 97% full",
                        "Requests are being preempted or queued for KV-cache space; add replicas or shorten contexts.",
                    )
                ],
            },
        ),
        AlertCase(vllm("vllm:kv_cache_usage_perc", "0.8x60"), {"14m": []}),
    ],
    "VllmTtftSloBreach": [
        AlertCase(
            histogram("vllm:time_to_first_token_seconds", "5", ("0.5", "1", "2.5", "5")),
            {
                "5m": [],
                "17m": [
                    raised(
                        CHAT_WARNING,
                        "chat p99 time to first token is 4.975s, over its SLO",
                        "Time to first token p99 over 5 minutes exceeds the model's objective from the stack config.",
                    )
                ],
            },
        ),
        AlertCase(histogram("vllm:time_to_first_token_seconds", "0.5", ("0.5", "1", "2.5", "5")), {"17m": []}),
    ],
    "VllmE2eLatencySloBreach": [
        AlertCase(
            histogram("vllm:e2e_request_latency_seconds", "120", ("10", "30", "60", "120")),
            {
                "17m": [
                    raised(
                        CHAT_WARNING,
                        "chat p99 end-to-end latency is 1m 59s, over its SLO",
                        "End-to-end request latency p99 over 5 minutes exceeds the model's objective from the stack config.",
                    )
                ]
            },
        ),
        AlertCase(histogram("vllm:e2e_request_latency_seconds", "30", ("10", "30", "60", "120")), {"17m": []}),
    ],
    "KedaScalerErrors": [
        AlertCase(
            [keda_errors("0", "0+1x60"), keda_errors("1", "3x60")],
            {
                "3m": [],
                "11m": [
                    raised(
                        # the model's namespace, not KEDA's own ("keda/chat")
                        {"severity": "warning", "exported_namespace": NS, "scaledObject": "chat", "scaler": "prometheusScaler"},
                        "KEDA scaler prometheusScaler of chat/chat is failing",
                        "KEDA cannot read its trigger metric; the ScaledObject runs on its fallback replica count.",
                    )
                ],
            },
        ),
        AlertCase([keda_errors("0", "3x60")], {"14m": []}),
    ],
    "GpuPodsPending": [
        AlertCase(
            [
                *pending("chat-x", "vllm", "nvidia_com_gpu"),
                *pending("mig-y", "vllm", "nvidia_com_mig_3g_20gb"),
                *pending("cpu-z", "app", "cpu"),
            ],
            {
                "10m": [],
                "20m": [
                    raised(
                        {"severity": "warning", "namespace": NS, "pod": pod},
                        f"GPU pod {NS}/{pod} has been Pending longer than a node start",
                        "Karpenter could not place it: GPU limit reached, no capacity for the pool's types, or a NodeOverlay or taint mismatch.",
                    )
                    for pod in ("chat-x", "mig-y")
                ],
            },
            interval="1m",
        ),
    ],
    "KarpenterNodeClaimNotInitialized": [
        AlertCase(
            [initialized("gpu-abc", "False", "0+15x100"), initialized("gpu-ok", "True", "0+15x100")],
            {
                "14m": [],
                "17m": [
                    raised(
                        {"severity": "warning", "name": "gpu-abc"},
                        "NodeClaim gpu-abc is not initialized after 15m",
                        "A GPU node launched but never became ready: the GPU operator may not tolerate its taints, or the device plugin is failing.",
                    )
                ],
            },
        ),
    ],
    "KarpenterInterruptions": [
        AlertCase(
            [
                series('karpenter_interruption_received_messages_total{message_type="spot_interrupted", actionable="true"}', "0 0 1 1 1"),
                series('karpenter_interruption_received_messages_total{message_type="scheduled_change", actionable="true"}', "2 2 2 2 2"),
            ],
            {
                "1m": [],
                "3m": [
                    raised(
                        {"severity": "info", "message_type": "spot_interrupted"},
                        "Karpenter received spot_interrupted interruption messages",
                        "Spot interruptions, rebalance recommendations or health events are draining GPU nodes.",
                    )
                ],
            },
            interval="1m",
        ),
    ],
    **gpu_faults.CASES,
}


def test_every_alert_has_unit_tests() -> None:
    """The gateway's alerts have theirs in tests/builders/test_gateway_observability.py."""
    gateway = {r["alert"] for m in MODELS for r in rules.gateway_alerts(m)}
    assert gateway
    assert set(CASES) == alert_names(GROUPS) - gateway


@pytest.mark.parametrize("alert", sorted(CASES))
def test_alert(alert: str) -> None:
    check_alert(alert, CASES[alert])


def test_recording_rules_values() -> None:
    by = {"namespace": NS, "model_name": "chat"}

    def sample(record: str, at: str, value: float, **extra: str) -> dict[str, Any]:
        """A promtool case: the recorded series for model chat has this value at this time."""
        labels = ", ".join(f'{k}="{v}"' for k, v in {**by, **extra}.items())
        selector = "{" + ", ".join(f'{k}="{v}"' for k, v in extra.items()) + "}" if extra else ""
        return {"expr": f"{record}{selector}", "eval_time": at, "exp_samples": [{"labels": f"{record}{{{labels}}}", "value": value}]}

    run_tests(
        [
            {
                "interval": "15s",
                "input_series": vllm("vllm:num_requests_waiting", "12.5x60")
                + vllm("vllm:num_requests_running", "3x60")
                + vllm("vllm:kv_cache_usage_perc", "0.5x60")
                + vllm("vllm:generation_tokens_total", "0+150x60")
                + histogram("vllm:time_to_first_token_seconds", "1", ("0.5", "1", "2.5")),
                "promql_expr_test": [
                    sample("llm:vllm_requests_waiting:sum", "5m", 50),
                    sample("llm:vllm_requests_running:sum", "5m", 12),
                    sample("llm:vllm_replicas:count", "5m", 2),
                    sample("llm:vllm_kv_cache_usage:avg", "5m", 0.5),
                    # 4 series x 150 tokens per 15 s = 40 tokens/s
                    sample("llm:vllm_generation_tokens:rate5m", "10m", 40),
                    # every observation <= 1 s and > 0.5 s: p50 interpolates to 0.75 s
                    sample("llm:vllm_ttft_seconds:quantile_5m", "10m", 0.75, quantile="0.5"),
                    sample("llm:slo_ttft_p99_seconds", "1m", 2),
                ],
            }
        ]
    )


def test_price_series_carry_the_catalog_prices() -> None:
    run_tests(
        [
            {
                "interval": "1m",
                "input_series": [],
                "promql_expr_test": [
                    {
                        "expr": 'llm:ec2_on_demand_price_per_hour{instance_type="p5.48xlarge"}',
                        "eval_time": "5m",
                        "exp_samples": [{"labels": 'llm:ec2_on_demand_price_per_hour{instance_type="p5.48xlarge"}', "value": 55.04}],
                    }
                ],
            }
        ]
    )


def test_promtool_checks_the_rendered_rules(prod_run: harness.RunResult) -> None:
    rule = values(prod_run.one("kubernetes:monitoring.coreos.com/v1:PrometheusRule"))
    result = promtool.check_rules(rule["spec"]["groups"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout
    # the rendered object carries one absent-metrics alert per prod model
    absent = [r for g in rule["spec"]["groups"] for r in g["rules"] if r.get("alert") == "VllmMetricsAbsent"]
    assert len(absent) == 4


def test_the_target_alert_joins_on_the_rendered_names(prod_run: harness.RunResult) -> None:
    """VllmTargetDown selects `up` by the PodMonitor's job and readiness by the serving container's
    name: both must be what the render gives every vLLM pod, or the join is silently empty."""
    monitor = values(prod_run.one("kubernetes:monitoring.coreos.com/v1:PodMonitor", "observability-vllm"))
    job_label = monitor["spec"]["jobLabel"]
    served = [
        d
        for d in map(values, prod_run.of_type("kubernetes:apps/v1:Deployment"))
        if d["spec"]["template"]["metadata"]["labels"].items() >= monitor["spec"]["selector"]["matchLabels"].items()
    ]
    assert len(served) == 4
    for deployment in served:
        pod = deployment["spec"]["template"]
        assert pod["metadata"]["labels"][job_label] == rules.VLLM_JOB
        probed = [c["name"] for c in pod["spec"]["containers"] if "readinessProbe" in c]
        assert probed == [rules.VLLM_CONTAINER]
    alert = next(r for r in rules.alert_rules([], AlertTuning()) if r["alert"] == "VllmTargetDown")
    assert f'container="{rules.VLLM_CONTAINER}"' in alert["expr"]
    assert f'job="{rules.VLLM_JOB}"' in alert["expr"]


def test_promtool_rejects_a_broken_expression() -> None:
    broken = [{"name": "x", "rules": [{"record": "x:y", "expr": "sum by (a (up)"}]}]
    assert promtool.check_rules(broken).returncode != 0


def test_every_dashboard_expression_parses() -> None:
    groups = []
    for dashboard in dashboards.DASHBOARDS:
        exprs = [
            e.replace("$__rate_interval", "5m").replace("$model", "chat").replace("$pool", "gpu") for e in dashboards.expressions(dashboard)
        ]
        groups.append({"name": dashboard.uid, "rules": [{"record": f"dashboard:expr{i}", "expr": e} for i, e in enumerate(exprs)]})
    result = promtool.check_rules(groups)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_query_uses_only_known_vllm_metric_names() -> None:
    known = metrics.vllm_series()
    used = set().union(*(metrics.vllm_names_in(e) for e in all_expressions()))
    assert used, "the rules and dashboards query vLLM"
    assert used <= known, used - known
    assert not used & metrics.VLLM_REMOVED


def test_the_name_check_catches_the_removed_kv_metric() -> None:
    used = metrics.vllm_names_in("avg(vllm:gpu_cache_usage_perc)")
    assert used == {"vllm:gpu_cache_usage_perc"}
    assert not used <= metrics.vllm_series()


def test_a_model_at_zero_does_not_page_for_missing_metrics() -> None:
    """replicas.min 0: no vLLM series is normal at zero available replicas, and still an alert with one up."""
    idle = [rules.ModelWatch("chat", NS, Slo(ttft_p99_seconds=2.0, end_to_end_p99_seconds=60.0), scales_to_zero=True)]
    available = f'kube_deployment_status_replicas_available{{namespace="{NS}", deployment="chat"}}'
    cases = [AlertCase([series(available, "0x60")], {"12m": []}), AlertCase([series(available, "1x60")], {"12m": [METRICS_ABSENT]})]
    check_alert("VllmMetricsAbsent", cases, rules.rule_groups(idle, AlertTuning()))


def test_every_builder_query_uses_only_known_series_names() -> None:
    """Every series name (not only vllm:*) of the rule groups and dashboards the builders write is in the
    metric tables or is a recording rule of those groups (tests/builders/test_metric_names.py reads the renders)."""
    known = metrics.known_series() | {r["record"] for g in GROUPS for r in g["rules"] if "record" in r}
    used = set().union(*(metrics.series_names_in(e) for e in all_expressions()))
    assert used - known == set()
    assert {"DCGM_FI_DEV_GPU_UTIL", "kube_node_labels", "karpenter_nodeclaims_created_total", "up"} <= used


def test_every_gpu_fault_alert_has_its_runbook_section() -> None:
    """docs/gpu-faults.md holds a section per GPU fault alert, at the anchor its `runbook` annotation names."""
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / rules.RUNBOOK).read_text()
    headings = {line[3:].strip().lower() for line in page.splitlines() if line.startswith("## ")}
    alerts = rules.gpu_fault_alerts()
    assert len(alerts) >= 9
    for rule in alerts:
        path, anchor = rule["annotations"]["runbook"].split("#")
        assert path == rules.RUNBOOK
        assert anchor in headings, f"{rule['alert']}: no '## {rule['alert']}' in {rules.RUNBOOK}"
