"""Preflight of capacity: the EC2 vCPU quotas the pools need, and the zones that offer their instance types."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from config.checks.account import AccountFile
from config.checks.common import pool_path
from config.checks.preflight.result import Check
from config.derived import state
from config.facts import catalog
from config.sections.network import NewVpc
from config.sections.stack import StackConfig
from config.sections.types import is_zone_id

# EC2 vCPU quotas (service ec2), by purchase option and instance class (docs/upstream-facts.md#quotas-and-amis).
QUOTAS = {
    ("on-demand", "G"): ("L-DB2E81BA", "Running On-Demand G and VT instances"),
    ("on-demand", "P"): ("L-417A185B", "Running On-Demand P instances"),
    ("spot", "G"): ("L-3819A6DF", "All G and VT Spot Instance Requests"),
    ("spot", "P"): ("L-7212CCBC", "All P Spot Instance Requests"),
}


# -- quotas -----------------------------------------------------------------------------------------
STANDARD_QUOTA = ("L-1216C47A", "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances")
"""The on-demand vCPU quota of the system node group's general-purpose types (shared with the account's other
instances: what they already run is not known here)."""
BOTH = ("on-demand", "spot")


def _code(option: str, cls: str) -> str:
    return QUOTAS[(option, cls)][0]


def _quota_text(have: dict[str, float], cls: str) -> str:
    return ", ".join(f"{option} {have[option]:g} vCPUs ({_code(option, cls)})" for option in sorted(have))


@dataclass
class _Need:
    """vCPUs a quota class must hold, by the purchase options of the pools that need them."""

    at_min: dict[tuple[str, ...], int] = field(default_factory=dict)
    at_limit: dict[tuple[str, ...], int] = field(default_factory=dict)
    pools: list[str] = field(default_factory=list)

    def options(self) -> list[str]:
        return sorted({o for opts in self.at_limit for o in opts})


def _needs(cfg: StackConfig) -> dict[str, _Need]:
    """Per quota class: vCPUs at the models' minimum replicas with the warm headroom's nodes (the derived
    state counts both, as the gpuLimit rule does), and at each pool's GPU limit, by the pools' options."""
    needs: dict[str, _Need] = {}
    for pool in cfg.gpu_pools:
        ps = state.of(cfg).pool(pool.name)
        if not ps.purchase_options:
            continue
        for cls in ps.instance_classes:
            need = needs.setdefault(cls, _Need())
            need.at_min[ps.purchase_options] = need.at_min.get(ps.purchase_options, 0) + ps.vcpus_at_min
            need.at_limit[ps.purchase_options] = need.at_limit.get(ps.purchase_options, 0) + ps.vcpus_at_limit
            need.pools.append(pool.name)
    return needs


def _short(need: dict[tuple[str, ...], int], have: dict[str, float]) -> float:
    """vCPUs the quotas lack for the need: a spot-first pool (both options) takes on-demand where spot is short
    (Karpenter falls back), so both quotas count for it, after the pools that can use only one of them."""
    od, spot = have.get("on-demand", 0.0), have.get("spot", 0.0)
    od_need, spot_need, both = need.get(("on-demand",), 0), need.get(("spot",), 0), need.get(BOTH, 0)
    left = max(0.0, od - od_need) + max(0.0, spot - spot_need)
    return max(0.0, od_need - od) + max(0.0, spot_need - spot) + max(0.0, both - left)


def floors(cfg: StackConfig, account: AccountFile) -> Iterator[Check]:
    """A pool that hosts a model must be able to launch one node for it, whatever its minimum replicas: with no
    quota for any of its hosts, no replica ever starts (a request is held by the gateway, then answered 503)."""
    for pool in cfg.gpu_pools:
        ps = state.of(cfg).pool(pool.name)
        if not ps.floor_hosts or not ps.purchase_options:
            continue
        have = {(o, c): account.quotas.get(_code(o, c)) for c in ps.floor_hosts for o in ps.purchase_options}
        launchable = sorted(f"{o} {c}" for (o, c), v in have.items() if v is not None and v >= ps.floor_hosts[c].vcpus)
        hosts = {c: f"{h.name} ({h.vcpus} vCPUs)" for c, h in sorted(ps.floor_hosts.items())}
        inputs = {
            "pool": pool.name,
            "models": list(ps.models),
            "smallestHosts": hosts,
            "quotas": {_code(o, c): v for (o, c), v in have.items()},
        }
        path = f"{pool_path(pool)}.capacityTypes"
        if launchable:
            yield Check("quota", path, "ok", f"one node for {', '.join(ps.models)} can launch ({', '.join(launchable)})", inputs)
            continue
        if any(v is None for v in have.values()):
            missing = sorted(_code(o, c) for (o, c), v in have.items() if v is None)
            yield Check("quota", path, "not checked", f"{', '.join(missing)} not in the account answers", inputs)
            continue
        cls, host = min(ps.floor_hosts.items(), key=lambda ch: ch[1].vcpus)
        quotas_text = "; ".join(
            _quota_text({o: float(v) for (o, c2), v in have.items() if c2 == c and v is not None}, c) for c in sorted(ps.floor_hosts)
        )
        codes = " or ".join(_code(o, cls) for o in ps.purchase_options)
        yield Check(
            "quota",
            path,
            "failed",
            f"no node of this pool can launch: the smallest host of {', '.join(ps.models)} is {host.name} "
            f"({host.vcpus} vCPUs) and the account's quotas are {quotas_text}. No replica of "
            f"{', '.join(ps.models)} can ever start, at any minimum or schedule: requests are held by the gateway, then "
            f"answered 503. Fix: request at least {host.vcpus} vCPUs in Service Quotas (ec2, {codes}); a new account's GPU "
            "quotas are often 0",
            inputs,
        )


def quotas(cfg: StackConfig, account: AccountFile) -> Iterator[Check]:
    floor = list(floors(cfg, account))
    yield from floor
    # a pool that cannot launch one node is reported once, by its floor
    stuck = {c.inputs["pool"] for c in floor if c.result == "failed"}
    for cls, need in sorted(_needs(cfg).items()):
        options = need.options()
        path = f"gpuPools[{need.pools[0]}].gpuLimit" if len(need.pools) == 1 else "gpuPools"
        at_min, at_limit = sum(need.at_min.values()), sum(need.at_limit.values())
        inputs: dict[str, object] = {
            "quotaCodes": [_code(o, cls) for o in options],
            "pools": need.pools,
            "vcpusAtMin": at_min,
            "vcpusAtLimit": at_limit,
        }
        missing = [_code(o, cls) for o in options if account.quotas.get(_code(o, cls)) is None]
        if missing:
            yield Check("quota", path, "not checked", f"{', '.join(missing)} not in the account answers", inputs)
            continue
        have = {o: float(account.quotas[_code(o, cls)]) for o in options}
        inputs["quotas"] = {_code(o, cls): v for o, v in have.items()}
        pools = ", ".join(need.pools)
        fallback = " (spot first, on-demand where spot is short: both count)" if BOTH in need.at_limit else ""
        codes = " or ".join(_code(o, cls) for o in options)
        quota_text = _quota_text(have, cls)
        short_min, short_limit = _short(need.at_min, have), _short(need.at_limit, have)
        if short_min > 0 and not set(need.pools) <= stuck:
            yield Check(
                "quota",
                path,
                "failed",
                f"the account's {cls} quotas ({quota_text}) hold {at_min - short_min:g} of the {at_min} vCPUs the minimum "
                f"replicas of {pools} need{fallback}: the replicas beyond it never start (Karpenter's launches fail with "
                f"VcpuLimitExceeded and they stay Pending). Fix: request {short_min:g} more vCPUs in Service Quotas "
                f"(ec2, {codes}), or lower the pools' minimum replicas",
                inputs,
            )
        elif short_limit > 0 and short_min == 0:
            reach = at_limit - short_limit
            yield Check(
                "quota",
                path,
                "warning",
                f"the account's {cls} quotas ({quota_text}) hold the minimum replicas ({at_min} vCPUs) but not {pools} at "
                f"their gpuLimit ({at_limit} vCPUs){fallback}: scale-out stops when their nodes reach {reach:g} vCPUs"
                f"{_nodes(cfg, need.pools, reach)}. Fix: request {short_limit:g} more vCPUs in Service Quotas (ec2, {codes}), "
                "or lower gpuLimit",
                inputs,
            )
        elif short_limit == 0:
            yield Check("quota", path, "ok", f"{quota_text} cover {at_limit} vCPUs{fallback}", inputs)
    yield from system_quota(cfg, account)


def _nodes(cfg: StackConfig, pools: list[str], vcpus: float) -> str:
    """For one pool, the scale-out's end in nodes of its largest host."""
    if len(pools) != 1:
        return ""
    ps, pool = state.of(cfg).pool(pools[0]), cfg.pool(pools[0])
    if not ps.types or pool is None:
        return ""
    host = max(ps.types, key=lambda t: (t.vcpus / t.gpu_count, t.name))
    nodes = int(vcpus // host.vcpus)
    plural = "" if nodes == 1 else "s"
    return f" (about {nodes} node{plural} of {host.name}: {nodes * host.gpu_count} of the {pool.gpu_limit} GPUs of gpuLimit)"


def system_quota(cfg: StackConfig, account: AccountFile) -> Iterator[Check]:
    """The system node group's on-demand Standard vCPUs: its desired nodes when the cluster is created, one
    more node than maxSize during a node group update (EKS surges one node by default)."""
    group = cfg.cluster.system_node_group
    types = [t for t in catalog.cpu_instance_types() if t.name in group.instance_types]
    if not types:
        return
    largest = max(t.vcpus for t in types)
    code, name = STANDARD_QUOTA
    at_create, at_surge = group.desired_size * largest, (group.max_size + 1) * largest
    path = "cluster.systemNodeGroup"
    inputs = {"quotaCode": code, "vcpusAtCreate": at_create, "vcpusAtSurge": at_surge}
    have = account.quotas.get(code)
    if have is None:
        yield Check("quota", path, "not checked", f"{code} ({name}) is not in the account answers", inputs)
        return
    inputs["quota"] = have
    if have < at_create:
        yield Check(
            "quota",
            path,
            "failed",
            f"the account's {code} quota ({name}) is {have:g} vCPUs, below the {at_create} vCPUs of the system node group's "
            f"{group.desired_size} nodes: the node group would fail after the cluster is created, and nothing could run. "
            f"Fix: request {at_create:g} or more in Service Quotas (ec2, {code}), counting the account's other instances",
            inputs,
        )
    elif have < at_surge:
        yield Check(
            "quota",
            path,
            "warning",
            f"the account's {code} quota ({name}) is {have:g} vCPUs: enough for the system node group's {group.desired_size} "
            f"nodes, not for maxSize + the update's extra node ({at_surge} vCPUs). Fix: request {at_surge:g} in Service "
            f"Quotas (ec2, {code}), counting the account's other instances",
            inputs,
        )
    else:
        yield Check("quota", path, "ok", f"{code}: {have:g} vCPUs cover {at_surge} (the account's other instances not counted)", inputs)


# -- zones and offerings ----------------------------------------------------------------------------
def stack_zones(cfg: StackConfig, account: AccountFile) -> list[str]:
    """Zone names the stack's nodes can use."""
    if isinstance(cfg.network, NewVpc) and cfg.network.availability_zones:
        zones = cfg.network.availability_zones
        return [account.zones.get(z, z) if is_zone_id(z) else z for z in zones]
    if isinstance(cfg.network, NewVpc):
        return sorted(account.zones.values())[: cfg.network.az_count]
    subnets = {s.id: s for s in account.subnets}
    return sorted({subnets[s].zone for s in cfg.network.private_subnet_ids if s in subnets})


def offerings(cfg: StackConfig, account: AccountFile) -> Iterator[Check]:
    zones = stack_zones(cfg, account)
    for pool in cfg.gpu_pools:
        types = [t.name for t in pool.resolved_instance_types()]
        pool_zones = list(pool.zones) or zones
        offered = {z: sorted(set(types) & set(account.offerings.get(z, []))) for z in pool_zones}
        usable = sorted(z for z, t in offered.items() if t)
        inputs = {"instanceTypes": types, "zones": pool_zones, "offered": offered}
        need = 2 if cfg.is_prod else 1
        if not pool_zones:
            yield Check("offerings", f"{pool_path(pool)}.instanceTypes", "not checked", "the stack's zones are not known", inputs)
        elif not usable:
            yield Check(
                "offerings",
                f"{pool_path(pool)}.instanceTypes",
                "failed",
                f"none of {', '.join(types)} is offered in {', '.join(pool_zones)}: Karpenter could never launch a node of "
                "this pool. Fix: name zones that offer them (network.availabilityZones, the pool's zones) or choose "
                "instance types offered there",
                inputs,
            )
        elif len(usable) < need:
            accepted = pool.single_zone
            yield Check(
                "offerings",
                f"{pool_path(pool)}.instanceTypes",
                "warning" if accepted else "failed",
                f"{', '.join(types)} {'is' if len(types) == 1 else 'are'} offered only in {usable[0]} of "
                f"{', '.join(pool_zones)}; "
                + (
                    "the pool says singleZone, so its models go down with that zone. Fix: none needed; drop singleZone "
                    "once a second zone offers them"
                    if accepted
                    else "a prod pool needs two zones to survive a zone outage. Fix: name zones that offer them "
                    "(network.availabilityZones) or add instance types offered in a second zone; to accept one zone, set "
                    "singleZone: true on the pool"
                ),
                inputs,
            )
        else:
            yield Check("offerings", f"{pool_path(pool)}.instanceTypes", "ok", f"offered in {', '.join(usable)}", inputs)


def quota_codes() -> list[str]:
    """Every quota code preflight reads: the GPU classes' and the system node group's."""
    return [*(code for code, _name in QUOTAS.values()), STANDARD_QUOTA[0]]
