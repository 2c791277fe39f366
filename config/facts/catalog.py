"""EC2 instance catalog: GPUs, MIG profiles and on-demand prices.

Pure data plus small lookups, used by validation (does a model fit its pool?), by the
NodePool builder (per-GPU memory as Karpenter reports it) and by the cost summary.

Units, because they differ by source:
- `memory_gb`: the GPU's marketed memory in GB, as AWS lists it (A10G "24 GB").
- `memory_mib`: what EC2 DescribeInstanceTypes reports and Karpenter exposes as the label
  `karpenter.k8s.aws/instance-gpu-memory` (MiB per GPU). A10G reports 22888 MiB (22.35 GiB),
  not 24 GiB; capacity math uses this figure.

Prices are us-east-1, Linux, shared tenancy, on-demand USD per hour, each with its source and
date. Re-check the AWS price list before relying on them; other regions differ.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final


@dataclass(frozen=True)
class PriceSource:
    """Where a price came from."""

    description: str
    date: str


PRICE_LIST_2026_07: Final = PriceSource(
    "AWS Price List bulk file AmazonEC2/current/us-east-1/index.csv (publication 2026-07-28)",
    "2026-07-28",
)
CONSOLE_TABLE_2026: Final = PriceSource(
    "third-party table of AWS console on-demand prices, us-east-1, agreeing with the long-standing list prices",
    "2026-08-01",
)
CPU_TABLE_2026: Final = PriceSource(
    "third-party EC2 price table (m7i/m6i us-east-1 on-demand), 2026",
    "2026-08-01",
)


@dataclass(frozen=True)
class MigProfile:
    """A MIG GPU-instance profile, e.g. 1g.10gb."""

    name: str
    max_per_gpu: int
    """How many instances of this profile one GPU holds when every slice uses it."""


@dataclass(frozen=True)
class Gpu:
    """A GPU model as EC2 and Karpenter describe it."""

    label: str
    """Value of `karpenter.k8s.aws/instance-gpu-name` (lowercase, e.g. a10g)."""
    model: str
    memory_gb: int
    memory_mib: int
    mig_profiles: tuple[MigProfile, ...] = ()
    memory_mib_note: str = "EC2 DescribeInstanceTypes, as listed in Karpenter's instance-type reference"
    bf16_tflops: float = 0.0
    """Dense (no sparsity) BF16 tensor TFLOPS, from the datasheet in `perf_source`."""
    fp8_tflops: float | None = None
    """Dense FP8 tensor TFLOPS (Ada and Hopper), None where the GPU has no FP8 tensor cores."""
    bandwidth_gbs: float = 0.0
    """Memory bandwidth in GB/s."""
    perf_source: str = ""

    @property
    def memory_gib(self) -> float:
        """Usable memory per GPU in GiB (from the EC2 MiB figure)."""
        return self.memory_mib / 1024

    @property
    def mig_capable(self) -> bool:
        return bool(self.mig_profiles)

    def mig_profile(self, name: str) -> MigProfile | None:
        return next((p for p in self.mig_profiles if p.name == name), None)

    def mig_profile_gib(self, name: str) -> float:
        """Memory of one MIG instance: its share of the full GPU's memory.

        The profile's nominal GB over the full-GPU profile's nominal GB (A100 40GB: 3g.20gb is
        20/40 of the memory), applied to the EC2 figure.
        """
        full = max(_nominal_gb(p.name) for p in self.mig_profiles)
        return self.memory_gib * _nominal_gb(name) / full


def _nominal_gb(profile: str) -> int:
    return int(profile.split(".")[1].removesuffix("gb"))


# MIG profiles from NVIDIA's default mig-parted configuration shipped by the GPU operator
# (assets/state-mig-manager/0400_configmap.yaml); "+me" media-extension variants left out.
_A100_40GB_MIG = (
    MigProfile("1g.5gb", 7),
    MigProfile("1g.10gb", 4),
    MigProfile("2g.10gb", 3),
    MigProfile("3g.20gb", 2),
    MigProfile("4g.20gb", 1),
    MigProfile("7g.40gb", 1),
)
_80GB_MIG = (
    MigProfile("1g.10gb", 7),
    MigProfile("1g.20gb", 4),
    MigProfile("2g.20gb", 3),
    MigProfile("3g.40gb", 2),
    MigProfile("4g.40gb", 1),
    MigProfile("7g.80gb", 1),
)
_H200_MIG = (
    MigProfile("1g.18gb", 7),
    MigProfile("1g.35gb", 4),
    MigProfile("2g.35gb", 3),
    MigProfile("3g.71gb", 2),
    MigProfile("4g.71gb", 1),
    MigProfile("7g.141gb", 1),
)

# Peak figures (dense, without sparsity; halved where a sheet gives only the sparse figure), from
# copies of NVIDIA's datasheet tables; the planner's calibration (planner/calibration.py) takes
# the achieved share of them from published vLLM measurements. Re-check against NVIDIA's PDFs.
_A10G_PERF = (
    "memory: Baseten, 'NVIDIA A10 vs A10G for ML model inference' (600 GB/s); tensor: 69.47 TFLOPS BF16 measured "
    "(zzc0721/torch-performance-test-data issue #126, 'NVIDIA A10G', PyTorch 2.7 matmul at 10240^3), not the A10's "
    "125 TFLOPS datasheet figure, which the A10G (its own figure unpublished) does not reach"
)
_L4_PERF = "NVIDIA L4 datasheet (242 BF16 / 485 FP8 TFLOPS with sparsity; 300 GB/s)"
_L40S_PERF = "NVIDIA L40S datasheet (362.05 BF16 / 733 FP8 TFLOPS dense; 864 GB/s)"
_A100_PERF = "NVIDIA A100 datasheet r4 (312 BF16 TFLOPS dense; 1,555 GB/s 40GB SXM, 2,039 GB/s 80GB SXM)"
_H100_PERF = "NVIDIA H100 datasheet (SXM: 989 BF16 / 1,979 FP8 TFLOPS dense; 3.35 TB/s)"
_H200_PERF = "NVIDIA H200 datasheet (989 BF16 / 1,979 FP8 TFLOPS dense; 4.8 TB/s)"

A10G: Final = Gpu("a10g", "NVIDIA A10G", 24, 22888, bf16_tflops=69.47, bandwidth_gbs=600, perf_source=_A10G_PERF)
L4: Final = Gpu("l4", "NVIDIA L4", 24, 22888, bf16_tflops=121, fp8_tflops=242.5, bandwidth_gbs=300, perf_source=_L4_PERF)
L40S: Final = Gpu("l40s", "NVIDIA L40S", 48, 45776, bf16_tflops=362, fp8_tflops=733, bandwidth_gbs=864, perf_source=_L40S_PERF)
A100_40GB: Final = Gpu("a100", "NVIDIA A100 40GB", 40, 40960, _A100_40GB_MIG, bf16_tflops=312, bandwidth_gbs=1555, perf_source=_A100_PERF)
A100_80GB: Final = Gpu("a100", "NVIDIA A100 80GB", 80, 81920, _80GB_MIG, bf16_tflops=312, bandwidth_gbs=2039, perf_source=_A100_PERF)
H100: Final = Gpu(
    "h100", "NVIDIA H100 80GB", 80, 81920, _80GB_MIG, bf16_tflops=989, fp8_tflops=1979, bandwidth_gbs=3350, perf_source=_H100_PERF
)
H200: Final = Gpu(
    "h200",
    "NVIDIA H200 141GB",
    141,
    134468,
    _H200_MIG,
    memory_mib_note="141 GB (10^9 bytes) converted to MiB; EC2's own figure not verified, so this errs low",
    bf16_tflops=989,
    fp8_tflops=1979,
    bandwidth_gbs=4800,
    perf_source=_H200_PERF,
)


@dataclass(frozen=True)
class InstanceType:
    """An EC2 instance type with what the platform needs to know about it."""

    name: str
    vcpus: int
    memory_gib: int
    price_per_hour: float
    price_source: PriceSource
    gpu: Gpu | None = None
    gpu_count: int = 0
    nvlink: bool = field(default=False)

    @property
    def family(self) -> str:
        return self.name.split(".")[0]

    @property
    def total_gpu_gib(self) -> float:
        return self.gpu.memory_gib * self.gpu_count if self.gpu else 0.0

    @property
    def network(self) -> Network:
        """Its network bandwidth (NETWORK, NETWORK_SOURCE): every catalog type has one (a test says so)."""
        return NETWORK[self.name]

    @property
    def efa_interfaces(self) -> int:
        """EFA interfaces it takes, one per network card (EFA_INTERFACES); 0 without EFA."""
        return EFA_INTERFACES.get(self.name, 0)


@dataclass(frozen=True)
class Network:
    """An instance type's network bandwidth in Gbps: what it keeps up for good (baseline) and what it reaches
    while its network I/O credits last ("up to", burst; the baseline where there is no burst)."""

    baseline_gbps: float
    burst_gbps: float


NETWORK_SOURCE: Final = (
    "baseline: Amazon EC2 instance types guide, accelerated computing network specifications "
    "(docs.aws.amazon.com/ec2/latest/instancetypes/ac.html), as Karpenter v1.14 generates it "
    "(aws/karpenter-provider-aws pkg/providers/instancetype/zz_generated.bandwidth.go); burst: the same page's "
    "'up to' network performance; general purpose types from the same guide's gp.html"
)
_NETWORK_GBPS: Final = {
    # name: (baseline, burst)
    "g5.xlarge": (2.5, 10),
    "g5.2xlarge": (5, 10),
    "g5.4xlarge": (10, 25),
    "g5.8xlarge": (25, 25),
    "g5.12xlarge": (40, 40),
    "g5.24xlarge": (50, 50),
    "g5.48xlarge": (100, 100),
    "g6.xlarge": (2.5, 10),
    "g6.2xlarge": (5, 10),
    "g6.4xlarge": (10, 25),
    "g6.12xlarge": (40, 40),
    "g6.48xlarge": (100, 100),
    "g6e.xlarge": (2.5, 20),
    "g6e.2xlarge": (5, 20),
    "g6e.4xlarge": (20, 20),
    "g6e.12xlarge": (100, 100),
    "g6e.48xlarge": (400, 400),
    "p4d.24xlarge": (400, 400),
    "p4de.24xlarge": (400, 400),
    "p5.4xlarge": (100, 100),
    "p5.48xlarge": (3200, 3200),
    "p5en.48xlarge": (3200, 3200),
    "m7i.large": (0.78, 12.5),
    "m7i.xlarge": (1.56, 12.5),
    "m7i.2xlarge": (3.125, 12.5),
    "m6i.large": (0.781, 12.5),
    "m6i.xlarge": (1.25, 12.5),
}
NETWORK: Final[dict[str, Network]] = {name: Network(*gbps) for name, gbps in _NETWORK_GBPS.items()}

EFA_SOURCE: Final = (
    "Amazon EC2 User Guide, 'Elastic Fabric Adapter: supported instance types' and the accelerated computing network "
    "specifications (docs.aws.amazon.com/ec2/latest/instancetypes/ac.html: maximum network cards, each holding one EFA); "
    "the EFA device plugin's supportedInstanceLabels (aws-efa-k8s-device-plugin chart 0.5.30) lists every type here"
)
EFA_INTERFACES: Final[dict[str, int]] = {
    # the GPU types of the catalog with EFA: interfaces a pod takes to use every network card of the node
    "g5.48xlarge": 1,
    "g6.48xlarge": 1,
    "g6e.48xlarge": 4,
    "p4d.24xlarge": 4,
    "p4de.24xlarge": 4,
    "p5.48xlarge": 32,
    "p5en.48xlarge": 16,
}
"""EFA interfaces per instance type (EFA_SOURCE): only 8-GPU types, the ones a multi-node replica's stage fills."""


def _g(name: str, vcpus: int, mem: int, price: float, gpu: Gpu, count: int, src: PriceSource = CONSOLE_TABLE_2026) -> InstanceType:
    return InstanceType(name, vcpus, mem, price, src, gpu, count)


INSTANCE_TYPES: Final[dict[str, InstanceType]] = {
    t.name: t
    for t in (
        # g5: NVIDIA A10G, PCIe (no NVLink)
        _g("g5.xlarge", 4, 16, 1.006, A10G, 1),
        _g("g5.2xlarge", 8, 32, 1.212, A10G, 1),
        _g("g5.4xlarge", 16, 64, 1.624, A10G, 1),
        _g("g5.8xlarge", 32, 128, 2.448, A10G, 1),
        _g("g5.12xlarge", 48, 192, 5.672, A10G, 4),
        _g("g5.24xlarge", 96, 384, 8.144, A10G, 4),
        _g("g5.48xlarge", 192, 768, 16.288, A10G, 8),
        # g6: NVIDIA L4
        _g("g6.xlarge", 4, 16, 0.8048, L4, 1),
        _g("g6.2xlarge", 8, 32, 0.9776, L4, 1),
        _g("g6.4xlarge", 16, 64, 1.3232, L4, 1),
        _g("g6.12xlarge", 48, 192, 4.6016, L4, 4),
        _g("g6.48xlarge", 192, 768, 13.3504, L4, 8),
        # g6e: NVIDIA L40S
        _g("g6e.xlarge", 4, 32, 1.861, L40S, 1),
        _g("g6e.2xlarge", 8, 64, 2.24208, L40S, 1),
        _g("g6e.4xlarge", 16, 128, 3.00424, L40S, 1),
        _g("g6e.12xlarge", 48, 384, 10.49264, L40S, 4, PRICE_LIST_2026_07),
        _g("g6e.48xlarge", 192, 1536, 30.13118, L40S, 8, PRICE_LIST_2026_07),
        # p-family: NVLink/NVSwitch; prices after the June 2025 cut
        InstanceType("p4d.24xlarge", 96, 1152, 21.957642, PRICE_LIST_2026_07, A100_40GB, 8, True),
        InstanceType("p4de.24xlarge", 96, 1152, 27.44705, PRICE_LIST_2026_07, A100_80GB, 8, True),
        InstanceType("p5.4xlarge", 16, 256, 6.88, PRICE_LIST_2026_07, H100, 1),
        InstanceType("p5.48xlarge", 192, 2048, 55.04, PRICE_LIST_2026_07, H100, 8, True),
        InstanceType("p5en.48xlarge", 192, 2048, 63.296, PRICE_LIST_2026_07, H200, 8, True),
        # CPU types for the system node group (cost floor)
        InstanceType("m7i.large", 2, 8, 0.1008, CPU_TABLE_2026),
        InstanceType("m7i.xlarge", 4, 16, 0.2016, CPU_TABLE_2026),
        InstanceType("m7i.2xlarge", 8, 32, 0.4032, CPU_TABLE_2026),
        InstanceType("m6i.large", 2, 8, 0.096, CPU_TABLE_2026),
        InstanceType("m6i.xlarge", 4, 16, 0.192, CPU_TABLE_2026),
    )
}

HOURS_PER_MONTH: Final = 730
PRICE_REGION: Final = "us-east-1"
"""The region every price of the catalog (and of config/derived/cost.py's fixed costs) is for."""


def gpu_instance_types() -> list[InstanceType]:
    return [t for t in INSTANCE_TYPES.values() if t.gpu is not None]


def families() -> set[str]:
    return {t.family for t in INSTANCE_TYPES.values()}


def gpu_families() -> set[str]:
    return {t.family for t in gpu_instance_types()}


def cpu_instance_types() -> list[InstanceType]:
    return [t for t in INSTANCE_TYPES.values() if t.gpu is None]
