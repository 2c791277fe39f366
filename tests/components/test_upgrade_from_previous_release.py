"""The `up` from the previous release, walked on the render (issue 44, item 3).

The previous release's front door is kept beside the tests as it rendered (`tests/fixtures/previous_release/`:
the fixture stack's golden render at main `bb0b304` for prod, where the ALB reached vLLM itself, and at
`b7eae39` for dev, where a model at zero sat behind the KEDA HTTP add-on's interceptor). The engine keys
state by identity (type chain and name): an old resource whose identity the new render keeps is updated
(or replaced, when a field that cannot change does), one it drops is deleted at the end of the `up`, and a
resource is created or updated only after everything it depends on. So what a caller sees during the
upgrade follows from the two renders and the new render's dependencies:

- the ALB and its DNS name stay (every old Ingress is kept, in the same group; a replacement creates first);
- the ALB's rule moves only to proxies that are all ready, and a picker that is ready;
- vLLM stops admitting the old front door (the ALB's subnets, the interceptor) only after the Ingress has
  moved; what is left is the load balancer controller's switch of the rule to the proxies' new target
  group (its reaction, then one health check of a newly registered target: wave3-facts Part B §2.1).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from builders.gateway import proxies, router
from offline import harness
from tests.conftest import fixture_run, parse, stack_data, values

PREVIOUS = Path(__file__).resolve().parents[1] / "fixtures" / "previous_release"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "gateway.md"
INGRESS = "kubernetes:networking.k8s.io/v1:Ingress"
POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
BUDGET = "kubernetes:policy/v1:PodDisruptionBudget"
GROUP = "alb.ingress.kubernetes.io/group.name"
ORDER = "alb.ingress.kubernetes.io/group.order"
INTERVAL = "alb.ingress.kubernetes.io/healthcheck-interval-seconds"
STACKS = ("full-prod", "scale-to-zero-dev")


def _previous(stack: str) -> list[dict[str, Any]]:
    data = json.loads((PREVIOUS / f"{stack}.json").read_text())
    assert data["stack"] == stack
    return list(data["resources"])


def _key(type_: str, parent: str | None, name: str) -> tuple[str, str | None, str]:
    return type_, parent, name


def _new(run: harness.RunResult) -> dict[tuple[str, str | None, str], Any]:
    return {_key(r.type, r.parent, r.name): r for r in run.registrations}


def _after(run: harness.RunResult, ref: str) -> set[str]:
    """Everything the resource waits for, directly or through what it waits for."""
    deps = {r.ref: r.dependencies for r in run.registrations}
    seen: set[str] = set()
    todo = list(deps.get(ref, []))
    while todo:
        d = todo.pop()
        if d not in seen:
            seen.add(d)
            todo.extend(deps.get(d, []))
    return seen


def _foreign_sources(policy: dict[str, Any]) -> Iterator[str]:
    """The sources a vLLM policy admits that are not the model's own gateway or Prometheus: address blocks
    (the ALB's subnets) and pods of another component (the HTTP add-on's interceptor)."""
    for rule in policy["spec"].get("ingress", []):
        for peer in rule.get("from", []):
            if "ipBlock" in peer:
                yield peer["ipBlock"]["cidr"]
            elif peer.get("podSelector", {}).get("matchLabels", {}).get("app.kubernetes.io/component") == "interceptor":
                yield "the interceptor"


@pytest.fixture(scope="module", params=STACKS)
def upgrade(request: pytest.FixtureRequest) -> tuple[str, list[dict[str, Any]], harness.RunResult]:
    return request.param, _previous(request.param), fixture_run(request.param)


def test_every_front_door_is_kept_so_the_alb_and_its_name_stay(upgrade: tuple[str, list[dict[str, Any]], harness.RunResult]) -> None:
    stack, old, run = upgrade
    new = _new(run)
    ingresses = [o for o in old if o["type"] == INGRESS]
    assert ingresses, f"{stack}: the previous release had a front door"
    for o in ingresses:
        kept = new.get(_key(o["type"], o["parent"], o["name"]))
        assert kept is not None, f"{stack}: {o['name']} would be deleted: its group, and with it the ALB, could go empty"
        before, after = o["inputs"]["metadata"], values(kept)["metadata"]
        assert after["annotations"][GROUP] == before["annotations"][GROUP]
        if after["namespace"] != before["namespace"]:
            # a replacement: the new object first (its rule ahead of the old one's), then the old deleted
            assert not kept.delete_before_replace, f"{stack}: {o['name']} would leave its group empty"
            assert int(after["annotations"][ORDER]) < int(before["annotations"].get(ORDER, "0"))


def test_the_alb_moves_only_to_ready_proxies_with_a_ready_picker(upgrade: tuple[str, list[dict[str, Any]], harness.RunResult]) -> None:
    stack, _, run = upgrade
    for model in parse(stack_data(stack)).models:
        ingress = run.one(INGRESS, f"model-{model.name}-ingress")
        waits = _after(run, ingress.ref)
        budgets = {
            f"{BUDGET}::model-{model.name}-pdb-{router.picker_name(model)}",
            f"{BUDGET}::model-{model.name}-pdb-{router.proxy_name(model)}",
        }
        assert budgets <= waits, f"{stack}: {model.name}'s Ingress moves before its gateway is ready"
        assert f"kubernetes:apps/v1:Deployment::model-{model.name}-proxies" in waits


def test_vllm_stops_admitting_the_old_front_door_only_after_the_ingress_moved(
    upgrade: tuple[str, list[dict[str, Any]], harness.RunResult],
) -> None:
    stack, old, run = upgrade
    new = _new(run)
    tightened = 0
    for o in old:
        if o["type"] != POLICY or not o["name"].startswith("model-"):
            continue
        foreign = set(_foreign_sources(o["inputs"]))
        if not foreign:
            continue
        kept = new.get(_key(o["type"], o["parent"], o["name"]))
        assert kept is not None, f"{stack}: {o['name']} deleted: vLLM would lose its allow rules under its deny"
        # the change is real: the new policy admits none of the old front door
        assert not foreign & set(_foreign_sources(values(kept))), f"{stack}: {o['name']} still admits {foreign}"
        namespace = o["inputs"]["metadata"]["namespace"]
        ingress = f"{INGRESS}::model-{namespace}-ingress"
        assert ingress in _after(run, kept.ref), f"{stack}: {o['name']} tightens before the ALB has moved"
        tightened += 1
    assert tightened, f"{stack}: the previous release's vLLM admitted a front door (the fixture lost it)"
    # the interceptor's own policy goes with the add-on, at the end of the `up` (deletions run last)
    for o in old:
        if o["name"] == "network-policies-keda-interceptor":
            assert _key(o["type"], o["parent"], o["name"]) not in new


def test_the_left_window_is_the_controllers_switch_and_the_docs_state_it(prod_run: harness.RunResult) -> None:
    """vLLM's policy is applied right after the Ingress; until the controller has pointed the rule at the proxies'
    new target group and they pass one check, the ALB's requests to vLLM are dropped (502/504)."""
    intervals = {int(values(r)["metadata"]["annotations"][INTERVAL]) for r in prod_run.of_type(INGRESS)}
    window = proxies.CONTROLLER_REACTION_SECONDS + max(intervals)
    assert window <= 15
    text = " ".join(DOCS.read_text().split())
    section = text[text.index("## Upgrading from the pre-gateway release") :]
    assert re.search(rf"about {window} s\b", section), f"docs/gateway.md's upgrade section should state the {window} s window"
