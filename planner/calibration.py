"""Published vLLM measurements the serving model is calibrated against, and the fit. Pure.

Each measurement names its source, GPU, model, lengths, load and what was measured: saturated
throughput (all requests sent at once), time to first token and time per output token under a
Poisson rate or a fixed client concurrency, or the KV cache vLLM's profiling left. `predict` asks
the same question of the step-level engine (planner/engine.py) on the serving model's roofline
(planner/serving.py); a request alone and the KV cache are answered by the roofline directly. A third of the measurements (every third by name) is held out of the fit;
tests/planner/test_calibration.py checks the held-out third against the target (75 % within ±30 %
for throughput, TTFT and TPOT each) and keeps every measurement within a loose bound.

`python -m planner.calibration` prints every prediction and the error table by metric and GPU;
`--fit` searches the efficiencies (coordinate descent on the mean absolute log error of the
training two-thirds; a few minutes) and prints what serving.py should carry.

Models are described by their published model cards (parameters, layers, KV heads, head size).
Measurements come from vLLM 0.2-era forks to 0.23 (the pinned engine is 0.33; no published set at
0.33 with these GPUs was found): each names its version where its source does. Lengths are the means the source gives; a dataset
without stated means (ShareGPT in sglang's sampler) takes GPUStack's measured ShareGPT means
(217 in, 201 out: 'Total input tokens: 217393' over 1,000 requests).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from config.sections.gpu_pools import GpuPool
from config.sections.models import ModelConfig
from planner import engine
from planner.serving import Efficiency, ReplicaPerformance, performance

Model = dict[str, object]
LLAMA_8B: Model = {"parametersBillions": 8.03, "architecture": {"numLayers": 32, "numKvHeads": 8, "headDim": 128}}
LLAMA_70B: Model = {"parametersBillions": 70.6, "architecture": {"numLayers": 80, "numKvHeads": 8, "headDim": 128}}
LLAMA2_7B: Model = {"parametersBillions": 6.74, "architecture": {"numLayers": 32, "numKvHeads": 32, "headDim": 128}}
QWEN3_8B: Model = {"parametersBillions": 8.19, "architecture": {"numLayers": 36, "numKvHeads": 8, "headDim": 128}}
QWEN3_14B: Model = {"parametersBillions": 14.8, "architecture": {"numLayers": 40, "numKvHeads": 8, "headDim": 128}}
QWEN3_32B: Model = {"parametersBillions": 32.8, "architecture": {"numLayers": 64, "numKvHeads": 8, "headDim": 128}}
QWEN2_7B: Model = {"parametersBillions": 7.62, "architecture": {"numLayers": 28, "numKvHeads": 4, "headDim": 128}}
QWEN25_05B: Model = {"parametersBillions": 0.49, "architecture": {"numLayers": 24, "numKvHeads": 2, "headDim": 64}}
SHAREGPT = (217, 201)
"""GPUStack's ShareGPT means (docs/performance-lab: 'Total input tokens: 217393', ~201k generated, 1,000 requests)."""

Metric = Literal["requestsPerSecond", "outputTokensPerSecond", "ttft", "tpot", "kvTokens"]
Load = Literal["burst", "rate", "concurrency", "alone", "idle"]


@dataclass(frozen=True)
class Measurement:
    name: str
    source: str
    instance: str
    model: Model
    tensor_parallel: int
    prompt: int
    output: int
    load: Load
    """burst: `amount` requests at once (saturated); rate: Poisson at `amount` per second; concurrency:
    `amount` clients, each sending when its last request ends; alone: one request at a time; idle: no
    load (the KV cache at start)."""
    amount: float
    metric: Metric
    value: float
    """Seconds for ttft and tpot; per second for throughputs; tokens for kvTokens."""
    statistic: Literal["mean", "median", "total"] = "median"
    settings: dict[str, object] = dataclasses.field(default_factory=dict)
    """What the run set beside the defaults: maxModelLen, gpuMemoryUtilization, quantization."""
    scheduler_steps: int = 1
    """vLLM 0.6's --num-scheduler-steps the run used (new requests join every that many steps)."""
    excluded: str = ""
    """Why the measurement is neither fitted nor checked (it contradicts better-sourced ones), or ''."""

    @property
    def gpu(self) -> str:
        from config.facts import catalog

        gpu = catalog.INSTANCE_TYPES[self.instance].gpu
        assert gpu is not None
        return gpu.label

    @property
    def group(self) -> str:
        """What the target is judged on: throughput (either unit), ttft, tpot or kvTokens."""
        return "throughput" if self.metric in ("requestsPerSecond", "outputTokensPerSecond") else self.metric

    @property
    def held_out(self) -> bool:
        """Every third measurement by name within its group (of those not excluded) is kept out of the fit."""
        peers = sorted(m.name for m in MEASUREMENTS if not m.excluded and m.group == self.group)
        return not self.excluded and peers.index(self.name) % 3 == 2


_SGL = "sgl-project/sglang benchmark/benchmark_vllm_060/README.md @120affb (vLLM 0.6.0, --num-scheduler-steps 10, max_model_len 4096, ShareGPT)"
_GPUSTACK = "gpustack/gpustack docs/performance-lab/{} (vLLM v0.11.0 defaults, `vllm bench serve`)"
_LLMPERF = "llmperf 'Benchmark: Llama 3 8b Instruct on NVIDIA A10G' (g5.2xlarge, vllm-openai v0.4.3, mean 550 in / 150 out)"
_MEMORY = "llm-d/llm-d-benchmark config_explorer/empirical-vllm-memory-results.md @2593348 (H100 79.18 GiB, util 0.9, max-model-len 16000)"
_WMX = "ai.wmx.dev/benchmarks serving/raw-vllm (1x L4 g2-standard-4, vLLM v0.23.0, util 0.6, max-model-len 8192, 256 in / 128 out, closed loop)"

_FASTER_THAN_PEAK = (
    "prefilling 550 tokens in well under 137 ms means over 65 TFLOPS on an A10G measured at 69.5 (matmul), against "
    "the same GPU's offline throughput and single-stream decode, which fit: llmperf's token counts (its own tokenizer) "
    "are the likely cause"
)
_GPUS_UNSTATED = (
    "the page names no GPU count and its command no tensor parallelism, yet one H100 cannot hold Qwen3-32B at its "
    "default context (the llm-d memory study: 4.45 GiB of KV at 16,000, a failed start at 32,000)"
)
_API_BOUND = "4-token answers at 44 a second bound by the API server's per-request work, which the serving model does not have"

MEASUREMENTS: tuple[Measurement, ...] = (
    # -- A10G (g5) ------------------------------------------------------------------------------------------
    Measurement("a10g-llama3-8b-alone", "awsdocs/amazon-eks-user-guide ml-realtime-inference-llm-inference-vllm.adoc (GuideLLM, max_num_seqs=1, 256/128)",
                "g5.2xlarge", LLAMA_8B, 1, 256, 128, "alone", 1, "tpot", 0.0340, "mean"),
    Measurement("a10g-llama3-8b-c1-itl", f"{_LLMPERF}: concurrency 1, 'Inter Token Latency (ms/token) 30.65'",
                "g5.2xlarge", LLAMA_8B, 1, 550, 150, "concurrency", 1, "tpot", 0.03065, "mean"),
    Measurement("a10g-llama3-8b-c1-ttft", f"{_LLMPERF}: concurrency 1, 'First Time To Token (ms) 137.29'",
                "g5.2xlarge", LLAMA_8B, 1, 550, 150, "concurrency", 1, "ttft", 0.13729, "mean", excluded=_FASTER_THAN_PEAK),
    Measurement("a10g-llama3-8b-c4-ttft", f"{_LLMPERF}: concurrency 4, 'First Time To Token (ms) | 171.3956358'",
                "g5.2xlarge", LLAMA_8B, 1, 550, 150, "concurrency", 4, "ttft", 0.1714, "mean", excluded=_FASTER_THAN_PEAK),
    Measurement("a10g-llama3-8b-c4-itl", f"{_LLMPERF}: concurrency 4, 'Inter Token Latency (ms/token) | 33.88657168'",
                "g5.2xlarge", LLAMA_8B, 1, 550, 150, "concurrency", 4, "tpot", 0.03389, "mean"),
    Measurement("a10g-llama3-8b-c16-ttft", f"{_LLMPERF}: concurrency 16, 'First Time To Token (ms) | 302.7480913'",
                "g5.2xlarge", LLAMA_8B, 1, 550, 150, "concurrency", 16, "ttft", 0.3027, "mean", excluded=_FASTER_THAN_PEAK),
    Measurement("a10g-llama3-8b-c16-itl", f"{_LLMPERF}: concurrency 16, 'Inter Token Latency (ms/token) | 42.66842311'",
                "g5.2xlarge", LLAMA_8B, 1, 550, 150, "concurrency", 16, "tpot", 0.04267, "mean"),
    Measurement("a10g-llama3-8b-c16-tput", f"{_LLMPERF}: concurrency 16, 'Througput (token/sec) | 289.873427'",
                "g5.2xlarge", LLAMA_8B, 1, 550, 150, "concurrency", 16, "outputTokensPerSecond", 289.87, "total"),
    Measurement("a10g-llama3-8b-offline", "vllm-project/llm-compressor examples/benchmarking/offline_batch/README.md: 'Results on A10G' "
                "fp16, 1,000 generations, avg 545.05 prompt / 225.47 generation tokens, 'Generation Tok / Sec: 488.13'",
                "g5.2xlarge", LLAMA_8B, 1, 545, 225, "burst", 1000, "outputTokensPerSecond", 488.13, "total"),
    Measurement("a10g-llama2-7b-offline", "neuralmagic/nm-vllm benchmark comment on c13b5c2 ('NVIDIA A10G x 1', benchmark_throughput "
                "input-len 256, output-len 128, 1,000 prompts, max_model_len 4096): request throughput 3.8028",
                "g5.2xlarge", LLAMA2_7B, 1, 256, 128, "burst", 1000, "requestsPerSecond", 3.8028, "total", {"maxModelLen": 4096}),
    # -- L4 (g6) ------------------------------------------------------------------------------------------------
    Measurement("l4-qwen25-05b-c8-ttft", f"{_WMX}: concurrency 8, TTFT p50 60.9 ms",
                "g6.xlarge", QWEN25_05B, 1, 256, 128, "concurrency", 8, "ttft", 0.0609, "median", {"gpuMemoryUtilization": 0.6}),
    Measurement("l4-qwen25-05b-c16-itl", f"{_WMX}: concurrency 16, ITL p50 6.0 ms",
                "g6.xlarge", QWEN25_05B, 1, 256, 128, "concurrency", 16, "tpot", 0.0060, "median", {"gpuMemoryUtilization": 0.6}),
    Measurement("l4-qwen25-05b-c32-rps", f"{_WMX}: concurrency 32, 29.5 req/s",
                "g6.xlarge", QWEN25_05B, 1, 256, 128, "concurrency", 32, "requestsPerSecond", 29.5, "total", {"gpuMemoryUtilization": 0.6}),
    Measurement("l4-qwen25-05b-c32-ttft", f"{_WMX}: concurrency 32, TTFT p50 135.3 ms",
                "g6.xlarge", QWEN25_05B, 1, 256, 128, "concurrency", 32, "ttft", 0.1353, "median", {"gpuMemoryUtilization": 0.6}),
    # -- A100 (p4d/p4de) ------------------------------------------------------------------------------------------
    Measurement("a100-40gb-llama31-8b-alone", "johnmusgrave.com 'vLLM throughput/latency sweep' (vLLM 0.23, A100 40GB, 1024/128): "
                "one request decodes at about 75 tokens/s", "p4d.24xlarge", LLAMA_8B, 1, 1024, 128, "alone", 1, "tpot", 1 / 75, "mean"),
    Measurement("a100-llama31-8b-saturated", f"{_SGL}: 1 x A100 80G, rate inf, 5,000 prompts: 21.27 req/s",
                "p4de.24xlarge", LLAMA_8B, 1, *SHAREGPT, "burst", 5000, "requestsPerSecond", 21.27, "total", {"maxModelLen": 4096}, scheduler_steps=10),
    Measurement("a100-llama31-8b-rps4-ttft", f"{_SGL}: 1 x A100 80G, request rate 4: median TTFT 100.48 ms",
                "p4de.24xlarge", LLAMA_8B, 1, *SHAREGPT, "rate", 4, "ttft", 0.10048, "median", {"maxModelLen": 4096}, scheduler_steps=10),
    Measurement("a100-llama31-8b-rps4-tpot", f"{_SGL}: 1 x A100 80G, request rate 4: median TPOT 14.14 ms",
                "p4de.24xlarge", LLAMA_8B, 1, *SHAREGPT, "rate", 4, "tpot", 0.01414, "median", {"maxModelLen": 4096}, scheduler_steps=10),
    Measurement("a100-llama31-8b-rps8-ttft", f"{_SGL}: 1 x A100 80G, request rate 8: median TTFT 120.39 ms",
                "p4de.24xlarge", LLAMA_8B, 1, *SHAREGPT, "rate", 8, "ttft", 0.12039, "median", {"maxModelLen": 4096}, scheduler_steps=10),
    Measurement("a100-llama31-8b-rps8-tpot", f"{_SGL}: 1 x A100 80G, request rate 8: median TPOT 17.09 ms",
                "p4de.24xlarge", LLAMA_8B, 1, *SHAREGPT, "rate", 8, "tpot", 0.01709, "median", {"maxModelLen": 4096}, scheduler_steps=10),
    Measurement("a100-qwen3-14b-sharegpt", _GPUSTACK.format("qwen3-14b/a100.md") + ": ShareGPT 1,000 at once, 'Request throughput (req/s): 9.36'",
                "p4de.24xlarge", QWEN3_14B, 1, *SHAREGPT, "burst", 1000, "requestsPerSecond", 9.36, "total"),
    Measurement("a100-qwen3-14b-2000-100", _GPUSTACK.format("qwen3-14b/a100.md") + ": random 2000/100, 500 at once, 2.85 req/s",
                "p4de.24xlarge", QWEN3_14B, 1, 2000, 100, "burst", 500, "requestsPerSecond", 2.85, "total"),
    Measurement("a100-qwen3-14b-128-4", _GPUSTACK.format("qwen3-14b/a100.md") + ": random 128/4, 1,000 at once, 37.33 req/s",
                "p4de.24xlarge", QWEN3_14B, 1, 128, 4, "burst", 1000, "requestsPerSecond", 37.33, "total"),
    Measurement("a100-qwen3-32b-sharegpt", _GPUSTACK.format("qwen3-32b/a100.md") + ": single A100 SXM 80GB, --max-model-len 32768, "
                "ShareGPT 1,000 at once, 4.13 req/s", "p4de.24xlarge", QWEN3_32B, 1, *SHAREGPT, "burst", 1000, "requestsPerSecond", 4.13, "total",
                {"maxModelLen": 32768}),
    Measurement("a100-qwen3-32b-128-4", _GPUSTACK.format("qwen3-32b/a100.md") + ": random 128/4, 1,000 at once, 20.17 req/s",
                "p4de.24xlarge", QWEN3_32B, 1, 128, 4, "burst", 1000, "requestsPerSecond", 20.17, "total", {"maxModelLen": 32768}),
    Measurement("a100-qwen2-7b-kv-util050", "dennislee22/vLLM-benchmarking log/vllm-7B-1gpuA10080GB-0.5GRAM.log (vLLM 0.10.1.1, util 0.5, "
                "max_model_len 16384): 'GPU KV cache size: 464,848 tokens'", "p4de.24xlarge", QWEN2_7B, 1, 0, 0, "idle", 0, "kvTokens", 464_848,
                "total", {"gpuMemoryUtilization": 0.5, "maxModelLen": 16384}),
    Measurement("a100-qwen2-7b-kv-util025", "dennislee22/vLLM-benchmarking log/vllm-7B-1gpuA10080GB-0.25GRAM.log (util 0.25): "
                "'GPU KV cache size: 93,872 tokens'", "p4de.24xlarge", QWEN2_7B, 1, 0, 0, "idle", 0, "kvTokens", 93_872, "total",
                {"gpuMemoryUtilization": 0.25, "maxModelLen": 16384}),
    # -- H100 (p5) -------------------------------------------------------------------------------------------------
    Measurement("h100-llama31-8b-alone", "yobitelcomm.github.io/bench/recipes/concurrency-sweep (vLLM 0.21, H100 80GB HBM3, concurrency 1): "
                "TPOT p50 6.48 ms", "p5.48xlarge", LLAMA_8B, 1, 256, 256, "alone", 1, "tpot", 0.00648),
    Measurement("h100-qwen3-8b-c4-ttft", _GPUSTACK.format("qwen3-8b/h100-latency.md") + ": ShareGPT, --max-concurrency 4, 'Mean TTFT (ms): 64.00'",
                "p5.48xlarge", QWEN3_8B, 1, *SHAREGPT, "concurrency", 4, "ttft", 0.064, "mean"),
    Measurement("h100-qwen3-8b-c4-tpot", _GPUSTACK.format("qwen3-8b/h100-latency.md") + ": --max-concurrency 4, 'Mean TPOT (ms): 7.38'",
                "p5.48xlarge", QWEN3_8B, 1, *SHAREGPT, "concurrency", 4, "tpot", 0.00738, "mean"),
    Measurement("h100-qwen3-14b-sharegpt", _GPUSTACK.format("qwen3-14b/h100.md") + ": single H100 SXM, ShareGPT 1,000 at once, 15.74 req/s",
                "p5.48xlarge", QWEN3_14B, 1, *SHAREGPT, "burst", 1000, "requestsPerSecond", 15.74, "total"),
    Measurement("h100-qwen3-14b-2000-100", _GPUSTACK.format("qwen3-14b/h100.md") + ": random 2000/100, 500 at once, 5.06 req/s",
                "p5.48xlarge", QWEN3_14B, 1, 2000, 100, "burst", 500, "requestsPerSecond", 5.06, "total"),
    Measurement("h100-qwen3-14b-128-4", _GPUSTACK.format("qwen3-14b/h100.md") + ": random 128/4, 1,000 at once, 44.02 req/s",
                "p5.48xlarge", QWEN3_14B, 1, 128, 4, "burst", 1000, "requestsPerSecond", 44.02, "total", excluded=_API_BOUND),
    Measurement("h100-qwen3-32b-sharegpt", _GPUSTACK.format("qwen3-32b/h100.md") + ": one H100 (no -tp), ShareGPT 1,000 at once, 5.62 req/s",
                "p5.48xlarge", QWEN3_32B, 1, *SHAREGPT, "burst", 1000, "requestsPerSecond", 5.62, "total", excluded=_GPUS_UNSTATED),
    Measurement("h100-qwen3-32b-2000-100", _GPUSTACK.format("qwen3-32b/h100.md") + ": random 2000/100, 500 at once, 1.52 req/s",
                "p5.48xlarge", QWEN3_32B, 1, 2000, 100, "burst", 500, "requestsPerSecond", 1.52, "total", excluded=_GPUS_UNSTATED),
    Measurement("h100x4-llama31-70b-saturated", f"{_SGL}: 4 x H100 80G TP4, rate inf, 5,000 prompts: 19.04 req/s",
                "p5.48xlarge", LLAMA_70B, 4, *SHAREGPT, "burst", 5000, "requestsPerSecond", 19.04, "total", {"maxModelLen": 4096}, scheduler_steps=10),
    Measurement("h100x4-llama31-70b-rps4-ttft", f"{_SGL}: 4 x H100 80G TP4, request rate 4: median TTFT 179.15 ms",
                "p5.48xlarge", LLAMA_70B, 4, *SHAREGPT, "rate", 4, "ttft", 0.17915, "median", {"maxModelLen": 4096}, scheduler_steps=10),
    Measurement("h100x4-llama31-70b-rps4-tpot", f"{_SGL}: 4 x H100 80G TP4, request rate 4: median TPOT 23.58 ms",
                "p5.48xlarge", LLAMA_70B, 4, *SHAREGPT, "rate", 4, "tpot", 0.02358, "median", {"maxModelLen": 4096}, scheduler_steps=10),
    Measurement("h100x4-llama31-70b-rps8-ttft", f"{_SGL}: 4 x H100 80G TP4, request rate 8: median TTFT 207.12 ms",
                "p5.48xlarge", LLAMA_70B, 4, *SHAREGPT, "rate", 8, "ttft", 0.20712, "median", {"maxModelLen": 4096}, scheduler_steps=10),
    Measurement("h100x4-llama31-70b-rps8-tpot", f"{_SGL}: 4 x H100 80G TP4, request rate 8: median TPOT 29.15 ms",
                "p5.48xlarge", LLAMA_70B, 4, *SHAREGPT, "rate", 8, "tpot", 0.02915, "median", {"maxModelLen": 4096}, scheduler_steps=10),
    Measurement("h100-llama31-8b-kv", f"{_MEMORY}: Llama-3.1-8B TP1 'Available KV cache memory: 51.38 GiB' (= 420,925 tokens of 128 KiB)",
                "p5.48xlarge", LLAMA_8B, 1, 0, 0, "idle", 0, "kvTokens", 420_925, "total", {"gpuMemoryUtilization": 0.9, "maxModelLen": 16000}),
    Measurement("h100-qwen3-32b-kv", f"{_MEMORY}: Qwen3-32B TP1 KV 4.45 GiB (= 18,227 tokens of 256 KiB)",
                "p5.48xlarge", QWEN3_32B, 1, 0, 0, "idle", 0, "kvTokens", 18_227, "total", {"gpuMemoryUtilization": 0.9, "maxModelLen": 16000}),
)  # fmt: skip


def setup(m: Measurement) -> tuple[ModelConfig, GpuPool]:
    """The measurement's model and a pool of its instance type, as the platform's config describes them
    (vLLM profiling its own KV cache, as the published runs did)."""
    model = ModelConfig.model_validate(
        {
            "name": "calibration",
            "huggingFaceId": "calibration/model",
            "revision": "0" * 40,
            "pool": "calibration",
            "maxModelLen": 8192,
            "tensorParallelSize": m.tensor_parallel,
            "resources": {"cpu": "4", "memory": "16Gi"},
            "replicas": {"min": 1, "max": 1},
            "engine": {"explicitKvCache": False},
            **m.model,
            **m.settings,
        }
    )
    pool = GpuPool.model_validate({"name": "calibration", "instanceTypes": [m.instance], "gpuLimit": 8})
    return model, pool


def replica(m: Measurement, efficiency: Efficiency | None = None) -> ReplicaPerformance:
    return performance(*setup(m), efficiency)


REQUESTS = 400
"""Requests per simulated benchmark (bursts and rates): enough for a steady middle, fast enough to fit."""


def predict(m: Measurement, efficiency: Efficiency | None = None) -> float:
    """The serving model's answer to the measurement's question."""
    perf = replica(m, efficiency)
    if m.metric == "kvTokens":
        return float(perf.kv_capacity_tokens)
    if m.load == "alone":
        return perf.decode_step_seconds(1, m.prompt + m.output / 2) if m.metric == "tpot" else perf.ttft_alone(m.prompt)
    n = REQUESTS
    if m.load == "burst":
        n = min(int(m.amount), max(REQUESTS, 3 * perf.batch_limit(m.prompt + m.output / 2)))
        result = engine.run(perf, np.zeros(n), np.full(n, m.prompt), np.full(n, m.output), scheduler_steps=m.scheduler_steps)
    elif m.load == "rate":
        arrival = np.cumsum(np.random.default_rng(0).exponential(1 / m.amount, n))
        result = engine.run(perf, arrival, np.full(n, m.prompt), np.full(n, m.output), scheduler_steps=m.scheduler_steps)
    else:
        clients = int(m.amount)
        n = max(8 * clients, 64)
        result = engine.closed_loop(perf, clients, m.prompt, m.output, n, m.scheduler_steps)
    if m.metric == "requestsPerSecond":
        return _burst_rate(result) if m.load == "burst" else result.throughput()
    if m.metric == "outputTokensPerSecond":
        return (_burst_rate(result) if m.load == "burst" else result.throughput()) * m.output
    values = (result.ttft if m.metric == "ttft" else result.tpot)[len(result.ttft) // 4 :]
    return float(np.nanmedian(values) if m.statistic == "median" else np.nanmean(values))


def _burst_rate(result: engine.EngineResult) -> float:
    """Requests over the whole run, as a benchmark reports a burst: completed over the last completion."""
    done = (result.arrival + result.end)[~np.isnan(result.end)]
    return float(len(done) / done.max()) if len(done) else 0.0


def error(m: Measurement, efficiency: Efficiency | None = None) -> float:
    """log(predicted / measured): 0 is exact, ±0.26 is ±30 %."""
    return math.log(predict(m, efficiency) / m.value)


def table(efficiency: Efficiency | None = None) -> dict[str, dict[str, list[float]]]:
    """Per group and GPU, the relative errors (predicted / measured - 1) of the held-out measurements."""
    out: dict[str, dict[str, list[float]]] = {}
    for m in MEASUREMENTS:
        if m.held_out:
            out.setdefault(m.group, {}).setdefault(m.gpu, []).append(math.exp(error(m, efficiency)) - 1)
    return out


# The fit searches these values of each efficiency (the shipped ones must be among them).
GRIDS: dict[str, list[float]] = {
    "bandwidth": [0.7, 0.75, 0.8, 0.85, 0.9, 0.95],
    "kv_bandwidth": [0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6, 0.7, 0.8],
    "compute": [0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.8],
    "step_overhead": [0.001, 0.002, 0.003, 0.004, 0.006],
    "request_overhead": [0.01, 0.02, 0.03, 0.04, 0.06, 0.08, 0.1],
    "sequence_overhead": [0.0, 0.00002, 0.00003, 0.00005, 0.00007, 0.0001],
}


def training() -> list[Measurement]:
    """The measurements the efficiencies are fitted to: not held out, not excluded, not KV capacity."""
    return [m for m in MEASUREMENTS if not m.held_out and not m.excluded and m.metric != "kvTokens"]


def loss(efficiency: Efficiency, measurements: list[Measurement] | None = None) -> float:
    """The mean absolute log error over the training measurements (or these)."""
    return float(np.mean([abs(error(m, efficiency)) for m in measurements or training()]))


def fit(start: Efficiency | None = None, rounds: int = 6) -> Efficiency:
    """Coordinate descent over GRIDS on the training measurements' mean absolute log error, until a
    round changes nothing."""
    measurements = training()
    best = start or Efficiency()
    best_loss = loss(best, measurements)
    for _ in range(rounds):
        changed = False
        for field, values in GRIDS.items():
            for value in values:
                trial = dataclasses.replace(best, **{field: value})
                trial_loss = loss(trial, measurements)
                if trial_loss < best_loss - 1e-9:
                    best, best_loss, changed = trial, trial_loss, True
        if not changed:
            break
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The serving model against published vLLM measurements.")
    parser.add_argument("--fit", action="store_true", help="search the efficiencies on the training two-thirds")
    args = parser.parse_args(argv)
    eff = fit() if args.fit else Efficiency()
    print(f"efficiencies: {eff}")
    for m in MEASUREMENTS:
        predicted = predict(m, eff)
        print(
            f"{'held-out' if m.held_out else 'excluded' if m.excluded else 'fit     '} {m.name:34s} {m.metric:22s} measured {m.value:12.4f} predicted {predicted:12.4f} "
            f"({predicted / m.value - 1:+.0%})"
        )
    print("held-out, share within ±30 % (n):")
    for metric, by_gpu in table(eff).items():
        every = [e for errors in by_gpu.values() for e in errors]
        cells = ", ".join(
            f"{gpu} {np.median(np.abs(errors)):.0%} median |error| (n={len(errors)})" for gpu, errors in sorted(by_gpu.items())
        )
        print(f"  {metric:22s} {np.mean(np.abs(every) <= 0.30):.0%} (n={len(every)}): {cells}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
