"""Serving: one model's stack, validated, secure, and scaled right (exact manifests: tests/offline/test_golden.py)."""

from __future__ import annotations

import json
from typing import Any

import kubernetes_validate
import pytest

from builders.keda import keda_values
from builders.serving import scaling
from builders.serving import workload as builders
from config.derived import capacity
from config.derived import engine as engine_start
from config.derived.sharing import gpu_request
from config.facts import versions
from config.sections.types import parse_quantity
from offline import harness, render
from offline.mocks import Registration, unwrap_secrets
from tests.conftest import DEV, FIXTURES, PROD, fixture_run, parse, shared_path, stack_data, values
from tests.support.workloads import model_pod as _pod
from tests.support.workloads import running_pods
from tests.validators import crds, helm_values, promtool

DEPLOYMENT = "kubernetes:apps/v1:Deployment"
SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"


def _model_objects(run: harness.RunResult, model: str) -> dict[str, dict[str, Any]]:
    parent = f"llmplatform:index:VllmModel::model-{model}"
    docs = {}
    for r in run.registrations:
        if r.parent == parent and render.is_manifest(r):
            doc = render.manifest(r)
            docs[f"{doc['kind'].lower()}-{doc['metadata']['name']}.yaml"] = doc
    return docs


# -- validators ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", FIXTURES)
def test_every_core_object_passes_kubernetes_validate_strict(stack: str) -> None:
    run = fixture_run(stack)
    checked = 0
    for r in run.registrations:
        if not render.is_manifest(r):
            continue
        doc = render.manifest(r)
        try:
            kubernetes_validate.validate(
                unwrap_secrets(values(r)) if doc["kind"] == "Secret" else doc, versions.KUBERNETES_DEFAULT, strict=True
            )
            checked += 1
        except kubernetes_validate.SchemaNotFoundError:
            assert "." in doc["apiVersion"].split("/")[0], f"{doc['kind']} should have a built-in schema"
    assert checked >= 10


def test_strict_validation_catches_a_typo() -> None:
    model = parse(stack_data(DEV)).models[0]
    pool = parse(stack_data(DEV)).gpu_pools[0]
    doc = builders.deployment(model, pool, alb_idle_timeout_seconds=600, hf_token=True)
    doc["spec"]["template"]["spec"]["terminationGracePeriod"] = 75
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(doc, versions.KUBERNETES_DEFAULT, strict=True)


@pytest.mark.parametrize("stack", FIXTURES)
def test_scaled_objects_validate_against_the_keda_crd(stack: str) -> None:
    run = fixture_run(stack)
    crd = shared_path("crds", "keda.sh_scaledobjects.yaml")
    found = run.of_type(SCALED_OBJECT)
    assert len(found) == len(parse(stack_data(stack)).models)
    for r in found:
        doc = values(r)
        assert crds.errors(doc, crd) == [], r.name
        for trigger in doc["spec"]["triggers"]:
            assert all(isinstance(v, str) for v in trigger["metadata"].values()), trigger["name"]
        assert doc["spec"]["minReplicaCount"] <= doc["spec"]["maxReplicaCount"]


def test_keda_crd_catches_a_numeric_threshold() -> None:
    crd = shared_path("crds", "keda.sh_scaledobjects.yaml")
    cfg = parse(stack_data(DEV))
    doc = scaling.scaled_object(cfg.models[0], "http://p:9090", cfg.gpu_pools[0], scales_to_zero=False)
    doc["spec"]["triggers"][0]["metadata"]["threshold"] = 5
    assert any("threshold" in e for e in crds.errors(doc, crd))


def test_keda_release_and_values(prod_run: harness.RunResult) -> None:
    release = values(prod_run.one("kubernetes:helm.sh/v3:Release", "keda-release"))
    assert (release["name"], release["chart"], release["version"], release["namespace"]) == ("keda", "keda", "2.20.2", "keda")
    assert release["repositoryOpts"] == {"repo": "https://kedacore.github.io/charts"}
    upstream = helm_values.load(shared_path("helm-values", "keda-2.20.2.values.yaml"))
    assert helm_values.unknown_keys(release["values"], upstream) == []
    assert release["values"]["operator"] == {"replicaCount": 2}
    assert (
        "kubernetes:helm.sh/v3:Release::observability-release" in prod_run.one("kubernetes:helm.sh/v3:Release", "keda-release").dependencies
    )
    # IAM-5: KEDA gets no AWS role
    assert "serviceAccount" not in release["values"]
    assert "podIdentity" not in keda_values(parse(stack_data(PROD)).keda)


# -- the ScaledObject -------------------------------------------------------------------------------


def test_triggers(dev_run: harness.RunResult) -> None:
    spec = values(dev_run.one(SCALED_OBJECT))["spec"]
    address = "http://kube-prometheus-stack-prometheus.monitoring.svc.cluster.local:9090"
    assert spec["triggers"] == [
        {
            "type": "prometheus",
            "name": "queue-depth",
            "metricType": "AverageValue",
            "metadata": {
                "serverAddress": address,
                "query": 'sum(vllm:num_requests_waiting{namespace="llama-3-1-8b", model_name="llama-3-1-8b"})',
                "threshold": "5",
                "ignoreNullValues": "false",
                "unsafeSsl": "false",
            },
        },
        {
            "type": "prometheus",
            "name": "kv-cache",
            "metricType": "Value",
            "metadata": {
                "serverAddress": address,
                "query": 'avg(vllm:kv_cache_usage_perc{namespace="llama-3-1-8b", model_name="llama-3-1-8b"})',
                "threshold": "0.8",
                "ignoreNullValues": "false",
                "unsafeSsl": "false",
            },
        },
    ]
    assert address == dev_run.outputs["prometheusUrl"]
    assert spec["fallback"] == {"failureThreshold": 3, "replicas": 1, "behavior": "currentReplicasIfHigher"}
    behavior = spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
    assert behavior["scaleUp"]["stabilizationWindowSeconds"] == 0
    assert behavior["scaleDown"]["stabilizationWindowSeconds"] >= 300
    assert behavior["scaleDown"]["policies"] == [{"type": "Pods", "value": 1, "periodSeconds": 120}]


def test_ttft_guardrail_is_a_value_trigger() -> None:
    data = stack_data(DEV)
    data["models"][0]["autoscaling"] = {"ttftP95Seconds": 1.5}
    cfg = parse(data)
    trigger = scaling.triggers(cfg.models[0], "http://p:9090", cfg.gpu_pools[0])[-1]
    assert trigger["name"] == "ttft-p95"
    assert trigger["metricType"] == "Value"
    assert trigger["metadata"]["threshold"] == "1.5"


def test_ttft_guardrail_reads_zero_when_idle() -> None:
    model = parse(stack_data(DEV)).models[0]
    labels = f'namespace="{model.name}", model_name="{model.name}", pod="a", engine="0"'
    idle = [
        {"series": f'vllm:time_to_first_token_seconds_bucket{{{labels}, le="1"}}', "values": "5x40"},
        {"series": f'vllm:time_to_first_token_seconds_bucket{{{labels}, le="+Inf"}}', "values": "5x40"},
    ]
    tests = [
        {
            "interval": "15s",
            "input_series": idle,
            "promql_expr_test": [{"expr": scaling.ttft_query(model), "eval_time": "5m", "exp_samples": [{"labels": "{}", "value": 0}]}],
        }
    ]
    result = promtool.test_rules([{"name": "none", "rules": []}], tests)
    assert result.returncode == 0, result.stdout + result.stderr


def test_each_trigger_query_returns_exactly_one_sample() -> None:
    model = parse(stack_data(DEV)).models[0]
    ns = model.name
    series = []
    for pod in ("a", "b", "c"):
        for engine in ("0", "1"):
            labels = f'namespace="{ns}", model_name="{ns}", pod="{pod}", engine="{engine}"'
            series += [
                {"series": f"vllm:num_requests_waiting{{{labels}}}", "values": "3x40"},
                {"series": f"vllm:kv_cache_usage_perc{{{labels}}}", "values": "0.5x40"},
                {"series": f'vllm:time_to_first_token_seconds_bucket{{{labels}, le="1"}}', "values": "0+10x40"},
                {"series": f'vllm:time_to_first_token_seconds_bucket{{{labels}, le="+Inf"}}', "values": "0+10x40"},
            ]
    # another model's series in another namespace must not leak into the sums
    series.append({"series": 'vllm:num_requests_waiting{namespace="other", model_name="other", pod="x", engine="0"}', "values": "100x40"})
    tests = [
        {
            "interval": "15s",
            "input_series": series,
            "promql_expr_test": [
                {"expr": scaling.queue_query(model), "eval_time": "5m", "exp_samples": [{"labels": "{}", "value": 18}]},
                {"expr": scaling.kv_cache_query(model), "eval_time": "5m", "exp_samples": [{"labels": "{}", "value": 0.5}]},
                {"expr": scaling.ttft_query(model), "eval_time": "5m", "exp_samples": [{"labels": "{}", "value": 0.95}]},
            ],
        }
    ]
    result = promtool.test_rules([{"name": "none", "rules": []}], tests)
    assert result.returncode == 0, result.stdout + result.stderr


# -- the pod -------------------------------------------------------------------------------------------


def _vllm_deployments(run: harness.RunResult) -> list[Registration]:
    """The models' Deployments (not the headroom placeholders')."""
    return [r for r in run.of_type(DEPLOYMENT) if r.parent.startswith("llmplatform:index:VllmModel::") and r.name.endswith("-deployment")]


def test_pod_meets_pod_security_restricted(prod_run: harness.RunResult) -> None:
    for r in prod_run.of_type(DEPLOYMENT):
        pod = values(r)["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        assert pod["automountServiceAccountToken"] is False
        assert all("hostPath" not in v for v in pod.get("volumes", []))
        assert [k for k in ("hostNetwork", "hostPID", "hostIPC") if pod.get(k)] == []
        for c in [*pod.get("initContainers", []), *pod["containers"]]:
            sc = c["securityContext"]
            assert sc["allowPrivilegeEscalation"] is False
            assert sc["capabilities"] == {"drop": ["ALL"]}
            assert sc["readOnlyRootFilesystem"] is True
            assert sc["runAsUser"] >= 10000
            assert not sc.get("privileged")


def test_limits_equal_requests_but_cpu_and_gpu_resource_per_sharing_mode(prod_run: harness.RunResult) -> None:
    cfg = parse(stack_data(PROD))
    pools = {p.name: p for p in cfg.gpu_pools}
    for model in cfg.models:
        resources = _pod(prod_run, model.name)["containers"][0]["resources"]
        requests, limits = resources["requests"], resources["limits"]
        # Burstable on CPU alone: the CPU-bound start may use the node's idle cores; memory and GPUs stay at the request
        assert {k: v for k, v in limits.items() if k != "cpu"} == {k: v for k, v in requests.items() if k != "cpu"}
        assert parse_quantity(limits["cpu"]) > parse_quantity(requests["cpu"])
        assert limits["cpu"] == capacity.cpu_limit(model, pools[model.pool])
        request = gpu_request(model, pools[model.pool])
        assert resources["limits"][request.resource] == str(request.count)
        assert set(resources["limits"]) == {"cpu", "memory", request.resource}
    assert _pod(prod_run, "qwen-2-5-7b")["containers"][0]["resources"]["limits"]["nvidia.com/mig-3g.20gb"] == "1"
    assert _pod(prod_run, "llama-3-3-70b")["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "4"


def test_probes_and_drain(prod_run: harness.RunResult) -> None:
    cfg = parse(stack_data(PROD))
    pools = {p.name: p for p in cfg.gpu_pools}
    for model in cfg.models:
        pod = _pod(prod_run, model.name)
        c = pod["containers"][0]
        startup = c["startupProbe"]
        assert startup["httpGet"] == {"path": "/health", "port": "http"}
        assert startup["periodSeconds"] * startup["failureThreshold"] >= engine_start.startup_budget_seconds(model, pools[model.pool])
        # a replica serves within a period of each probe once its server answers (the budget's probe term)
        assert startup["periodSeconds"] <= 2
        assert c["readinessProbe"]["periodSeconds"] <= 2
        assert c["readinessProbe"]["httpGet"]["path"] == "/health"
        assert c["livenessProbe"]["failureThreshold"] >= 3
        assert "initialDelaySeconds" not in c["livenessProbe"]
        sleep = c["lifecycle"]["preStop"]["sleep"]["seconds"]
        shutdown = int(c["args"][c["args"].index("--shutdown-timeout") + 1])
        assert pod["terminationGracePeriodSeconds"] > sleep + shutdown
        if "spot" in pools[model.pool].capacity_types:
            assert pod["terminationGracePeriodSeconds"] <= 110
    # a 70B FP8 model (66 GiB of weights) gets a longer startup budget than an 8B one
    assert (
        _pod(prod_run, "llama-3-3-70b")["containers"][0]["startupProbe"]["failureThreshold"]
        > _pod(prod_run, "llama-3-1-8b")["containers"][0]["startupProbe"]["failureThreshold"]
    )


def test_vllm_arguments(prod_run: harness.RunResult) -> None:
    args = _pod(prod_run, "llama-3-3-70b")["containers"][0]["args"]
    bucket = prod_run.outputs["weightsBucket"]
    # prod streams from the stack's bucket: the pinned revision's prefix, the streamer, no --revision (docs/upstream-facts.md#s3-weights, item 1)
    assert args[0] == f"s3://{bucket}/models/meta-llama/Llama-3.3-70B-Instruct/6f6073b423013f6a7d4d9f39144961bfbfbc386b"
    assert "serve" not in args  # the image's entrypoint is already `vllm serve`
    pairs = dict(zip(args[1::2], args[2::2], strict=False))
    assert "--revision" not in pairs
    assert pairs["--load-format"] == "runai_streamer"
    # AWS's ceil(141 GB / 4) reads in flight; 320Gi x 0.25 over 4 ranks; one shared read for the 4 ranks
    assert json.loads(pairs["--model-loader-extra-config"]) == {
        "concurrency": 36,
        "distributed": True,
        "memory_limit": 320 * 2**30 // 4 // 4,
    }
    assert pairs["--served-model-name"] == "llama-3-3-70b"
    assert pairs["--tensor-parallel-size"] == "4"
    assert pairs["--max-model-len"] == "32768"
    assert pairs["--quantization"] == "fp8_per_tensor"  # online per-tensor fp8 of the bf16 checkpoint (0.33.0 deprecates bare fp8)
    assert pairs["--shutdown-timeout"] == "45"
    assert "--disable-log-stats" not in args


def test_shm_is_memory_backed_and_sized_for_tensor_parallelism(prod_run: harness.RunResult) -> None:
    shm = {m: next(v for v in _pod(prod_run, m)["volumes"] if v["name"] == "shm")["emptyDir"] for m in ("llama-3-1-8b", "llama-3-3-70b")}
    assert shm["llama-3-1-8b"] == {"medium": "Memory", "sizeLimit": "1Gi"}
    assert shm["llama-3-3-70b"] == {"medium": "Memory", "sizeLimit": "13Gi"}


def test_hf_token_only_as_a_mounted_secret(dev_run: harness.RunResult) -> None:
    pod = _pod(dev_run, "llama-3-1-8b")
    c = pod["containers"][0]
    assert {"name": "HF_TOKEN_PATH", "value": "/var/run/secrets/huggingface/token"} in c["env"]
    assert not any(e["name"] in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN") for e in c["env"])
    assert {"name": "hf-token", "mountPath": "/var/run/secrets/huggingface", "readOnly": True} in c["volumeMounts"]
    secret = dev_run.one("kubernetes:core/v1:Secret", "model-llama-3-1-8b-hf-token")
    assert values(secret)["stringData"] == {"token": harness.PLACEHOLDER}
    # WS-6: the token value appears nowhere outside a secret wrapper, in any input of any resource
    for r in dev_run.registrations:
        assert harness.PLACEHOLDER not in json.dumps(r.redacted()), r.ref
    assert harness.PLACEHOLDER not in json.dumps(dev_run.redacted_outputs())


def test_vllm_arguments_from_hugging_face(dev_run: harness.RunResult) -> None:
    args = _pod(dev_run, "llama-3-1-8b")["containers"][0]["args"]
    assert args[:3] == ["meta-llama/Llama-3.1-8B-Instruct", "--revision", "0e9e39f249a16976918f6564b8830bc894c89659"]
    assert "--load-format" not in args


def test_no_token_secret_without_a_token() -> None:
    data = stack_data(DEV)
    model = parse(data).models[0]
    doc = builders.deployment(model, parse(data).gpu_pools[0], alb_idle_timeout_seconds=600, hf_token=False)
    assert not any(v["name"] == "hf-token" for v in doc["spec"]["template"]["spec"]["volumes"])


def test_scheduling_on_the_pool(prod_run: harness.RunResult) -> None:
    pod = _pod(prod_run, "llama-3-2-3b")
    assert pod["nodeSelector"] == {"llm-platform.io/gpu-pool": "gpu-l40s-shared"}
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    # two replicas share each time-sliced GPU: spread over zones (two nodes at min), packed within each
    assert pod["topologySpreadConstraints"] == [
        {
            "maxSkew": 1,
            "minDomains": 2,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": builders.selector(cfg_model(PROD, "llama-3-2-3b"))},
            "matchLabelKeys": ["pod-template-hash"],
        }
    ]


def cfg_model(stack: str, name: str) -> Any:
    return next(m for m in parse(stack_data(stack)).models if m.name == name)


@pytest.mark.parametrize("stack", FIXTURES)
def test_replicas_spread_over_zones_only_when_each_fills_a_node(stack: str) -> None:
    """Replicas that fill a node: a preferred zone spread. Replicas that share one, of a model with min >= 2 and
    placement spread: a required zone spread with minDomains 2 (two nodes at min). Otherwise none. Never a
    hostname key: Karpenter counts every node as able to start empty, so it would launch a node per replica."""
    cfg = parse(stack_data(stack))
    run = fixture_run(stack)
    for model in cfg.models:
        pool = cfg.pool(model.pool)
        assert pool is not None
        pod = _pod(run, model.name)
        keys = [(t["topologyKey"], t["whenUnsatisfiable"], t.get("minDomains")) for t in pod.get("topologySpreadConstraints", [])]
        if capacity.fills_a_node(model, pool):
            assert keys == [("topology.kubernetes.io/zone", "ScheduleAnyway", None)]
        elif model.replicas.min >= 2 and model.placement == "spread":
            assert keys == [("topology.kubernetes.io/zone", "DoNotSchedule", 2)]
        else:
            assert keys == []
        assert all(t["topologyKey"] != "kubernetes.io/hostname" for t in pod.get("topologySpreadConstraints", []))


def test_which_prod_models_pack(prod_run: harness.RunResult) -> None:
    spread = {
        m: [t["whenUnsatisfiable"] for t in _pod(prod_run, m).get("topologySpreadConstraints", [])]
        for m in ("llama-3-1-8b", "llama-3-3-70b", "qwen-2-5-7b", "llama-3-2-3b")
    }
    # the 8B model fills a single-GPU node; the fixture packs the 70B and MIG models (placement: pack, warned);
    # the time-sliced 3B model spreads over two zones
    assert spread == {"llama-3-1-8b": ["ScheduleAnyway"], "llama-3-3-70b": [], "qwen-2-5-7b": [], "llama-3-2-3b": ["DoNotSchedule"]}


# -- the objects around the pod -----------------------------------------------------------------------


def _labels_match(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


@pytest.mark.parametrize("stack", FIXTURES)
def test_selectors_are_consistent(stack: str) -> None:
    run = fixture_run(stack)
    monitor = values(run.one("kubernetes:monitoring.coreos.com/v1:PodMonitor", "observability-vllm"))["spec"]
    for model in parse(stack_data(stack)).models:
        # the model's own objects (its gateway's budgets beside them have names of their own)
        objects = {
            d["kind"]: d
            for d in _model_objects(run, model.name).values()
            if d["kind"] != "NetworkPolicy" and d["metadata"]["name"] == model.name
        }
        workload = objects.get("Deployment") or objects["LeaderWorkerSet"]
        # the serving pods (a group's leaders, with the labels LeaderWorkerSet adds), and a group's workers
        (_, serving), *workers = running_pods(workload)
        pod_labels = serving["metadata"]["labels"]
        container_ports = serving["spec"]["containers"][0]["ports"]
        ports, port_names = {p["containerPort"] for p in container_ports}, {p["name"] for p in container_ports}
        if workload["kind"] == "Deployment":
            assert _labels_match(workload["spec"]["selector"]["matchLabels"], pod_labels)
        assert _labels_match(objects["Service"]["spec"]["selector"], pod_labels)
        assert objects["Service"]["spec"]["type"] == "ClusterIP"
        # numeric and equal to the Service port, as the network policy controller needs to admit its address
        assert objects["Service"]["spec"]["ports"][0]["targetPort"] in ports
        assert objects["Service"]["spec"]["ports"][0]["targetPort"] == objects["Service"]["spec"]["ports"][0]["port"]
        # one disruption at a time over every pod of the model: a group's worker is one of its replica's pods
        for _, pod in [("serving", serving), *workers]:
            assert _labels_match(objects["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"], pod["metadata"]["labels"])
        assert objects["PodDisruptionBudget"]["spec"]["maxUnavailable"] == 1
        assert objects["ScaledObject"]["spec"]["scaleTargetRef"] == {
            "apiVersion": workload["apiVersion"],
            "kind": workload["kind"],
            "name": workload["metadata"]["name"],
        }
        # the shared PodMonitor scrapes these pods on a port they have; a group's headless workers have none
        assert _labels_match(monitor["selector"]["matchLabels"], pod_labels)
        assert monitor["podMetricsEndpoints"][0]["port"] in port_names
        for _, worker in workers:
            assert not _labels_match(objects["Service"]["spec"]["selector"], worker["metadata"]["labels"])
            assert "ports" not in worker["spec"]["containers"][0]


def test_network_policies(dev_run: harness.RunResult) -> None:
    policies = {r.name: values(r) for r in dev_run.of_type("kubernetes:networking.k8s.io/v1:NetworkPolicy")}
    deny = policies["model-llama-3-1-8b-netpol-default-deny"]["spec"]
    assert deny == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
    vllm = policies["model-llama-3-1-8b-netpol-llama-3-1-8b"]["spec"]
    # Prometheus' pods and the model's gateway (its proxies and pickers) only: no load balancer subnet, no client
    assert vllm["ingress"] == [
        {
            "from": [
                {
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
                    "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}},
                },
                {"podSelector": {"matchLabels": {"llm-d-router-proxy": "llama-3-1-8b-proxy"}}},
                {"podSelector": {"matchLabels": {"llm-d-router-gateway": "llama-3-1-8b-epp"}}},
            ],
            "ports": [{"protocol": "TCP", "port": 8000}],
        }
    ]
    # the ALB (an internal one: its interfaces in the private subnets, not the whole 10.40.0.0/16) reaches the proxies
    proxy = policies["model-llama-3-1-8b-netpol-llama-3-1-8b-proxy"]["spec"]
    assert proxy["podSelector"] == {"matchLabels": {"llm-d-router-proxy": "llama-3-1-8b-proxy"}}
    assert proxy["ingress"][:2] == [
        {
            "from": [{"ipBlock": {"cidr": "10.40.0.0/18"}}, {"ipBlock": {"cidr": "10.40.64.0/18"}}],
            "ports": [{"protocol": "TCP", "port": 8081}],
        },
        {
            "from": [{"ipBlock": {"cidr": "10.40.0.0/18"}}, {"ipBlock": {"cidr": "10.40.64.0/18"}}],
            "ports": [{"protocol": "TCP", "port": 19001}],
        },
    ]
    # HTTPS to public addresses only: nothing in the VPC, the cluster or link-local
    https = vllm["egress"][1]
    assert https["ports"] == [{"protocol": "TCP", "port": 443}]
    assert https["to"] == [
        {"ipBlock": {"cidr": "0.0.0.0/0", "except": ["10.0.0.0/8", "100.64.0.0/10", "169.254.0.0/16", "172.16.0.0/12", "192.168.0.0/16"]}}
    ]


def test_namespace_is_restricted_and_ready_for_alb_readiness_gates(dev_run: harness.RunResult) -> None:
    labels = values(dev_run.one("kubernetes:core/v1:Namespace", "model-llama-3-1-8b-namespace"))["metadata"]["labels"]
    # beside a gateway: baseline enforced (the router chart gives the picker no securityContext), restricted audited and warned
    assert labels["pod-security.kubernetes.io/enforce"] == "baseline"
    assert labels["pod-security.kubernetes.io/audit"] == labels["pod-security.kubernetes.io/warn"] == "restricted"
    assert labels["elbv2.k8s.aws/pod-readiness-gate-inject"] == "enabled"
    sa = values(dev_run.one("kubernetes:core/v1:ServiceAccount", "model-llama-3-1-8b-service-account"))
    assert sa["automountServiceAccountToken"] is False


def test_model_waits_for_its_dependencies(prod_run: harness.RunResult) -> None:
    # A dependency on a component is a dependency on all its children, releases included.
    deployment = prod_run.one(DEPLOYMENT, "model-qwen-2-5-7b-deployment")
    assert {
        "kubernetes:helm.sh/v3:Release::gpu-operator-release",
        "kubernetes:helm.sh/v3:Release::keda-release",
        "kubernetes:helm.sh/v3:Release::observability-release",
        "kubernetes:karpenter.sh/v1:NodePool::karpenter-gpu-a100-mig",
    } <= set(deployment.dependencies)


def test_models_output(prod_run: harness.RunResult) -> None:
    assert prod_run.outputs["models"]["qwen-2-5-7b"] == {
        "namespace": "qwen-2-5-7b",
        "service": "qwen-2-5-7b-proxy",
        "url": "http://qwen-2-5-7b-proxy.qwen-2-5-7b.svc.cluster.local:8081/v1",
        "host": None,
        "servedModelName": "qwen-2-5-7b",
        "baseUrl": "https://qwen-2-5-7b.llm.internal.example.com/v1",
        "weightsSource": "s3",
        "scaleUpSeconds": {
            # on a p4d.24xlarge (its MIG pool): a p-family node, 96 vCPUs unpack at SOCI's measured rate, 400 Gbps
            "hit": 66,
            "miss": 212,
            "terms": {
                "signal": 20,
                "nodeLaunch": 91,
                "imagePull": 55,
                "weights": 2,
                "engineStart": 41,
                "probe": 2,
                "loadBalancer": 1,
            },
            # the engine-start term's parts (config/derived/engine.py): a compile-cache hit
            "engine": {"cacheCopy": 1.0, "boot": 30.1, "tensorParallel": 0.0, "kvProfiling": 0.0, "compile": 6.0, "cudaGraphs": 3.7},
            # the slow end of each term's sources (config/derived/scaleup.py)
            "pessimistic": {
                "hit": 111,
                "miss": 541,
                "terms": {
                    "signal": 20,
                    "nodeLaunch": 190,
                    "imagePull": 240,
                    "weights": 2,
                    "engineStart": 86,
                    "probe": 2,
                    "loadBalancer": 1,
                },
                "engine": {"cacheCopy": 0.0, "boot": 48.0, "tensorParallel": 0.0, "kvProfiling": 0.0, "compile": 34.0, "cudaGraphs": 3.7},
            },
        },
    }
    assert sorted(prod_run.outputs["models"]) == ["llama-3-1-8b", "llama-3-2-3b", "llama-3-3-70b", "qwen-2-5-7b"]


# -- behind the ALB ---------------------------------------------------------------------------------


def _idle_timeout(run: harness.RunResult) -> int | None:
    for r in run.of_type("kubernetes:networking.k8s.io/v1:Ingress"):
        attributes = values(r)["metadata"]["annotations"]["alb.ingress.kubernetes.io/load-balancer-attributes"]
        return int(attributes.split("idle_timeout.timeout_seconds=")[1].split(",")[0])
    return None


@pytest.mark.parametrize("stack", FIXTURES)
def test_vllm_keeps_connections_open_longer_than_the_alb(stack: str) -> None:
    run = fixture_run(stack)
    idle = _idle_timeout(run) or parse(stack_data(stack)).ingress.idle_timeout_seconds
    for r in _vllm_deployments(run):
        container = values(r)["spec"]["template"]["spec"]["containers"][0]
        env = {e["name"]: e.get("value") for e in container["env"]}
        # the target's keep-alive outlives the ALB's idle timeout, so the ALB never reuses a closed connection
        assert int(env["VLLM_HTTP_TIMEOUT_KEEP_ALIVE"]) > idle
        # an idle stream sends an SSE comment well inside the idle timeout
        args = container["args"]
        interval = int(args[args.index("--sse-keep-alive-interval") + 1])
        assert 0 < interval < idle


def test_keep_alive_follows_the_configured_idle_timeout() -> None:
    run = fixture_run("internet-facing-tls")
    assert _idle_timeout(run) == 900
    deployment = next(values(r) for r in run.of_type("kubernetes:apps/v1:Deployment") if values(r)["metadata"]["name"] == "llama-3-1-8b")
    env = {e["name"]: e.get("value") for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["VLLM_HTTP_TIMEOUT_KEEP_ALIVE"] == "920"


@pytest.mark.parametrize("stack", FIXTURES)
def test_ingress_waits_as_long_as_the_controller_needs(stack: str) -> None:
    for r in fixture_run(stack).of_type("kubernetes:networking.k8s.io/v1:Ingress"):
        assert r.custom_timeouts == {"create": "20m", "update": "20m"}


@pytest.mark.parametrize("stack", FIXTURES)
def test_every_cache_is_on_the_cache_volume_and_the_user_has_a_name(stack: str) -> None:
    for r in _vllm_deployments(fixture_run(stack)):
        container = values(r)["spec"]["template"]["spec"]["containers"][0]
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert env["USER"] == env["LOGNAME"] == "vllm"
        caches = {k: v for k, v in env.items() if k.endswith(("_HOME", "_CACHE_ROOT", "_CACHE_DIR", "_CACHE_PATH", "_WORKSPACE_BASE"))}
        assert {
            "HF_HOME",
            "VLLM_CACHE_ROOT",
            "XDG_CACHE_HOME",
            "TRITON_CACHE_DIR",
            "TORCHINDUCTOR_CACHE_DIR",
            "FLASHINFER_WORKSPACE_BASE",
            "CUDA_CACHE_PATH",
        } <= set(caches)
        assert all(v.startswith(builders.CACHE_DIR + "/") for v in caches.values()), caches
        mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
        assert mounts[builders.CACHE_DIR] == "cache"
