"""`karpenter`: the controller, and the node defaults every GPU pool shares."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from config.facts import versions
from config.sections.base import ConfigModel
from config.sections.types import config_error

AmiFamily = Literal["al2023", "bottlerocket"]

_AMI_PATTERNS = {
    "al2023": (re.compile(r"^v[0-9]{8}$"), "vYYYYMMDD, e.g. " + versions.AL2023_AMI_VERSION),
    "bottlerocket": (re.compile(r"^v[0-9]+\.[0-9]+\.[0-9]+$"), "vX.Y.Z, e.g. " + versions.BOTTLEROCKET_AMI_VERSION),
}


def _ami_version(family: str, value: str) -> str:
    pattern, example = _AMI_PATTERNS[family]
    if value == "latest" or not pattern.match(value):
        shown = value.split("@", 1)[1] if value.startswith(f"{family}@") else value
        raise config_error(
            f"{family}@{shown} must be pinned to a release; the latest alias (or a malformed version) "
            "drifts every GPU node on each AMI release and replaces them all at once",
            f"pin {family}@{example}",
        )
    return value


class AmiVersions(ConfigModel):
    """Pinned EKS AMI releases, by family (the EC2NodeClass alias is `<family>@<version>`)."""

    al2023: str = Field(default=versions.AL2023_AMI_VERSION, description="AL2023 release, vYYYYMMDD.")
    bottlerocket: str = Field(default=versions.BOTTLEROCKET_AMI_VERSION, description="Bottlerocket release, vX.Y.Z.")

    @field_validator("al2023")
    @classmethod
    def _al2023(cls, value: str) -> str:
        return _ami_version("al2023", value)

    @field_validator("bottlerocket")
    @classmethod
    def _bottlerocket(cls, value: str) -> str:
        return _ami_version("bottlerocket", value)


class KarpenterConfig(ConfigModel):
    """Karpenter: the controller and the node defaults shared by every GPU pool."""

    identity: Literal["podIdentity", "irsa"] = Field(
        default="podIdentity",
        description="How the controller gets AWS credentials: EKS Pod Identity (recommended) or IRSA.",
    )
    replicas: int = Field(default=2, ge=1, le=3, description="Controller replicas (leader election).")
    node_repair: bool = Field(
        default=False,
        description="Karpenter node repair (the NodeRepair feature gate, ALPHA, cluster-wide): a node whose Ready "
        "condition is False or Unknown for 30 minutes, or whose AcceleratedHardwareReady is False for 10 (set by the EKS "
        "node monitoring agent), is deleted and replaced. On Karpenter 1.14.1 a repair is forceful: no drain, no "
        "disruption budgets, no replacement started first, in-flight streams cut; it pauses while more than 20% of a "
        "pool is unhealthy. Off by default; a warning names every pool a repair would take to zero nodes.",
    )
    default_ami_family: AmiFamily = Field(default="al2023", description="AMI family for pools that do not set one.")
    ami_versions: AmiVersions = Field(default_factory=AmiVersions, description="Pinned AMI releases.")
    root_volume_gib: int = Field(
        default=200,
        ge=50,
        le=16000,
        description="Root (AL2023) or data (Bottlerocket) volume per GPU node, gp3 encrypted; vLLM "
        "images are ~10 GB and model caches land here unless instance store is used.",
    )
    volume_throughput_mibps: int = Field(
        default=1000,
        ge=125,
        le=1000,
        description="gp3 throughput of that volume in MiB/s. Unpacking the ~10 GB vLLM image on a new node is bound by "
        "it; gp3's baseline of 125 MiB/s would make the image pull minutes long (about $0.04 per MiB/s-month above it).",
    )
    volume_iops: int = Field(
        default=4000,
        ge=3000,
        le=16000,
        description="gp3 IOPS of that volume; gp3 allows at most 0.25 MiB/s of throughput per IOPS.",
    )

    @model_validator(mode="after")
    def _gp3_ratio(self) -> KarpenterConfig:
        if self.volume_throughput_mibps > 125 and self.volume_throughput_mibps > self.volume_iops * 0.25:
            raise config_error(
                f"volumeThroughputMibps {self.volume_throughput_mibps} needs at least {self.volume_throughput_mibps * 4} "
                f"volumeIops (gp3 allows 0.25 MiB/s per IOPS); EC2 would refuse to launch the nodes",
                f"raise volumeIops to {self.volume_throughput_mibps * 4} or lower volumeThroughputMibps",
            )
        return self

    instance_store_policy: Literal["RAID0", "none"] = Field(
        default="RAID0",
        description="`RAID0`: put kubelet and containerd storage on the instance's local NVMe "
        "(every catalog GPU type has it): faster image pulls and model caches.",
    )
    extra_values: dict[str, Any] = Field(
        default_factory=dict, description="Escape hatch: Helm values deep-merged last into the chart values."
    )
