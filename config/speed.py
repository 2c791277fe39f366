"""Published timings a scale-up is made of, each with its source: a catalog, like the prices.

No figure without a source. Each one was measured on a particular setup, named in `measured_on`;
where the platform differs (another instance type, no SOCI image index), the figure is an
estimate, which the render says. Re-check the sources before relying on them. Pure data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

EKS_ML_GUIDE: Final = "EKS user guide, ML chapter: ml-inference-load-serve-model (awsdocs/amazon-eks-user-guide)"
PLATFORM_WRITEUP: Final = (
    "'What is AI platform engineering', startup optimization write-up "
    "(dirien/what-is-ai-platform-engineering-and-why-should-you-care, 00-infrastructure/STARTUP_OPTIMIZATION.md)"
)
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


HPA_SYNC_PERIOD: Final = Figure(15, "s", "HPA controller sync period (default)", "any cluster (EKS keeps the default)", HPA_DOCS)
KARPENTER_BATCH_IDLE: Final = Figure(
    1, "s", "Karpenter waits this long after the last pending pod before it launches", "Karpenter defaults", KARPENTER_SETTINGS
)
NODE_READY: Final = Figure(
    30, "s", "a GPU node from launch to schedulable", "EKS Auto Mode, g6e.4xlarge", f"{EKS_ML_GUIDE}: 'provisioned in 30 s'"
)
IMAGE_SIZE_GB: Final = Figure(8.8, "GB", "the vLLM serving image", "vLLM 0.21 deep learning container", EKS_ML_GUIDE)
IMAGE_PULL_RATE: Final = Figure(
    8.8 / 48.4, "GB/s", "image pull and unpack on a new node", "SOCI parallel pull, g6e.4xlarge", f"{EKS_ML_GUIDE}: 8.8 GB in 48.4 s"
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
ENGINE_INIT: Final = Figure(48, "s", "vLLM engine start: profiling and KV-cache allocation", "g5, an 8B model", PLATFORM_WRITEUP)
TORCH_COMPILE: Final = Figure(
    34, "s", "torch.compile and CUDA graph capture on a first pod (skipped with --enforce-eager)", "g5, an 8B model", PLATFORM_WRITEUP
)

CATALOG: Final = {
    "hpaSyncPeriod": HPA_SYNC_PERIOD,
    "karpenterBatchIdle": KARPENTER_BATCH_IDLE,
    "nodeReady": NODE_READY,
    "imageSize": IMAGE_SIZE_GB,
    "imagePullRate": IMAGE_PULL_RATE,
    "s3StreamRate": S3_STREAM_RATE,
    "huggingFaceRate": HUGGING_FACE_RATE,
    "engineInit": ENGINE_INIT,
    "torchCompile": TORCH_COMPILE,
}
