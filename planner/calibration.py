"""Published vLLM measurements the serving model is calibrated against. Pure data and arithmetic.

Each measurement names its source, GPU, model, lengths and load, and what was measured: the time
per output token (decode, bound by memory bandwidth) or the time to first token (prefill, bound
by compute). `predict` answers the same question with planner/serving.py, and
tests/planner/test_calibration.py keeps every prediction within 30 % of its measurement.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from config.sections.gpu_pools import GpuPool
from config.sections.models import ModelConfig
from planner.serving import performance

LLAMA_8B = {"parametersBillions": 8.03, "architecture": {"numLayers": 32, "numKvHeads": 8, "headDim": 128}}
LLAMA_70B = {"parametersBillions": 70.6, "architecture": {"numLayers": 80, "numKvHeads": 8, "headDim": 128}}
QWEN3_8B = {"parametersBillions": 8.19, "architecture": {"numLayers": 36, "numKvHeads": 8, "headDim": 128}}


@dataclass(frozen=True)
class Measurement:
    name: str
    source: str
    instance: str
    model: dict[str, object]
    tensor_parallel: int
    prompt: int
    output: int
    concurrency: int
    """Sequences decoding together (1: a request alone)."""
    metric: Literal["tpot", "ttft"]
    seconds: float


MEASUREMENTS: tuple[Measurement, ...] = (
    Measurement(
        "a10g-llama3-8b-alone",
        "awsdocs/amazon-eks-user-guide latest/ug/ml/ml-realtime-inference-llm-inference-vllm.adoc (GuideLLM, max_num_seqs=1, "
        "256/128 tokens; the page's nvidia-smi sample shows an A10G)",
        "g5.2xlarge",
        LLAMA_8B,
        1,
        256,
        128,
        1,
        "tpot",
        0.0340,
    ),
    Measurement(
        "a10g-llama3-8b-c1",
        "llmperf benchmark 'Llama 3 8b Instruct on NVIDIA A10G' (vLLM v0.4.3, mean 550/150 tokens, concurrency 1): "
        "inter-token latency 30.7 ms",
        "g5.2xlarge",
        LLAMA_8B,
        1,
        550,
        150,
        1,
        "tpot",
        0.0307,
    ),
    Measurement(
        "a10g-llama3-8b-c16",
        "same llmperf benchmark, concurrency 16: inter-token latency 42.7 ms",
        "g5.2xlarge",
        LLAMA_8B,
        1,
        550,
        150,
        16,
        "tpot",
        0.0427,
    ),
    Measurement(
        "a10g-llama3-8b-ttft",
        "same llmperf benchmark, concurrency 1: time to first token 137 ms",
        "g5.2xlarge",
        LLAMA_8B,
        1,
        550,
        150,
        1,
        "ttft",
        0.137,
    ),
    Measurement(
        "a100-40gb-llama31-8b-alone",
        "johnmusgrave.com 'vLLM throughput/latency sweep' (vLLM 0.23, A100 40GB, 1024/128 tokens): one request decodes at "
        "about 75 tokens/s",
        "p4d.24xlarge",
        LLAMA_8B,
        1,
        1024,
        128,
        1,
        "tpot",
        1 / 75,
    ),
    Measurement(
        "h100-llama31-8b-c1",
        "yobitelcomm.github.io/bench/recipes/concurrency-sweep (vLLM 0.21, H100 80GB HBM3, concurrency 1): TPOT p50 6.48 ms",
        "p5.48xlarge",
        LLAMA_8B,
        1,
        256,
        256,
        1,
        "tpot",
        0.00648,
    ),
    Measurement(
        "h100x4-llama31-70b-rps4",
        "sgl-project/sglang benchmark/benchmark_vllm_060/README.md (vLLM 0.6.0, Llama 3.1 70B Instruct, 4 x H100 TP4, "
        "ShareGPT at 4 requests/s): median TPOT 23.58 ms",
        "p5.48xlarge",
        LLAMA_70B,
        4,
        256,
        256,
        1,
        "tpot",
        0.02358,
    ),
    Measurement(
        "h100-qwen3-8b-ttft",
        "gpustack/gpustack docs/performance-lab/qwen3-8b/h100-latency.md (vLLM 0.11, ShareGPT ~233/221 tokens, "
        "max-concurrency 4): mean TTFT 64.00 ms",
        "p5.48xlarge",
        QWEN3_8B,
        1,
        233,
        221,
        4,
        "ttft",
        0.064,
    ),
)


def setup(m: Measurement) -> tuple[ModelConfig, GpuPool]:
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
            **m.model,
        }
    )
    pool = GpuPool.model_validate({"name": "calibration", "instanceTypes": [m.instance], "gpuLimit": 8})
    return model, pool


def predict(m: Measurement) -> float:
    """The serving model's answer to the measurement's question, in seconds."""
    model, pool = setup(m)
    perf = performance(model, pool)
    context = m.concurrency * (m.prompt + m.output / 2)
    if m.metric == "tpot":
        return perf.decode_step_seconds(m.concurrency, context)
    return perf.ttft_alone(m.prompt)
