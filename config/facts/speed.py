"""Published timings a scale-up is made of, each with its source: a catalog, like the prices.

No figure without a source. Each one was measured on a particular setup, named in `measured_on`;
where the platform differs (another instance type, no SOCI image index), the figure is an
estimate, which the render says. Re-check the sources before relying on them. Pure data.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Final

EKS_ML_GUIDE: Final = "EKS user guide, ML chapter: ml-inference-load-serve-model (awsdocs/amazon-eks-user-guide)"
PLATFORM_WRITEUP: Final = (
    "'What is AI platform engineering', startup optimization write-up "
    "(dirien/what-is-ai-platform-engineering-and-why-should-you-care, 00-infrastructure/STARTUP_OPTIMIZATION.md)"
)
EKS_FAST_LOADING_GUIDE: Final = "EKS user guide, ML chapter: ml-inference-fast-model-loading (awsdocs/amazon-eks-user-guide)"
HPA_DOCS: Final = "kubernetes.io: Horizontal Pod Autoscaling (kube-controller-manager --horizontal-pod-autoscaler-sync-period)"
KARPENTER_SETTINGS: Final = "karpenter.sh docs v1.14, Settings: BATCH_IDLE_DURATION"


@dataclass(frozen=True)
class Figure:
    """One published timing or rate."""

    value: float
    unit: str
    what: str
    measured_on: str
    source: str


NODE_REPAIR_ACCELERATED: Final = Figure(
    600,
    "s",
    "Karpenter node repair deletes a node whose AcceleratedHardwareReady has been False this long",
    "Karpenter 1.14.1 on AWS, NodeRepair gate on (forceful: no drain)",
    "aws/karpenter-provider-aws pkg/cloudprovider/cloudprovider.go RepairPolicies (../shared/reference/wave3-facts.md Part A 5)",
)
HPA_SYNC_PERIOD: Final = Figure(15, "s", "HPA controller sync period (default)", "any cluster (EKS keeps the default)", HPA_DOCS)
KARPENTER_BATCH_IDLE: Final = Figure(
    1, "s", "Karpenter waits this long after the last pending pod before it launches", "Karpenter defaults", KARPENTER_SETTINGS
)
NODE_READY: Final = Figure(
    150,
    "s",
    "a GPU node from Karpenter's launch to schedulable (the middle of '2-3 min'), for a host the family figures do not cover",
    "self-managed Karpenter, g5, Bottlerocket (EKS Auto Mode measured 30 s on g6e.4xlarge: EKS user guide)",
    PLATFORM_WRITEUP,
)
TTFTS_WRITEUP: Final = "'Six layers of cold start' write-up (TTFTS, 2026), as quoted in ../shared/reference/wave3-facts.md Part B 3.2"
NODE_READY_G: Final = Figure(
    60,
    "s",
    "a g-family GPU node from pod pending to node Ready: the low end of the published 60-90 s for accelerated instances. "
    "On AL2023 this assumes the GPU operator's operands (NFD, toolkit-less device plugin, validators) start inside "
    "it: no timing of that chain on EKS is published",
    "Karpenter and EKS Auto Mode, accelerated instances",
    TTFTS_WRITEUP,
)
NODE_READY_P: Final = Figure(
    90,
    "s",
    "a p-family GPU node from pod pending to node Ready: the high end of the published 60-90 s (measured on p5.48xlarge)",
    "Karpenter and EKS Auto Mode, p5.48xlarge",
    TTFTS_WRITEUP,
)
VLLM_IMAGE_SIZE_GB: Final = Figure(
    10,
    "GB",
    "the pinned vLLM serving image (compressed layers, '~9-10 GB')",
    "vllm/vllm-openai CUDA images",
    "../shared/reference/wave3-facts.md Part B 3.3",
)
IMAGE_SIZE_GB: Final = Figure(
    8.8, "GB", "the image the SOCI pull rate was measured with", "vLLM 0.21 deep learning container", EKS_ML_GUIDE
)
IMAGE_PULL_RATE: Final = Figure(
    8.8 / 48.4,
    "GB/s",
    "image pull and unpack on a new node with SOCI parallel pull (16 vCPUs; unpack is CPU-bound, so a host with fewer "
    "vCPUs is counted at this rate times its share of 16, an estimate; a larger host at this rate)",
    "SOCI parallel pull, g6e.4xlarge (16 vCPUs, 20 Gbps)",
    f"{EKS_ML_GUIDE}: 8.8 GB in 48.4 s",
)
IMAGE_PULL_VCPUS: Final = 16
"""The vCPUs of the host IMAGE_PULL_RATE was measured on."""
IMAGE_SNAPSHOT_PULL: Final = Figure(
    5,
    "s",
    "the pinned image already on a data volume restored from an EBS snapshot (pull ~0 s; est. residual for the first "
    "blocks the start reads while the volume initializes)",
    "Bottlerocket data volume from a snapshot ('Container image pull ~0s, Optimized (EBS snapshot)')",
    f"{PLATFORM_WRITEUP}; residual: ../shared/reference/wave3-facts.md Part B 3.3",
)
STREAMER_LINE_SHARE: Final = Figure(
    0.75,
    "share",
    "the share of a host's network rate the Run:ai Model Streamer reaches from S3 (the lower of two measurements)",
    "3.51 GiB/s on g5.12xlarge (40 Gbps), streamer 0.6.0; 2.08 GB/s on g6e.4xlarge (20 Gbps) is 0.83",
    "run-ai/runai-model-streamer docs/src/benchmarks.md; " + EKS_ML_GUIDE,
)
STREAMER_MAX_RATE: Final = Figure(
    203 / 25,
    "GB/s",
    "the fastest published S3 read of one replica, whatever the host's network rate (its ceiling here)",
    "p5, 203 GB over TP4 in 25 s: 4 GB chunks, concurrency = shard files per rank, slow requests retried",
    TTFTS_WRITEUP,
)
S3_STREAM_RATE: Final = Figure(
    10.4 / 5.0,
    "GB/s",
    "weights streamed from S3 by the Run:ai Model Streamer (S3 gateway endpoint)",
    "g6e.4xlarge (20 Gbps)",
    f"{EKS_ML_GUIDE}: 10.4 GB in about 5.0 s",
)
HUGGING_FACE_RATE: Final = Figure(
    16.1 / 250, "GB/s", "weights downloaded from Hugging Face", "g5, an 8B bf16 checkpoint (16.1 GB) in ~250 s", PLATFORM_WRITEUP
)
# -- the slow end of each term's sources, for the pessimistic budget (../shared/reference/wave3-facts.md Part B) --
WAVE3_B: Final = "../shared/reference/wave3-facts.md Part B"
KARPENTER_BATCH_MAX: Final = Figure(
    10, "s", "Karpenter's longest batching wait while pods keep arriving", "Karpenter defaults (BATCH_MAX_DURATION)", KARPENTER_SETTINGS
)
NODE_READY_SLOW: Final = Figure(
    180,
    "s",
    "a GPU node from Karpenter's launch to schedulable (the high end of '2-3 min')",
    "self-managed Karpenter, g5, Bottlerocket",
    PLATFORM_WRITEUP,
)
IMAGE_PULL_SEQUENTIAL: Final = Figure(
    240,
    "s",
    "the vLLM image (8-12 GB) pulled at containerd's sequential rate, the slow end of any pull (the high end of '2-4 minutes')",
    "containerd's sequential pull and unpack",
    f"{WAVE3_B} 2.2 and 3.3 (TTFTS write-up)",
)
PROBE_PERIOD: Final = Figure(
    1,
    "s",
    "the vLLM startup and readiness probe periods: after the server answers, one period of each (two in all)",
    "the platform's vLLM probes (builders/serving/workload.py reads this figure)",
    f"{WAVE3_B} 3.6 (a probe period is a setting; 1 s periods cost at most 2 s)",
)
GATEWAY_ENDPOINT_DISCOVERY: Final = Figure(
    1,
    "s",
    "the gateway learns a newly ready vLLM pod (the Endpoint Picker watches the pool's pods; no per-pod load-balancer registration)",
    "an in-cluster gateway in front of static ALB targets",
    f"{WAVE3_B} 3.6 (in-cluster gateway: ~1 s from the endpoint change)",
)
ENGINE_INIT: Final = Figure(48, "s", "vLLM engine start: profiling and KV-cache allocation", "g5, an 8B model", PLATFORM_WRITEUP)
TORCH_COMPILE: Final = Figure(
    34, "s", "torch.compile and CUDA graph capture on a first pod (skipped with --enforce-eager)", "g5, an 8B model", PLATFORM_WRITEUP
)
TORCH_COMPILE_BY_SIZE: Final = (
    (16.1, TORCH_COMPILE),
    (60.0, Figure(53, "s", "torch.compile on a first pod, 60 GB checkpoint", "EKS, vLLM V1", EKS_FAST_LOADING_GUIDE)),
    (140.0, Figure(60, "s", "torch.compile on a first pod, 140 GB checkpoint", "EKS, vLLM V1", EKS_FAST_LOADING_GUIDE)),
    (640.0, Figure(80, "s", "torch.compile on a first pod, 640 GB checkpoint", "EKS, vLLM V1", EKS_FAST_LOADING_GUIDE)),
)
"""Compile time grows with the checkpoint: (checkpoint GB, figure), interpolated between the points."""
# -- the engine start in its parts (config/derived/engine.py) --
DYNAMO_SEGMENTS: Final = "ai-dynamo/dynamo docs/blogs/dynamo-snapshot/figures/data/benchmark_segments.tsv"
ENGINE_START_FACTS: Final = "../shared/reference/engine-start-facts.md"
ENGINE_BOOT: Final = Figure(
    10.0 + 16.1 + 3.8 + 0.2,
    "s",
    "vLLM's start without weights, profiling, compile or graphs: Python boot 10.0, config/inspect/spawn 16.1, EngineCore "
    "setup 3.8, kernel warm-up 0.2 (CPU-bound: slower where the CPU is throttled)",
    "Qwen3-8B, 1x B200, cold, container start excluded",
    DYNAMO_SEGMENTS,
)
KV_PROFILING: Final = Figure(
    1.8, "s", "vLLM's memory-profiling pass (skipped with --kv-cache-memory-bytes)", "Qwen3-8B, 1x B200", DYNAMO_SEGMENTS
)
CACHED_COMPILE: Final = Figure(
    6,
    "s",
    "torch.compile from a warm compile cache ('from ~50-80 s to ~4-6 s': the slow end; 5.2 s measured on one H200, "
    "PyTorch 2.11, plain PyTorch, not vLLM)",
    "EKS, vLLM V1, same-node cache",
    f"{EKS_FAST_LOADING_GUIDE}; {ENGINE_START_FACTS} 1",
)
CACHE_COPY: Final = Figure(
    1,
    "s",
    "the replica's init container fetching, checking and unpacking its compile-cache archive (est.: the artifacts are "
    "~15 MB, a second GET of that size from S3 and a gzip extract, on one CPU)",
    "EKS, vLLM V1 (artifact size); S3 through the gateway endpoint",
    f"{EKS_FAST_LOADING_GUIDE} (artifacts ~15 MB); the s3StreamRate row",
)
CUDA_GRAPH_PER_SIZE: Final = Figure(
    17 / 51,
    "s",
    "CUDA-graph capture per batch size of vLLM's list (17 s for the ~51 default sizes; the slow end: 90-108 ms a graph "
    "measured on one H200, PyTorch 2.11, plain PyTorch, not vLLM)",
    "a 3B model, vLLM V1, warm compile cache",
    f"vllm-project/vllm issue 20264; {ENGINE_START_FACTS} 1",
)
ENGINE_CACHED_MULTI_GPU: Final = Figure(
    45,
    "s",
    "a tensor-parallel engine's start with its caches, weights excluded (the high end of '30-45 seconds')",
    "p5, vLLM V1",
    ("'Six layers of cold start' write-up (TTFTS), as quoted in ../shared/reference/wave3-facts.md Part B 3.5"),
)
SHORT_CAPTURE_SIZES: Final = 11
"""Sizes vLLM captures up to batch 64 (1, 2, 4, 8, ..., 64): the list the multi-GPU figure is taken to have."""
TENSOR_PARALLEL_SETUP: Final = Figure(
    ENGINE_CACHED_MULTI_GPU.value - ENGINE_BOOT.value - CACHED_COMPILE.value - SHORT_CAPTURE_SIZES * CUDA_GRAPH_PER_SIZE.value,
    "s",
    "what a tensor-parallel engine adds to a single-GPU start (workers, NCCL): the multi-GPU cached start less a "
    "single-GPU boot, cached compile and 11 graph sizes (derived, an estimate)",
    "p5 (multi-GPU) against B200 and EKS single-GPU figures",
    "engineCachedMultiGpu, engineBoot, cachedCompile, cudaGraphPerSize",
)

CATALOG: Final = {
    "hpaSyncPeriod": HPA_SYNC_PERIOD,
    "karpenterBatchIdle": KARPENTER_BATCH_IDLE,
    "nodeReady": NODE_READY,
    "nodeReadyG": NODE_READY_G,
    "nodeReadyP": NODE_READY_P,
    "vllmImageSize": VLLM_IMAGE_SIZE_GB,
    "imageSnapshotPull": IMAGE_SNAPSHOT_PULL,
    "imageSize": IMAGE_SIZE_GB,
    "streamerLineShare": STREAMER_LINE_SHARE,
    "streamerMaxRate": STREAMER_MAX_RATE,
    "imagePullRate": IMAGE_PULL_RATE,
    "s3StreamRate": S3_STREAM_RATE,
    "huggingFaceRate": HUGGING_FACE_RATE,
    "engineInit": ENGINE_INIT,
    "engineBoot": ENGINE_BOOT,
    "kvProfiling": KV_PROFILING,
    "cachedCompile": CACHED_COMPILE,
    "cacheCopy": CACHE_COPY,
    "cudaGraphPerSize": CUDA_GRAPH_PER_SIZE,
    "engineCachedMultiGpu": ENGINE_CACHED_MULTI_GPU,
    "tensorParallelSetup": TENSOR_PARALLEL_SETUP,
    "gatewayEndpointDiscovery": GATEWAY_ENDPOINT_DISCOVERY,
    "karpenterBatchMax": KARPENTER_BATCH_MAX,
    "nodeReadySlow": NODE_READY_SLOW,
    "imagePullSequential": IMAGE_PULL_SEQUENTIAL,
    "probePeriod": PROBE_PERIOD,
    "torchCompile": TORCH_COMPILE,
    **{f"torchCompile{int(gb)}GB": f for gb, f in TORCH_COMPILE_BY_SIZE[1:]},
}


def compile_seconds(checkpoint_gb: float) -> float:
    """torch.compile on a first pod for a checkpoint of this size: linear between the published points."""
    points = [(gb, f.value) for gb, f in TORCH_COMPILE_BY_SIZE]
    if checkpoint_gb <= points[0][0]:
        return points[0][1]
    for (x0, y0), (x1, y1) in itertools.pairwise(points):
        if checkpoint_gb <= x1:
            return y0 + (y1 - y0) * (checkpoint_gb - x0) / (x1 - x0)
    return points[-1][1]
