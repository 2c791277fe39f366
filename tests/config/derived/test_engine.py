"""The engine start's parts: vLLM's capture list, the trims, and what each costs."""

from __future__ import annotations

import pytest

from config.derived import engine
from config.facts import speed
from config.sections.models import ModelConfig
from tests.conftest import PROD, parse, stack_data


def _model(name: str) -> ModelConfig:
    return next(m for m in parse(stack_data(PROD)).models if m.name == name)


def _engine(model: ModelConfig, **update: object) -> ModelConfig:
    return model.model_copy(update={"engine": model.engine.model_copy(update=update)})


def test_capture_sizes_follow_vllms_list() -> None:
    # vllm/config/vllm.py set_cudagraph_sizes: 1, 2, 4, every 8 below 256, every 16 from 256
    assert engine.capture_sizes(64) == [1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64]
    assert len(engine.capture_sizes(512)) == 3 + 31 + 17
    assert engine.capture_sizes(1) == [1]
    assert engine.capture_sizes(100) == [1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96]


def test_the_capture_cap_never_exceeds_vllms_default() -> None:
    model = _model("llama-3-1-8b")
    assert engine.capture_max(model) == 64
    assert engine.capture_max(_engine(model, cuda_graph_capture_max=None)) == 512
    few = model.model_copy(update={"max_num_seqs": 8})
    # vLLM's default for 8 sequences is min(2 x 8, 512) = 16: a cap of 64 keeps that short list
    assert engine.capture_max(few) == 16
    assert engine.capture_max(_engine(few, cuda_graph_capture_max=None)) == 16


def test_each_trim_moves_its_own_part() -> None:
    model = _model("llama-3-1-8b")
    base = engine.start(model).parts
    assert base["kvProfiling"] == 0.0
    assert engine.start(_engine(model, explicit_kv_cache=False)).parts == {**base, "kvProfiling": speed.KV_PROFILING.value}
    every = engine.start(_engine(model, cuda_graph_capture_max=None)).parts
    assert every == {**base, "cudaGraphs": pytest.approx(51 * speed.CUDA_GRAPH_PER_SIZE.value)}
    eager = engine.start(model.model_copy(update={"extra_args": ["--enforce-eager"]})).parts
    assert eager == {**base, "compile": 0.0, "cudaGraphs": 0.0}


def test_a_tensor_parallel_engine_starts_at_its_published_cached_figure() -> None:
    big = _model("llama-3-3-70b")
    assert big.tensor_parallel_size > 1
    cached = engine.start(big, cached=True)
    # the multi-GPU figure (45 s on p5, weights excluded) with the same 64-batch graph list, and the archive's copy
    assert cached.parts["tensorParallel"] == pytest.approx(speed.TENSOR_PARALLEL_SETUP.value)
    assert cached.seconds - cached.parts["cacheCopy"] == pytest.approx(speed.ENGINE_CACHED_MULTI_GPU.value)
    # what the TP part adds is what separates the TP engine from the same model on one GPU
    single = engine.start(big.model_copy(update={"tensor_parallel_size": 1}), cached=True)
    assert cached.seconds - single.seconds == pytest.approx(speed.TENSOR_PARALLEL_SETUP.value)
    assert 0 < speed.TENSOR_PARALLEL_SETUP.value < speed.ENGINE_CACHED_MULTI_GPU.value
    assert engine.start(_model("llama-3-1-8b"), cached=True).parts["tensorParallel"] == 0.0


def test_the_pessimistic_start_is_never_shorter_and_always_compiles() -> None:
    for model in parse(stack_data(PROD)).models:
        fast, cached, slow = engine.start(model), engine.start(model, cached=True), engine.start(model, pessimistic=True)
        assert cached.seconds <= fast.seconds <= slow.seconds, model.name
        assert engine.start(model, cached=True, pessimistic=True) == slow


def test_own_graph_sizes_pass_once_the_cap_is_off() -> None:
    data = stack_data(PROD)
    model = data["models"][0]
    model["extraArgs"] = ["--cudagraph-capture-sizes", "1", "2", "4", "--compilation-config", '{"mode": 3}']
    model["engine"] = {"cudaGraphCaptureMax": None}
    parsed = next(m for m in parse(data).models if m.name == model["name"])
    assert parsed.extra_args[:4] == ["--cudagraph-capture-sizes", "1", "2", "4"]
    # a compilation config without a capture-size field never conflicts
    data["models"][0]["engine"] = {}
    data["models"][0]["extraArgs"] = ["--compilation-config", '{"mode": 3}']
    assert parse(data).models[0].extra_args == ["--compilation-config", '{"mode": 3}']
