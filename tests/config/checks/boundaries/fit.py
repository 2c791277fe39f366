"""Boundary pairs of config/checks/fit.py (see __init__).

The numeric limits are computed from the derived state the rules read (config/derived/state.py, capacity.py,
headroom.py, config/facts/system_capacity.py) on the parsed stack, so each pair stays at its limit when the
fixture's figures or the catalog change."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any

from config.derived import capacity, state
from config.derived.capacity import ALLOCATABLE_CPU, ALLOCATABLE_MEMORY, GIB
from config.facts import catalog, system_capacity
from config.sections.stack import StackConfig
from config.sections.types import parse_quantity
from tests.config.checks.boundaries import Mutation, Pair, parsed
from tests.support.mutations import m0, model_named, p0, pool_named

# -- rule_fit ------------------------------------------------------------------------------------------


def _tp(model: str, tp: int, types: list[str] | None = None) -> Mutation:
    def mutate(d: dict[str, Any]) -> None:
        m = model_named(d, model)
        m["tensorParallelSize"] = tp
        if types is not None:
            pool_named(d, m["pool"])["instanceTypes"] = types

    return mutate


def _longest_fitting_len(d: dict[str, Any]) -> int:
    """The longest maxModelLen whose weights and one sequence's KV cache fit the first model's smallest device:
    (weights + kv_per_token * len) / tp + overhead <= device GiB * gpuMemoryUtilization."""
    cfg = parsed(d)
    m = cfg.models[0]
    device = state.of(cfg).model(m).device
    assert device is not None
    room = (capacity.usable_gib(m, device) - capacity.OVERHEAD_GIB_PER_GPU) * m.tensor_parallel_size - capacity.weights_gib(m)
    return math.floor(room * GIB / capacity.kv_bytes_per_token(m))


def _len_at_fit(d: dict[str, Any]) -> None:
    m0(d)["maxModelLen"] = _longest_fitting_len(d)


def _len_past_fit(d: dict[str, Any]) -> None:
    m0(d)["maxModelLen"] = _longest_fitting_len(d) + 1


def _time_slice_utilization(step: float) -> Mutation:
    """full-prod's time-sliced model at 0.95 / replicas of its GPU (the limit, exact in floating point for 2
    replicas), plus `step`."""

    def mutate(d: dict[str, Any]) -> None:
        replicas = pool_named(d, "gpu-l40s-shared")["sharing"]["timeSlicing"]["replicas"]
        model_named(d, "llama-3-2-3b")["gpuMemoryUtilization"] = 0.95 / replicas + step

    return mutate


def _node_room(d: dict[str, Any]) -> tuple[int, int]:
    """The largest CPU (millis) and memory (MiB) one replica of the first model may request and still fit the
    allocatable share of one of its pool's types (the other resource kept as it is)."""
    cfg = parsed(d)
    m = cfg.models[0]
    pool = cfg.pool(m.pool)
    assert pool is not None
    hosts = capacity.replica_hosts(m, pool) or pool.resolved_instance_types()
    cpu, memory_gib = parse_quantity(m.resources.cpu), parse_quantity(m.resources.memory) / GIB
    max_cpu = max(t.vcpus * ALLOCATABLE_CPU for t in hosts if t.memory_gib * ALLOCATABLE_MEMORY >= memory_gib)
    max_memory = max(t.memory_gib * ALLOCATABLE_MEMORY for t in hosts if t.vcpus * ALLOCATABLE_CPU >= cpu)
    return math.floor(max_cpu * 1000), math.floor(max_memory * 1024)


def _cpu_request(over: int) -> Mutation:
    def mutate(d: dict[str, Any]) -> None:
        m0(d)["resources"]["cpu"] = f"{_node_room(d)[0] + over}m"

    return mutate


def _memory_request(over: int) -> Mutation:
    def mutate(d: dict[str, Any]) -> None:
        m0(d)["resources"]["memory"] = f"{_node_room(d)[1] + over}Mi"

    return mutate


# -- rule_gpu_limits -------------------------------------------------------------------------------------


Need = Callable[[StackConfig, state.PoolState, state.StackState], int]
"""What a pool's gpuLimit must hold, read from the derived state."""


def _limit(pool: str, need: Need, under: int, then: Mutation | None = None) -> Mutation:
    """Set the pool's gpuLimit `under` GPUs below what `need(cfg, pool state, derived)` says (after `then`)."""

    def mutate(d: dict[str, Any]) -> None:
        if then is not None:
            then(d)
        cfg = parsed(d)
        derived = state.of(cfg)
        pool_named(d, pool)["gpuLimit"] = need(cfg, derived.pool(pool), derived) - under

    return mutate


def _models_at_min(cfg: StackConfig, s: state.PoolState, derived: state.StackState) -> int:
    return sum(derived.model(m).gpus_at_min for m in cfg.models if m.pool == s.name)


def _pool_at_min(cfg: StackConfig, s: state.PoolState, derived: state.StackState) -> int:
    return s.gpus_at_min  # the models' nodes and the headroom's


def _one_model_alone(cfg: StackConfig, s: state.PoolState, derived: state.StackState) -> int:
    (m,) = [derived.model(m) for m in cfg.models if m.pool == s.name]
    return m.gpus_at_max + m.surge_gpus


def _at_deploy(cfg: StackConfig, s: state.PoolState, derived: state.StackState) -> int:
    return sum(derived.model(m).gpus_at_deploy for m in cfg.models if m.pool == s.name)


def _at_peak(cfg: StackConfig, s: state.PoolState, derived: state.StackState) -> int:
    return s.gpus_at_peak


def _mig_headroom(d: dict[str, Any]) -> None:
    # the MIG pool's model needs no surge node (a p4d holds 16 slices, max 8 replicas), so with headroom the
    # limit at min with the headroom is also the limit at the peak
    pool_named(d, "gpu-a100-mig")["headroom"] = 1


def _g6_family(d: dict[str, Any]) -> None:
    # every g6 size: the 8-GPU g6.48xlarge makes the peak 8 GPUs, which narrower gpuCounts would hold in fewer
    p0(d).pop("instanceTypes")
    p0(d)["instanceFamilies"] = ["g6"]


def _l4_min_is_max(d: dict[str, Any]) -> None:
    # at max = min the deploy (min + surge + one warm-up per GPU type) is what binds, not the peak
    m = model_named(d, "llama-3-1-8b")
    m["replicas"]["max"] = m["replicas"]["min"]


# -- rule_headroom -------------------------------------------------------------------------------------


def _spare_pool(model_on_it: bool) -> Mutation:
    def mutate(d: dict[str, Any]) -> None:
        d["gpuPools"].append({**copy.deepcopy(p0(d)), "name": "gpu-spare", "headroom": 1})
        if model_on_it:
            m0(d)["pool"] = "gpu-spare"

    return mutate


def _headroom_at_limit(over: int) -> Mutation:
    def mutate(d: dict[str, Any]) -> None:
        p0(d)["headroom"] = p0(d)["gpuLimit"] + over

    return mutate


def _h100_headroom(over: int) -> Mutation:
    """Headroom of full-prod's H100 pool at one replica's GPUs (its tensorParallelSize), plus `over`."""

    def mutate(d: dict[str, Any]) -> None:
        pool_named(d, "gpu-h100")["headroom"] = model_named(d, "llama-3-3-70b")["tensorParallelSize"] + over

    return mutate


def _h100_warm_limit(under: int) -> Mutation:
    """One replica's headroom on the H100 pool, whose placeholder holds a whole 8-GPU node: gpuLimit at the warm
    nodes' GPUs, less `under`."""

    def mutate(d: dict[str, Any]) -> None:
        _h100_headroom(0)(d)
        warm = state.of(parsed(d)).pool("gpu-h100").warm
        assert warm is not None
        pool_named(d, "gpu-h100")["gpuLimit"] = warm.gpus - under

    return mutate


def _placeholder_memory(over: int) -> Mutation:
    """Headroom on full-prod's time-sliced pool: a placeholder holds a GPU's every slice, so `replicas` times a
    replica's memory. The replica's memory at the largest that lets one placeholder fit the pool's largest type
    (allocatable share), plus `over` MiB."""

    def mutate(d: dict[str, Any]) -> None:
        pool = pool_named(d, "gpu-l40s-shared")
        pool["headroom"] = 1
        cfg = parsed(d)
        slots = pool["sharing"]["timeSlicing"]["replicas"]
        types = cfg.pool("gpu-l40s-shared").resolved_instance_types()  # type: ignore[union-attr]
        room_mib = max(t.memory_gib * ALLOCATABLE_MEMORY * 1024 for t in types)
        model_named(d, "llama-3-2-3b")["resources"]["memory"] = f"{math.floor(room_mib / slots) + over}Mi"

    return mutate


# -- rule_bottlerocket_sharing / rule_image_snapshot -----------------------------------------------------------


def _ami(pool: str, family: str | None, default: str | None = None) -> Mutation:
    """A pool's amiFamily (None: unset, so karpenter.defaultAmiFamily), and that default."""

    def mutate(d: dict[str, Any]) -> None:
        p = pool_named(d, pool)
        p.pop("amiFamily", None)
        if family is not None:
            p["amiFamily"] = family
        if default is not None:
            d.setdefault("karpenter", {})["defaultAmiFamily"] = default

    return mutate


def _snapshot_on_p0(default: str) -> Mutation:
    def mutate(d: dict[str, Any]) -> None:
        p0(d)["imageSnapshot"] = {"snapshotId": "snap-0123456789abcdef0"}
        d.setdefault("karpenter", {})["defaultAmiFamily"] = default

    return mutate


# -- rule_system_capacity / rule_system_node_group_size -----------------------------------------------------


def _system_slack(d: dict[str, Any], survivors: int) -> tuple[int, int]:
    """CPU (millis) and memory (MiB) left on `survivors` system nodes once every system pod is placed, as
    config/facts/system_capacity.py states it: each node's allocatable less the DaemonSets, against every
    pod's requests (one-per-node pods at most once per surviving node). Negative: short."""
    cfg = parsed(d)
    node = system_capacity.allocatable(catalog.INSTANCE_TYPES[cfg.cluster.system_node_group.instance_types[0]])
    rows = system_capacity.workloads(cfg)
    daemons = [w.requests for w in rows if w.kind == "DaemonSet"]
    pods = [(w.requests, min(w.replicas, survivors) if w.one_per_node else w.replicas) for w in rows if w.kind != "DaemonSet"]
    cpu = survivors * (node.cpu_millis - sum(r.cpu_millis for r in daemons)) - sum(r.cpu_millis * n for r, n in pods)
    memory = survivors * (node.memory_mib - sum(r.memory_mib for r in daemons)) - sum(r.memory_mib * n for r, n in pods)
    return cpu, memory


def _system_size(d: dict[str, Any], size: int) -> None:
    group = d["cluster"]["systemNodeGroup"]
    group.update(minSize=size, desiredSize=size, maxSize=max(size, group["maxSize"]))


def _large_system_nodes(spare: int) -> Mutation:
    """m7i.large system nodes: one more than the fewest that hold every system pod (one node lost), plus `spare`
    (0: enough, -1: one node short)."""

    def mutate(d: dict[str, Any]) -> None:
        d["cluster"]["systemNodeGroup"]["instanceTypes"] = ["m7i.large"]
        survivors = next(n for n in range(1, 20) if min(_system_slack(d, n)) >= 0)
        _system_size(d, survivors + 1 + spare)

    return mutate


def _picker_cpu(over: int) -> Mutation:
    """The Endpoint Pickers' CPU request raised to fill the surviving system node's CPU exactly, plus `over`
    millis per picker."""

    def mutate(d: dict[str, Any]) -> None:
        cfg = parsed(d)
        survivors = cfg.cluster.system_node_group.min_size - 1
        pickers = (cfg.gateway.epp_replicas or 1) * len(cfg.models)
        slack = _system_slack(d, survivors)[0]
        cpu = system_capacity.Requests(cfg.gateway.epp_resources.cpu, "0").cpu_millis + slack // pickers + over
        d.setdefault("gateway", {})["eppResources"] = {**cfg.gateway.epp_resources.model_dump(by_alias=True), "cpu": f"{cpu}m"}

    return mutate


def _picker_memory(over: int) -> Mutation:
    """The Endpoint Pickers' memory request (and limit) raised to fill the surviving system node's memory exactly,
    plus `over` MiB per picker."""

    def mutate(d: dict[str, Any]) -> None:
        cfg = parsed(d)
        survivors = cfg.cluster.system_node_group.min_size - 1
        pickers = (cfg.gateway.epp_replicas or 1) * len(cfg.models)
        slack = _system_slack(d, survivors)[1]
        memory = system_capacity.Requests("0", cfg.gateway.epp_resources.memory).memory_mib + slack // pickers + over
        d.setdefault("gateway", {})["eppResources"] = {
            **cfg.gateway.epp_resources.model_dump(by_alias=True),
            "memory": f"{memory}Mi",
            "memoryLimit": f"{memory}Mi",
        }

    return mutate


def _one_picker_fills_a_node(over: int) -> Mutation:
    """Four m7i.xlarge system nodes (three survive, room to spare in total) and one Endpoint Picker requesting a
    whole node's CPU less the DaemonSets', plus `over` millis: a pod is placed on one node, not across them."""

    def mutate(d: dict[str, Any]) -> None:
        _system_size(d, 4)
        cfg = parsed(d)
        node = system_capacity.allocatable(catalog.INSTANCE_TYPES[cfg.cluster.system_node_group.instance_types[0]])
        daemons = sum(w.requests.cpu_millis for w in system_capacity.workloads(cfg) if w.kind == "DaemonSet")
        cpu = node.cpu_millis - daemons + over
        d.setdefault("gateway", {})["eppResources"] = {**cfg.gateway.epp_resources.model_dump(by_alias=True), "cpu": f"{cpu}m"}
        assert min(_system_slack(d, 3)) >= 0, "the total must fit: only the one pod is too large"

    return mutate


def _system_min(size: int) -> Mutation:
    def mutate(d: dict[str, Any]) -> None:
        _system_size(d, size)

    return mutate


PAIRS = [
    Pair(
        "fit.rule_fit",
        "tensorParallelSize 2 on a time-sliced pool vs 1",
        bad=_tp("llama-3-2-3b", 2),
        good=_tp("llama-3-2-3b", 1),
        path="models[llama-3-2-3b].tensorParallelSize",
        fix="use tensorParallelSize 1, or move the model to a pool of whole GPUs",
        stack="full-prod",
    ),
    Pair(
        "fit.rule_fit",
        "tensorParallelSize 3, not dividing the pool's 4 GPUs per node, vs 4",
        bad=_tp("llama-3-1-8b", 3, ["g6.12xlarge"]),
        good=_tp("llama-3-1-8b", 4, ["g6.12xlarge"]),
        path="models[llama-3-1-8b].tensorParallelSize",
        fix="use a tensorParallelSize that divides 4",
    ),
    Pair(
        "fit.rule_fit",
        "tensorParallelSize 8, above the pool's largest node (4 GPUs), vs 4",
        bad=_tp("llama-3-1-8b", 8, ["g6.xlarge", "g6.12xlarge"]),
        good=_tp("llama-3-1-8b", 4, ["g6.xlarge", "g6.12xlarge"]),
        path="models[llama-3-1-8b].tensorParallelSize",
        fix="or a pool with more GPUs per node",
    ),
    Pair(
        "fit.rule_fit",
        "maxModelLen one token past what fits the smallest device (weights + one sequence's KV + overhead) vs at it",
        bad=_len_past_fit,
        good=_len_at_fit,
        path="models[llama-3-1-8b]",
        fix="raise tensorParallelSize, quantize, shorten maxModelLen, or use another pool",
    ),
    Pair(
        "fit.rule_fit",
        "gpuMemoryUtilization x time-slice replicas just above 0.95 (0.476 x 2) vs at it (0.475 x 2)",
        bad=_time_slice_utilization(0.001),
        good=_time_slice_utilization(0.0),
        path="models[llama-3-2-3b].gpuMemoryUtilization",
        fix="Fix: set gpuMemoryUtilization to at most",
        stack="full-prod",
    ),
    Pair(
        "fit.rule_fit",
        "resources.cpu 1m above the largest host's allocatable CPU (vCPUs x 0.9) vs at it",
        bad=_cpu_request(1),
        good=_cpu_request(0),
        path="models[llama-3-1-8b].resources",
        fix="lower resources or add larger instance types to the pool",
    ),
    Pair(
        "fit.rule_fit",
        "resources.memory 1Mi above the largest host's allocatable memory (GiB x 0.85) vs at it",
        bad=_memory_request(1),
        good=_memory_request(0),
        path="models[llama-3-1-8b].resources",
        fix="lower resources or add larger instance types to the pool",
    ),
    Pair(
        "fit.rule_gpu_limits",
        "gpuLimit one GPU below the models' nodes at minimum replicas vs at them (MIG pool: no surge node)",
        bad=_limit("gpu-a100-mig", _models_at_min, 1),
        good=_limit("gpu-a100-mig", _models_at_min, 0),
        path="gpuPools[gpu-a100-mig].gpuLimit",
        fix="replicas would stay Pending. Fix: raise gpuLimit to at least",
        stack="full-prod",
    ),
    Pair(
        "fit.rule_gpu_limits",
        "gpuLimit one GPU below the nodes at minimum replicas with the headroom's vs at them",
        bad=_limit("gpu-a100-mig", _pool_at_min, 1, _mig_headroom),
        good=_limit("gpu-a100-mig", _pool_at_min, 0, _mig_headroom),
        path="gpuPools[gpu-a100-mig].gpuLimit",
        fix="or lower headroom",
        stack="full-prod",
    ),
    Pair(
        "fit.rule_gpu_limits",
        "gpuLimit one GPU below the model's nodes at maximum replicas plus its surge vs at them",
        bad=_limit("gpu-l4-a10g", _one_model_alone, 1),
        good=_limit("gpu-l4-a10g", _one_model_alone, 0),
        path="gpuPools[gpu-l4-a10g].gpuLimit",
        fix="or lower models[llama-3-1-8b].replicas.max",
    ),
    Pair(
        "fit.rule_gpu_limits",
        "a family pool: gpuLimit one GPU below the peak on its 8-GPU size vs at it (the fix narrows gpuCounts)",
        bad=_limit("gpu-l4-a10g", _one_model_alone, 1, _g6_family),
        good=_limit("gpu-l4-a10g", _one_model_alone, 0, _g6_family),
        path="gpuPools[gpu-l4-a10g].gpuLimit",
        fix="Fix: set gpuCounts: [",
    ),
    Pair(
        "fit.rule_gpu_limits",
        "gpuLimit one GPU below a deploy's nodes (min replicas, surge, a warm-up per GPU type) vs at them",
        bad=_limit("gpu-l4-a10g", _at_deploy, 1, _l4_min_is_max),
        good=_limit("gpu-l4-a10g", _at_deploy, 0, _l4_min_is_max),
        path="gpuPools[gpu-l4-a10g].gpuLimit",
        fix="or set engine.compileCache: false on a model of this pool",
        stack="full-prod",
        severity="warning",
    ),
    Pair(
        "fit.rule_gpu_limits",
        "gpuLimit one GPU below the models' combined peak (each fits alone) vs at it",
        bad=_limit("gpu-l4-a10g", _at_peak, 1),
        good=_limit("gpu-l4-a10g", _at_peak, 0),
        path="gpuPools[gpu-l4-a10g].gpuLimit",
        fix="Fix: nothing, if they do not peak together",
        stack="internet-facing-tls",
        severity="warning",
    ),
    Pair(
        "fit.rule_headroom",
        "headroom on a pool without a model vs the same pool with one",
        bad=_spare_pool(model_on_it=False),
        good=_spare_pool(model_on_it=True),
        path="gpuPools[gpu-spare].headroom",
        fix="remove headroom, or put a model on the pool",
    ),
    Pair(
        "fit.rule_headroom",
        "headroom one GPU above gpuLimit vs at it",
        bad=_headroom_at_limit(1),
        good=_headroom_at_limit(0),
        path="gpuPools[gpu-l4-a10g].headroom",
        fix="Fix: lower headroom or raise gpuLimit",
    ),
    Pair(
        "fit.rule_headroom",
        "headroom one GPU over a whole replica's (tensorParallelSize 4) vs one replica's",
        bad=_h100_headroom(1),
        good=_h100_headroom(0),
        path="gpuPools[gpu-h100].headroom",
        fix="Fix: set headroom to",
        stack="full-prod",
    ),
    Pair(
        "fit.rule_headroom",
        "gpuLimit one GPU below the whole nodes the headroom holds (4 GPUs on an 8-GPU node) vs at them",
        bad=_h100_warm_limit(1),
        good=_h100_warm_limit(0),
        path="gpuPools[gpu-h100].headroom",
        fix="or raise gpuLimit to at least",
        stack="full-prod",
    ),
    Pair(
        "fit.rule_headroom",
        "a time-sliced placeholder (every slice's memory) 1Mi per replica over the largest type's allocatable vs at it",
        bad=_placeholder_memory(1),
        good=_placeholder_memory(0),
        path="gpuPools[gpu-l40s-shared].headroom",
        fix="allow larger instance types, or lower the models' resources",
        stack="full-prod",
    ),
    Pair(
        "fit.rule_bottlerocket_sharing",
        "a time-sliced pool on amiFamily bottlerocket vs al2023",
        bad=_ami("gpu-l40s-shared", "bottlerocket"),
        good=_ami("gpu-l40s-shared", "al2023"),
        path="gpuPools[gpu-l40s-shared].sharing",
        fix="use amiFamily al2023 for this pool",
        stack="existing-vpc-irsa-bottlerocket",
    ),
    Pair(
        "fit.rule_bottlerocket_sharing",
        "a time-sliced pool without amiFamily under defaultAmiFamily bottlerocket vs al2023",
        bad=_ami("gpu-l40s-shared", None, "bottlerocket"),
        good=_ami("gpu-l40s-shared", None, "al2023"),
        path="gpuPools[gpu-l40s-shared].sharing",
        fix="use amiFamily al2023 for this pool",
        stack="existing-vpc-irsa-bottlerocket",
    ),
    Pair(
        "fit.rule_image_snapshot",
        "an image snapshot on a pool of amiFamily al2023 vs bottlerocket",
        bad=_ami("gpu-l4", "al2023"),
        good=_ami("gpu-l4", "bottlerocket"),
        path="gpuPools[gpu-l4].imageSnapshot",
        fix="set amiFamily: bottlerocket on the pool, or remove imageSnapshot",
        stack="existing-vpc-irsa-bottlerocket",
    ),
    Pair(
        "fit.rule_image_snapshot",
        "an image snapshot on a pool without amiFamily under defaultAmiFamily al2023 vs bottlerocket",
        bad=_snapshot_on_p0("al2023"),
        good=_snapshot_on_p0("bottlerocket"),
        path="gpuPools[gpu-l4-a10g].imageSnapshot",
        fix="set amiFamily: bottlerocket on the pool, or remove imageSnapshot",
    ),
    Pair(
        "fit.rule_system_capacity",
        "m7i.large system nodes: one node short of holding the system pods with a node lost vs enough",
        bad=_large_system_nodes(-1),
        good=_large_system_nodes(0),
        path="cluster.systemNodeGroup",
        fix="raise minSize and desiredSize to",
    ),
    Pair(
        "fit.rule_system_capacity",
        "the surviving system node's CPU 1m short of the system pods' requests vs exactly full",
        bad=_picker_cpu(1),
        good=_picker_cpu(0),
        path="cluster.systemNodeGroup",
        fix="Fix: raise minSize and desiredSize to",
    ),
    Pair(
        "fit.rule_system_capacity",
        "the surviving system node's memory 1Mi short of the system pods' requests vs exactly full",
        bad=_picker_memory(1),
        good=_picker_memory(0),
        path="cluster.systemNodeGroup",
        fix="Fix: raise minSize and desiredSize to",
    ),
    Pair(
        "fit.rule_system_capacity",
        "one system pod 1m over a node's CPU less the DaemonSets' (the total fits three nodes) vs exactly a node's",
        bad=_one_picker_fills_a_node(1),
        good=_one_picker_fills_a_node(0),
        path="cluster.systemNodeGroup",
        fix="(replaces the node group)",
    ),
    Pair(
        "fit.rule_system_node_group_size",
        "prod: minSize 1 vs 2",
        bad=_system_min(1),
        good=_system_min(2),
        path="cluster.systemNodeGroup.minSize",
        fix="Fix: set minSize: 2",
        stack="full-prod",
    ),
    Pair(
        "fit.rule_system_node_group_size",
        "elsewhere: minSize 1 (no spare node, a warning) vs 2",
        bad=_system_min(1),
        good=_system_min(2),
        path="cluster.systemNodeGroup.minSize",
        fix="Fix: set minSize: 2 for a cluster that must keep scaling",
        severity="warning",
    ),
]
