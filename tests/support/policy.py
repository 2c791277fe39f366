"""The policy pack's checks run as the engine runs them: a resource's or the stack's validation args, and edits of a render."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pulumi_policy import PolicyCustomTimeouts, PolicyResource, PolicyResourceOptions, ResourceValidationArgs, StackValidationArgs

from offline import harness
from offline.mocks import Registration
from policy import checks
from tests.conftest import edited, values


def resource_args(reg: Registration, props: dict[str, Any] | None = None) -> ResourceValidationArgs:
    opts = PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [], reg.parent)
    return ResourceValidationArgs(
        reg.type,
        props if props is not None else values(reg),
        f"urn:pulumi:test::llm-platform::{reg.type}::{reg.name}",
        reg.name,
        opts,
        None,
    )


def container(props: dict[str, Any]) -> dict[str, Any]:
    c: dict[str, Any] = props["spec"]["template"]["spec"]["containers"][0]
    return c


def stack_of(run: harness.RunResult, change: Callable[[list[Registration]], list[Registration]] | None = None) -> StackValidationArgs:
    return stack_args(change(list(run.registrations)) if change else run.registrations)


def stack_args(regs: list[Registration]) -> StackValidationArgs:
    """The stack as the engine hands it to a stack policy: resources with their dependencies."""
    opts = PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [], None)

    def props(r: Registration) -> dict[str, Any]:
        # a stack policy sees output properties: a role's name is its physical name
        return {"name": r.id, **values(r)} if r.type == "aws:iam/role:Role" and r.id else values(r)

    resources = {
        r.ref: PolicyResource(r.type, props(r), f"urn:pulumi:test::llm-platform::{r.type}::{r.name}", r.name, opts, None, None, [], {})
        for r in regs
    }
    for r in regs:
        resources[r.ref].dependencies.extend(resources[d] for d in r.dependencies if d in resources)
    return StackValidationArgs(list(resources.values()))


def stack_violations(name: str, args: StackValidationArgs) -> list[str]:
    found: list[str] = []
    checks.STACK_CHECKS[name][1](args, lambda message, urn=None: found.append(message))
    return found


def edit_policy(
    namespace: str, name: str, mutate: Callable[[dict[str, Any]], object]
) -> Callable[[list[Registration]], list[Registration]]:
    """The NetworkPolicy `<namespace>/<name>` of the render, changed."""

    def change(regs: list[Registration]) -> list[Registration]:
        (resource,) = [
            r.name
            for r in regs
            if r.type == checks.NETWORK_POLICY and (values(r)["metadata"]["namespace"], values(r)["metadata"]["name"]) == (namespace, name)
        ]
        return edited(regs, checks.NETWORK_POLICY, resource, mutate)

    return change
