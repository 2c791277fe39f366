"""karpenter.nodeRepair: a stack choice, off by default, rendered as Karpenter's NodeRepair gate, with a warning for
every pool a forceful 1.14.1 repair would take to zero nodes (issue 33, item 2)."""

from __future__ import annotations

from typing import Any

from offline import harness
from tests.conftest import DEV, PROD, fixture_input, fixture_run, new_problems_after, stack_data, values
from tests.support.mutations import m0


def _on(d: dict[str, Any]) -> None:
    d.setdefault("karpenter", {}).update(nodeRepair=True)


def _gate(run: harness.RunResult) -> object:
    release = next(r for r in run.of_type("kubernetes:helm.sh/v3:Release") if r.name == "karpenter-release")
    return values(release)["values"]["settings"]["featureGates"]["nodeRepair"]


def test_the_gate_follows_the_stack_and_is_off_by_default() -> None:
    assert _gate(fixture_run(PROD)) is False
    data = stack_data(DEV)
    _on(data)
    assert _gate(harness.run(fixture_input(DEV, overrides={"llm-platform:karpenter": data["karpenter"]}))) is True


def test_a_pool_with_one_node_at_min_is_warned_and_two_are_not() -> None:
    (problem,) = new_problems_after(_on, DEV)
    assert problem.startswith("karpenter.nodeRepair: repairs gpu-l4-a10g's nodes forcefully")
    assert "keeps 1 node of it at min" in problem
    # the boundary: two replicas spread over two zones keep two nodes at min
    assert new_problems_after(lambda d: (_on(d), m0(d)["replicas"].update(min=2)), DEV) == []


def test_prod_names_its_one_node_pools() -> None:
    found = new_problems_after(_on, PROD)
    assert [p.split("'")[0] for p in found] == ["karpenter.nodeRepair: repairs gpu-h100", "karpenter.nodeRepair: repairs gpu-a100-mig"]


def test_repair_without_the_agent_is_warned_and_with_it_is_not() -> None:
    def repair_without_agent(d: dict[str, Any]) -> None:
        _on(d)
        d["nodeMonitoring"] = {"enabled": False}

    found = new_problems_after(repair_without_agent, PROD)
    assert any(p.startswith("karpenter.nodeRepair: is on but nodeMonitoring.enabled is false") for p in found), found
    assert not any("nodeMonitoring.enabled is false" in p for p in new_problems_after(_on, PROD))
