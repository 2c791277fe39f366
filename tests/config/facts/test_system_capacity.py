"""The system node group holds the system pods with one node lost (config/facts/system_capacity.py)."""

from __future__ import annotations

from typing import Any

import pytest

from config.facts import catalog, system_capacity
from config.sections.stack import StackConfig
from offline import harness
from tests.conftest import DEV, FIXTURES, parse, shared_path, stack_data, values
from tests.validators import helm_values


def _chart_requests(chart: str, path: tuple[str, ...]) -> Any:
    node: Any = helm_values.load(shared_path("helm-values", f"{chart}.values.yaml"))
    for key in path:
        node = node[key]
    return node


def test_chart_defaults_in_the_table_are_the_pinned_charts_defaults() -> None:
    # every fixture's rows: a row only some stacks have (the LeaderWorkerSet controller's) is checked too
    found = {w.name: w for stack in FIXTURES for w in system_capacity.workloads(parse(stack_data(stack))) if w.chart_default}
    rows = list(found.values())
    assert len(rows) >= 5
    for w in rows:
        assert w.chart_default is not None
        chart, path = w.chart_default
        requests = _chart_requests(chart, path)
        assert system_capacity.Requests(str(requests["cpu"]), str(requests["memory"])) == w.requests, w.name


def test_requests_the_program_sets_come_from_the_table(dev_run: harness.RunResult) -> None:
    karpenter = values(dev_run.one("kubernetes:helm.sh/v3:Release", "karpenter-release"))["values"]["controller"]["resources"]
    assert karpenter["requests"] == system_capacity.KARPENTER_CONTROLLER.as_values()
    kps = values(dev_run.one("kubernetes:helm.sh/v3:Release", "observability-release"))["values"]
    assert kps["prometheus"]["prometheusSpec"]["resources"]["requests"] == system_capacity.PROMETHEUS.as_values()


def test_karpenter_replicas_never_share_a_node_upstream() -> None:
    # the table counts Karpenter once per surviving node because the chart requires it
    affinity = helm_values.load(shared_path("helm-values", "karpenter-1.14.1.values.yaml"))["affinity"]
    assert affinity["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == [{"topologyKey": "kubernetes.io/hostname"}]
    row = next(w for w in system_capacity.workloads(parse(stack_data(DEV))) if w.name == "karpenter")
    assert row.one_per_node


def test_allocatable_follows_the_eks_ami_reservations() -> None:
    large = system_capacity.allocatable(catalog.INSTANCE_TYPES["m7i.large"])
    # 2 vCPU: 60m + 10m reserved; 8 GiB less 7.5 % the kernel keeps, 11 x 29 pods + 255 MiB
    # reserved and the 100 MiB eviction threshold (Karpenter's plan for an unseen node)
    assert large == system_capacity.Allocatable(cpu_millis=1930, memory_mib=8192 - 615 - (11 * 29 + 255) - 100)
    assert large.memory_mib == 6903
    xlarge = system_capacity.allocatable(catalog.INSTANCE_TYPES["m7i.xlarge"])
    assert xlarge.cpu_millis == 4000 - (60 + 10 + 5 + 5)
    assert set(system_capacity.MAX_PODS) == {t.name for t in catalog.cpu_instance_types()}


@pytest.mark.parametrize("stack", FIXTURES)
def test_every_fixture_system_group_holds_its_pods_with_a_node_lost(stack: str) -> None:
    assert system_capacity.shortfall(parse(stack_data(stack))) is None


def test_a_larger_type_or_more_nodes_is_what_fits() -> None:
    data = stack_data(DEV)
    data["cluster"]["systemNodeGroup"].update(instanceTypes=["m7i.large"], minSize=3, desiredSize=3, maxSize=4)
    # two m7i.large survive, one Karpenter each (and the node monitoring agent's 10m each); the model's gateway (a picker
    # at 250m, two proxies at 100m) is the 510m short
    short = system_capacity.shortfall(StackConfig.model_validate(data))
    assert short is not None
    assert (short.need.cpu_millis, short.room.cpu_millis) == (3980, 3470)
    data["cluster"]["systemNodeGroup"].update(minSize=4, desiredSize=4, maxSize=4)
    assert system_capacity.shortfall(parse(data)) is None
