"""What one replica can serve: the roofline of a vLLM step, and the replay's per-request arithmetic. Pure.

A scheduler step (planner/engine.py replays them one by one) computes the tokens it scheduled (one
per decoding request, a chunk of each prefilling prompt, within `--max-num-batched-tokens`): its
dense layers take the slower of reading every weight once and computing 2 x parameters FLOPs per
token; attention reads the KV cache of every scheduled request; a fixed overhead (scheduling,
sampling, launches) comes on top. Concurrency is bound by the KV cache beside the weights (the
explicit `--kv-cache-memory-bytes` where the platform sets it; config/derived/capacity.py) and by
vLLM's max-num-seqs. The achieved shares of the datasheet figures are calibrated against published
vLLM measurements (planner/calibration.py).

The replay (planner/simulate.py) cannot afford a step loop for a day of a fleet; it books each
request once, at admission, with the same roofline (`prefill_seconds`, `decode_step_seconds`), and
tests/planner/test_engine.py keeps that arithmetic close to the step-level engine.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from config.derived import capacity
from config.facts import catalog
from config.sections.gpu_pools import GpuPool
from config.sections.models import ModelConfig

GIB = 2**30
# Calibrated against published vLLM measurements (planner/calibration.py; the test checks the
# held-out third against them).
BANDWIDTH_EFFICIENCY = 0.85
"""Share of the datasheet memory bandwidth a step's weight reads achieve."""
KV_BANDWIDTH_EFFICIENCY = 0.35
"""Share of it attention's reads of the paged KV cache achieve (gathers of 16-token blocks, not one stream)."""
COMPUTE_EFFICIENCY = 0.55
"""Share of the GPU's dense tensor FLOPs (the catalog's figure: measured where the datasheet misleads) a step's GEMMs achieve."""
STEP_OVERHEAD_SECONDS = 0.001
"""Per decode step: scheduling, sampling, launches (CUDA graphs keep it small)."""
REQUEST_OVERHEAD_SECONDS = 0.02
"""Per request before its first token: HTTP, tokenization, scheduling."""
SEQUENCE_OVERHEAD_SECONDS = 0.0001
"""Per step and scheduled sequence: its share of scheduling, sampling and output processing."""
TENSOR_PARALLEL_EFFICIENCY = 0.85
"""Each doubling of tensor parallelism keeps this share over NVLink (an all-reduce per layer)."""
TENSOR_PARALLEL_EFFICIENCY_PCIE = 0.70
"""... and over PCIe (g5/g6/g6e hosts: no NVLink, all-reduces through the host's PCIe switches). An
assumption: no published vLLM measurement of TP on these hosts was found; PCIe 4.0 x16 moves ~25 GB/s
per direction against NVLink's 300+ GB/s, so the all-reduce share of a step grows."""
PROFILED_RESERVE_GIB = {2048: 0.6, 8192: 5.3}
"""What vLLM's start-up profiling keeps beside weights and KV cache per GPU, by token budget (the
activation peak of a dummy batch of --max-num-batched-tokens, non-torch memory): 0.56-0.57 GiB for
Qwen2-7B on an A100 80GB at 2,048 (dennislee22/vLLM-benchmarking logs, vLLM 0.10.1.1: 'Model loading
took 14.2488 GiB', 'Available KV cache memory: 24.83 GiB' at utilization 0.5, 5.01 GiB at 0.25); 4.89 and
5.78 GiB for Llama-3.1-8B and Qwen3-32B on an H100 at 8,192 (llm-d/llm-d-benchmark
config_explorer/empirical-vllm-memory-results.md: activation 4.76 + non-torch 0.13, 5.64 + 0.14). Used
where the platform lets vLLM profile (engine.explicitKvCache false); the explicit size is exact."""


@dataclass(frozen=True)
class Efficiency:
    """The achieved shares and fixed costs the roofline runs at: the shipped ones, or a calibration's trial."""

    bandwidth: float = BANDWIDTH_EFFICIENCY
    kv_bandwidth: float = KV_BANDWIDTH_EFFICIENCY
    compute: float = COMPUTE_EFFICIENCY
    step_overhead: float = STEP_OVERHEAD_SECONDS
    request_overhead: float = REQUEST_OVERHEAD_SECONDS
    sequence_overhead: float = SEQUENCE_OVERHEAD_SECONDS


@dataclass(frozen=True)
class ReplicaPerformance:
    """One replica of a model on a pool: the roofline its steps run on, and its limits."""

    compute_seconds_per_token: float
    """The dense layers' compute for one scheduled token (2 x parameters FLOPs at the achieved rate)."""
    weights_step_seconds: float
    """Reading every weight once (each step does)."""
    kv_step_seconds_per_token: float
    """Reading one token of context in attention."""
    kv_capacity_tokens: int
    max_num_seqs: int
    max_num_batched_tokens: int = capacity.MAX_NUM_BATCHED_TOKENS_SMALL
    step_overhead: float = STEP_OVERHEAD_SECONDS
    """Per step: scheduling, sampling, launches."""
    request_overhead: float = REQUEST_OVERHEAD_SECONDS
    """Per request before its first token reaches the client: HTTP, tokenization, detokenization."""
    sequence_overhead: float = SEQUENCE_OVERHEAD_SECONDS
    """Per step and scheduled sequence."""

    def step_time(self, tokens: float, context: float, sequences: float) -> float:
        """One step computing `tokens` tokens for `sequences` requests holding `context` tokens of KV cache
        between them."""
        dense = (
            self.weights_step_seconds
            if self.weights_step_seconds > tokens * self.compute_seconds_per_token
            else tokens * self.compute_seconds_per_token
        )
        return self.step_overhead + self.sequence_overhead * sequences + dense + self.kv_step_seconds_per_token * context

    def decode_step_seconds(self, batch: float, context: float) -> float:
        """A step of `batch` decoding sequences holding `context` tokens between them."""
        return self.step_time(batch, context, batch)

    def prefill_seconds(self, prompt: float, batch: float = 0, context: float = 0) -> float:
        """A prompt's prefill, chunked by the token budget, each chunk's step shared with `batch`
        decoding sequences (one token each) holding `context` tokens."""
        chunks = max(1, math.ceil(prompt / self.max_num_batched_tokens))
        tokens = prompt + chunks * batch
        dense = max(chunks * self.weights_step_seconds, tokens * self.compute_seconds_per_token)
        fixed = chunks * (self.step_overhead + self.sequence_overhead * (batch + 1))
        return fixed + dense + self.kv_step_seconds_per_token * (chunks * context + prompt * (chunks + 1) / 2)

    def booking(self, prompt: float, batch: float, context: float, held: float) -> tuple[float, float, float]:
        """(`admission_wait(batch, context) + prefill_seconds(prompt, batch, context)`,
        `decode_step_seconds(batch + 1, context + held)`, `prefill_stall(prompt, batch + 1, context + held)`)
        at once: what the replay books for a request admitted beside `batch` sequences holding `context`
        tokens, which holds `held` tokens while it decodes (a prompt within one chunk in a few
        operations; the methods themselves otherwise)."""
        after = context + held
        if prompt > self.max_num_batched_tokens:
            return (
                self.admission_wait(batch, context) + self.prefill_seconds(prompt, batch, context),
                self.decode_step_seconds(batch + 1, after),
                self.prefill_stall(prompt, batch + 1, after),
            )
        weights, per_token, per_kv = self.weights_step_seconds, self.compute_seconds_per_token, self.kv_step_seconds_per_token
        alone = (batch + 1) * per_token
        decode_dense = weights if weights > alone else alone
        mixed = (batch + 1 + prompt) * per_token
        mixed_dense = weights if weights > mixed else mixed
        shared = (batch + prompt) * per_token
        fixed = self.step_overhead + self.sequence_overhead * (batch + 1)
        prefill = fixed + (weights if weights > shared else shared) + per_kv * (context + prompt)
        if batch:
            running = batch * per_token
            prefill += 0.5 * (
                self.step_overhead + self.sequence_overhead * batch + (weights if weights > running else running) + per_kv * context
            )
        decode = fixed + decode_dense + per_kv * after
        return prefill, decode, mixed_dense - decode_dense + per_kv * prompt + self.sequence_overhead

    def admission_wait(self, batch: float, context: float) -> float:
        """A request reaching a busy replica joins at the next step: on average half the running step
        (`batch` sequences decoding, `context` tokens), nothing on an idle one."""
        return 0.5 * self.decode_step_seconds(batch, context) if batch else 0.0

    def prefill_stall(self, prompt: float, batch: float, context: float) -> float:
        """What a prompt's prefill adds to the steps of `batch` decoding sequences holding `context`
        tokens: nothing while the chunk hides under the weight reads, its compute beyond them after."""
        chunks = max(1, math.ceil(prompt / self.max_num_batched_tokens))
        return self.prefill_seconds(prompt, batch, context) - chunks * self.decode_step_seconds(batch, context)

    def ttft_alone(self, prompt_tokens: float) -> float:
        """Time to first token of a request alone on the replica: its prefill steps sample the first token."""
        return self.request_overhead + self.prefill_seconds(prompt_tokens)

    def tpot(self, batch: float, prompt: float, output: float) -> float:
        """Seconds per output token of a sequence decoding among `batch` alike (each holding its prompt and
        half its output): its decode steps, and the others' prefills (one each over its life) they carry."""
        context = batch * (prompt + output / 2)
        steps = max(1.0, output - 1)
        return self.decode_step_seconds(batch, context) + (batch - 1) * self.prefill_stall(prompt, batch, context) / steps

    def saturated_requests_per_second(self, prompt: float, output: float) -> float:
        """Requests a replica completes per second when full: as many sequences as KV cache and
        max-num-seqs allow (each holding its prompt and half its output on average), each its prefill
        and then its decode steps, which carry the other sequences' prefills (the replay's rule)."""
        batch = self.batch_limit(prompt + output / 2)
        context = batch * (prompt + output / 2)
        per_request = self.prefill_seconds(prompt, batch - 1, context) + max(0.0, output - 1) * self.tpot(batch, prompt, output)
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


@dataclass(frozen=True)
class Measured:
    """A replica measured on the stack's own cluster (`make measure`, planner/measure.py), in place of what the
    published figures predict: its weight-read step, prefill compute per token, per-request overhead and, where
    the sweep saturated it, the sequences it runs at once; what each further sequence adds to a step."""

    weights_step_seconds: float
    compute_seconds_per_token: float
    request_overhead: float
    max_num_seqs: int | None = None
    kv_step_seconds_per_token: float | None = None
    sequence_overhead: float | None = None

    def apply(self, perf: ReplicaPerformance) -> ReplicaPerformance:
        kv = perf.kv_step_seconds_per_token if self.kv_step_seconds_per_token is None else self.kv_step_seconds_per_token
        return dataclasses.replace(
            perf,
            weights_step_seconds=self.weights_step_seconds,
            compute_seconds_per_token=self.compute_seconds_per_token,
            request_overhead=self.request_overhead,
            max_num_seqs=self.max_num_seqs or perf.max_num_seqs,
            kv_step_seconds_per_token=kv,
            sequence_overhead=perf.sequence_overhead if self.sequence_overhead is None else self.sequence_overhead,
        )


def performance(
    model: ModelConfig, pool: GpuPool, efficiency: Efficiency | None = None, measured: Measured | None = None
) -> ReplicaPerformance:
    """The replica's performance on the pool's smallest device it may land on; measured, where it was."""
    if measured is not None:
        return measured.apply(performance(model, pool, efficiency))
    eff = efficiency or Efficiency()
    hosts = capacity.replica_hosts(model, pool) or pool.resolved_instance_types()
    host = min(hosts, key=lambda t: (capacity.device_for(pool, t).gib, t.price_per_hour))
    gpu = host.gpu
    assert gpu is not None
    tp = model.tensor_parallel_size
    compute_share, bandwidth_share = _shares(model, pool, gpu)
    scaling = tp * (TENSOR_PARALLEL_EFFICIENCY if host.nvlink else TENSOR_PARALLEL_EFFICIENCY_PCIE) ** math.log2(tp)
    fp8 = model.quantization == "fp8" and gpu.fp8_tflops is not None
    flops = (gpu.fp8_tflops if fp8 and gpu.fp8_tflops else gpu.bf16_tflops) * 1e12 * compute_share * scaling * eff.compute
    bandwidth = gpu.bandwidth_gbs * 1e9 * bandwidth_share * scaling * eff.bandwidth
    kv_bandwidth = gpu.bandwidth_gbs * 1e9 * bandwidth_share * scaling * eff.kv_bandwidth
    device = capacity.device_for(pool, host)
    budget = capacity.default_max_num_batched_tokens(gpu, device.gib)
    explicit = capacity.explicit_kv_cache_bytes(model, pool)
    # the KV cache is over every rank; a multi-node replica's stages run one after another in each step (vLLM's
    # pipelining of several batches at once is not counted: the slow end), so its compute and weight reads are
    # one node's GPUs', with every stage's memory for the cache
    kv_bytes = explicit * capacity.ranks(model) if explicit is not None else profiled_kv_gib(model, device.gib, budget) * GIB
    kv_tokens = max(0, math.floor(kv_bytes / capacity.kv_bytes_per_token(model)))
    return ReplicaPerformance(
        compute_seconds_per_token=2 * model.parameters_billions * 1e9 / flops,
        weights_step_seconds=capacity.weights_gib(model) * GIB / bandwidth,
        kv_step_seconds_per_token=capacity.kv_bytes_per_token(model) / kv_bandwidth,
        kv_capacity_tokens=kv_tokens,
        max_num_seqs=model.max_num_seqs or capacity.default_max_num_seqs(gpu, device.gib),
        max_num_batched_tokens=budget,
        step_overhead=eff.step_overhead,
        request_overhead=eff.request_overhead,
        sequence_overhead=eff.sequence_overhead,
    )


CUDA_VISIBLE_SHARE = 0.99
"""Of a GPU's listed memory, what CUDA reports as its total (vLLM multiplies this by the utilization):
79.18-79.22 GiB on an 80 GiB H100 (llm-d memory study; vLLM PR #10511 'total_gpu_memory 79.22GiB'),
about 79.3 GiB on an 80 GB A100 (the two dennislee22 logs' difference over 0.25 utilization)."""


def profiled_kv_gib(model: ModelConfig, device_gib: float, budget: int) -> float:
    """The KV cache vLLM's profiling leaves a replica: its share of each device's visible memory less
    the weights and what the profiling keeps per device (PROFILED_RESERVE_GIB, by token budget)."""
    reserve = PROFILED_RESERVE_GIB[budget] if budget in PROFILED_RESERVE_GIB else max(PROFILED_RESERVE_GIB.values())
    gpus = capacity.ranks(model)
    visible = device_gib * CUDA_VISIBLE_SHARE
    return visible * model.gpu_memory_utilization * gpus - capacity.weights_gib(model) - reserve * gpus
