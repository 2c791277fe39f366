"""Recording and alert rules (PrometheusRule groups), built from config. Pure.

Recording rules compute the per-model series that dashboards and alerts share (by namespace
and model_name, summed over pods and engines). SLO thresholds and EC2 prices become constant
series, so one alert or one panel serves every model and every instance type.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from builders.gateway import envoy, router
from config.derived.path import SHED
from config.facts import catalog, dcgm
from config.facts.conventions import HEADROOM_NAMESPACE, PROJECT, VLLM_PORT
from config.sections.observability import AlertTuning, Slo
from config.sections.types import duration_seconds

BY = "namespace, model_name"
QUANTILES = ("0.5", "0.95", "0.99")
VLLM_JOB = "vllm"
VLLM_CONTAINER = "vllm"
"""The serving container of a model's pods (builders/serving/workload.py; a test ties the two)."""
RECORDING_INTERVAL = "15s"
GATEWAY_PICKER_JOB = "gateway-epp"
GATEWAY_PROXY_JOB = "gateway-proxy"
"""The `job` of the gateway's scrape targets: their PodMonitors set it (builders/observability/values.py),
one for every model's pickers and one for every model's proxies; `namespace` tells the models apart."""
GATEWAY_DOWN_FOR = "3m"
EPP_BLIND_FOR = "5m"
SHEDDING_FOR = "5m"
SHED_OUTCOMES = tuple(str(o.label) for o in SHED)
"""Flow control's outcomes a caller sees as an error: held past the TTL (429), no ready replica (503), queue full (429)."""


@dataclass(frozen=True)
class ModelWatch:
    """What the rules need to know of a served model."""

    name: str
    namespace: str
    slo: Slo
    scales_to_zero: bool = False
    """replicas.min 0: no metrics is normal while no replica is available."""

    @property
    def picker(self) -> str:
        """The Endpoint Picker's Deployment: the chart's name for the release named after the model
        (builders/gateway/router.py picker_name; a test ties the two)."""
        return f"{self._release_base()}-epp"

    @property
    def proxy(self) -> str:
        """The Envoy proxies' Deployment: the platform's (builders/gateway/proxies.py name; the chart's is kept at
        zero replicas, so its readiness says nothing; a test ties the two)."""
        return f"{self._release_base()}-proxy-drained"

    def _release_base(self) -> str:
        return self.name.lower().strip()[: router.NAME_LIMIT]


def _metrics_absent(m: ModelWatch) -> str:
    """No vLLM series for the model; for a model that idles at zero, only while a replica is available."""
    absent = f'absent(vllm:num_requests_running{{namespace="{m.namespace}", model_name="{m.name}"}})'
    if not m.scales_to_zero:
        return absent
    available = f'sum(kube_deployment_status_replicas_available{{namespace="{m.namespace}", deployment="{m.name}"}}) > 0'
    return f"{absent} and on () ({available})"


def _target_down() -> str:
    """A vLLM pod Prometheus cannot scrape although its vLLM container is ready.

    The PodMonitor scrapes a pod from its creation (the operator drops only Succeeded and Failed
    pods), so `up` is 0 through the init containers, the download and the engine load: minutes to
    tens of minutes, longer than any `for`. kube-state-metrics' kube_pod_container_status_ready
    (labels namespace, pod, container, uid) turns 1 only once the container's readiness probe passes
    /health on the port /metrics is served from, so a loading pod never matches. A ready pod that
    stays unscrapeable is what this alert means (a NetworkPolicy, the PodMonitor or a slow /metrics):
    it serves requests that the queue sums KEDA scales on leave out. The container's
    readiness, not the pod's: the model namespaces inject the load balancer's readiness gate, so pod
    Ready also waits on ALB target health. A vLLM that stops answering altogether fails /health too:
    its readiness probe takes it out of service and its liveness probe restarts it (a restart, not
    this alert). Without kube-state-metrics series the join is empty and the alert stays silent.
    """
    ready = f'max by (namespace, pod) (kube_pod_container_status_ready{{container="{VLLM_CONTAINER}"}}) == 1'
    return f'(up{{job="{VLLM_JOB}"}} == 0) and on (namespace, pod) ({ready})'


def _gateway_down(m: ModelWatch, deployment: str, job: str) -> str:
    """None of the component's pods is ready (kube-state-metrics), or Prometheus scrapes none of them:
    every target down, or no target at all (the Deployment or its pods are gone, or the PodMonitor misses
    them). Without kube-state-metrics series only the second half can fire, so its absence pages no one."""
    ready = f'max(kube_deployment_status_replicas_ready{{namespace="{m.namespace}", deployment="{deployment}"}}) < 1'
    scraped = f'(max(up{{job="{job}", namespace="{m.namespace}"}}) or vector(0)) < 1'
    return f"({ready}) or ({scraped})"


def _epp_blind(m: ModelWatch) -> str:
    """Ready vLLM pods that are not among the Endpoint Picker's endpoints.

    llm_d_epp_ready_endpoints counts the pool's pods whose metrics the picker scraped within its
    staleness threshold (2 s); the picker routes only to those. A ready vLLM container (kube-state-metrics,
    deduplicated per pod) beyond that count is a pod the picker cannot scrape or does not select. The max
    over picker replicas: with leader election a standby may see fewer. A picker that is up but reports no
    endpoints at all (it has not found its InferencePool) counts every ready pod. Without the picker's or
    kube-state-metrics' series the alert stays silent (GatewayUnavailable covers a picker that is down).
    """
    ns = m.namespace
    ready = f'count(max by (pod) (kube_pod_container_status_ready{{namespace="{ns}", container="{VLLM_CONTAINER}"}}) == 1)'
    seen = f'max(llm_d_epp_ready_endpoints{{job="{GATEWAY_PICKER_JOB}", namespace="{ns}"}})'
    picker_up = f'max(up{{job="{GATEWAY_PICKER_JOB}", namespace="{ns}"}}) == 1'
    return f"(({ready}) - ({seen}) > 0) or ((({ready}) unless on () ({seen})) and on () ({picker_up}))"


def gateway_alerts(m: ModelWatch) -> list[dict[str, Any]]:
    """The alerts of one model's gateway (every model has one)."""
    labels = {"namespace": m.namespace, "model_name": m.name}
    ns = m.namespace
    return [
        _alert(
            "GatewayUnavailable",
            _gateway_down(m, m.proxy, GATEWAY_PROXY_JOB),
            GATEWAY_DOWN_FOR,
            "critical",
            f"Gateway of model {m.name} is down: no ready, scraped Envoy proxy ({m.proxy})",
            f"Callers of {m.name} get errors: the ALB has no healthy target and the in-cluster Service no endpoint. "
            f"Likely cause: the proxies are Pending (system-node capacity) or crash-looping on their config "
            f"(kubectl -n {ns} describe deployment {m.proxy}; its logs); their /ready answers while Envoy runs. "
            "If the pods are ready but not scraped, Prometheus "
            f"cannot reach port {envoy.METRICS_PORT}: check the NetworkPolicy {m.proxy} and the {GATEWAY_PROXY_JOB} PodMonitor. "
            "Fix that cause; the proxies take traffic again once /ready passes.",
            labels={**labels, "component": "proxy"},
        ),
        _alert(
            "GatewayUnavailable",
            _gateway_down(m, m.picker, GATEWAY_PICKER_JOB),
            GATEWAY_DOWN_FOR,
            "critical",
            f"Gateway of model {m.name} is down: no ready, scraped Endpoint Picker ({m.picker})",
            f"Envoy fails closed without its picker: every request to {m.name} gets a 503 at once. Likely cause: the picker "
            f"crash-loops on its config or cannot watch its InferencePool and pods (API-server egress, RBAC: "
            f"kubectl -n {ns} logs deployment/{m.picker}), or it is Pending for lack of system-node CPU. If it is ready but "
            f"not scraped, Prometheus cannot reach port {router.EPP_METRICS_PORT}: check the NetworkPolicy {m.picker} and the "
            f"{GATEWAY_PICKER_JOB} PodMonitor. Fix that cause; the proxies turn ready again with the picker.",
            labels={**labels, "component": "picker"},
        ),
        _alert(
            "GatewayShedding",
            f'sum(rate(llm_d_epp_flow_control_requests_total{{job="{GATEWAY_PICKER_JOB}", namespace="{ns}", '
            f'outcome=~"{"|".join(SHED_OUTCOMES)}"}}[5m])) > 0',
            SHEDDING_FOR,
            "warning",
            "The gateway of model " + m.name + " turns requests away: {{ $value | humanize }}/s answered 429 or 503",
            f"Flow control held requests for {m.name} past their TTL (EvictedTTL, a 429), found no ready replica "
            "(RejectedNoEndpoints, a 503) or a full queue (RejectedCapacity): demand is above what the replicas serve "
            "and the scale-up did not catch up within the hold. Likely cause: replicas.max reached, the pool's gpuLimit "
            "or EC2 capacity stopping Karpenter, or a scale-up slower than the TTL (see the gateway row of the vLLM "
            f"dashboard and kubectl -n {ns} get hpa). Fix: raise replicas.max or the pool's gpuLimit, add warm headroom, "
            "or lower autoscaling.queueDepthPerReplica so replicas start sooner.",
            labels=labels,
        ),
        _alert(
            "EppCannotScrapePod",
            _epp_blind(m),
            EPP_BLIND_FOR,
            "warning",
            "{{ $value }} ready vLLM pods of model " + m.name + " are not among its Endpoint Picker's endpoints",
            f"The picker {m.picker} routes only to pods whose /metrics it scraped in the last 2 s: these hold GPUs and "
            f"take no gateway traffic. Likely cause: the NetworkPolicy {m.picker} (egress) or the model's vLLM policy "
            f"(ingress) does not admit the picker to port {VLLM_PORT}, vLLM's /metrics answers slower than the picker's "
            f"1 s timeout, or the pods' labels no longer match the InferencePool {m.name} (a picker with no endpoints at "
            "all has not found its pool). Fix: compare kubectl -n "
            f"{ns} get inferencepool {m.name} -o yaml with the pods' labels and both policies; the picker's "
            "llm_d_epp_datalayer_poll_errors_total counts its failed scrapes.",
            labels=labels,
        ),
    ]


def _quantiles(record: str, histogram: str) -> list[dict[str, Any]]:
    return [
        {
            "record": record,
            "expr": f"histogram_quantile({q}, sum by ({BY}, le) (rate({histogram}_bucket[5m])))",
            "labels": {"quantile": q},
        }
        for q in QUANTILES
    ]


def recording_rules() -> list[dict[str, Any]]:
    return [
        {"record": "llm:vllm_requests_waiting:sum", "expr": f"sum by ({BY}) (vllm:num_requests_waiting)"},
        {"record": "llm:vllm_requests_running:sum", "expr": f"sum by ({BY}) (vllm:num_requests_running)"},
        {"record": "llm:vllm_kv_cache_usage:avg", "expr": f"avg by ({BY}) (vllm:kv_cache_usage_perc)"},
        {
            "record": "llm:vllm_replicas:count",
            "expr": f"count by ({BY}) (count by ({BY}, pod) (vllm:num_requests_running))",
        },
        *_quantiles("llm:vllm_ttft_seconds:quantile_5m", "vllm:time_to_first_token_seconds"),
        *_quantiles("llm:vllm_e2e_latency_seconds:quantile_5m", "vllm:e2e_request_latency_seconds"),
        *_quantiles("llm:vllm_inter_token_latency_seconds:quantile_5m", "vllm:inter_token_latency_seconds"),
        {"record": "llm:vllm_generation_tokens:rate5m", "expr": f"sum by ({BY}) (rate(vllm:generation_tokens_total[5m]))"},
        {"record": "llm:vllm_prompt_tokens:rate5m", "expr": f"sum by ({BY}) (rate(vllm:prompt_tokens_total[5m]))"},
        {"record": "llm:vllm_preemptions:rate5m", "expr": f"sum by ({BY}) (rate(vllm:num_preemptions_total[5m]))"},
    ]


def slo_rules(models: list[ModelWatch]) -> list[dict[str, Any]]:
    """Each model's latency objectives as constant series, joined by the SLO alerts."""
    rules: list[dict[str, Any]] = []
    for m in models:
        labels = {"namespace": m.namespace, "model_name": m.name}
        rules.append({"record": "llm:slo_ttft_p99_seconds", "expr": f"vector({m.slo.ttft_p99_seconds})", "labels": labels})
        rules.append({"record": "llm:slo_e2e_p99_seconds", "expr": f"vector({m.slo.end_to_end_p99_seconds})", "labels": labels})
    return rules


def price_rules() -> list[dict[str, Any]]:
    """On-demand USD/hour per catalog instance type, for the cost panels."""
    return [
        {"record": "llm:ec2_on_demand_price_per_hour", "expr": f"vector({t.price_per_hour})", "labels": {"instance_type": t.name}}
        for t in sorted(catalog.INSTANCE_TYPES.values(), key=lambda t: t.name)
    ]


def _alert(
    name: str, expr: str, duration: str, severity: str, summary: str, description: str, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "alert": name,
        "expr": expr,
        "for": duration,
        "labels": {"severity": severity, **(labels or {})},
        "annotations": {"summary": summary, "description": description},
    }


def alert_rules(models: list[ModelWatch], tuning: AlertTuning) -> list[dict[str, Any]]:
    pending = duration_seconds(tuning.gpu_pod_pending_for)
    rules = [
        _alert(
            "VllmTargetDown",
            _target_down(),
            "5m",
            "warning",
            "vLLM pod {{ $labels.pod }} in {{ $labels.namespace }} is ready but not scrapeable",
            "Prometheus cannot scrape /metrics of this ready vLLM pod (a NetworkPolicy, the PodMonitor or a slow /metrics): "
            "it serves requests that the queue and cache sums KEDA scales on leave out.",
        ),
        *[
            _alert(
                "VllmMetricsAbsent",
                _metrics_absent(m),
                "10m",
                "critical",
                f"No vLLM metrics for model {m.name}",
                f"Model {m.name} reports no metrics: no replica is running, or its served name or monitor is wrong. "
                "Autoscaling is blind until it returns.",
                labels={"namespace": m.namespace, "model_name": m.name},
            )
            for m in models
        ],
        *[alert for m in models for alert in gateway_alerts(m)],
        _alert(
            "VllmQueueBacklog",
            f"llm:vllm_requests_waiting:sum / on ({BY}) llm:vllm_replicas:count > {tuning.queue_backlog_per_replica:g}",
            tuning.queue_backlog_for,
            "warning",
            '{{ $labels.model_name }} has {{ $value | printf "%.1f" }} waiting requests per replica',
            "The queue stays long: autoscaling is at its maximum, capacity is short, or new replicas cannot start.",
        ),
        _alert(
            "VllmRequestsRefused",
            f"sum by ({BY}) (rate(vllm:admission_rejections_total[5m])) > 0",
            "5m",
            "warning",
            '{{ $labels.model_name }} refuses {{ $value | printf "%.2f" }} requests/s (HTTP 503)',
            "Replicas are at their admission bound (--max-num-queued-reqs: the running batch plus maxWaitingRequests) "
            "and answer 503: the model is at replicas.max, or new replicas are still starting.",
        ),
        _alert(
            "VllmKvCacheSaturated",
            f"llm:vllm_kv_cache_usage:avg > {tuning.kv_cache_saturation:g}",
            tuning.kv_cache_saturation_for,
            "warning",
            "{{ $labels.model_name }} KV cache is {{ $value | humanizePercentage }} full",
            "Requests are being preempted or queued for KV-cache space; add replicas or shorten contexts.",
        ),
        _alert(
            "VllmTtftSloBreach",
            f'llm:vllm_ttft_seconds:quantile_5m{{quantile="0.99"}} > on ({BY}) llm:slo_ttft_p99_seconds',
            "10m",
            "warning",
            "{{ $labels.model_name }} p99 time to first token is {{ $value | humanizeDuration }}, over its SLO",
            "Time to first token p99 over 5 minutes exceeds the model's objective from the stack config.",
        ),
        _alert(
            "VllmE2eLatencySloBreach",
            f'llm:vllm_e2e_latency_seconds:quantile_5m{{quantile="0.99"}} > on ({BY}) llm:slo_e2e_p99_seconds',
            "10m",
            "warning",
            "{{ $labels.model_name }} p99 end-to-end latency is {{ $value | humanizeDuration }}, over its SLO",
            "End-to-end request latency p99 over 5 minutes exceeds the model's objective from the stack config.",
        ),
        # KEDA labels its scaler series with the ScaledObject's `namespace` (kedacore/keda
        # pkg/metricscollector/prommetrics.go: namespace, metric, scaledObject, scaler, triggerIndex,
        # type). The chart's ServiceMonitor (kedacore/charts keda/templates/manager/servicemonitor.yaml)
        # sets no honorLabels, so Prometheus keeps its own target label namespace="keda" and renames the
        # ScaledObject's to `exported_namespace`.
        _alert(
            "KedaScalerErrors",
            "sum by (exported_namespace, scaledObject, scaler) (rate(keda_scaler_detail_errors_total[5m])) > 0",
            "5m",
            "warning",
            "KEDA scaler {{ $labels.scaler }} of {{ $labels.exported_namespace }}/{{ $labels.scaledObject }} is failing",
            "KEDA cannot read its trigger metric; the ScaledObject runs on its fallback replica count.",
        ),
        _alert(
            "GpuPodsPending",
            f'(max by (namespace, pod) (kube_pod_status_phase{{phase="Pending", namespace!="{HEADROOM_NAMESPACE}"}}) == 1) '
            "and on (namespace, pod) "
            '(max by (namespace, pod) (kube_pod_container_resource_requests{resource=~"nvidia_com_gpu|nvidia_com_mig_.+"}) > 0)',
            tuning.gpu_pod_pending_for,
            "warning",
            "GPU pod {{ $labels.namespace }}/{{ $labels.pod }} has been Pending longer than a node start",
            "Karpenter could not place it: GPU limit reached, no capacity for the pool's types, or a NodeOverlay or taint mismatch.",
        ),
        _alert(
            "KarpenterNodeClaimNotInitialized",
            f'max by (name) (operator_nodeclaim_status_condition_current_status_seconds{{type="Initialized", status!="True"}}) > {pending}',
            "1m",
            "warning",
            "NodeClaim {{ $labels.name }} is not initialized after " + tuning.gpu_pod_pending_for,
            "A GPU node launched but never became ready: the GPU operator may not tolerate its taints, or the device plugin is failing.",
        ),
        _alert(
            "KarpenterNodeRegistrationTimeouts",
            'sum by (nodepool) (increase(karpenter_nodeclaims_disrupted_total{reason="registration_timeout"}[1h])) >= 2',
            "0m",
            "warning",
            "NodePool {{ $labels.nodepool }}: {{ $value }} nodes did not register within Karpenter's 15 minutes in the last hour",
            "Karpenter terminates and relaunches them. On a MIG pool the boot-time partitioning (a reboot included) may not "
            "fit in 15 minutes: see docs/upstream-facts.md (NVIDIA GPU operator, item 7).",
        ),
        # karpenter.nodeRepair: a repaired node is deleted with no drain on Karpenter 1.14.1 (its streams cut) and
        # replaced by a new one (a miss); the disruption counter's reason is "unhealthy" (wave3-facts Part A 5)
        _alert(
            "KarpenterNodeRepaired",
            'sum by (nodepool) (increase(karpenter_nodeclaims_disrupted_total{reason="unhealthy"}[1h])) > 0',
            "0m",
            "warning",
            "NodePool {{ $labels.nodepool }}: {{ $value }} unhealthy nodes repaired in the last hour",
            "Karpenter deleted them (karpenter.nodeRepair; on 1.14.1 with no drain: their in-flight requests were cut) and "
            "launched new ones. Look at the node's conditions before it went (AcceleratedHardwareReady, Ready) and at the "
            "GPU's XID errors; repeated repairs of one pool point at its instance type or AMI.",
        ),
        _alert(
            "KarpenterInterruptions",
            "sum by (message_type) (increase(karpenter_interruption_received_messages_total[10m])) > 0",
            "0m",
            "info",
            "Karpenter received {{ $labels.message_type }} interruption messages",
            "Spot interruptions, rebalance recommendations or health events are draining GPU nodes.",
        ),
        *gpu_fault_alerts(),
    ]
    return rules


RUNBOOK = "docs/gpu-faults.md"
"""Each GPU fault alert's runbook: a section of this page, named by the alert's `runbook` annotation."""
AGENT_CONDITIONS = ("AcceleratedHardwareReady", "KernelReady", "NetworkingReady", "StorageReady", "ContainerRuntimeReady")
"""The node conditions the EKS node monitoring agent sets (wave3-facts Part A 5; EKS user guide node-health-nma)."""
XID_REPLACE = (74, 79, 119, 120, 121, 140)
"""XIDs whose default action by the node monitoring agent is Replace (13, 31, 48, 63, 64, 94, 95 are Reboot)."""


def _gpu_alert(name: str, expr: str, duration: str, severity: str, summary: str, description: str) -> dict[str, Any]:
    rule = _alert(name, expr, duration, severity, summary, description)
    rule["annotations"]["runbook"] = f"{RUNBOOK}#{name.lower()}"
    return rule


def _bit(series: str, bit: int) -> str:
    """1 where the bitmask series has this bit set (PromQL has no bitwise operator on samples)."""
    return f"(floor({series} / {bit}) % 2)"


def gpu_fault_alerts() -> list[dict[str, Any]]:
    """GPU faults from the DCGM exporter (by node and GPU: the ServiceMonitor's `node` label; device counters by
    `max`, since a MIG node repeats its GPU's per slice) and the node conditions the node monitoring agent sets,
    each with a runbook section."""
    on = "{{ $labels.gpu }} on {{ $labels.node }}"
    reasons = "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"
    slowed = " + ".join(_bit(reasons, bit) for bit in dcgm.CLOCKS_EVENT_FAULT_BITS.values())
    replace = "|".join(str(code) for code in XID_REPLACE)
    others = "|".join(c for c in AGENT_CONDITIONS if c != "AcceleratedHardwareReady")
    repair = (
        "With karpenter.nodeRepair on, Karpenter deletes a node whose AcceleratedHardwareReady stays False for 10 minutes "
        "(on 1.14.1 with no drain) and launches another; off, the node stays until someone drains it."
    )
    return [
        _gpu_alert(
            "GpuXidErrors",
            "max by (node, gpu, xid) (DCGM_EXP_XID_ERRORS_COUNT) > 0",
            "0m",
            "warning",
            f"GPU {on} reported XID {{{{ $labels.xid }}}} ({{{{ $value }}}} in the exporter's 5-minute window)",
            "The GPU driver reported an XID error; the node monitoring agent sets NvidiaXID<code>Error on the node. "
            "Most codes are an application's fault or clear with a reboot; GpuXidNeedsReplacement says when not. "
            "Clears when the window passes without another.",
        ),
        _gpu_alert(
            "GpuXidNeedsReplacement",
            f'max by (node, gpu, xid) (DCGM_EXP_XID_ERRORS_COUNT{{xid=~"{replace}"}}) > 0',
            "0m",
            "critical",
            f"GPU {on} reported XID {{{{ $labels.xid }}}}: the node needs replacing",
            "XID " + ", ".join(str(c) for c in XID_REPLACE) + " are the codes whose action the node monitoring agent "
            "sets to Replace (AcceleratedHardwareReady=False); a GPU off the bus (79) may report nothing more, which "
            "NodeAcceleratedHardwareNotReady covers. " + repair,
        ),
        _gpu_alert(
            "GpuDoubleBitEccErrors",
            "max by (node, gpu) (increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[10m])) > 0",
            "0m",
            "critical",
            f"GPU {on}: uncorrectable (double-bit) ECC errors in the last 10 minutes",
            "Memory the GPU could not correct: the process that held it got an error (XID 48, or 94/95 on A100 and later), "
            "and the node monitoring agent reports NvidiaDoubleBitError (Replace). " + repair,
        ),
        _gpu_alert(
            "GpuSingleBitEccErrors",
            "max by (node, gpu) (increase(DCGM_FI_DEV_ECC_SBE_VOL_TOTAL[10m])) > 0",
            "30m",
            "warning",
            f"GPU {on} keeps correcting (single-bit) ECC errors: new ones in every 10 minutes for half an hour",
            "Corrected memory errors serve no wrong answer, but a GPU that keeps correcting is wearing out: watch "
            "GpuRowRemapPending and plan to drain the node.",
        ),
        _gpu_alert(
            "GpuRowRemapPending",
            "max by (node, gpu) (DCGM_FI_DEV_ROW_REMAP_PENDING) > 0",
            "5m",
            "warning",
            f"GPU {on} has a memory row remap waiting for a GPU reset",
            "The GPU retired a bad memory row; the remap takes effect at the next reset. Drain the node (Karpenter then "
            "replaces it) when its traffic allows.",
        ),
        _gpu_alert(
            "GpuRowRemapFailed",
            "max by (node, gpu) (DCGM_FI_DEV_ROW_REMAP_FAILURE) > 0",
            "0m",
            "critical",
            f"GPU {on} failed to remap a bad memory row",
            "The GPU has no spare row left for a bad one: its memory is not reliable. Drain the node now. " + repair,
        ),
        _gpu_alert(
            "GpuClocksSlowedDown",
            f"max by (node, gpu) ({slowed}) > 0",
            "10m",
            "warning",
            f"GPU {on} runs below its clocks for heat or a hardware fault",
            "The driver reports a hardware slowdown, thermal slowdown or power brake (DCGM_FI_DEV_CLOCKS_EVENT_REASONS; the "
            "software power cap, normal under load, is left out): the GPU serves slower than the plan assumes. A node "
            "that stays slowed after a reboot needs replacing.",
        ),
        _gpu_alert(
            "NodeAcceleratedHardwareNotReady",
            'max by (node) (kube_node_status_condition{condition="AcceleratedHardwareReady", status="false"}) > 0',
            "0m",
            "critical",
            "Node {{ $labels.node }}: the node monitoring agent marked its GPUs not ready",
            "The agent found a GPU fault (an XID it acts on, a double-bit ECC error, an NVLink fault). " + repair,
        ),
        _gpu_alert(
            "NodeConditionNotReady",
            f'max by (node, condition) (kube_node_status_condition{{condition=~"{others}", status="false"}}) > 0',
            "5m",
            "warning",
            "Node {{ $labels.node }}: {{ $labels.condition }} is False",
            "The node monitoring agent found a kernel, network, storage or container runtime fault on this node. With "
            "karpenter.nodeRepair on, Karpenter replaces it after 30 minutes; off, drain it.",
        ),
    ]


def rule_groups(models: list[ModelWatch], tuning: AlertTuning) -> list[dict[str, Any]]:
    return [
        {"name": f"{PROJECT}.recording", "interval": RECORDING_INTERVAL, "rules": recording_rules()},
        {"name": f"{PROJECT}.slos", "rules": slo_rules(models)},
        {"name": f"{PROJECT}.prices", "interval": "5m", "rules": price_rules()},
        {"name": f"{PROJECT}.alerts", "rules": alert_rules(models, tuning)},
    ]
