"""config/derived/capacity.py: the one home of model memory, fit, GPUs per replica and node share."""

from __future__ import annotations

import math

import pytest

from config.derived import capacity, engine
from config.facts import catalog
from config.sections.gpu_pools import GpuPool
from config.sections.models import ModelConfig
from config.sections.stack import StackConfig
from tests.conftest import DEV, PROD, parse, stack_data


@pytest.fixture(scope="module")
def prod() -> StackConfig:
    return parse(stack_data(PROD))


def _model(cfg: StackConfig, name: str) -> ModelConfig:
    return next(m for m in cfg.models if m.name == name)


def _pool(cfg: StackConfig, model: ModelConfig) -> GpuPool:
    pool = cfg.pool(model.pool)
    assert pool is not None
    return pool


def test_weights_kv_cache_and_load_time_of_an_8b_model() -> None:
    model = parse(stack_data(DEV)).models[0]
    # 8.03e9 parameters x 2 bytes (bf16) = 14.96 GiB
    assert capacity.weights_gib(model) == pytest.approx(8.03e9 * 2 / 2**30)
    assert capacity.checkpoint_gib(model) == capacity.weights_gib(model)
    # 2 (K and V) x 32 layers x 8 KV heads x 128 head dim x 2 bytes = 128 KiB per token
    assert capacity.kv_bytes_per_token(model) == 131072
    assert capacity.kv_gib_per_sequence(model) == pytest.approx(1.0)  # 8192 tokens
    assert capacity.required_gib_per_device(model) == pytest.approx(8.03e9 * 2 / 2**30 + 1.0 + 1.5)
    # dev downloads from Hugging Face: 16.06 GB at 16.1 GB per 250 s, then the engine: boot 30.1 s, a cold compile
    # 34 s and 11 CUDA-graph sizes (no profiling: an explicit KV size)
    assert model.weights.source == "huggingface"
    download = 8.03e9 * 2 / 1e9 / (16.1 / 250)
    graphs = 11 * 17 / 51
    assert capacity.weights_seconds(model) == pytest.approx(download)
    assert engine.load_seconds(model) == math.ceil(download + 30.1 + 34 + graphs)
    # the probe allows the slow end: the g5 figure's 48 s boot with profiling, and the same cold compile
    assert engine.startup_budget_seconds(model) == math.ceil(math.ceil(download + 48 + 34 + graphs) * 1.5)
    # from S3 the same checkpoint takes seconds, and the probe budget falls to its floor
    streamed = model.model_copy(update={"weights": model.weights.model_copy(update={"source": "s3"})})
    assert capacity.weights_seconds(streamed) == pytest.approx(8.03e9 * 2 / 1e9 / (10.4 / 5.0))
    # ... but never below the conservative allowance of 120 s + 10 s per GiB (a probe too short is a crash loop)
    assert engine.startup_budget_seconds(streamed) == max(120 + 10 * 15, math.ceil((13 + 86) * 1.5))
    eager = streamed.model_copy(update={"extra_args": ["--enforce-eager"]})
    assert engine.start(eager).seconds == pytest.approx(30.1)
    assert engine.start(eager, pessimistic=True).seconds == 48
    budgeted = model.model_copy(update={"startup": model.startup.model_copy(update={"budget_seconds": 900})})
    assert engine.startup_budget_seconds(budgeted) == 900


def test_quantization_changes_the_gpu_bytes_and_not_always_the_download(prod: StackConfig) -> None:
    big = _model(prod, "llama-3-3-70b")  # fp8 online: 1 byte per parameter on the GPU, bf16 download
    assert capacity.weights_gib(big) == pytest.approx(70.6e9 / 2**30)
    assert capacity.checkpoint_gib(big) == pytest.approx(2 * 70.6e9 / 2**30)
    awq = big.model_copy(update={"quantization": "awq"})
    assert capacity.weights_gib(awq) == capacity.checkpoint_gib(awq) == pytest.approx(0.5 * 70.6e9 / 2**30)
    fp8_kv = big.model_copy(update={"kv_cache_dtype": "fp8"})
    assert capacity.kv_bytes_per_token(fp8_kv) == capacity.kv_bytes_per_token(big) / 2
    # over 4 ranks, each holds a quarter of weights and KV
    per_rank = (capacity.weights_gib(big) + capacity.kv_gib_per_sequence(big)) / 4 + capacity.OVERHEAD_GIB_PER_GPU
    assert capacity.required_gib_per_device(big) == pytest.approx(per_rank)
    assert capacity.required_gib_per_device(big, tp=8) < per_rank


def test_devices_a_replica_lands_on(prod: StackConfig) -> None:
    qwen = _model(prod, "qwen-2-5-7b")
    device = capacity.smallest_device(qwen, _pool(prod, qwen))
    assert device == capacity.Device("MIG 3g.20gb slice of NVIDIA A100 40GB", 20.0)
    small = _model(prod, "llama-3-1-8b")
    # L4 and A10G both report 22,888 MiB to EC2: a whole GPU of either bounds the fit
    assert capacity.smallest_device(small, _pool(prod, small)) == capacity.Device("NVIDIA A10G", 22_888 / 1024)
    # tensor parallelism 3 divides no p5 GPU count: no device
    big = _model(prod, "llama-3-3-70b").model_copy(update={"tensor_parallel_size": 3})
    assert capacity.replica_hosts(big, _pool(prod, big)) == []
    assert capacity.smallest_device(big, _pool(prod, big)) is None


def test_gpus_per_replica_and_node_share_per_sharing_mode(prod: StackConfig) -> None:
    shares = {m.name: capacity.gpus_per_replica(m, _pool(prod, m)) for m in prod.models}
    assert shares == {"llama-3-1-8b": 1.0, "llama-3-3-70b": 4.0, "qwen-2-5-7b": 0.5, "llama-3-2-3b": 0.5}
    p4d = catalog.INSTANCE_TYPES["p4d.24xlarge"]
    qwen = _model(prod, "qwen-2-5-7b")
    assert capacity.node_share(qwen, _pool(prod, qwen), p4d) == pytest.approx(1 / 16)
    assert capacity.replica_hour_prices(qwen, _pool(prod, qwen)) == [pytest.approx(p4d.price_per_hour / 16)]


def test_fit_boundaries_follow_gpu_memory_utilization() -> None:
    model = parse(stack_data(DEV)).models[0]
    l4 = catalog.INSTANCE_TYPES["g6.xlarge"]
    assert l4.gpu is not None
    assert capacity.fits_instance(model, l4, 1)
    need = capacity.required_gib_per_device(model)
    tight = model.model_copy(update={"gpu_memory_utilization": need / l4.gpu.memory_gib - 0.001})
    assert not capacity.fits_instance(tight, l4, 1)
    assert not capacity.fits_instance(model, l4, 2)  # one GPU cannot host two ranks


def test_smallest_fitting_instance_for_a_70b_model(prod: StackConfig) -> None:
    model = _model(prod, "llama-3-3-70b").model_copy(update={"quantization": "none", "tensor_parallel_size": 1})
    found = capacity.smallest_fitting_instance(model)
    assert found is not None
    instance, tp = found
    # 70.6B bf16 = 131.5 GiB: four L40S (4 x 44.7 x 0.92 = 164 GiB) is the cheapest fit
    assert (instance.name, tp) == ("g6e.12xlarge", 4)


def test_node_room_is_allocatable_cpu_and_memory(prod: StackConfig) -> None:
    model = _model(prod, "llama-3-1-8b")
    pool = _pool(prod, model)
    roomy = {t.name for t in capacity.node_room(model, pool)}
    assert "g6.xlarge" in roomy  # 4 vCPU x 0.9 >= 3, 16 GiB x 0.85 >= 12
    hungry = model.model_copy(update={"resources": model.resources.model_copy(update={"cpu": "4"})})
    assert "g6.xlarge" not in {t.name for t in capacity.node_room(hungry, pool)}


def test_replicas_per_node_count_gpus_slices_cpu_and_memory(prod: StackConfig) -> None:
    per_node = {}
    for model in prod.models:
        pool = _pool(prod, model)
        host = capacity.packing_hosts(model, pool)[0]
        per_node[model.name] = (host.name, capacity.replicas_per_node(model, pool, host))
    assert per_node == {
        "llama-3-1-8b": ("g6.xlarge", 1),
        "llama-3-3-70b": ("p5.48xlarge", 2),  # 8 GPUs / TP 4
        "qwen-2-5-7b": ("p4d.24xlarge", 16),  # 8 A100 x 2 slices of 3g.20gb
        "llama-3-2-3b": ("g6e.xlarge", 2),  # 1 L40S x 2 time-slices
    }
    small = _model(prod, "llama-3-2-3b")
    hungry = small.model_copy(update={"resources": small.resources.model_copy(update={"memory": "20Gi"})})
    # memory, not the slices, limits a g6e.xlarge (32 GiB x 0.85 = 27.2) to one 20Gi replica
    assert capacity.replicas_per_node(hungry, _pool(prod, small), catalog.INSTANCE_TYPES["g6e.xlarge"]) == 1


def test_nodes_and_rollout_surge_in_whole_nodes(prod: StackConfig) -> None:
    big = _model(prod, "llama-3-3-70b")
    pool = _pool(prod, big)
    p5 = catalog.INSTANCE_TYPES["p5.48xlarge"]
    assert [capacity.nodes_for(big, pool, p5, n) for n in (1, 2, 3, 4, 5)] == [1, 1, 2, 2, 3]
    assert capacity.rollout_surge_nodes(big, pool, p5) == 1  # max 4 fills 2 nodes; the 5th replica needs a 3rd
    odd = big.model_copy(update={"replicas": big.replicas.model_copy(update={"max": 3})})
    assert capacity.rollout_surge_nodes(odd, pool, p5) == 0  # the surge replica fits the half-empty node


def test_fills_a_node(prod: StackConfig) -> None:
    fills = {m.name: capacity.fills_a_node(m, _pool(prod, m)) for m in prod.models}
    assert fills == {"llama-3-1-8b": True, "llama-3-3-70b": False, "qwen-2-5-7b": False, "llama-3-2-3b": False}
