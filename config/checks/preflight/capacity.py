"""Preflight of capacity: the EC2 vCPU quotas the pools need, and the zones that offer their instance types."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from config.checks.account import AccountFile
from config.checks.common import pool_path
from config.checks.preflight.result import Check
from config.derived import state
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
@dataclass
class _Need:
    at_min: int = 0
    at_limit: int = 0
    pools: list[str] = field(default_factory=list)


def _vcpu_needs(cfg: StackConfig) -> dict[tuple[str, str], _Need]:
    """vCPUs per (purchase option, instance class): at the models' minimum replicas with the warm headroom's
    nodes (the derived state counts both, as the gpuLimit rule does), and at each pool's GPU limit."""
    needs: dict[tuple[str, str], _Need] = {}
    for pool in cfg.gpu_pools:
        for key, (at_min, at_limit) in sorted(state.of(cfg).pool(pool.name).vcpu_quota().items()):
            need = needs.setdefault(key, _Need())
            need.at_limit += at_limit
            need.at_min += at_min
            need.pools.append(pool.name)
    return needs


def quotas(cfg: StackConfig, account: AccountFile) -> Iterator[Check]:
    for (option, cls), need in sorted(_vcpu_needs(cfg).items()):
        code, name = QUOTAS[(option, cls)]
        path = f"gpuPools[{need.pools[0]}].gpuLimit" if len(need.pools) == 1 else "gpuPools"
        inputs = {"quotaCode": code, "pools": need.pools, "vcpusAtMin": need.at_min, "vcpusAtLimit": need.at_limit}
        have = account.quotas.get(code)
        if have is None:
            yield Check("quota", path, "not checked", f"{code} ({name}) is not in the account answers", inputs)
            continue
        inputs["quota"] = have
        pools = ", ".join(need.pools)
        # With on-demand beside it, a spot shortfall only means more on-demand nodes.
        fallback = option == "spot" and all("on-demand" in p.capacity_types for p in cfg.gpu_pools if p.name in need.pools)
        if have < need.at_min and not fallback:
            yield Check(
                "quota",
                path,
                "failed",
                f"the account's {code} quota ({name}) is {have:g} vCPUs, below the {need.at_min} vCPUs the minimum replicas "
                f"of {pools} need: Karpenter's launches would fail and the pods stay Pending. Fix: request {need.at_min:g} "
                f"or more in Service Quotas (ec2, {code}), or lower the pools' minimum replicas",
                inputs,
            )
        elif have < need.at_limit:
            yield Check(
                "quota",
                path,
                "warning",
                f"the account's {code} quota ({name}) is {have:g} vCPUs: enough for the minimum replicas ({need.at_min}) "
                f"but not for {pools} at their gpuLimit ({need.at_limit} vCPUs), where scale-out stops early. "
                f"Fix: request {need.at_limit:g} in Service Quotas (ec2, {code}), or lower gpuLimit",
                inputs,
            )
        else:
            yield Check("quota", path, "ok", f"{code}: {have:g} vCPUs cover {need.at_limit}", inputs)


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
            yield Check(
                "offerings",
                f"{pool_path(pool)}.instanceTypes",
                "failed",
                f"{', '.join(types)} {'is' if len(types) == 1 else 'are'} offered only in {usable[0]} of "
                f"{', '.join(pool_zones)}; a prod pool needs two zones to survive a zone outage. Fix: name zones that "
                "offer them (network.availabilityZones) or add instance types offered in a second zone",
                inputs,
            )
        else:
            yield Check("offerings", f"{pool_path(pool)}.instanceTypes", "ok", f"offered in {', '.join(usable)}", inputs)
