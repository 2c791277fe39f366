"""EC2NodeClass and NodePool manifests for the GPU pools (pure builders).

A pool's AMI family and its NodePool's GPU limit are the derived state's (config/derived/state.py
PoolState.ami_family and .nodepool_limit); the builders take them, never work them out again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from builders.karpenter import mig
from config.derived.capacity import pool_mig_profile
from config.derived.sharing import node_capacity
from config.derived.state import PoolState
from config.facts.conventions import (
    CAPACITY_TYPE_LABEL,
    DEVICE_PLUGIN_CONFIG_LABEL,
    EFA_NODE_LABEL,
    GPU_RESOURCE,
    INSTANCE_TYPE_LABEL,
    MIG_MANAGER_DEPLOY_LABEL,
    OPERANDS_LABEL,
    POOL_LABEL,
    SHARING_LABEL,
    ZONE_ID_LABEL,
    ZONE_LABEL,
    discovery_tags,
    node_class_name,
)
from config.sections.gpu_pools import GpuPool
from config.sections.karpenter import KarpenterConfig
from config.sections.types import is_zone_id

SHARING_VALUES = {"none": "none", "timeSlicing": "time-slicing", "mig": "mig"}


def pool_labels(pool: GpuPool, family: str = "al2023") -> dict[str, str]:
    """Node labels of a pool: its name, its sharing mode, and what the GPU operator reads."""
    labels = {POOL_LABEL: pool.name, SHARING_LABEL: SHARING_VALUES[pool.sharing.mode]}
    if family == "bottlerocket":
        # Bottlerocket ships its own device plugin; the GPU operator must not add a second one.
        labels[OPERANDS_LABEL] = "false"
    if pool.sharing.time_slicing:
        labels[DEVICE_PLUGIN_CONFIG_LABEL] = pool.name
    if pool.sharing.mig:
        # Partitioned at boot by the node class's user data; the operator's MIG manager would
        # restart kubelet to change MIG mode, and the node would never come back Ready.
        labels[MIG_MANAGER_DEPLOY_LABEL] = "false"
    if pool.efa:
        labels |= EFA_NODE_LABEL
    return {**labels, **pool.labels}


@dataclass(frozen=True)
class EfaPlacement:
    """An EFA pool's AWS side (components/karpenter.py): its cluster placement group and the EFA security group."""

    placement_group_id: Any
    security_group_id: Any


def ec2_node_class(
    family: str,
    karpenter: KarpenterConfig,
    node_role_name: Any,
    subnet_terms: list[dict[str, Any]],
    cluster_name: Any,
    tags: dict[str, str],
    pool: GpuPool | None = None,
    efa: EfaPlacement | None = None,
) -> dict[str, Any]:
    """The EC2NodeClass of an AMI family (or of one MIG pool): pinned alias, IMDSv2 hop 1, big
    encrypted volume; a MIG pool's also partitions its GPUs at boot (user data).

    GPU nodes join the cluster's primary security group, found by the discovery tag."""
    version = getattr(karpenter.ami_versions, family)
    size = f"{karpenter.root_volume_gib}Gi"
    ebs: dict[str, Any] = {"volumeType": "gp3", "encrypted": True, "deleteOnTermination": True}
    # The image unpacks onto this volume on every new node: provisioned throughput, not gp3's 125 MiB/s.
    fast = {"iops": karpenter.volume_iops, "throughput": karpenter.volume_throughput_mibps}
    snapshot = pool.image_snapshot if pool is not None else None
    if family == "bottlerocket":
        # Bottlerocket: a small OS volume and a data volume that holds images and caches; an image-snapshot
        # pool's data volume is restored from its snapshot, initialized at a set rate (Karpenter v1.14.1 EBS fields).
        data: dict[str, Any] = {**ebs, **fast, "volumeSize": size}
        if snapshot is not None:
            data |= {"snapshotID": snapshot.snapshot_id, "volumeInitializationRate": snapshot.initialization_rate_mibps}
        devices: list[dict[str, Any]] = [
            {"deviceName": "/dev/xvda", "ebs": {**ebs, "volumeSize": "4Gi"}},
            {"deviceName": "/dev/xvdb", "ebs": data},
        ]
    else:
        devices = [{"deviceName": "/dev/xvda", "rootVolume": True, "ebs": {**ebs, **fast, "volumeSize": size}}]
    spec: dict[str, Any] = {
        "amiSelectorTerms": [{"alias": f"{family}@{version}"}],
        "role": node_role_name,
        "subnetSelectorTerms": subnet_terms,
        "securityGroupSelectorTerms": [{"tags": discovery_tags(cluster_name)}],
        "metadataOptions": {
            "httpEndpoint": "enabled",
            "httpProtocolIPv6": "disabled",
            "httpPutResponseHopLimit": 1,
            "httpTokens": "required",
        },
        "blockDeviceMappings": devices,
        "tags": dict(tags),
    }
    if pool is not None and pool.efa:
        assert efa is not None, "an EFA pool's node class needs its placement group and security group"
        # The nodes of the pool's cluster placement group (one zone, rule_efa_pool) also join a security group open
        # to itself both ways: EFA's SRD traffic needs the self-referencing egress rule too, a 0.0.0.0/0 egress does
        # not cover it (NCCL "Error 4126: Unresponsive receiver"; wave3-facts Part A 4.3). No networkInterfaces:
        # Karpenter attaches an EFA interface on every network card when a pending pod requests
        # vpc.amazonaws.com/efa (aws/karpenter-provider-aws#6296), which every pod of a group does; the explicit list
        # is for static capacity. placementGroupSelector: Karpenter v1.14.1 EC2NodeClass (aws/karpenter-provider-aws#9030).
        spec["securityGroupSelectorTerms"] = [*spec["securityGroupSelectorTerms"], {"id": efa.security_group_id}]
        spec["placementGroupSelector"] = {"id": efa.placement_group_id}
    if karpenter.instance_store_policy == "RAID0" and snapshot is None:
        # (not on an image-snapshot pool: RAID0 moves containerd to the instance store, away from the cached images)
        spec["instanceStorePolicy"] = "RAID0"
    mig_script = None
    if pool is not None and pool.sharing.mig is not None:
        profile = pool_mig_profile(pool)
        mig_script = mig.user_data(profile.name, profile.max_per_gpu)
    if family != "bottlerocket":
        spec["userData"] = al2023_user_data(mig_script)
    elif snapshot is None:
        # an image-snapshot pool keeps the default snapshotter its images were written with
        spec["userData"] = bottlerocket_user_data()
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": node_class_for(pool, family) if pool is not None else node_class_name(family)},
        "spec": spec,
    }


MIME_BOUNDARY = "==LLM-PLATFORM=="
SOCI_PARALLEL_PULL = {
    # the soci-snapshotter's parallel mode, as the karpenter-blueprints SOCI blueprint tunes it
    # (awslabs/soci-snapshotter docs/parallel-mode.md; ../shared/reference/wave3-facts.md Part B 3.3)
    "max-concurrent-downloads-per-image": 20,
    "concurrent-download-chunk-size": "16mb",
    "max-concurrent-unpacks-per-image": 12,
    "discard-unpacked-layers": True,
}


def al2023_user_data(shell_script: str | None = None) -> str:
    """AL2023 user data: a MIME multi-part document that nodeadm reads (Karpenter adds its own NodeConfig part and
    merges them). Its NodeConfig turns on SOCI parallel pull and unpack (`featureGates: {FastImagePull: true}`,
    AL2023 AMIs after v20250821; nodeadm ignores it below 4 vCPUs or 7 GiB, none of the catalog's GPU hosts:
    awslabs/amazon-eks-ami nodeadm/internal/api/featuregates.go). A MIG pool's partitioning script is a second
    part, run by cloud-init before nodeadm starts kubelet."""
    node_config = "---\napiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  featureGates:\n    FastImagePull: true\n"
    parts = [f"Content-Type: application/node.eks.aws\n\n{node_config}"]
    if shell_script is not None:
        parts.append(f'Content-Type: text/x-shellscript; charset="us-ascii"\n\n{shell_script}')
    body = "".join(f"--{MIME_BOUNDARY}\n{part}\n" for part in parts)
    return f'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="{MIME_BOUNDARY}"\n\n{body}--{MIME_BOUNDARY}--\n'


def bottlerocket_user_data() -> str:
    """Bottlerocket settings (TOML; Karpenter merges its own): SOCI as containerd's snapshotter in parallel
    pull-unpack mode (Bottlerocket 1.44.0 and later; bottlerocket.dev settings container-runtime and
    container-runtime-plugins). A snapshotter change takes effect at boot and drops the images already on the
    node, so a pool whose data volume carries images must keep the one they were written with."""
    lines = [
        "[settings.container-runtime]",
        'snapshotter = "soci"',
        "",
        "[settings.container-runtime-plugins.soci-snapshotter]",
        'pull-mode = "parallel-pull-unpack"',
        "",
        "[settings.container-runtime-plugins.soci-snapshotter.parallel-pull-unpack]",
        *(f"{k} = {_toml(v)}" for k, v in SOCI_PARALLEL_PULL.items()),
    ]
    return "\n".join(lines) + "\n"


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return f'"{value}"'


def own_node_class(pool: GpuPool) -> bool:
    """A MIG pool (its user data partitions the GPUs), an image-snapshot pool (its data volume) and an EFA pool (its
    placement group) get their own."""
    return pool.sharing.mig is not None or pool.image_snapshot is not None or pool.efa


def node_class_for(pool: GpuPool, family: str) -> str:
    """The EC2NodeClass a pool's NodePool uses: its own (own_node_class), its AMI family's otherwise."""
    return node_class_name(family, pool.name) if own_node_class(pool) else node_class_name(family)


def node_classes(pools: list[GpuPool], derived: Mapping[str, PoolState]) -> list[tuple[str, GpuPool | None]]:
    """Every EC2NodeClass the pools need: (AMI family, the MIG pool it is for, or None for the shared one)."""
    shared = sorted({derived[p.name].ami_family for p in pools if not own_node_class(p)})
    own = sorted(((derived[p.name].ami_family, p) for p in pools if own_node_class(p)), key=lambda fp: fp[1].name)
    return [*((f, None) for f in shared), *own]


def requirements(pool: GpuPool, vpc_zones: list[str] | None = None) -> list[dict[str, Any]]:
    """NodePool requirements: the pool's GPU instances, spot and/or on-demand, linux/amd64, in the
    pool's zones or else the zones the stack named for its VPC."""
    types = pool.resolved_instance_types()
    reqs: list[dict[str, Any]] = []
    if pool.instance_types is not None:
        reqs.append({"key": INSTANCE_TYPE_LABEL, "operator": "In", "values": list(pool.instance_types)})
    else:
        reqs.append({"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": list(pool.instance_families or [])})
        if pool.gpu_counts is not None:
            reqs.append({"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "In", "values": [str(c) for c in pool.gpu_counts]})
    reqs.append({"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": sorted({t.gpu.label for t in types if t.gpu})})
    reqs.append({"key": CAPACITY_TYPE_LABEL, "operator": "In", "values": list(pool.capacity_types)})
    reqs.append({"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]})
    reqs.append({"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]})
    if pool.zones:
        reqs.append({"key": ZONE_LABEL, "operator": "In", "values": list(pool.zones)})
    elif vpc_zones:
        key = ZONE_ID_LABEL if is_zone_id(vpc_zones[0]) else ZONE_LABEL
        reqs.append({"key": key, "operator": "In", "values": list(vpc_zones)})
    for extra in pool.requirements:
        reqs.append(extra.model_dump(by_alias=True, exclude_none=True, exclude_defaults=False))
    return reqs


def limits(pool: GpuPool, derived: PoolState) -> dict[str, str]:
    """The NodePool's limits: nvidia.com/gpu (PoolState.nodepool_limit), which Karpenter checks at launch from the
    instance type's GPUs. A MIG pool is limited on its MIG resource too: once a node is initialized Karpenter
    counts its usage from the node's capacity (kubernetes-sigs/karpenter v1.14.1 statenode.go), and with every
    GPU partitioned (`mixed`) the device plugin reports no nvidia.com/gpu, so that limit alone would see the
    node as empty and admit more (cluster-review-2026-12-04 m1). The MIG limit is gpuLimit's GPUs in slices,
    what the pool's NodeOverlay advertises per node."""
    found = {GPU_RESOURCE: str(derived.nodepool_limit)}
    if pool.sharing.mig:
        found |= {resource: str(count) for resource, count in node_capacity(pool, pool.gpu_limit).items()}
    return found


def node_pool(pool: GpuPool, derived: PoolState, vpc_zones: list[str] | None = None) -> dict[str, Any]:
    """The pool's NodePool. Its nvidia.com/gpu limit is in the units Karpenter counts (the NodeOverlay
    advertises a time-sliced GPU as `replicas` GPUs): PoolState.nodepool_limit."""
    d = pool.disruption
    spec: dict[str, Any] = {
        "template": {
            "metadata": {"labels": pool_labels(pool, derived.ami_family)},
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.k8s.aws",
                    "kind": "EC2NodeClass",
                    "name": node_class_for(pool, derived.ami_family),
                },
                "requirements": requirements(pool, vpc_zones),
                "taints": pool.node_taints(),
                "expireAfter": d.expire_after,
                "terminationGracePeriod": d.termination_grace_period,
            },
        },
        "disruption": {
            "consolidationPolicy": d.consolidation_policy,
            "consolidateAfter": d.consolidate_after,
            "budgets": [b.model_dump(by_alias=True, exclude_none=True, exclude_defaults=True) | {"nodes": b.nodes} for b in d.budgets],
        },
        "limits": limits(pool, derived),
    }
    if pool.weight is not None:
        spec["weight"] = pool.weight
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": pool.name}, "spec": spec}
