"""The platform's conventions, each written once: keys, labels, tags, namespaces and derived names.

Every layer (config rules, builders, components, the offline tools) imports these instead of
spelling a literal again, so a label, a tag or a derived name changes in one place. Pure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, TypeVar

if TYPE_CHECKING:
    from config.sections.stack import StackConfig

# -- the stack file ----------------------------------------------------------------------------
PROJECT: Final = "llm-platform"
"""The Pulumi project name, and so the config namespace of every key (`llm-platform:models`)."""
HF_TOKEN: Final = "hfToken"
API_KEYS: Final = "apiKeys"
GRAFANA_ADMIN_PASSWORD: Final = "grafanaAdminPassword"
DOCKER_HUB_ACCESS_TOKEN: Final = "dockerHubAccessToken"
SECRET_KEYS: Final = (HF_TOKEN, API_KEYS, GRAFANA_ADMIN_PASSWORD, DOCKER_HUB_ACCESS_TOKEN)

# -- AWS tags ----------------------------------------------------------------------------------
CLUSTER_TAG: Final = "llm-platform/cluster"
ENVIRONMENT_TAG: Final = "llm-platform/environment"
DISCOVERY_TAG: Final = "karpenter.sh/discovery"
"""Karpenter finds the subnets and security groups of GPU nodes by this tag (value: the cluster name)."""
PUBLIC_ELB_TAG: Final = "kubernetes.io/role/elb"
INTERNAL_ELB_TAG: Final = "kubernetes.io/role/internal-elb"
RESERVED_TAG_PREFIXES: Final = ("kubernetes.io/cluster", "karpenter.sh/", "karpenter.k8s.aws/", "aws:")
RESERVED_TAG_KEYS: Final = ("eks:eks-cluster-name",)


def platform_tags(cluster_name: str, environment: str, extra: dict[str, str]) -> dict[str, str]:
    """Tags on every AWS resource the stack creates: who owns it, then the stack's own tags."""
    return {CLUSTER_TAG: cluster_name, ENVIRONMENT_TAG: environment, **extra}


_Name = TypeVar("_Name")


def discovery_tags(cluster_name: _Name) -> dict[str, _Name]:
    """The tag by which Karpenter discovers the cluster's subnets and security groups (the name may
    be a run-time value)."""
    return {DISCOVERY_TAG: cluster_name}


# -- node labels and taints --------------------------------------------------------------------
LABEL_DOMAIN: Final = "llm-platform.io"
SYSTEM_NODE_LABEL: Final = {f"{LABEL_DOMAIN}/node-role": "system"}
SYSTEM_NODE_SELECTOR: Final = {"kubernetes.io/os": "linux", **SYSTEM_NODE_LABEL}
POOL_LABEL: Final = f"{LABEL_DOMAIN}/gpu-pool"
EFA_NODE_LABEL: Final = {f"{LABEL_DOMAIN}/efa": "true"}
"""On the nodes of every EFA pool: where the EFA device plugin runs (builders/efa.py)."""
SHARING_LABEL: Final = f"{LABEL_DOMAIN}/gpu-sharing"
MODEL_LABEL: Final = f"{LABEL_DOMAIN}/model"
CONFIG_HASH_ANNOTATION: Final = f"{LABEL_DOMAIN}/config-hash"
"""On a gateway picker's pod template: a digest of the config it reads once, at start, so a change rolls it."""
API_KEY_FINGERPRINT_ANNOTATION: Final = f"{LABEL_DOMAIN}/api-key-fingerprint"
"""On a model's pod template: a one-way fingerprint of its API key, so a rotated key rolls the pods
(vLLM reads VLLM_API_KEY once, at start)."""
GPU_RESOURCE: Final = "nvidia.com/gpu"
GPU_TAINT: Final = {"key": GPU_RESOURCE, "value": "true", "effect": "NoSchedule"}
DEVICE_PLUGIN_CONFIG_LABEL: Final = "nvidia.com/device-plugin.config"
MIG_MANAGER_DEPLOY_LABEL: Final = "nvidia.com/gpu.deploy.mig-manager"
"""Set to "false" on MIG nodes: the platform partitions them at boot, the operator's MIG manager stays away."""
OPERANDS_LABEL: Final = "nvidia.com/gpu.deploy.operands"
VLLM_APP_LABEL: Final = {"app.kubernetes.io/name": "vllm"}
LWS_WORKER_INDEX_LABEL: Final = "leaderworkerset.sigs.k8s.io/worker-index"
"""The pod label LeaderWorkerSet v0.10.0 sets to a pod's index in its group, "0" on the leader."""
VLLM_PORT: Final = 8000
VLLM_PORT_NAME: Final = "http"
"""vLLM serves its API, /health and /metrics on this container port (the monitors scrape it by name)."""
CAPACITY_TYPE_LABEL: Final = "karpenter.sh/capacity-type"
ZONE_LABEL: Final = "topology.kubernetes.io/zone"
ZONE_ID_LABEL: Final = "topology.k8s.aws/zone-id"
INSTANCE_TYPE_LABEL: Final = "node.kubernetes.io/instance-type"


def mig_resource(profile: str) -> str:
    """Resource name a MIG slice is advertised as under the `mixed` strategy."""
    return f"nvidia.com/mig-{profile}"


# -- namespaces --------------------------------------------------------------------------------
NAMESPACE_NAME_LABEL: Final = "kubernetes.io/metadata.name"
"""The API server sets it on every namespace to the namespace's name and keeps it so (immutable):
select a namespace by name without labelling it."""
KUBE_SYSTEM: Final = "kube-system"
KUBERNETES_NAMESPACES: Final = ("default", KUBE_SYSTEM, "kube-public", "kube-node-lease")
KARPENTER_NAMESPACE: Final = KUBE_SYSTEM
LOAD_BALANCER_CONTROLLER_NAMESPACE: Final = KUBE_SYSTEM
KEDA_NAMESPACE: Final = "keda"
READINESS_GATE_LABEL: Final = "elbv2.k8s.aws/pod-readiness-gate-inject"
"""On a namespace whose pods are ALB targets: the load balancer controller gates their rollouts on target health."""
HEADROOM_NAMESPACE: Final = "gpu-headroom"
"""Where the placeholder pods that keep warm GPU headroom run."""
HEADROOM_PRIORITY_CLASS: Final = "llm-platform-headroom"
HEADROOM_PRIORITY: Final = -1000
"""Below every workload's (default 0): any pending pod preempts a placeholder."""
KARPENTER_RESERVED_NAME: Final = "karpenter"
"""Not a namespace the platform creates, but the one Karpenter's own docs install into; kept free."""


def reserved_namespaces(cfg: StackConfig) -> frozenset[str]:
    """Namespaces Kubernetes or the platform owns in this stack (a model cannot take one)."""
    return frozenset(
        {
            *KUBERNETES_NAMESPACES,
            KEDA_NAMESPACE,
            HEADROOM_NAMESPACE,
            KARPENTER_RESERVED_NAME,
            cfg.observability.namespace,
            cfg.gpu_operator.namespace,
        }
    )


# -- ingress -----------------------------------------------------------------------------------
INGRESS_CLASS: Final = "alb"
"""The IngressClass the load balancer controller's chart creates (its default name) and every model Ingress names."""
INGRESS_GROUP: Final = PROJECT
"""The IngressGroup every model Ingress joins: one ALB for the stack."""
INGRESS_GROUP_MEMBER: Final = {f"{LABEL_DOMAIN}/ingress-group": INGRESS_GROUP}
"""On the namespaces the platform creates for its Ingresses (every model's; KEDA's still carries it from
the HTTP add-on's Ingresses, builders/keda.py): the `alb` class's IngressClassParams admit exactly these."""


# -- derived names -----------------------------------------------------------------------------
K8S_NAME_MAX: Final = 63
HPA_PREFIX: Final = "keda-hpa-"


def hpa_name(model_name: str) -> str:
    """The HorizontalPodAutoscaler KEDA creates for a model's ScaledObject."""
    return f"{HPA_PREFIX}{model_name}"


def populate_job_name(model_name: str, revision: str) -> str:
    """The Job that copies one revision of a model into the weights bucket: a new revision, a new Job."""
    return f"{model_name[: K8S_NAME_MAX - len('weights--') - 12]}-weights-{revision[:12]}"


def populate_service_account(model_name: str) -> str:
    """The service account of a model's populate Job (the only one that may write its prefix)."""
    return f"{model_name[: K8S_NAME_MAX - len('-weights')]}-weights"


def warmup_job_name(model_name: str, gpu_label: str, key: str) -> str:
    """The Job that warms a model's compile cache on one GPU type: a new cache key, a new Job."""
    tail = f"-warm-{gpu_label}-{key[:10]}"
    return f"{model_name[: K8S_NAME_MAX - len(tail)]}{tail}"


def warmup_service_account(model_name: str) -> str:
    """The service account of a model's compile warm-up Jobs (the only ones that may write its compile cache)."""
    return f"{model_name[: K8S_NAME_MAX - len('-warmup')]}-warmup"


GPU_NAME_LABEL = "karpenter.k8s.aws/instance-gpu-name"
"""Karpenter's node label of the GPU type (catalog.Gpu.label's values)."""


def headroom_name(pool_name: str) -> str:
    """The placeholder Deployment that keeps a pool's warm headroom."""
    return f"headroom-{pool_name}"[:K8S_NAME_MAX]


def interruption_queue_name(cluster_name: str) -> str:
    """Karpenter's interruption queue: named after the cluster, as the chart's settings expect."""
    return cluster_name


def log_group_name(cluster_name: str) -> str:
    """The control-plane log group EKS writes to (created first so its retention applies)."""
    return f"/aws/eks/{cluster_name}/cluster"


def kms_alias(cluster_name: str) -> str:
    return f"alias/{cluster_name}-eks-secrets"


def ami_parameter_path(ami_family: str, kubernetes_version: str) -> tuple[str, str]:
    """The SSM folder of a family's NVIDIA AMI releases, and the prefix of each release's entry
    (the parameters Karpenter resolves; docs/upstream-facts.md#quotas-and-amis)."""
    k8s = kubernetes_version
    if ami_family == "bottlerocket":
        return f"/aws/service/bottlerocket/aws-k8s-{k8s}-nvidia/x86_64/", ""
    return f"/aws/service/eks/optimized-ami/{k8s}/amazon-linux-2023/x86_64/nvidia/", f"amazon-eks-node-al2023-x86_64-nvidia-{k8s}-"


def ami_parameter(ami_family: str, kubernetes_version: str, release: str) -> str:
    """The SSM parameter of one pinned NVIDIA AMI release (Bottlerocket's entries drop the `v`)."""
    path, prefix = ami_parameter_path(ami_family, kubernetes_version)
    version = release.removeprefix("v") if ami_family == "bottlerocket" else release
    return f"{path}{prefix}{version}/image_id"


def node_class_name(ami_family: str, pool: str | None = None) -> str:
    """The EC2NodeClass of the GPU pools of one AMI family, or of one pool that needs its own
    (a MIG pool, whose user data partitions its GPUs)."""
    return f"gpu-{ami_family}" if pool is None else f"gpu-{ami_family}-{pool}"


# -- IAM ---------------------------------------------------------------------------------------
NODE_ROLE_POLICIES: Final = (
    "AmazonEKSWorkerNodePolicy",
    "AmazonEKS_CNI_Policy",
    "AmazonEC2ContainerRegistryPullOnly",
    "AmazonSSMManagedInstanceCore",
)
"""AWS managed policies of every node role: the system node group's and Karpenter's GPU nodes'."""
EBS_CSI_POLICY: Final = "service-role/AmazonEBSCSIDriverPolicy"
KARPENTER_SERVICE_ACCOUNT: Final = "karpenter"
LOAD_BALANCER_CONTROLLER_SERVICE_ACCOUNT: Final = "aws-load-balancer-controller"
EBS_CSI_SERVICE_ACCOUNT: Final = "ebs-csi-controller-sa"


def principal_kind_and_name(arn: str) -> tuple[str, str]:
    """`role` or `user`, and the name without its path, of an IAM principal ARN."""
    kind, _, path_name = arn.split(":", 5)[5].partition("/")
    return kind, path_name.rsplit("/", 1)[-1]


def principal_identity(arn: str) -> tuple[str, str, str]:
    """An IAM principal as IAM keys it: account, kind and name (a name is unique in its account, whatever its path)."""
    kind, name = principal_kind_and_name(arn)
    return arn.split(":")[4], kind, name


def managed_policy_arn(partition: str, name: str) -> str:
    return f"arn:{partition}:iam::aws:policy/{name}"


def eks_access_policy_arn(partition: str, policy: str) -> str:
    """An EKS access policy (ClusterAdmin, Admin, Edit, View) as an ARN."""
    return f"arn:{partition}:eks::aws:cluster-access-policy/AmazonEKS{policy}Policy"
