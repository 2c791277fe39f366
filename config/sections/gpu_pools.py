"""`gpuPools`: the Karpenter NodePools of GPU nodes, and how each shares its GPUs."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from config.facts import catalog, karpenter_cel
from config.facts.conventions import GPU_TAINT
from config.sections import cron
from config.sections.base import ConfigModel
from config.sections.karpenter import AmiFamily
from config.sections.types import Duration, DurationOrNever, K8sName, config_error

CapacityType = Literal["spot", "on-demand", "reserved"]
_BUDGET_NODES = re.compile(r"^((100|[0-9]{1,2})%|[0-9]+)$")


class TimeSlicing(ConfigModel):
    """Share each physical GPU between several pods by time-slicing (no memory isolation)."""

    replicas: int = Field(ge=2, le=48, description="Pods that can share one GPU.")


class Mig(ConfigModel):
    """Partition each GPU into MIG instances of one profile (memory and fault isolation)."""

    profile: str = Field(description="MIG profile valid for the pool's GPU, e.g. 1g.10gb (A100 80GB/H100) or 1g.5gb (A100 40GB).")


class Sharing(ConfigModel):
    """GPU sharing mode of a pool: neither key (whole GPUs), `timeSlicing` or `mig`."""

    time_slicing: TimeSlicing | None = Field(default=None, description="Time-slicing settings.")
    mig: Mig | None = Field(default=None, description="MIG settings.")

    @model_validator(mode="after")
    def _one_mode(self) -> Sharing:
        if self.time_slicing and self.mig:
            raise config_error(
                "a pool cannot use both MIG and time-slicing; the device plugin applies one sharing strategy per node",
                "split it into two pools, one with timeSlicing and one with mig",
            )
        return self

    @property
    def mode(self) -> Literal["none", "timeSlicing", "mig"]:
        if self.time_slicing:
            return "timeSlicing"
        if self.mig:
            return "mig"
        return "none"


class Budget(ConfigModel):
    """A Karpenter disruption budget."""

    nodes: str = Field(description="Nodes that may be disrupted at once: a count or a percentage (e.g. 1 or 10%).")
    schedule: str | None = Field(
        default=None,
        description="When the budget becomes active (with duration), in UTC as Karpenter reads it: five cron fields "
        "(names such as mon-fri and jan allowed) or @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly.",
    )
    duration: Duration | None = Field(default=None, description="How long the budget is active after each schedule tick.")
    reasons: list[Literal["Underutilized", "Empty", "Drifted"]] = Field(
        default_factory=list, description="Disruption reasons the budget applies to; empty means all."
    )

    @field_validator("nodes")
    @classmethod
    def _nodes(cls, value: str) -> str:
        if not _BUDGET_NODES.match(value):
            raise config_error(f"'{value}' is not a node count or percentage", "write e.g. 1 or 10%")
        return value

    @field_validator("schedule")
    @classmethod
    def _schedule(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                cron.parse_budget(value)
            except cron.CronError as err:
                raise config_error(
                    f"'{value}' is not a schedule Karpenter takes: {err}",
                    "write five fields in UTC, e.g. `0 22 * * mon-fri`, or a descriptor such as @daily",
                ) from None
        return value

    @model_validator(mode="after")
    def _together(self) -> Budget:
        if (self.schedule is None) != (self.duration is None):
            raise config_error("schedule and duration must be set together", "set both, or neither")
        return self


class Disruption(ConfigModel):
    """How Karpenter may replace this pool's nodes."""

    consolidation_policy: Literal["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"] = Field(
        default="WhenEmpty",
        description="`WhenEmpty` (default for inference): only remove nodes with no serving pods, "
        "so consolidation never restarts a loaded model.",
    )
    allow_underutilized_consolidation: bool = Field(
        default=False,
        description="Acknowledge that WhenEmptyOrUnderutilized or Balanced may evict serving replicas to repack "
        "nodes (each eviction is a model reload and cut streams); required for those policies on pools that serve models.",
    )
    consolidate_after: DurationOrNever = Field(
        default="10m", description="How long a node must be empty (or underutilized) before it is removed."
    )
    budgets: list[Budget] = Field(
        default_factory=lambda: [Budget(nodes="1")],
        description="Disruption budgets; the default lets one node go at a time.",
    )
    expire_after: DurationOrNever = Field(default="720h", description="Replace nodes after this age (AMI and security refresh).")
    termination_grace_period: Duration = Field(
        default="1h",
        description="Upper bound on a node's drain once Karpenter disrupts it (pods past it are deleted).",
    )


class Taint(ConfigModel):
    """A node taint."""

    key: str = Field(description="Taint key.")
    value: str | None = Field(default=None, description="Taint value (optional).")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = Field(description="Taint effect.")


class Requirement(ConfigModel):
    """An extra NodePool requirement (Karpenter well-known labels)."""

    key: str = Field(description="Label key, e.g. karpenter.k8s.aws/instance-generation.")
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"] = Field(description="Requirement operator.")
    values: list[str] = Field(default_factory=list, description="Values (strings; integers for Gt/Lt/Gte/Lte).")
    min_values: int | None = Field(default=None, ge=1, le=50, description="Minimum distinct values Karpenter must keep.")

    @model_validator(mode="after")
    def _cel(self) -> Requirement:
        # The NodePool CRD's CEL rules, which jsonschema validation does not run.
        problems = karpenter_cel.requirement_problems(self.model_dump(by_alias=True, exclude_none=True))
        if problems:
            fixes = {
                "label": "use another key; Karpenter sets or reserves this one itself",
                "requirements with operator 'In'": "add values",
                "requirements operator": 'give exactly one value such as "5"',
                "requirements with 'minValues'": "add values or lower minValues",
            }
            fix = next(f for prefix, f in fixes.items() if problems[0].startswith(prefix))
            raise config_error(f"{problems[0]}; the API server would reject the NodePool", fix)
        return self


class ImageSnapshot(ConfigModel):
    """A Bottlerocket data volume restored from an EBS snapshot that already holds the pinned images."""

    snapshot_id: str = Field(
        description="EBS snapshot of a Bottlerocket data volume with the pool's images pulled (`make image-snapshot "
        "STACK=<s>` prints how to build it; rebuild it whenever an image pin changes).",
    )
    initialization_rate_mibps: int = Field(
        default=300,
        ge=100,
        le=300,
        description="EBS Provisioned Rate for Volume Initialization (Karpenter's volumeInitializationRate, 100-300 MiB/s): "
        "the snapshot's blocks arrive at this rate instead of lazily on first read, billed per GiB initialized. For full "
        "speed from the first read, enable fast snapshot restore on the snapshot in each zone instead (billed per "
        "zone-hour).",
    )

    @field_validator("snapshot_id")
    @classmethod
    def _snapshot(cls, value: str) -> str:
        if not re.fullmatch(r"snap-(?:[0-9a-f]{8}|[0-9a-f]{17})", value):
            raise config_error(
                f"'{value}' is not an EBS snapshot id",
                "write snap- and 8 or 17 hex digits (`aws ec2 describe-snapshots --owner-ids self` lists yours)",
            )
        return value


def _spot_then_on_demand() -> list[CapacityType]:
    return ["spot", "on-demand"]


class GpuPool(ConfigModel):
    """A Karpenter NodePool of GPU nodes."""

    name: K8sName = Field(description="NodePool name; models refer to it by this name.")
    instance_types: list[str] | None = Field(
        default=None, description="Exact instance types (from the catalog). Set this or instanceFamilies."
    )
    instance_families: list[str] | None = Field(
        default=None,
        description="Instance families such as g6 or g5; every catalog size of the family is allowed "
        "(narrow with gpuCounts). Set this or instanceTypes.",
    )
    gpu_counts: list[int] | None = Field(
        default=None, description="With instanceFamilies: allowed GPUs per node, e.g. [1] for single-GPU sizes."
    )
    capacity_types: list[CapacityType] = Field(
        default_factory=_spot_then_on_demand,
        min_length=1,
        description="Purchase options. With both spot and on-demand, Karpenter prefers spot and falls "
        "back to on-demand when spot is short.",
    )
    gpu_limit: int = Field(ge=1, description="Most physical GPUs the pool may run at once (NodePool limits nvidia.com/gpu).")
    headroom: int = Field(
        default=0,
        ge=0,
        le=64,
        description="Physical GPUs kept warm for scale-up: placeholder pods of a negative priority hold them (with the "
        "model image pulled) and step aside for a new replica at once, so a scale-up skips the node launch. Counted in "
        "gpuLimit and in the cost summary.",
    )
    ami_family: AmiFamily | None = Field(default=None, description="AMI family; unset uses karpenter.defaultAmiFamily.")
    image_snapshot: ImageSnapshot | None = Field(
        default=None,
        description="Bottlerocket only: the pool's nodes restore their data volume from this snapshot, so the pinned "
        "images are on disk at launch (image pull ~5 s instead of SOCI's). The pool gets its own EC2NodeClass, which "
        "keeps containerd on that volume (no instance-store RAID0) and its default snapshotter (the images were "
        "written with it; a change of snapshotter drops them).",
    )
    sharing: Sharing = Field(default_factory=Sharing, description="GPU sharing: whole GPUs, time-slicing or MIG.")
    disruption: Disruption = Field(default_factory=Disruption, description="Consolidation, budgets and expiry.")
    weight: int | None = Field(default=None, ge=1, le=100, description="NodePool weight: higher is tried first.")
    zones: list[str] = Field(default_factory=list, description="Restrict to these AZs; empty means every AZ of the VPC.")
    single_zone: bool = Field(
        default=False,
        description="Accept that this pool launches in one zone only (a type offered in one zone): in prod a pool needs "
        "two zones to survive a zone outage, and this opts out, by name. Preflight then warns instead of failing.",
    )
    efa: bool = Field(
        default=False,
        description="Nodes with Elastic Fabric Adapter interfaces on every network card, in a cluster placement group "
        "and a security group open to itself, with the EFA device plugin: for models whose replicas span nodes "
        "(pipelineParallelSize above 1). Needs one zone (zones) and instance types with EFA.",
    )
    labels: dict[str, str] = Field(default_factory=dict, description="Extra node labels.")
    taints: list[Taint] = Field(
        default_factory=list,
        description="Extra taints beside nvidia.com/gpu:NoSchedule (the GPU operator must tolerate them).",
    )
    requirements: list[Requirement] = Field(default_factory=list, description="Extra NodePool requirements.")

    @model_validator(mode="after")
    def _shape(self) -> GpuPool:
        if (self.instance_types is None) == (self.instance_families is None):
            raise config_error(
                "set exactly one of instanceTypes or instanceFamilies",
                "list instance types (g6.xlarge, ...) or families (g6, ...)",
            )
        if self.gpu_counts is not None and self.instance_families is None:
            raise config_error("gpuCounts only narrows instanceFamilies", "remove gpuCounts, or use instanceFamilies")
        return self

    @field_validator("zones")
    @classmethod
    def _distinct_zones(cls, value: list[str]) -> list[str]:
        twice = sorted({z for z in value if value.count(z) > 1})
        if twice:
            # one zone listed twice would count as two: prod's two-zone rule and the replicas' spread would pass
            # on one zone
            raise config_error(f"lists {', '.join(twice)} more than once", "list each zone once")
        return value

    @field_validator("capacity_types")
    @classmethod
    def _purchasable(cls, value: list[CapacityType]) -> list[CapacityType]:
        if "reserved" in value:
            # Karpenter offers reserved capacity only from the reservations its EC2NodeClass selects
            # (capacityReservationSelectorTerms; karpenter-provider-aws v1.14.1 reserved_capacity_resolver.go),
            # and the platform's node classes select none yet.
            raise config_error(
                "reserved needs capacity reservations selected on the pool's node class, which the platform does not "
                "write yet: Karpenter would never offer a reserved node, and a reserved-only pool would never launch one",
                "use spot and/or on-demand",
            )
        return value

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: dict[str, str]) -> dict[str, str]:
        for key in value:
            problems = karpenter_cel.label_key_problems(key)
            if problems:
                raise config_error(problems[0], f"remove label {key} from the pool")
        return value

    def node_taints(self) -> list[dict[str, str]]:
        """Every taint the pool's nodes carry: nvidia.com/gpu=true:NoSchedule, then the pool's own."""
        return [
            dict(GPU_TAINT),
            *({k: v for k, v in t.model_dump(by_alias=True).items() if v is not None} for t in self.taints),
        ]

    def resolved_instance_types(self) -> list[catalog.InstanceType]:
        """Catalog instance types this pool can launch."""
        if self.instance_types is not None:
            return [catalog.INSTANCE_TYPES[t] for t in self.instance_types if t in catalog.INSTANCE_TYPES]
        fams = set(self.instance_families or [])
        return [t for t in catalog.gpu_instance_types() if t.family in fams and (self.gpu_counts is None or t.gpu_count in self.gpu_counts)]
