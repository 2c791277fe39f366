"""The GPU catalog's figures agree with each other and with docs/upstream-facts.md."""

from __future__ import annotations

import pytest

from config.facts import catalog
from tests.conftest import FIXTURES, parse, stack_data

GPU_TYPES = catalog.gpu_instance_types()


def test_covers_the_families_the_issue_names() -> None:
    assert {"g5", "g6", "g6e", "p4d", "p4de", "p5", "p5en"} <= catalog.gpu_families()


def test_covers_every_type_the_stacks_use() -> None:
    for stack in FIXTURES:
        cfg = parse(stack_data(stack))
        for name in cfg.cluster.system_node_group.instance_types:
            assert catalog.INSTANCE_TYPES[name].gpu is None
        for pool in cfg.gpu_pools:
            assert pool.resolved_instance_types()


@pytest.mark.parametrize("t", GPU_TYPES, ids=lambda t: t.name)
def test_gpu_figures_are_consistent(t: catalog.InstanceType) -> None:
    assert t.gpu is not None
    assert t.gpu_count in (1, 4, 8)
    assert t.price_per_hour > 0
    assert t.price_source.date.startswith("2026-")
    # EC2 reports MiB; AWS markets decimal GB. The two agree within 8 %: A10G 24 GB is exactly
    # 22888 MiB, A100 40 GB is reported as 40960 MiB. A figure entered in GiB, GB or KiB fails.
    marketed_mib = t.gpu.memory_gb * 1e9 / 2**20
    assert abs(t.gpu.memory_mib - marketed_mib) / marketed_mib < 0.08
    assert t.total_gpu_gib == pytest.approx(t.gpu.memory_gib * t.gpu_count)


def test_memory_as_karpenter_reports_it() -> None:
    # Karpenter's instance-gpu-memory label values (docs/upstream-facts.md#karpenter-labels)
    expected = {"g5.xlarge": 22888, "g6.xlarge": 22888, "g6e.xlarge": 45776, "p4d.24xlarge": 40960, "p5.48xlarge": 81920}
    for name, mib in expected.items():
        gpu = catalog.INSTANCE_TYPES[name].gpu
        assert gpu is not None
        assert gpu.memory_mib == mib


def test_prices_after_the_2025_cut() -> None:
    assert catalog.INSTANCE_TYPES["p5.48xlarge"].price_per_hour == 55.04
    assert catalog.INSTANCE_TYPES["p4d.24xlarge"].price_per_hour == 21.957642
    assert catalog.INSTANCE_TYPES["g5.xlarge"].price_per_hour == 1.006


def test_sizes_in_a_family_get_pricier_with_more_gpus_or_cpus() -> None:
    for family in catalog.gpu_families():
        sizes = sorted((t for t in GPU_TYPES if t.family == family), key=lambda t: (t.gpu_count, t.vcpus))
        prices = [t.price_per_hour for t in sizes]
        assert prices == sorted(prices), family


def test_mig_profiles_per_gpu() -> None:
    a100_40 = catalog.INSTANCE_TYPES["p4d.24xlarge"].gpu
    h100 = catalog.INSTANCE_TYPES["p5.48xlarge"].gpu
    a10g = catalog.INSTANCE_TYPES["g5.xlarge"].gpu
    assert a100_40 is not None
    assert h100 is not None
    assert a10g is not None
    assert a100_40.mig_profile("1g.5gb") is not None
    assert a100_40.mig_profile("3g.40gb") is None
    assert h100.mig_profile("1g.10gb") is not None
    assert h100.mig_profile("1g.5gb") is None
    assert not a10g.mig_capable
    # slices: the 1-compute-slice profile fits 7 times; the full profile once
    assert h100.mig_profiles[0].max_per_gpu == 7
    assert h100.mig_profiles[-1].max_per_gpu == 1
    # memory of a slice is its share of the GPU: 3g.20gb is half of A100 40GB
    assert a100_40.mig_profile_gib("3g.20gb") == pytest.approx(20.0)
    assert a100_40.mig_profile_gib("7g.40gb") == pytest.approx(40.0)
