"""Boundary pairs of config/checks/multinode.py (see __init__), on the multi-node-405b fixture: Llama-3.1-405B over
two p5.48xlarge (tensorParallelSize 8, pipelineParallelSize 2) on the EFA pool gpu-h100-efa, in us-east-1a."""

from __future__ import annotations

from typing import Any

from tests.config.checks.boundaries import Mutation, Pair
from tests.support.mutations import m0, p0

STACK = "multi-node-405b"
POOL = "gpuPools[gpu-h100-efa]"
MODEL = "models[llama-3-1-405b]"


def _model(**fields: Any) -> Mutation:
    def mutate(d: dict[str, Any]) -> None:
        m0(d).update(fields)

    return mutate


def _pool(**fields: Any) -> Mutation:
    def mutate(d: dict[str, Any]) -> None:
        p0(d).update(fields)

    return mutate


def _without_efa(nodes: int) -> Mutation:
    def mutate(d: dict[str, Any]) -> None:
        p0(d)["efa"] = False
        m0(d)["pipelineParallelSize"] = nodes

    return mutate


PAIRS = [
    Pair(
        "multinode.rule_multi_node",
        "a pool without EFA: pipelineParallelSize 2 vs 1",
        bad=_without_efa(2),
        good=_without_efa(1),
        path=f"{POOL}.efa",
        fix="Fix: set efa: true on the pool",
        stack=STACK,
    ),
    Pair(
        "multinode.rule_multi_node",
        "tensorParallelSize 4 (half of a node's 8 GPUs) vs 8",
        bad=_model(tensorParallelSize=4),
        good=_model(tensorParallelSize=8),
        path=f"{MODEL}.tensorParallelSize",
        fix="Fix: set tensorParallelSize: 8",
        stack=STACK,
    ),
    Pair(
        "multinode.rule_multi_node",
        "a time-sliced pool vs whole GPUs",
        bad=_pool(sharing={"timeSlicing": {"replicas": 2}}),
        good=_pool(sharing={}),
        path=f"{MODEL}.pipelineParallelSize",
        fix="move the model to a pool of whole GPUs",
        stack=STACK,
    ),
    Pair(
        "multinode.rule_multi_node",
        "headroom 8 (one node's GPUs) vs 0",
        bad=_pool(headroom=8),
        good=_pool(headroom=0),
        path=f"{POOL}.headroom",
        fix="Fix: remove headroom from the pool",
        stack=STACK,
    ),
    Pair(
        "multinode.rule_efa_pool",
        "a type without EFA beside p5.48xlarge (p5.4xlarge) vs p5.48xlarge alone",
        bad=_pool(instanceTypes=["p5.48xlarge", "p5.4xlarge"]),
        good=_pool(instanceTypes=["p5.48xlarge"]),
        path=f"{POOL}.instanceTypes",
        fix="Fix: list only EFA types",
        stack=STACK,
    ),
    Pair(
        "multinode.rule_efa_pool",
        "types of 32 and 16 EFA interfaces (p5.48xlarge, p5en.48xlarge) vs one count",
        bad=_pool(instanceTypes=["p5.48xlarge", "p5en.48xlarge"]),
        good=_pool(instanceTypes=["p5en.48xlarge"]),
        path=f"{POOL}.instanceTypes",
        fix="Fix: keep the types of one count (16 or 32)",
        stack=STACK,
    ),
    Pair(
        "multinode.rule_efa_pool",
        "two zones vs one",
        bad=_pool(zones=["us-east-1a", "us-east-1c"]),
        good=_pool(zones=["us-east-1a"]),
        path=f"{POOL}.zones",
        fix="Fix: set zones to one zone",
        stack=STACK,
    ),
    Pair(
        "multinode.rule_efa_pool",
        "no zones (every zone of the VPC) vs one",
        bad=_pool(zones=[]),
        good=_pool(zones=["us-east-1c"]),
        path=f"{POOL}.zones",
        fix="Fix: set zones to one zone",
        stack=STACK,
    ),
    Pair(
        "multinode.rule_efa_pool",
        "an EFA pool whose model is on one node (pipelineParallelSize 1) vs 2",
        bad=_model(pipelineParallelSize=1),
        good=_model(pipelineParallelSize=2),
        path=f"{POOL}.efa",
        fix="Fix: remove efa: true",
        stack=STACK,
        severity="warning",
    ),
    Pair(
        "fit.rule_gpu_limits",
        "gpuLimit one GPU below a group of two 8-GPU nodes plus a surge group (31 vs 32)",
        bad=_pool(gpuLimit=31),
        good=_pool(gpuLimit=32),
        path=f"{POOL}.gpuLimit",
        fix="(2 x p5.48xlarge per replica)",
        stack=STACK,
    ),
]
