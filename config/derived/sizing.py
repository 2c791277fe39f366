"""Whether the catalog can size a pool: its instance types are known, and a MIG pool's GPU and profile exist.

The derived state (config/derived/state.py) sizes only such pools; the checks report the others
once (config/checks/structure.py rule_pool_catalog) and skip them everywhere else. Pure.
"""

from __future__ import annotations

from config.errors import Problem
from config.facts import catalog
from config.sections.gpu_pools import GpuPool


def pool_path(pool: GpuPool) -> str:
    return f"gpuPools[{pool.name}]"


def catalog_problems(pool: GpuPool) -> list[Problem]:
    """What the catalog says is wrong with a pool: unknown types, MIG on the wrong GPU."""
    path = pool_path(pool)
    unknown = [t for t in (pool.instance_types or []) if t not in catalog.INSTANCE_TYPES or catalog.INSTANCE_TYPES[t].gpu is None]
    unknown_families = [f for f in (pool.instance_families or []) if f not in catalog.gpu_families()]
    if unknown or unknown_families:
        field, known = (
            ("instanceTypes", sorted(t.name for t in catalog.gpu_instance_types()))
            if unknown
            else ("instanceFamilies", sorted(catalog.gpu_families()))
        )
        return [
            Problem(
                f"{path}.{field}",
                f"{', '.join(unknown + unknown_families)} not in the GPU catalog, so capacity and cost cannot be "
                f"checked. Fix: use one of {', '.join(known)} (or add it to config/facts/catalog.py with its source)",
            )
        ]
    types = pool.resolved_instance_types()
    if not types:
        return [
            Problem(
                f"{path}.gpuCounts",
                f"no catalog instance type of families {', '.join(pool.instance_families or [])} has "
                f"{' or '.join(map(str, pool.gpu_counts or []))} GPUs. Fix: widen gpuCounts or the families",
            )
        ]
    if pool.sharing.mig:
        gpus = sorted({t.gpu.model for t in types if t.gpu})
        if len(gpus) != 1:
            return [
                Problem(
                    f"{path}.sharing.mig",
                    f"a MIG pool must have one GPU model (this one has {', '.join(gpus)}), because MIG "
                    "profile names depend on it. Fix: keep the pool to instance types with the same GPU",
                )
            ]
        gpu = types[0].gpu
        assert gpu is not None
        if not gpu.mig_capable:
            return [
                Problem(
                    f"{path}.sharing.mig",
                    f"{gpu.model} does not support MIG (only A100, H100 and H200 do). Fix: use "
                    "timeSlicing on this GPU, or a p4d/p4de/p5/p5en pool for MIG",
                )
            ]
        profile = pool.sharing.mig.profile
        if gpu.mig_profile(profile) is None:
            return [
                Problem(
                    f"{path}.sharing.mig.profile",
                    f"MIG profile {profile} does not exist on {gpu.model}; the MIG manager would leave "
                    f"the GPUs unpartitioned and no pod could schedule. Fix: use one of "
                    f"{', '.join(p.name for p in gpu.mig_profiles)}",
                )
            ]
    return []
