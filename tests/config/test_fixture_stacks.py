"""The fixture stacks load, and exercise what the tests rely on (the shipped stacks: tests/test_shipped_stacks.py)."""

from __future__ import annotations

from config.sections.gpu_pools import GpuPool
from config.sections.network import NewVpc
from config.sections.stack import StackConfig
from tests.conftest import DEV, FIXTURES, PROD, parse, problems_after, stack_data


def _by_pool(cfg: StackConfig) -> dict[str, GpuPool]:
    return {p.name: p for p in cfg.gpu_pools}


def test_dev_loads_with_only_the_plain_http_warning() -> None:
    assert problems_after(lambda d: None, DEV) == [
        "ingress.certificateArn: is not set: llama-3-1-8b is served over plain HTTP inside the VPC. Fix: set an ACM "
        "certificate ARN to serve HTTPS (HTTP then redirects)"
    ]


def test_dev_is_one_8b_model_on_a_spot_first_g5_g6_pool() -> None:
    cfg = parse(stack_data(DEV))
    assert cfg.environment == "dev"
    assert [m.name for m in cfg.models] == ["llama-3-1-8b"]
    model = cfg.models[0]
    assert 7 <= model.parameters_billions <= 9
    pool = _by_pool(cfg)[model.pool]
    assert pool.capacity_types == ["spot", "on-demand"]
    assert {t.family for t in pool.resolved_instance_types()} == {"g5", "g6"}
    assert isinstance(cfg.network, NewVpc)
    assert cfg.network.nat_gateways == "single"


def test_prod_loads_with_only_its_placement_warnings() -> None:
    # its images carry digests (the placeholder one, which only a real preview refuses: config/facts/placeholders.py);
    # its two on-demand shared models pack by choice, which prod warns about
    assert [p.split(":")[0] for p in problems_after(lambda d: None, PROD)] == [
        "models[llama-3-3-70b].placement",
        "models[qwen-2-5-7b].placement",
    ]


def test_prod_is_private_three_az_with_mig_and_time_sliced_models() -> None:
    cfg = parse(stack_data(PROD))
    assert cfg.is_prod
    assert cfg.cluster.endpoint.public is False
    assert cfg.cluster.endpoint.private is True
    assert isinstance(cfg.network, NewVpc)
    assert cfg.network.az_count == 3
    assert cfg.network.nat_gateways == "perAz"
    assert cfg.deletion_protection is True
    pools = _by_pool(cfg)
    modes = {m.name: pools[m.pool].sharing.mode for m in cfg.models}
    assert modes == {
        "llama-3-1-8b": "none",
        "llama-3-3-70b": "none",
        "qwen-2-5-7b": "mig",
        "llama-3-2-3b": "timeSlicing",
    }
    assert cfg.cluster.system_node_group.min_size >= 2
    assert all(m.replicas.min >= 2 for m in cfg.models)


def test_every_model_revision_is_a_pinned_commit() -> None:
    for stack in FIXTURES:
        for model in parse(stack_data(stack)).models:
            assert len(model.revision) == 40
            assert model.image.tag != "latest"
