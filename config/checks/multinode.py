"""Replicas that span nodes: a multi-node model's pool and the EFA pools that carry such replicas.

A replica of pipelineParallelSize N is a LeaderWorkerSet group of N pods, each on a whole node, talking NCCL over
EFA (builders/serving/multinode.py); an `efa` pool's nodes get EFA interfaces on every network card, a cluster
placement group and a security group open to itself (builders/karpenter/nodepools.py, components/efa.py). Facts:
../shared/reference/wave3-facts.md Part A 4.2-4.3.
"""

from __future__ import annotations

from collections.abc import Iterator

from config.checks.common import catalog_problems, models_with_pools, pool_path
from config.errors import Problem
from config.facts import catalog
from config.sections.gpu_pools import GpuPool
from config.sections.stack import StackConfig


def _types_path(pool: GpuPool) -> str:
    return f"{pool_path(pool)}.{'instanceTypes' if pool.instance_types is not None else 'instanceFamilies'}"


def rule_multi_node(cfg: StackConfig) -> Iterator[Problem]:
    """models[].pipelineParallelSize above 1: an EFA pool of whole GPUs, a stage per node, no headroom."""
    for path, model, pool in models_with_pools(cfg):
        if pool is None or not model.multi_node:
            continue
        nodes = model.pipeline_parallel_size
        if pool.sharing.mode != "none":
            yield Problem(
                f"{path}.pipelineParallelSize",
                f"pipelineParallelSize {nodes} puts each stage on every GPU of a node, but pool {pool.name} shares GPUs "
                f"({pool.sharing.mode}). Fix: move the model to a pool of whole GPUs, or set pipelineParallelSize: 1",
            )
            continue
        if not pool.efa:
            yield Problem(
                f"{pool_path(pool)}.efa",
                f"model {model.name} spans {nodes} nodes (pipelineParallelSize), but pool {pool.name} has no EFA: NCCL "
                "between its stages would fall back to TCP sockets, or fail where the security group does not let the "
                "nodes reach each other. Fix: set efa: true on the pool",
            )
        counts = sorted({t.gpu_count for t in pool.resolved_instance_types()})
        if counts != [model.tensor_parallel_size]:
            yield Problem(
                f"{path}.tensorParallelSize",
                f"a replica spanning nodes runs tensor parallel inside each node and pipeline parallel across them (the "
                f"vLLM rule), so each stage takes every GPU of its node; tensorParallelSize is {model.tensor_parallel_size} "
                f"but pool {pool.name}'s types have {', '.join(map(str, counts))} GPUs. Fix: set tensorParallelSize: "
                f"{counts[-1]} and list only {counts[-1]}-GPU types in the pool",
            )
        if pool.headroom:
            yield Problem(
                f"{pool_path(pool)}.headroom",
                f"headroom on pool {pool.name}, which carries model {model.name}, a replica of {nodes} nodes: a placeholder "
                "holds one pod's node, and a group needs all its nodes in the placement group at once. Fix: remove "
                "headroom from the pool",
            )


def rule_efa_pool(cfg: StackConfig) -> Iterator[Problem]:
    """gpuPools[].efa: every type has EFA (one count), one zone, and a multi-node model uses it."""
    for pool in cfg.gpu_pools:
        if not pool.efa or catalog_problems(pool):
            continue
        types = pool.resolved_instance_types()
        without = sorted(t.name for t in types if not t.efa_interfaces)
        if without:
            offered = ", ".join(sorted(catalog.EFA_INTERFACES))
            yield Problem(
                _types_path(pool),
                f"{', '.join(without)} of EFA pool {pool.name} has no EFA interface; a pod requesting "
                f"vpc.amazonaws.com/efa would never schedule there. Fix: list only EFA types ({offered})",
            )
        elif len(counts := {t.efa_interfaces for t in types}) > 1:
            each = ", ".join(f"{t.name}: {t.efa_interfaces}" for t in sorted(types, key=lambda t: t.name))
            yield Problem(
                _types_path(pool),
                f"the types of EFA pool {pool.name} take different numbers of EFA interfaces ({each}); a stage's pod "
                f"requests one number, so it would leave cards unused on one type or never fit the other. Fix: keep the "
                f"types of one count ({min(counts)} or {max(counts)})",
            )
        if len(pool.zones) != 1:
            yield Problem(
                f"{pool_path(pool)}.zones",
                f"EFA pool {pool.name} launches in {len(pool.zones) or 'every'} zone(s); its nodes share a cluster "
                "placement group, which lives in one Availability Zone, and EFA traffic does not leave one. Fix: set "
                "zones to one zone (in prod also singleZone: true)",
            )
        if not any(m.pool == pool.name and m.multi_node for m in cfg.models):
            yield Problem(
                f"{pool_path(pool)}.efa",
                f"no model on pool {pool.name} spans nodes (pipelineParallelSize above 1): its nodes get EFA interfaces, "
                "a placement group and the EFA device plugin for nothing, and the placement group can refuse capacity. "
                "Fix: remove efa: true, or move a multi-node model onto the pool",
                severity="warning",
            )
