"""The EKS node monitoring agent (issue 33, item 1): on every node, and exactly one DCGM host engine on
every GPU node, proven from the render: which engines the rendered values start on each node the
stack's NodePools (and the system group) make, read with the pinned charts' defaults."""

from __future__ import annotations

from typing import Any

import pytest

from builders import network_policies as netpol
from builders import node_monitoring
from config.derived.scheduling import uncovered
from config.facts.conventions import SYSTEM_NODE_LABEL
from offline import harness
from offline.mocks import Registration
from tests.conftest import DEV, FIXTURES, fixture_input, fixture_run, problems_after, shared_path, stack_data, values
from tests.support.program import run_patched
from tests.validators import helm_values

RELEASE = "kubernetes:helm.sh/v3:Release"
NODEPOOL = "kubernetes:karpenter.sh/v1:NodePool"
CHART = "eks-node-monitoring-agent-1.7.0.values.yaml"


def _release(regs: list[Registration], name: str) -> dict[str, Any] | None:
    found = [values(r) for r in regs if r.type == RELEASE and values(r)["name"] == name]
    return found[0] if found else None


def _affinity_selects(affinity: dict[str, Any], labels: dict[str, str]) -> bool:
    """Required node affinity: any term whose every expression holds (In, NotIn, Exists as the scheduler reads them)."""
    terms = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]

    def holds(e: dict[str, Any]) -> bool:
        if e["operator"] == "In":
            return labels.get(e["key"]) in e["values"]
        if e["operator"] == "NotIn":
            return labels.get(e["key"]) not in e["values"]
        if e["operator"] == "Exists":
            return e["key"] in labels
        raise AssertionError(f"operator {e['operator']} not read here")

    return any(all(holds(e) for e in term["matchExpressions"]) for term in terms)


def _gpu_nodes(run: harness.RunResult) -> list[tuple[str, dict[str, str], list[dict[str, str]]]]:
    """(pool, labels, taints) of a node each GPU NodePool launches: its template's labels and the
    single-valued In requirements (arch), its taints."""
    nodes = []
    for r in run.of_type(NODEPOOL):
        spec = values(r)["spec"]["template"]
        labels = dict(spec["metadata"]["labels"])
        for req in spec["spec"]["requirements"]:
            if req["operator"] == "In" and len(req["values"]) == 1:
                labels.setdefault(req["key"], req["values"][0])
        nodes.append((values(r)["metadata"]["name"], labels, spec["spec"]["taints"]))
    return nodes


def engines(regs: list[Registration], labels: dict[str, str], taints: list[dict[str, str]]) -> list[str]:
    """The DCGM host engines the render starts on a node with these labels and taints."""
    found = []
    agent = _release(regs, node_monitoring.RELEASE)
    if agent is not None:
        dcgm = agent["values"]["dcgmAgent"]
        if _affinity_selects(dcgm["affinity"], labels) and not uncovered(taints, dcgm["tolerations"]):
            found.append(node_monitoring.DCGM_SERVER)
    gpu = _release(regs, "gpu-operator")
    assert gpu is not None
    operator = gpu["values"]
    on_gpu_node = "nvidia.com/gpu" in {t["key"] for t in taints}  # the operator's operands run on GPU nodes only
    if on_gpu_node:
        exporter = operator["dcgmExporter"]
        env = {e["name"]: e["value"] for e in exporter.get("env", [])}
        if operator.get("dcgm", {}).get("enabled"):
            found.append("nvidia-dcgm")
        elif "DCGM_REMOTE_HOSTENGINE_INFO" not in env:
            found.append("dcgm-exporter (embedded)")
        elif env["DCGM_REMOTE_HOSTENGINE_INFO"].startswith("localhost") and exporter.get("hostNetwork") is not True:
            # the node's localhost is not the pod's: the operator leaves the exporter off the host network unless told
            # (object_controls.go v26.7.0 reads the base DaemonSet's env, not values'), and it exits without an engine
            found.append("dcgm-exporter (no engine reachable: not on the host network)")
    return found


@pytest.mark.parametrize("stack", FIXTURES)
def test_every_gpu_node_runs_exactly_one_dcgm_host_engine_and_a_system_node_none(stack: str) -> None:
    run = fixture_run(stack)
    nodes = _gpu_nodes(run)
    assert nodes
    for pool, labels, taints in nodes:
        assert engines(run.registrations, labels, taints) == [node_monitoring.DCGM_SERVER], pool
    assert engines(run.registrations, {**SYSTEM_NODE_LABEL, "kubernetes.io/arch": "amd64"}, []) == []
    operator = _release(run.registrations, "gpu-operator")
    assert operator is not None
    # ...and the exporter reads that engine where the agent does: the node's localhost, from the host network
    exporter = operator["values"]["dcgmExporter"]
    assert {"name": "DCGM_REMOTE_HOSTENGINE_INFO", "value": node_monitoring.DCGM_HOST_ENGINE} in exporter["env"]
    assert exporter["hostNetwork"] is True


def test_an_exporter_left_on_the_pod_network_reaches_no_engine() -> None:
    run = fixture_run(DEV)
    _, labels, taints = _gpu_nodes(run)[0]

    def off_host(result: dict[str, Any], *args: Any, **kwargs: Any) -> None:
        result["dcgmExporter"].pop("hostNetwork")

    broken = run_patched(DEV, "builders.gpu_operator.gpu_operator_values", off_host)

    assert "dcgm-exporter (no engine reachable: not on the host network)" in engines(broken, labels, taints)


def test_without_the_agent_the_exporter_embeds_the_one_engine() -> None:
    run = harness.run(fixture_input(DEV, overrides={"llm-platform:nodeMonitoring": {"enabled": False}}))
    assert _release(run.registrations, node_monitoring.RELEASE) is None
    for pool, labels, taints in _gpu_nodes(run):
        assert engines(run.registrations, labels, taints) == ["dcgm-exporter (embedded)"], pool
    # the exporter is a pod of the GPU operator's namespace again: Prometheus is admitted on its port
    flows = [values(r) for r in run.of_type("kubernetes:networking.k8s.io/v1:NetworkPolicy")]
    gpu = next(p for p in flows if p["metadata"]["name"] == "platform-flows" and p["metadata"]["namespace"] == "gpu-operator")
    assert {"protocol": "TCP", "port": netpol.DCGM_EXPORTER_PORT} in gpu["spec"]["ingress"][0]["ports"]


def test_the_engine_lands_on_a_pool_with_its_own_taint_and_not_on_a_pool_it_does_not_list() -> None:
    run = fixture_run(DEV)
    _, labels, taints = _gpu_nodes(run)[0]
    extra = {"key": "dedicated", "value": "llm", "effect": "NoSchedule"}
    assert engines(run.registrations, labels, [*taints, extra]) == []  # what the rendered tolerations do not cover keeps it off
    assert engines(run.registrations, {**labels, "llm-platform.io/gpu-pool": "another-pool"}, taints) == []
    # a pool with that taint gets it tolerated (the tolerations follow the pools)
    data_run = harness.run(
        fixture_input(
            DEV,
            overrides={"llm-platform:gpuPools": [{**stack_data(DEV)["gpuPools"][0], "taints": [extra]}]},
        )
    )
    for pool, labels, taints in _gpu_nodes(data_run):
        assert extra in taints
        assert engines(data_run.registrations, labels, taints) == [node_monitoring.DCGM_SERVER], pool


def test_values_keys_exist_in_the_pinned_chart_and_the_chart_defaults_read_here_hold() -> None:
    upstream = helm_values.load(shared_path("helm-values", CHART))
    for stack in FIXTURES:
        release = _release(fixture_run(stack).registrations, node_monitoring.RELEASE)
        assert release is not None, stack
        assert release["chart"] == "eks-node-monitoring-agent"
        assert release["version"] == "1.7.0"
        assert release["namespace"] == "kube-system"
        assert helm_values.unknown_keys(release["values"], upstream) == [], stack
        assert "tolerations" not in release["values"]["nodeAgent"]  # the chart's: every taint
    assert upstream["nodeAgent"]["tolerations"] == [{"operator": "Exists"}]
    # dcgm-server tolerates nothing by default (GPU nodes are tainted): the platform's tolerations place it
    assert upstream["dcgmAgent"]["tolerations"] == []
    assert helm_values.unknown_keys({"dcgmAgent": {"tolerations": [], "enabled": False}}, upstream) == ["dcgmAgent.enabled"]


@pytest.mark.parametrize(
    ("region", "pulled_from"),
    [("us-east-1", "us-east-1"), ("eu-central-1", "eu-central-1"), ("ap-southeast-2", "ap-southeast-2"), ("af-south-1", "us-west-2")],
)
def test_the_image_comes_from_the_regions_eks_registry_where_it_is_the_same_account(region: str, pulled_from: str) -> None:
    assert node_monitoring.image_region(region) == pulled_from


@pytest.mark.parametrize(
    ("section", "path"),
    [
        ("nodeMonitoring", {"dcgmAgent": {"tolerations": []}}),
        ("nodeMonitoring", {"dcgmAgent": {"affinity": {}}}),
        ("nodeMonitoring", {"nodeAgent": {"tolerations": []}}),
        ("gpuOperator", {"dcgm": {"enabled": True}}),
        ("gpuOperator", {"dcgmExporter": {"env": []}}),
        ("gpuOperator", {"dcgmExporter": {"hostNetwork": False}}),
    ],
)
def test_an_escape_hatch_cannot_start_a_second_engine_or_strand_the_agent(section: str, path: dict[str, Any]) -> None:
    def mutate(data: dict[str, Any]) -> None:
        data.setdefault(section, {})["extraValues"] = path

    found = problems_after(mutate)
    (first,) = path
    (second,) = path[first]
    assert any(p.startswith(f"{section}.extraValues.{first}.{second}") for p in found), found
