"""Karpenter's upstream IAM template, read for the pinned version, with the names our stacks use; and
the rendered NodePools' disruption settings against their pools' (NK-5)."""

from __future__ import annotations

from typing import Any

from builders.karpenter import iam
from config.sections.stack import StackConfig
from offline.mocks import Registration
from tests.conftest import shared_path, values
from tests.validators import cloudformation

NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"

SCOPE = iam.Scope("llm-prod", "us-east-1", "123456789012")


NODE_ROLE = "arn:aws:iam::123456789012:role/karpenter-node"


QUEUE = "arn:aws:sqs:us-east-1:123456789012:llm-prod"


def upstream_karpenter() -> dict[str, Any]:
    return cloudformation.load(shared_path("iam", "karpenter_cloudformation.yaml"))


def upstream_names() -> dict[str, str]:
    return {
        "ClusterName": SCOPE.cluster_name,
        "AWS::Partition": SCOPE.partition,
        "AWS::Region": SCOPE.region,
        "AWS::AccountId": SCOPE.account_id,
        "AWS::URLSuffix": "amazonaws.com",
        "KarpenterNodeRole.Arn": NODE_ROLE,
        "KarpenterInterruptionQueue.Arn": QUEUE,
    }


def nodepool_disruption_findings(regs: list[Registration], cfg: StackConfig) -> list[str]:
    """NK-5 on every rendered NodePool of a render: it consolidates as its pool is configured
    (`consolidationPolicy`, `consolidateAfter`, budgets); a pool that serves models consolidates
    only `WhenEmpty` unless the pool acknowledges repacking (allowUnderutilizedConsolidation);
    `WhenEmpty` waits (`consolidateAfter` is not 0s) and at least one disruption budget bounds it;
    nodes that expire get a `terminationGracePeriod`. Every pool has its NodePool, and no other."""
    out: list[str] = []
    pools = {p.name: p for p in cfg.gpu_pools}
    rendered = {values(r)["metadata"]["name"]: values(r)["spec"] for r in regs if r.type == NODE_POOL}
    for name in sorted(set(pools) ^ set(rendered)):
        out.append(f"NodePool {name} is rendered without its pool" if name in rendered else f"pool {name} has no NodePool")
    for name in sorted(set(pools) & set(rendered)):
        d, spec = pools[name].disruption, rendered[name]
        disruption, node = spec.get("disruption") or {}, spec["template"]["spec"]
        policy = disruption.get("consolidationPolicy")
        if policy != d.consolidation_policy:
            out.append(f"NodePool {name} consolidates {policy}, but its pool says {d.consolidation_policy}")
        serving = sorted(m.name for m in cfg.models if m.pool == name)
        if serving and policy != "WhenEmpty" and not d.allow_underutilized_consolidation:
            out.append(
                f"NodePool {name} consolidates {policy} under {', '.join(serving)} without allowUnderutilizedConsolidation "
                "(every repack reloads a model)"
            )
        if disruption.get("consolidateAfter") != d.consolidate_after:
            out.append(f"NodePool {name} consolidates after {disruption.get('consolidateAfter')}, not {d.consolidate_after}")
        if policy == "WhenEmpty" and disruption.get("consolidateAfter") in (None, "0s") and not disruption.get("budgets"):
            out.append(f"NodePool {name} removes empty nodes at once with no disruption budget")
        if not disruption.get("budgets"):
            out.append(f"NodePool {name} has no disruption budget")
        if [b.get("nodes") for b in disruption.get("budgets") or []] != [b.nodes for b in d.budgets]:
            out.append(f"NodePool {name}'s disruption budgets are not its pool's")
        expire = node.get("expireAfter", "720h")
        if expire != d.expire_after:
            out.append(f"NodePool {name} expires nodes after {expire}, not {d.expire_after}")
        if expire != "Never" and not node.get("terminationGracePeriod"):
            out.append(f"NodePool {name} expires nodes without a terminationGracePeriod")
    return out
