"""Boundary mutations of config/checks/fit.py (the table: fit.yaml; see __init__).

The numeric limits are computed from the derived state the rules read (config/derived/state.py, capacity.py,
headroom.py, config/facts/system_capacity.py) on the parsed stack, so each pair stays at its limit when the
fixture's figures or the catalog change."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from config.derived import capacity, state
from config.derived.capacity import ALLOCATABLE_CPU, ALLOCATABLE_MEMORY, GIB
from config.facts import catalog, system_capacity
from config.sections.stack import StackConfig
from config.sections.types import parse_quantity
from tests.config.checks.boundaries import mutation, parsed
from tests.support.mutations import m0, model_named, pool_named

# -- rule_fit ------------------------------------------------------------------------------------------


@mutation
def tensor_parallel(d: dict[str, Any], model: str, size: int, types: list[str] | None = None) -> None:
    """The model's tensorParallelSize, and its pool's instanceTypes (None: as they are)."""
    m = model_named(d, model)
    m["tensorParallelSize"] = size
    if types is not None:
        pool_named(d, m["pool"])["instanceTypes"] = types


@mutation
def max_model_len_past_fit(d: dict[str, Any], over: int) -> None:
    """The first model's maxModelLen at the longest whose weights and one sequence's KV cache fit its smallest
    device, plus `over`: (weights + kv_per_token * len) / tp + overhead <= device GiB * gpuMemoryUtilization."""
    cfg = parsed(d)
    m = cfg.models[0]
    device = state.of(cfg).model(m).device
    assert device is not None
    room = (capacity.usable_gib(m, device) - capacity.OVERHEAD_GIB_PER_GPU) * m.tensor_parallel_size - capacity.weights_gib(m)
    m0(d)["maxModelLen"] = math.floor(room * GIB / capacity.kv_bytes_per_token(m)) + over


@mutation
def time_slice_utilization(d: dict[str, Any], step: float) -> None:
    """full-prod's time-sliced model at 0.95 / replicas of its GPU (the limit, exact in floating point for 2
    replicas), plus `step`."""
    replicas = pool_named(d, "gpu-l40s-shared")["sharing"]["timeSlicing"]["replicas"]
    model_named(d, "llama-3-2-3b")["gpuMemoryUtilization"] = 0.95 / replicas + step


@mutation
def resource_request(d: dict[str, Any], resource: str, over: int) -> None:
    """The first model's CPU (millis) or memory (MiB) request at the largest one replica may request and still fit
    the allocatable share of one of its pool's types (the other resource kept as it is), plus `over`."""
    cfg = parsed(d)
    m = cfg.models[0]
    pool = cfg.pool(m.pool)
    assert pool is not None
    hosts = capacity.replica_hosts(m, pool) or pool.resolved_instance_types()
    cpu, memory_gib = parse_quantity(m.resources.cpu), parse_quantity(m.resources.memory) / GIB
    if resource == "cpu":
        room = max(t.vcpus * ALLOCATABLE_CPU for t in hosts if t.memory_gib * ALLOCATABLE_MEMORY >= memory_gib)
        m0(d)["resources"]["cpu"] = f"{math.floor(room * 1000) + over}m"
    else:
        room = max(t.memory_gib * ALLOCATABLE_MEMORY for t in hosts if t.vcpus * ALLOCATABLE_CPU >= cpu)
        m0(d)["resources"]["memory"] = f"{math.floor(room * 1024) + over}Mi"


# -- rule_gpu_limits / rule_headroom ---------------------------------------------------------------------

Need = Callable[[StackConfig, state.PoolState, state.StackState], int]
"""What a pool's gpuLimit must hold, read from the derived state."""


def _one_model_alone(cfg: StackConfig, s: state.PoolState, derived: state.StackState) -> int:
    (m,) = [derived.model(m) for m in cfg.models if m.pool == s.name]
    return m.gpus_at_max + m.surge_gpus


def _warm_nodes(cfg: StackConfig, s: state.PoolState, derived: state.StackState) -> int:
    assert s.warm is not None
    return s.warm.gpus


NEEDS: dict[str, Need] = {
    "models_at_min": lambda cfg, s, derived: sum(derived.model(m).gpus_at_min for m in cfg.models if m.pool == s.name),
    "pool_at_min": lambda cfg, s, derived: s.gpus_at_min,  # the models' nodes and the headroom's
    "one_model_alone": _one_model_alone,
    "at_deploy": lambda cfg, s, derived: sum(derived.model(m).gpus_at_deploy for m in cfg.models if m.pool == s.name),
    "at_peak": lambda cfg, s, derived: s.gpus_at_peak,
    "warm_nodes": _warm_nodes,  # the whole nodes the headroom's placeholders hold
}


@mutation
def gpu_limit(d: dict[str, Any], pool: str, need: str, under: int) -> None:
    """The pool's gpuLimit `under` GPUs below what NEEDS[need] reads from the derived state."""
    if need not in NEEDS:
        raise KeyError(f"no need named {need!r} (known: {sorted(NEEDS)})")
    cfg = parsed(d)
    derived = state.of(cfg)
    pool_named(d, pool)["gpuLimit"] = NEEDS[need](cfg, derived.pool(pool), derived) - under


@mutation
def placeholder_memory(d: dict[str, Any], over: int) -> None:
    """Headroom on full-prod's time-sliced pool: a placeholder holds a GPU's every slice, so `replicas` times a
    replica's memory. The replica's memory at the largest that lets one placeholder fit the pool's largest type
    (allocatable share), plus `over` MiB."""
    pool = pool_named(d, "gpu-l40s-shared")
    pool["headroom"] = 1
    cfg = parsed(d)
    slots = pool["sharing"]["timeSlicing"]["replicas"]
    types = cfg.pool("gpu-l40s-shared").resolved_instance_types()  # type: ignore[union-attr]
    room_mib = max(t.memory_gib * ALLOCATABLE_MEMORY * 1024 for t in types)
    model_named(d, "llama-3-2-3b")["resources"]["memory"] = f"{math.floor(room_mib / slots) + over}Mi"


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


@mutation
def system_size(d: dict[str, Any], size: int) -> None:
    """The system node group's minSize and desiredSize (maxSize raised to it where below)."""
    group = d["cluster"]["systemNodeGroup"]
    group.update(minSize=size, desiredSize=size, maxSize=max(size, group["maxSize"]))


@mutation
def large_system_nodes(d: dict[str, Any], spare: int) -> None:
    """m7i.large system nodes: one more than the fewest that hold every system pod (one node lost), plus `spare`
    (0: enough, -1: one node short)."""
    d["cluster"]["systemNodeGroup"]["instanceTypes"] = ["m7i.large"]
    survivors = next(n for n in range(1, 20) if min(_system_slack(d, n)) >= 0)
    system_size(d, survivors + 1 + spare)


def _picker_resources(d: dict[str, Any], cfg: StackConfig, **requests: str) -> None:
    d.setdefault("gateway", {})["eppResources"] = {**cfg.gateway.epp_resources.model_dump(by_alias=True), **requests}


@mutation
def picker_request(d: dict[str, Any], resource: str, over: int) -> None:
    """The Endpoint Pickers' CPU request, or memory request and limit, raised to fill the surviving system node's
    CPU or memory exactly, plus `over` millis or MiB per picker."""
    cfg = parsed(d)
    survivors = cfg.cluster.system_node_group.min_size - 1
    pickers = (cfg.gateway.epp_replicas or 1) * len(cfg.models)
    cpu_slack, memory_slack = _system_slack(d, survivors)
    current = system_capacity.Requests(cfg.gateway.epp_resources.cpu, cfg.gateway.epp_resources.memory)
    if resource == "cpu":
        _picker_resources(d, cfg, cpu=f"{current.cpu_millis + cpu_slack // pickers + over}m")
    else:
        memory = f"{current.memory_mib + memory_slack // pickers + over}Mi"
        _picker_resources(d, cfg, memory=memory, memoryLimit=memory)


@mutation
def one_picker_fills_a_node(d: dict[str, Any], over: int) -> None:
    """Four m7i.xlarge system nodes (three survive, room to spare in total) and one Endpoint Picker requesting a
    whole node's CPU less the DaemonSets', plus `over` millis: a pod is placed on one node, not across them."""
    system_size(d, 4)
    cfg = parsed(d)
    node = system_capacity.allocatable(catalog.INSTANCE_TYPES[cfg.cluster.system_node_group.instance_types[0]])
    daemons = sum(w.requests.cpu_millis for w in system_capacity.workloads(cfg) if w.kind == "DaemonSet")
    _picker_resources(d, cfg, cpu=f"{node.cpu_millis - daemons + over}m")
    assert min(_system_slack(d, 3)) >= 0, "the total must fit: only the one pod is too large"
