"""Every instance type of the catalog carries its network bandwidth, with a source (issue 48, item 3)."""

from __future__ import annotations

from config.derived import capacity
from config.facts import catalog, speed


def test_every_catalog_type_has_a_network_figure() -> None:
    assert set(catalog.NETWORK) == set(catalog.INSTANCE_TYPES)
    for t in catalog.INSTANCE_TYPES.values():
        assert 0 < t.network.baseline_gbps <= t.network.burst_gbps, t.name
    assert "instancetypes" in catalog.NETWORK_SOURCE


def test_the_s3_rate_follows_the_host() -> None:
    small, p5 = catalog.INSTANCE_TYPES["g6.xlarge"], catalog.INSTANCE_TYPES["p5.48xlarge"]
    assert capacity.s3_rate(small) == 10 / 8 * speed.STREAMER_LINE_SHARE.value
    assert capacity.s3_rate(small, pessimistic=True) == 2.5 / 8 * speed.STREAMER_LINE_SHARE.value
    assert capacity.s3_rate(p5) == speed.STREAMER_MAX_RATE.value  # 3,200 Gbps: the streamer's published ceiling
