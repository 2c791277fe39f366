"""Models bigger than a node (issue 34): the fixture multi-node-405b renders a LeaderWorkerSet of two-node groups
over EFA, scaled by KEDA, on a pool that holds whole groups; read from the render, against the upstream CRDs and
chart values, each property shown failing on a broken copy where a builder could lose it."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
import yaml

from builders import efa, lws
from builders.serving import multinode
from builders.serving.multinode import EFA_RESOURCE
from config.derived import capacity, state
from config.facts import catalog, versions
from config.facts.conventions import EFA_NODE_LABEL, LWS_WORKER_INDEX_LABEL
from offline import harness
from policy.checks import LEADER_WORKER_SET, pod_templates
from tests.conftest import FIXTURES, fixture_input, fixture_run, parse, shared_path, stack_data, values
from tests.support.program import run_patched
from tests.support.workloads import running_pods
from tests.validators import crds, helm_values

STACK = "multi-node-405b"
MODEL = "llama-3-1-405b"
POOL = "gpu-h100-efa"
RELEASE = "kubernetes:helm.sh/v3:Release"
NODE_CLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"
SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"
CONFIG_FILE = "kubernetes:yaml/v2:ConfigFile"


def _run() -> harness.RunResult:
    return fixture_run(STACK)


def _lws(run: harness.RunResult | None = None) -> dict[str, Any]:
    return values((run or _run()).one(LEADER_WORKER_SET, f"model-{MODEL}-leaderworkerset"))


def _release(run: harness.RunResult, name: str) -> dict[str, Any]:
    (found,) = [values(r) for r in run.of_type(RELEASE) if values(r)["name"] == name]
    return found


def _args(container: dict[str, Any]) -> dict[str, str]:
    args = container["args"]
    return {a: args[i + 1] for i, a in enumerate(args[:-1]) if a.startswith("--")}


def _vllm(template: dict[str, Any]) -> dict[str, Any]:
    (container,) = [c for c in template["spec"]["containers"] if c["name"] == "vllm"]
    return container


# -- the groups ---------------------------------------------------------------------------------------------------


def test_the_leader_worker_set_is_valid_against_the_crd() -> None:
    doc = _lws()
    assert crds.errors(doc, shared_path("crds", "leaderworkerset.x-k8s.io_leaderworkersets.yaml")) == []
    broken = json.loads(json.dumps(doc))
    broken["spec"]["leaderWorkerTemplate"]["restartPolicy"] = "RestartGroup"
    assert crds.errors(broken, shared_path("crds", "leaderworkerset.x-k8s.io_leaderworkersets.yaml"))


def test_a_replica_is_a_group_of_its_nodes_restarted_and_rolled_whole() -> None:
    model = parse(stack_data(STACK)).models[0]
    spec = _lws()["spec"]
    assert spec["leaderWorkerTemplate"]["size"] == model.pipeline_parallel_size == 2
    assert spec["replicas"] == model.replicas.min
    assert spec["leaderWorkerTemplate"]["restartPolicy"] == "RecreateGroupOnPodRestart"
    assert spec["rolloutStrategy"] == {"type": "RollingUpdate", "rollingUpdateConfiguration": {"maxSurge": 1, "maxUnavailable": 0}}
    registration = _run().one(LEADER_WORKER_SET, f"model-{MODEL}-leaderworkerset")
    # the HPA owns the count after creation, as on a Deployment
    assert registration.ignore_changes == ["spec.replicas"]
    # after the controller that admits and runs it (its CRDs before that)
    assert {"kubernetes:helm.sh/v3:Release::lws-release", "kubernetes:yaml/v2:ConfigFile::lws-leaderworkersets"} <= set(
        registration.dependencies
    )


def test_every_rank_runs_its_stage_over_efa_and_only_the_leader_serves() -> None:
    model = parse(stack_data(STACK)).models[0]
    (_, leader), (_, worker) = running_pods(_lws())
    pool = parse(stack_data(STACK)).pool(POOL)
    assert pool is not None
    interfaces = catalog.INSTANCE_TYPES["p5.48xlarge"].efa_interfaces
    assert interfaces == 32
    for template in (leader, worker):
        vllm = _vllm(template)
        args = _args(vllm)
        # the vLLM rule: tensor parallel inside a node (every GPU of it), pipeline parallel across the nodes
        assert args["--tensor-parallel-size"] == "8" == vllm["resources"]["limits"]["nvidia.com/gpu"]
        assert args["--pipeline-parallel-size"] == args["--nnodes"] == str(model.pipeline_parallel_size)
        assert args["--node-rank"] == "$(LWS_WORKER_INDEX)"
        assert args["--master-addr"] == "$(LWS_LEADER_ADDRESS)"
        for side in ("requests", "limits"):
            assert vllm["resources"][side][EFA_RESOURCE] == str(interfaces)
        env = {e["name"]: e.get("value") for e in vllm["env"]}
        assert {name: value for name, value, _ in multinode.EFA_ENV}.items() <= env.items()
        assert env["FI_PROVIDER"] == "efa"
        assert env["NCCL_NVLS_ENABLE"] == "0"
        # each rank streams its weights from S3 in the streamer's distributed mode
        assert json.loads(args["--model-loader-extra-config"])["distributed"] is True
    leader_vllm, worker_vllm = _vllm(leader), _vllm(worker)
    assert "--headless" not in leader_vllm["args"]
    assert "--headless" in worker_vllm["args"]
    assert {"startupProbe", "readinessProbe", "livenessProbe", "ports"} <= set(leader_vllm)
    assert not {"startupProbe", "readinessProbe", "livenessProbe", "ports"} & set(worker_vllm)
    # the worker is the leader's pod but for what only a server needs
    same = {k: v for k, v in leader_vllm.items() if k not in ("args", "ports", "startupProbe", "readinessProbe", "livenessProbe")}
    assert {k: v for k, v in worker_vllm.items() if k != "args"} == same
    assert worker_vllm["args"] == [*leader_vllm["args"], "--headless"]
    assert leader["metadata"]["labels"][LWS_WORKER_INDEX_LABEL] == "0" != worker["metadata"]["labels"][LWS_WORKER_INDEX_LABEL]


def test_only_the_leader_holds_the_api_key() -> None:
    inp = fixture_input(STACK)
    config = {**inp.config, "llm-platform:apiKeys": json.dumps({MODEL: "k" * 40})}
    run = harness.run(dataclasses.replace(inp, config=config, secret_keys=[*inp.secret_keys, "llm-platform:apiKeys"]))
    leader, worker = (_vllm(t) for t in pod_templates(_lws(run)))
    assert "VLLM_API_KEY" in {e["name"] for e in leader["env"]}
    assert "VLLM_API_KEY" not in {e["name"] for e in worker["env"]}


def test_keda_scales_the_groups() -> None:
    doc = values(_run().one(SCALED_OBJECT, f"model-{MODEL}-scaledobject"))
    assert doc["spec"]["scaleTargetRef"] == {"apiVersion": multinode.LWS_API_VERSION, "kind": "LeaderWorkerSet", "name": MODEL}
    assert crds.errors(doc, shared_path("crds", "keda.sh_scaledobjects.yaml")) == []
    # the LWS CRD gives KEDA's HPA a scale subresource to drive
    crd = yaml.safe_load(shared_path("crds", "leaderworkerset.x-k8s.io_leaderworkersets.yaml").read_text())
    assert crd["spec"]["versions"][0]["subresources"]["scale"]["specReplicasPath"] == ".spec.replicas"


# -- the pool and its nodes -----------------------------------------------------------------------------------------


def test_the_efa_pools_nodes_get_the_placement_group_and_the_security_group_open_to_itself() -> None:
    run = _run()
    placement = values(run.one("aws:ec2/placementGroup:PlacementGroup", f"efa-{POOL}"))
    assert placement["strategy"] == "cluster"
    group = run.one("aws:ec2/securityGroup:SecurityGroup", "efa-security-group")
    rules = {
        r.type.rsplit(":", 1)[-1]: values(r)
        for r in run.registrations
        if r.type
        in ("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule")
        and r.name.startswith("efa-")
    }
    assert group.id is not None
    assert group.id.startswith("sg-")
    assert sorted(rules) == ["SecurityGroupEgressRule", "SecurityGroupIngressRule"]
    for rule in rules.values():
        assert rule["ipProtocol"] == "-1"
        assert rule["referencedSecurityGroupId"] == rule["securityGroupId"]
        assert rule["securityGroupId"] == group.id
    node_class = values(run.one(NODE_CLASS, f"karpenter-gpu-al2023-{POOL}"))
    assert node_class["spec"]["placementGroupSelector"]["id"].startswith("pg-")
    assert {"id": rules["SecurityGroupIngressRule"]["securityGroupId"]} in node_class["spec"]["securityGroupSelectorTerms"]
    assert crds.errors(node_class, shared_path("crds", "karpenter.k8s.aws_ec2nodeclasses.yaml")) == []
    node_pool = values(run.one(NODE_POOL, f"karpenter-{POOL}"))
    assert EFA_NODE_LABEL.items() <= node_pool["spec"]["template"]["metadata"]["labels"].items()
    zones = [r for r in node_pool["spec"]["template"]["spec"]["requirements"] if r["key"] == "topology.kubernetes.io/zone"]
    assert zones == [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1a"]}]


@pytest.mark.parametrize("stack", FIXTURES)
def test_only_efa_pools_get_efa(stack: str) -> None:
    run, cfg = fixture_run(stack), parse(stack_data(stack))
    efa_pools = sorted(p.name for p in cfg.gpu_pools if p.efa)
    assert sorted(r.name.removeprefix("efa-") for r in run.of_type("aws:ec2/placementGroup:PlacementGroup")) == efa_pools
    for r in run.of_type(NODE_CLASS):
        spec = values(r)["spec"]
        assert ("placementGroupSelector" in spec) == any(r.name.endswith(f"-{p}") for p in efa_pools), r.name
    plugin = [values(r) for r in run.of_type(RELEASE) if values(r)["name"] == efa.RELEASE]
    assert len(plugin) == (1 if efa_pools else 0)
    operator = _release(run, "gpu-operator")["values"]["devicePlugin"]
    assert ("env" in operator) == bool(efa_pools)
    assert (stack == STACK) == bool(efa_pools)


def test_the_efa_device_plugin_runs_on_the_efa_nodes_and_the_nvidia_plugin_leaves_infiniband_alone() -> None:
    run, cfg = _run(), parse(stack_data(STACK))
    plugin = _release(run, efa.RELEASE)
    assert (plugin["chart"], plugin["version"], plugin["namespace"]) == ("aws-efa-k8s-device-plugin", "0.5.30", "kube-system")
    upstream = helm_values.load(shared_path("helm-values", "aws-efa-k8s-device-plugin-v0.5.30.values.yaml"))
    assert helm_values.unknown_keys(plugin["values"], upstream) == []
    assert plugin["values"]["nodeSelector"] == EFA_NODE_LABEL
    pool = cfg.pool(POOL)
    assert pool is not None
    tolerated = {(t["key"], t["effect"]) for t in plugin["values"]["tolerations"] if t["operator"] == "Exists"}
    assert {(t["key"], t["effect"]) for t in pool.node_taints()} <= tolerated
    # every type the catalog says has EFA is one the plugin serves
    supported = set(upstream["supportedInstanceLabels"]["values"])
    assert set(catalog.EFA_INTERFACES) <= supported
    operator = _release(run, "gpu-operator")["values"]["devicePlugin"]
    assert operator["env"] == [{"name": "MOFED_ENABLED", "value": "false"}]


def test_the_leader_worker_set_controller_and_its_crds() -> None:
    run = _run()
    release = _release(run, lws.RELEASE)
    assert (release["chart"], release["version"], release["namespace"]) == (versions.LWS.name, "0.10.0", lws.NAMESPACE)
    # the chart's git values say `main` / Always
    assert release["values"]["image"]["manager"]["tag"] == "v0.10.0"
    assert release["values"]["image"]["manager"]["pullPolicy"] == "IfNotPresent"
    upstream = helm_values.load(shared_path("helm-values", "lws-v0.10.0.values.yaml"))
    # podSecurityContext is a Kubernetes PodSecurityContext the chart renders whole; its values file shows one key of it
    assert helm_values.unknown_keys(release["values"], upstream, allowed=("podSecurityContext.seccompProfile",)) == []
    assert helm_values.unknown_keys(release["values"], upstream) == ["podSecurityContext.seccompProfile"]
    (registration,) = [r for r in run.of_type(RELEASE) if r.name == "lws-release"]
    assert values(registration).get("skipCrds") is True
    files = [r for r in run.of_type(CONFIG_FILE) if r.name.startswith("lws-")]
    assert sorted(values(r)["file"] for r in files) == sorted(url for _, url in versions.LWS_CRDS)
    for _, url in versions.LWS_CRDS:
        assert "/v0.10.0/" in url
        assert shared_path("crds", url.rsplit("/", 1)[1]).exists()
    assert {r.ref for r in files} <= set(registration.dependencies)


# -- what the group costs and waits ---------------------------------------------------------------------------------


def test_the_derived_state_counts_whole_groups() -> None:
    cfg = parse(stack_data(STACK))
    model, pool = cfg.models[0], cfg.pool(POOL)
    assert pool is not None
    s = state.of(cfg).model(MODEL)
    p5 = catalog.INSTANCE_TYPES["p5.48xlarge"]
    assert s.nodes_per_replica["p5.48xlarge"] == 2.0
    assert (s.nodes_at_min, s.nodes_at_max, s.surge_nodes) == (2, 2, 2)
    assert s.gpus_at_min == 16
    assert s.surge_gpus == 16
    assert capacity.replica_hour_prices(model, pool) == [2 * p5.price_per_hour]
    # the weights and one sequence's KV cache over all 16 ranks fit each H100; over one node's 8 they would not
    usable = p5.gpu.memory_gib * model.gpu_memory_utilization  # type: ignore[union-attr]
    per_rank = (capacity.weights_gib(model) + capacity.kv_gib_per_sequence(model)) / 16 + capacity.OVERHEAD_GIB_PER_GPU
    assert capacity.required_gib_per_device(model) == pytest.approx(per_rank)
    assert per_rank <= usable
    one_node = model.model_copy(update={"pipeline_parallel_size": 1})
    assert capacity.required_gib_per_device(one_node) > p5.gpu.memory_gib * model.gpu_memory_utilization  # type: ignore[union-attr]


def efa_on_every_rank(regs: list[Any]) -> list[str]:
    """Every pod of every group requests its node's EFA interfaces, with the EFA environment."""
    found = []
    for r in regs:
        if r.type != LEADER_WORKER_SET:
            continue
        for template in pod_templates(values(r)):
            vllm = _vllm(template)
            env = {e["name"] for e in vllm["env"]}
            if not vllm["resources"]["limits"].get(EFA_RESOURCE) or "FI_PROVIDER" not in env:
                found.append(f"{r.name}: a rank without EFA")
    return found


def test_every_rank_requests_efa_and_a_broken_copy_is_caught() -> None:
    assert efa_on_every_rank(list(_run().registrations)) == []

    def no_efa(result: dict[str, Any], *args: Any, **kwargs: Any) -> None:
        worker = result["spec"]["leaderWorkerTemplate"]["workerTemplate"]
        for side in ("requests", "limits"):
            worker["spec"]["containers"][0]["resources"][side].pop(EFA_RESOURCE, None)

    assert efa_on_every_rank(run_patched(STACK, "builders.serving.multinode.leader_worker_set", no_efa)) != []
