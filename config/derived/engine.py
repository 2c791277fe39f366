"""vLLM's engine start after the weights, in its parts. Pure.

The parts, each from a published figure in `config/facts/speed.py`:

- boot: the Python process and its imports, vLLM's config, inspection and worker spawn, EngineCore setup and
  kernel warm-up (CPU-bound: the vLLM container's CPU limit sits above its request for it);
- tensorParallel: what a tensor-parallel engine adds (more workers, NCCL), zero on one GPU;
- kvProfiling: vLLM's memory-profiling pass, skipped when the platform passes --kv-cache-memory-bytes;
- cacheCopy: the compile cache's archive fetched and unpacked before vLLM starts (a cache hit only);
- compile: torch.compile, cold (every Inductor and Triton kernel built) or from the compile cache;
- cudaGraphs: one capture per batch size of the list vLLM builds (capture_sizes), skipped with --enforce-eager.

`cached` counts a compile-cache hit; the pessimistic start (`pessimistic`) counts a cold compile, the slow
end of the boot's sources (a g5 whose figure also covers profiling) and the graph list of the flags.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from config.derived import capacity
from config.facts import speed
from config.sections.gpu_pools import GpuPool
from config.sections.models import ModelConfig

# The startup probe allows the pessimistic load time (weights at the slow end plus a cold engine start,
# from the speed catalog) times this margin, and never less than a conservative allowance of a fixed
# start plus a rate per GiB of checkpoint: a probe too short is a crash loop (the kubelet kills a
# replica that is still loading), one too long only delays noticing a start that hangs. The published
# figures come from 8B models; big tensor-parallel models load slower.
STARTUP_MARGIN = 1.5
STARTUP_MIN_SECONDS = 120
STARTUP_SECONDS_PER_GIB = 10
PARTS = ("cacheCopy", "boot", "tensorParallel", "kvProfiling", "compile", "cudaGraphs")
VLLM_MAX_CAPTURE_SIZE = 512
"""vLLM's largest default capture size: min(2 x max-num-seqs, 512) (vllm/config/vllm.py, set_cudagraph_sizes)."""


@dataclass(frozen=True)
class EngineStart:
    """Seconds per part (PARTS), and their sum."""

    parts: dict[str, float]

    @property
    def seconds(self) -> float:
        return sum(self.parts.values())


def capture_max(model: ModelConfig, pool: GpuPool | None = None) -> int:
    """The largest batch (in tokens) vLLM captures a CUDA graph for: vLLM's default min(2 x max-num-seqs, 512),
    lowered to engine.cudaGraphCaptureMax. Never above the default: a small max-num-seqs keeps its short list."""
    seqs = capacity.max_num_seqs(model, pool) if pool is not None else (model.max_num_seqs or capacity.MAX_NUM_SEQS_SMALL)
    default = min(2 * seqs, VLLM_MAX_CAPTURE_SIZE)
    configured = model.engine.cuda_graph_capture_max
    return default if configured is None else min(configured, default)


def capture_sizes(largest: int) -> list[int]:
    """The batch sizes vLLM captures up to `largest`: 1, 2, 4, every 8 below 256, every 16 from 256
    (vllm/config/vllm.py set_cudagraph_sizes)."""
    return [s for s in [1, 2, 4, *range(8, 256, 8), *range(256, VLLM_MAX_CAPTURE_SIZE + 1, 16)] if s <= largest]


def start(model: ModelConfig, pool: GpuPool | None = None, *, cached: bool = False, pessimistic: bool = False) -> EngineStart:
    """The engine start in its parts: with a compile-cache hit (`cached`), cold, or at the slow end (`pessimistic`, always cold)."""
    eager = capacity.eager(model)
    graphs = 0.0 if eager else len(capture_sizes(capture_max(model, pool))) * speed.CUDA_GRAPH_PER_SIZE.value
    profiling = 0.0 if capacity.explicit_kv(model, pool) else speed.KV_PROFILING.value
    if pessimistic:
        # the g5 figure's 48 s covers the boot and the profiling pass ("profiling and KV-cache allocation")
        boot, profiling = speed.ENGINE_INIT.value, 0.0
    else:
        boot = speed.ENGINE_BOOT.value
    if eager:
        compile_s = 0.0
    elif cached and not pessimistic:
        compile_s = speed.CACHED_COMPILE.value
    else:
        compile_s = speed.compile_seconds(capacity.checkpoint_gb(model))
    tp = speed.TENSOR_PARALLEL_SETUP.value if model.tensor_parallel_size > 1 else 0.0
    copy = speed.CACHE_COPY.value if cached and not pessimistic and not eager else 0.0
    return EngineStart(
        {"cacheCopy": copy, "boot": boot, "tensorParallel": tp, "kvProfiling": profiling, "compile": compile_s, "cudaGraphs": graphs}
    )


def load_seconds(model: ModelConfig, pool: GpuPool | None = None, *, cached: bool = False, pessimistic: bool = False) -> int:
    """From container start to a healthy server: the weights, then the engine start."""
    weights = capacity.weights_seconds(model, capacity.weights_host(model, pool, pessimistic=pessimistic), pessimistic=pessimistic)
    return math.ceil(weights + start(model, pool, cached=cached, pessimistic=pessimistic).seconds)


def startup_budget_seconds(model: ModelConfig, pool: GpuPool | None = None) -> int:
    """Seconds the startup probe allows: the configured budget, else the pessimistic load time with a
    margin (never a cached start: a probe too short is a crash loop on the first replica that compiles)."""
    if model.startup.budget_seconds is not None:
        return model.startup.budget_seconds
    allowance = STARTUP_MIN_SECONDS + STARTUP_SECONDS_PER_GIB * round(capacity.checkpoint_gib(model))
    return max(allowance, math.ceil(load_seconds(model, pool, pessimistic=True) * STARTUP_MARGIN))
