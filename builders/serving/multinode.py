"""A model whose replicas span nodes: one LeaderWorkerSet, each group a replica of pipelineParallelSize pods.

vLLM's native multi-node mode, no Ray (../shared/reference/wave3-facts.md Part A 4.2; vllm-project/vllm
docs/serving/parallelism_scaling.md): every pod runs `vllm serve` with tensor parallel inside its node and one
pipeline stage per node, `--nnodes` the group size, `--node-rank` the pod's index in its group and
`--master-addr` its leader; the leader (index 0) serves the API, the workers run `--headless`. LeaderWorkerSet
v0.10.0 (kubernetes-sigs/lws api/leaderworkerset/v1/leaderworkerset_types.go) injects LWS_LEADER_ADDRESS and
LWS_WORKER_INDEX into every container, labels each pod with its worker index, recreates the whole group when one
pod fails (RecreateGroupOnPodRestart), and has a scale subresource that KEDA's HPA drives.

NCCL between the stages runs over EFA (Part A 4.3): each pod requests every EFA interface of its node
(`vpc.amazonaws.com/efa`, from the EFA device plugin), and the NCCL environment below.
"""

from __future__ import annotations

import copy
from typing import Any

from config.facts.conventions import LWS_WORKER_INDEX_LABEL
from config.sections.gpu_pools import GpuPool
from config.sections.models import ModelConfig

LWS_API_VERSION = "leaderworkerset.x-k8s.io/v1"
EFA_RESOURCE = "vpc.amazonaws.com/efa"
LEADER = {LWS_WORKER_INDEX_LABEL: "0"}
"""The label LeaderWorkerSet puts on each group's leader: the gateway's pool and the Service select only these."""

EFA_ENV: tuple[tuple[str, str, str], ...] = (
    ("FI_PROVIDER", "efa", "libfabric uses EFA or fails: no silent fall back to TCP sockets"),
    (
        "NCCL_NVLS_ENABLE",
        "0",
        "NVLink SHARP off: with pipeline parallel over two nodes the first cross-node collective fails without it "
        "(aws-samples/aws-do-eks#53, wave3-facts Part A 4.3)",
    ),
    (
        "FI_EFA_USE_HUGE_PAGE",
        "0",
        "the pods request no hugepages (Karpenter does not count them when it sizes a node, aws/karpenter-provider-aws#6296), "
        "so the container's hugetlb limit is 0 and libfabric must not map them (libfabric fi_efa(7))",
    ),
    ("NCCL_DEBUG", "INFO", "logs `NET/OFI Selected provider is efa` at start, the check that EFA is in use (vllm#41183)"),
)
"""(name, value, why) of the EFA environment every pod of a group gets."""


def multi_node_args(model: ModelConfig) -> list[str]:
    """`vllm serve` flags of a pod of a group: its stage, its group and its leader, from LeaderWorkerSet's env."""
    if not model.multi_node:
        return []
    nodes = str(model.pipeline_parallel_size)
    return [
        "--pipeline-parallel-size",
        nodes,
        "--nnodes",
        nodes,
        "--node-rank",
        "$(LWS_WORKER_INDEX)",
        "--master-addr",
        "$(LWS_LEADER_ADDRESS)",
    ]


def efa_interfaces(pool: GpuPool) -> int:
    """EFA interfaces a pod requests: every one of its node (rule_efa_pool keeps one count per pool)."""
    return max((t.efa_interfaces for t in pool.resolved_instance_types()), default=0)


def _with_efa(container: dict[str, Any], count: int) -> None:
    for kind in ("requests", "limits"):
        container["resources"][kind][EFA_RESOURCE] = str(count)
    container["env"] = [*container["env"], *({"name": name, "value": value} for name, value, _ in EFA_ENV)]


def _worker(model: ModelConfig, template: dict[str, Any]) -> dict[str, Any]:
    """A worker's pod template from the leader's: headless (no API server, so no port, probes nor API key), the
    rest as the leader's. Without a port the vLLM PodMonitor has nothing to scrape on it."""
    worker = copy.deepcopy(template)
    vllm = worker["spec"]["containers"][0]
    args, extra = vllm["args"], len(model.extra_args)
    # before the model's extraArgs, which come last as on every vLLM container
    vllm["args"] = [*args[: len(args) - extra], "--headless", *args[len(args) - extra :]]
    for key in ("ports", "startupProbe", "readinessProbe", "livenessProbe"):
        vllm.pop(key, None)
    vllm["env"] = [e for e in vllm["env"] if e["name"] != "VLLM_API_KEY"]
    return worker


def leader_worker_set(model: ModelConfig, pool: GpuPool, deployment: dict[str, Any]) -> dict[str, Any]:
    """The model's LeaderWorkerSet, from the Deployment the model would have (builders/serving/workload.py
    deployment(): the same pod, image, args, probes, drain and security): `replicas` groups of
    pipelineParallelSize pods. A rollout adds a whole new group before it removes one (maxSurge 1,
    maxUnavailable 0), as the Deployment's does with a pod."""
    template = copy.deepcopy(deployment["spec"]["template"])
    _with_efa(template["spec"]["containers"][0], efa_interfaces(pool))
    meta = deployment["metadata"]
    return {
        "apiVersion": LWS_API_VERSION,
        "kind": "LeaderWorkerSet",
        "metadata": copy.deepcopy(meta),
        "spec": {
            "replicas": deployment["spec"]["replicas"],
            "startupPolicy": "LeaderCreated",
            "rolloutStrategy": {"type": "RollingUpdate", "rollingUpdateConfiguration": {"maxSurge": 1, "maxUnavailable": 0}},
            "leaderWorkerTemplate": {
                "size": model.pipeline_parallel_size,
                "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": template,
                "workerTemplate": _worker(model, template),
            },
        },
    }
