"""What one replica can serve: prefill bound by compute, decode by memory bandwidth. Pure.

A decode step reads every weight once and the KV cache of every running sequence once; its time
is those bytes over the replica's effective memory bandwidth, plus a fixed per-step overhead
(scheduling, sampling, kernel launches). A prefill costs 2 x parameters FLOPs per prompt token at
the replica's effective compute. Concurrency is bound by the KV cache that fits beside the
weights (config/derived/capacity.py) and by vLLM's max-num-seqs. The effective fractions of the
datasheet figures are calibrated against published vLLM measurements (planner/calibration.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from config.derived import capacity
from config.facts import catalog
from config.sections.gpu_pools import GpuPool
from config.sections.models import ModelConfig

GIB = 2**30
# Calibrated against published vLLM measurements (planner/calibration.py; the test keeps every
# prediction within 30 % of its measurement).
BANDWIDTH_EFFICIENCY = 0.85
"""Share of the datasheet memory bandwidth a decode step achieves."""
COMPUTE_EFFICIENCY = 0.80
"""Share of the datasheet dense tensor FLOPs a prefill achieves."""
STEP_OVERHEAD_SECONDS = 0.002
"""Per decode step: scheduling, sampling, launches (CUDA graphs keep it small)."""
REQUEST_OVERHEAD_SECONDS = 0.04
"""Per request before its first token: HTTP, tokenization, scheduling."""
TENSOR_PARALLEL_EFFICIENCY = 0.85
"""Each doubling of tensor parallelism keeps this share (all-reduce per layer)."""


@dataclass(frozen=True)
class ReplicaPerformance:
    """One replica of a model on a pool, as the planner serves requests with it."""

    prefill_tokens_per_second: float
    weights_step_seconds: float
    """The part of a decode step that reads the weights."""
    kv_step_seconds_per_token: float
    """The part of a decode step per context token of the running batch."""
    kv_capacity_tokens: int
    max_num_seqs: int

    def step_seconds(self, context_tokens: float) -> float:
        """One decode step with this many tokens of context across the running batch."""
        return self.weights_step_seconds + self.kv_step_seconds_per_token * context_tokens + STEP_OVERHEAD_SECONDS

    def prefill_seconds(self, prompt_tokens: float) -> float:
        return prompt_tokens / self.prefill_tokens_per_second

    def ttft_alone(self, prompt_tokens: float) -> float:
        """Time to first token of a request alone on the replica."""
        return REQUEST_OVERHEAD_SECONDS + self.prefill_seconds(prompt_tokens) + self.step_seconds(prompt_tokens)

    def saturated_requests_per_second(self, prompt: float, output: float) -> float:
        """Requests a replica completes per second when full: as many sequences as KV cache and
        max-num-seqs allow (each holding its prompt and half its output on average), each with its
        prefill and decode steps, decoding paused for the other sequences' prefills (the replay's rule)."""
        batch = self.batch_limit(prompt + output / 2)
        # each request's own prefill, its decode steps, and the pauses for the others' prefills
        per_request = batch * self.prefill_seconds(prompt) + output * self.step_seconds(batch * (prompt + output / 2))
        return batch / per_request if per_request > 0 else 0.0

    def batch_limit(self, tokens_per_sequence: float) -> int:
        return max(1, min(self.max_num_seqs, math.floor(self.kv_capacity_tokens / max(1.0, tokens_per_sequence))))


def _shares(model: ModelConfig, pool: GpuPool, gpu: catalog.Gpu) -> tuple[float, float]:
    """(compute share, bandwidth share) of one GPU that one tensor-parallel rank gets."""
    if pool.sharing.mig:
        profile = capacity.pool_mig_profile(pool)
        compute_slices = int(profile.name.split("g.")[0])
        return compute_slices / 7, gpu.mig_profile_gib(profile.name) / gpu.memory_gib
    if pool.sharing.time_slicing:
        share = 1 / pool.sharing.time_slicing.replicas  # both slices busy: each gets its turn
        return share, share
    return 1.0, 1.0


def performance(model: ModelConfig, pool: GpuPool) -> ReplicaPerformance:
    """The replica's performance on the pool's smallest device it may land on."""
    hosts = capacity.replica_hosts(model, pool) or pool.resolved_instance_types()
    host = min(hosts, key=lambda t: (capacity.device_for(pool, t).gib, t.price_per_hour))
    gpu = host.gpu
    assert gpu is not None
    tp = model.tensor_parallel_size
    compute_share, bandwidth_share = _shares(model, pool, gpu)
    scaling = tp * TENSOR_PARALLEL_EFFICIENCY ** math.log2(tp)
    fp8 = model.quantization == "fp8" and gpu.fp8_tflops is not None
    flops = (gpu.fp8_tflops if fp8 and gpu.fp8_tflops else gpu.bf16_tflops) * 1e12 * compute_share * scaling * COMPUTE_EFFICIENCY
    bandwidth = gpu.bandwidth_gbs * 1e9 * bandwidth_share * scaling * BANDWIDTH_EFFICIENCY
    device = capacity.device_for(pool, host)
    free_gib = capacity.kv_cache_gib(model, device)
    kv_tokens = max(0, math.floor(free_gib * GIB / capacity.kv_bytes_per_token(model)))
    return ReplicaPerformance(
        prefill_tokens_per_second=flops / (2 * model.parameters_billions * 1e9),
        weights_step_seconds=capacity.weights_gib(model) * GIB / bandwidth,
        kv_step_seconds_per_token=capacity.kv_bytes_per_token(model) / bandwidth,
        kv_capacity_tokens=kv_tokens,
        max_num_seqs=model.max_num_seqs or capacity.default_max_num_seqs(gpu, device.gib),
    )
