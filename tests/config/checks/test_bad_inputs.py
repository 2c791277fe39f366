"""Every bad input of the catalog gives its exact message (path: problem; why. Fix: ...)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.config.checks import bad_inputs_gateway as gateway
from tests.config.checks import test_bad_inputs_classes as classes
from tests.conftest import new_problems_after
from tests.support.mutations import EXISTING_VPC, m0, p0

ACM = "arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"

CASES: dict[str, Callable[[dict[str, Any]], object]] = {
    "public-endpoint-no-cidrs": lambda d: d["cluster"]["endpoint"].update(publicCidrs=[]),
    "cidrs-with-public-off": lambda d: d["cluster"]["endpoint"].update(public=False),
    "public-without-private": lambda d: d["cluster"]["endpoint"].update(private=False),
    "cidr-quality": lambda d: d["cluster"]["endpoint"].update(publicCidrs=["203.0.113.5/24", "10.0.0.0/8", "0.0.0.0/0", "198.51.100.7"]),
    "image-latest": lambda d: m0(d).update(image={"tag": "latest"}),
    "image-bad-digest": lambda d: m0(d).update(image={"digest": "sha256:abc"}),
    "memory-24GB": lambda d: m0(d)["resources"].update(memory="24GB"),
    "unknown-top-key": lambda d: d.update(modles=[]),
    "unknown-nested-key": lambda d: m0(d).update(replica={"min": 1}),
    "grace-as-string": lambda d: m0(d).update(drain={"terminationGracePeriodSeconds": "120"}),
    "min-above-max": lambda d: m0(d)["replicas"].update(min=5, max=4),
    "zero-queue-threshold": lambda d: m0(d).update(autoscaling={"queueDepthPerReplica": 0}),
    "duplicate-model": lambda d: d["models"].append(dict(m0(d))),
    "hpa-name-too-long": lambda d: m0(d).update(name="m" * 55),
    "cluster-name-too-long": lambda d: d["cluster"].update(name="c" * 47),
    "requirement-gt-not-integer": lambda d: p0(d).update(
        requirements=[{"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["4", "5"]}]
    ),
    "requirement-in-empty": lambda d: p0(d).update(
        requirements=[{"key": "karpenter.k8s.aws/instance-size", "operator": "In", "values": []}]
    ),
    "requirement-min-values": lambda d: p0(d).update(
        requirements=[{"key": "karpenter.k8s.aws/instance-size", "operator": "In", "values": ["xlarge"], "minValues": 2}]
    ),
    "requirement-restricted": lambda d: p0(d).update(requirements=[{"key": "kubernetes.io/hostname", "operator": "Exists"}]),
    "label-restricted-domain": lambda d: p0(d).update(labels={"karpenter.sh/custom": "x"}),
    "label-restricted-aws-domain": lambda d: p0(d).update(labels={"karpenter.k8s.aws/team": "x"}),
    "requirement-aws-domain": lambda d: p0(d).update(requirements=[{"key": "karpenter.k8s.aws/foo", "operator": "Exists"}]),
    "consolidate-after-1d": lambda d: p0(d).update(disruption={"consolidateAfter": "1d"}),
    "budget-nodes-words": lambda d: p0(d).update(disruption={"budgets": [{"nodes": "10 percent"}]}),
    "ami-latest": lambda d: d.update(karpenter={"amiVersions": {"al2023": "latest"}}),
    "grace-below-drain": lambda d: m0(d).update(
        drain={"preStopSleepSeconds": 15, "shutdownTimeoutSeconds": 60, "terminationGracePeriodSeconds": 70}
    ),
    "spot-grace-too-long": lambda d: m0(d).update(drain={"terminationGracePeriodSeconds": 120}),
    "startup-budget-too-short": lambda d: m0(d).update(startup={"budgetSeconds": 120}),
    "tp-not-dividing": lambda d: m0(d).update(tensorParallelSize=3),
    "model-does-not-fit": lambda d: m0(d).update(parametersBillions=70.6, architecture={"numLayers": 80, "numKvHeads": 8, "headDim": 128}),
    "mig-profile-wrong-gpu": lambda d: d.update(
        gpuPools=[
            {
                "name": "gpu-l4-a10g",
                "instanceTypes": ["p4d.24xlarge"],
                "capacityTypes": ["on-demand"],
                "gpuLimit": 8,
                "sharing": {"mig": {"profile": "3g.40gb"}},
            }
        ]
    ),
    "mig-and-time-slicing": lambda d: p0(d).update(sharing={"mig": {"profile": "1g.10gb"}, "timeSlicing": {"replicas": 2}}),
    "mig-on-mixed-gpus": lambda d: p0(d).update(sharing={"mig": {"profile": "1g.10gb"}}),
    "mig-on-a10g": lambda d: p0(d).update(instanceTypes=["g5.xlarge", "g5.2xlarge", "g5.4xlarge"], sharing={"mig": {"profile": "1g.10gb"}}),
    "pool-missing": lambda d: m0(d).update(pool="gpu-h100"),
    "invalid-k8s-name": lambda d: m0(d).update(name="Llama_8B"),
    "time-slice-memory": lambda d: p0(d).update(sharing={"timeSlicing": {"replicas": 2}}),
    "gpu-limit-below-min": lambda d: (p0(d).update(gpuLimit=1), m0(d)["replicas"].update(min=2)),
    "internet-facing-open": lambda d: d.update(ingress={"scheme": "internet-facing"}),
    "internet-facing-private-cidr": lambda d: d.update(
        ingress={"scheme": "internet-facing", "allowedCidrs": ["10.0.0.0/8"], "certificateArn": ACM}
    ),
    "reserved-namespace": lambda d: m0(d).update(name="monitoring"),
    "zero-cpu": lambda d: m0(d)["resources"].update(cpu="0"),
    "one-system-node": lambda d: d["cluster"]["systemNodeGroup"].update(minSize=1, desiredSize=1),
    "scheduler-alerts-back-on": lambda d: d.update(observability={"extraValues": {"kubeScheduler": {"enabled": True}}}),
    "prometheus-volume-retained": lambda d: d.update(
        observability={
            "extraValues": {"prometheus": {"prometheusSpec": {"persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain"}}}}
        }
    ),
    "system-group-too-small": lambda d: d["cluster"]["systemNodeGroup"].update(instanceTypes=["m7i.large"]),
    "zones-count": lambda d: d["network"].update(availabilityZones=["us-east-1a"]),
    "zones-mixed": lambda d: d["network"].update(availabilityZones=["us-east-1a", "use1-az2"]),
    "zones-not-a-zone": lambda d: d["network"].update(availabilityZones=["us-east-1a", "east"]),
    "zones-other-region": lambda d: d["network"].update(availabilityZones=["us-west-2a", "us-west-2b"]),
    "zone-ids-other-region": lambda d: d["network"].update(availabilityZones=["usw2-az1", "usw2-az2"]),
    "pool-zone-outside-the-vpc": lambda d: (
        d["network"].update(availabilityZones=["us-east-1a", "us-east-1b"]),
        p0(d).update(zones=["us-east-1d"]),
    ),
    "rollout-surge-beyond-the-limit": lambda d: (p0(d).update(gpuLimit=3), m0(d)["replicas"].update(max=3)),
    "gpu-operator-mig-manager-on": lambda d: d.update(gpuOperator={"extraValues": {"migManager": {"enabled": True}}}),
    "private-only-endpoint-new-vpc": lambda d: d["cluster"].update(endpoint={"private": True, "public": False}),
    "private-only-endpoint-existing-vpc": lambda d: (
        d["cluster"].update(endpoint={"private": True, "public": False}),
        d.update(network=dict(EXISTING_VPC)),
    ),
    "private-access-not-a-security-group": lambda d: d["cluster"]["endpoint"].update(privateAccessSecurityGroupIds=["runner-sg"]),
    "deploy-role-declared-again": lambda d: d["cluster"].update(deployRoleArn="arn:aws:iam::123456789012:role/platform-admin"),
    "reserved-capacity": lambda d: p0(d).update(capacityTypes=["reserved", "on-demand"]),
    "image-snapshot-on-al2023": lambda d: p0(d).update(imageSnapshot={"snapshotId": "snap-0123456789abcdef0"}),
    "image-snapshot-not-a-snapshot": lambda d: p0(d).update(
        imageSnapshot={"snapshotId": "vol-0123456789abcdef0"}, amiFamily="bottlerocket"
    ),
    "principal-admin-and-access": lambda d: d["cluster"].update(
        access=[{"principalArn": "arn:aws:iam::123456789012:role/teams/platform-admin", "policy": "View"}]
    ),
    "principal-twice-in-access": lambda d: d["cluster"].update(
        access=[
            {"principalArn": "arn:aws:iam::123456789012:role/team-a", "policy": "View"},
            {"principalArn": "arn:aws:iam::123456789012:role/team-a", "policy": "Edit", "namespaces": ["team-a"]},
        ]
    ),
    "access-policy-and-policies": lambda d: d["cluster"].update(
        access=[{"principalArn": "arn:aws:iam::123456789012:role/team-a", "policy": "View", "policies": [{"policy": "Edit"}]}]
    ),
    "access-policy-listed-twice": lambda d: d["cluster"].update(
        access=[
            {
                "principalArn": "arn:aws:iam::123456789012:role/team-a",
                "policies": [{"policy": "Edit"}, {"policy": "Edit", "namespaces": ["a"]}],
            }
        ]
    ),
    "sse-keep-alive-in-extra-args": lambda d: m0(d).update(extraArgs=["--sse-keep-alive-interval=5"]),
    "model-named-like-custom-gpu-operator-namespace": lambda d: (
        d.update(gpuOperator={"namespace": "nvidia-gpu"}),
        m0(d).update(name="nvidia-gpu", expose=False, clientNamespaces=["chat"]),
    ),
    "kubernetes-version": lambda d: d["cluster"].update(kubernetesVersion="1.28"),
    "log-types-without-audit": lambda d: d["cluster"].update(logTypes=["api", "authenticator"]),
    "managed-flag-in-extra-args": lambda d: m0(d).update(extraArgs=["--api-key=abc"]),
    "revision-branch": lambda d: m0(d).update(revision="main"),
    "unknown-instance-type": lambda d: p0(d).update(instanceTypes=["g7.xlarge"]),
    "pool-types-and-families": lambda d: p0(d).update(instanceFamilies=["g6"]),
    "node-too-small": lambda d: m0(d)["resources"].update(memory="64Gi"),
    "network-mode": lambda d: d["network"].update(mode="shared"),
    "vpc-cidr-prefix": lambda d: d["network"].update(cidr="10.0.0.0/24"),
    "system-sizes": lambda d: d["cluster"]["systemNodeGroup"].update(minSize=3),
    "prod-one-system-node": lambda d: (
        d.update(environment="prod", imageCache={"dockerHubUsername": "platform-ci"}),
        d["cluster"]["systemNodeGroup"].update(minSize=1, desiredSize=1),
    ),
    "gpu-operator-driver-on": lambda d: d.update(gpuOperator={"extraValues": {"driver": {"enabled": True}}}),
    "gpu-operator-uncovered-taint": lambda d: (
        p0(d).update(taints=[{"key": "dedicated", "value": "llm", "effect": "NoSchedule"}]),
        d.update(
            gpuOperator={
                "extraValues": {"daemonsets": {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}}
            }
        ),
    ),
    "prod-without-tls": lambda d: (
        d.update(environment="prod", imageCache={"dockerHubUsername": "platform-ci"}),
        d["cluster"]["systemNodeGroup"].update(minSize=2),
    ),
    "domain-with-scheme": lambda d: d.update(ingress={"domain": "https://llm.example.com"}),
    "bottlerocket-sharing": lambda d: p0(d).update(amiFamily="bottlerocket", sharing={"timeSlicing": {"replicas": 2}}),
    "waiting-bound-below-trigger": lambda d: m0(d).update(maxWaitingRequests=3),
    "admission-flag-in-extra-args": lambda d: m0(d).update(extraArgs=["--max-num-queued-reqs=64"]),
    "graph-sizes-in-extra-args": lambda d: m0(d).update(extraArgs=["--cudagraph-capture-sizes", "1", "2", "4"]),
    "graph-sizes-in-a-compilation-config": lambda d: m0(d).update(extraArgs=["-cc", '{"max_cudagraph_capture_size": 32}']),
}

# What the dev fixture stack lacks as prod (its system nodes aside): TLS and a deploy role, then the zones,
# NAT gateways, replicas and image pin that prod needs to survive an outage.
DEV_AS_PROD_INSECURE = [
    "ingress.certificateArn: is not set, so llama-3-1-8b would be served over plain HTTP; prod endpoints must use TLS. Fix: set an ACM certificate ARN for the endpoints' domain",
    "cluster.deployRoleArn: is not set; prod is deployed by CI, and the Kubernetes objects are created as the principal "
    "that creates the cluster. Fix: set it to the role the workflows assume (vars.AWS_ROLE_ARN), and run the first "
    "pulumi up as that role",
]
DEV_AS_PROD_FRAGILE = [
    "network.azCount: prod spans fewer than 3 AZs; an AZ outage halves capacity. Fix: set azCount: 3",
    "network.natGateways: prod with a single NAT gateway loses egress in an AZ outage. Fix: set natGateways: perAz",
    "models[llama-3-1-8b].replicas.min: prod model with fewer than 2 minimum replicas: one node loss is an outage. Fix: set min: 2",
    "models[llama-3-1-8b].image.digest: a prod image must be pinned by digest, but vllm/vllm-openai:v0.33.0 is pinned by tag only: "
    "a re-pushed tag (followed by the pull-through cache within its sync window) changes what new replicas run, mid-rollout. "
    "Fix: read the digest with `docker buildx imagetools inspect vllm/vllm-openai:v0.33.0` (the `Digest:` line) and set it: "
    "`pulumi config set --path 'models[0].image.digest' sha256:<64 hex>`",
]

EXPECTED: dict[str, list[str]] = {
    "public-endpoint-no-cidrs": [
        "cluster.endpoint: publicCidrs is empty while public=true; EKS would accept API calls from 0.0.0.0/0. Fix: list your egress CIDRs in cluster.endpoint.publicCidrs, or set cluster.endpoint.public=false"
    ],
    "cidrs-with-public-off": [
        "cluster.endpoint: publicCidrs is set but public=false, so the list would be ignored silently. Fix: remove cluster.endpoint.publicCidrs, or set cluster.endpoint.public=true"
    ],
    "public-without-private": [
        "cluster.endpoint: private=false while the public endpoint is restricted by CIDRs; nodes inside the VPC could not reach the API server and would never join. Fix: set cluster.endpoint.private=true"
    ],
    "cidr-quality": [
        "cluster.endpoint.publicCidrs[0]: '203.0.113.5/24' has host bits set (did you mean 203.0.113.0/24?); AWS rejects such ranges. Fix: use 203.0.113.0/24",
        "cluster.endpoint.publicCidrs[1]: '10.0.0.0/8' is inside the non-public range 10.0.0.0/8; public allow-lists take public CIDRs (traffic from inside the VPC uses private paths). Fix: remove it, or list the public egress CIDR that this network leaves through",
        "cluster.endpoint.publicCidrs[2]: '0.0.0.0/0' allows every address on the internet, which defeats the allow-list. Fix: list the egress CIDRs of your offices, VPN or CI runners",
        "cluster.endpoint.publicCidrs[3]: '198.51.100.7' has no prefix length. Fix: write 198.51.100.7/32 for a single address",
    ],
    "image-latest": [
        "models[llama-3-1-8b].image.tag: tag 'latest' is not pinned; `latest` changes under you, and a node pulling a new vLLM release can change metric names and flags mid-rollout. Fix: pin a release tag such as v0.33.0, optionally with digest sha256:<64 hex>"
    ],
    "image-bad-digest": ["models[llama-3-1-8b].image.digest: 'sha256:abc' is not an image digest. Fix: write sha256:<64 lowercase hex>"],
    "memory-24GB": [
        "models[llama-3-1-8b].resources.memory: '24GB' is not a Kubernetes quantity (did you mean '24Gi'?); the API server would reject the object at apply time, after the preview looked fine. Fix: write a quantity such as 24Gi, 512Mi, 4 or 500m"
    ],
    "unknown-top-key": [
        "modles: unknown key (did you mean 'models'?); it would otherwise be ignored silently. Fix: correct or remove it (see the config reference, docs/config-reference.md)"
    ],
    "unknown-nested-key": [
        "models[llama-3-1-8b].replica: unknown key (did you mean 'replicas'?); it would otherwise be ignored silently. Fix: correct or remove it (see the config reference, docs/config-reference.md)"
    ],
    "grace-as-string": [
        "models[llama-3-1-8b].drain.terminationGracePeriodSeconds: expected an integer, got '120'. Fix: write a whole number without quotes"
    ],
    "min-above-max": [
        "models[llama-3-1-8b].replicas: min (5) > max (4); KEDA's webhook would reject the ScaledObject. Fix: raise max or lower min"
    ],
    "zero-queue-threshold": ["models[llama-3-1-8b].autoscaling.queueDepthPerReplica: must be > 0.0. Fix: change the value"],
    "duplicate-model": [
        "models[1].name: 'llama-3-1-8b' is already used by models[0]; names must be unique, because each becomes Kubernetes object names (two ScaledObjects on one Deployment fight each other). Fix: rename one",
        "gpuPools[gpu-l4-a10g].gpuLimit: gpuLimit (4) is below the combined peak of 8 GPUs of its models at once: maximum replicas "
        "(6) and a rolling update's surge of 1 replica per model (2), in whole nodes (llama-3-1-8b: 1 per g6.xlarge; llama-3-1-8b: 1 "
        "per g6.xlarge). Each model with its surge fits the limit, so the limit binds only when they all peak together: a scale-out "
        "or rollout then waits for capacity another gives back. Fix: nothing, if they do not peak together; else raise gpuLimit to "
        "at least 8",
        "ingress.certificateArn: is not set: llama-3-1-8b, llama-3-1-8b are served over plain HTTP inside the VPC. Fix: set an ACM certificate ARN to serve HTTPS (HTTP then redirects)",
    ],
    "hpa-name-too-long": [
        "models[mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm].name: name too long: KEDA names the HPA keda-hpa-mmmmmmmmmmm... (64 characters), which must be at most 63. Fix: use at most 53 characters (the longest name the HPA and the gateway's Helm release both allow)",
        "models[mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm].name: name too long: the model's gateway is a Helm release named after it (55 characters) and Helm allows 53. Fix: use at most 53 characters",
        "ingress.certificateArn: is not set: mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm is served over plain HTTP inside the VPC. Fix: set an ACM certificate ARN to serve HTTPS (HTTP then redirects)",
    ],
    "cluster-name-too-long": [
        "cluster.name: 'ccccccccccccccccccccccccccccccccccccccccccccccc' is 47 characters; derived IAM role names such as KarpenterNodeRole-<cluster> would exceed 64 characters. Fix: use at most 46 characters"
    ],
    "requirement-gt-not-integer": [
        "gpuPools[gpu-l4-a10g].requirements[0]: requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value; the API server would reject the NodePool. Fix: give exactly one value such as \"5\""
    ],
    "requirement-in-empty": [
        "gpuPools[gpu-l4-a10g].requirements[0]: requirements with operator 'In' must have a value defined; the API server would reject the NodePool. Fix: add values"
    ],
    "requirement-min-values": [
        "gpuPools[gpu-l4-a10g].requirements[0]: requirements with 'minValues' must have at least that many values specified in the 'values' field; the API server would reject the NodePool. Fix: add values or lower minValues"
    ],
    "requirement-restricted": [
        'gpuPools[gpu-l4-a10g].requirements[0]: label "kubernetes.io/hostname" is restricted; the API server would reject the NodePool. Fix: use another key; Karpenter sets or reserves this one itself'
    ],
    "label-restricted-domain": [
        'gpuPools[gpu-l4-a10g].labels: label domain "karpenter.sh" is restricted. Fix: remove label karpenter.sh/custom from the pool'
    ],
    "label-restricted-aws-domain": [
        'gpuPools[gpu-l4-a10g].labels: label domain "karpenter.k8s.aws" is restricted. Fix: remove label karpenter.k8s.aws/team from the pool'
    ],
    "requirement-aws-domain": [
        'gpuPools[gpu-l4-a10g].requirements[0]: label domain "karpenter.k8s.aws" is restricted; the API server would reject the NodePool. Fix: use another key; Karpenter sets or reserves this one itself'
    ],
    "consolidate-after-1d": [
        "gpuPools[gpu-l4-a10g].disruption.consolidateAfter: '1d' is not a duration Karpenter accepts (pattern <n>s|m|h, e.g. 90s, 10m, 24h). Fix: write 24h instead of 1d"
    ],
    "budget-nodes-words": [
        "gpuPools[gpu-l4-a10g].disruption.budgets[0].nodes: '10 percent' is not a node count or percentage. Fix: write e.g. 1 or 10%"
    ],
    "ami-latest": [
        "karpenter.amiVersions.al2023: al2023@latest must be pinned to a release; the latest alias (or a malformed version) drifts every GPU node on each AMI release and replaces them all at once. Fix: pin al2023@vYYYYMMDD, e.g. v20260930"
    ],
    "grace-below-drain": [
        "models[llama-3-1-8b].drain: terminationGracePeriodSeconds (70) must exceed preStopSleepSeconds + shutdownTimeoutSeconds (15 + 60 = 75), or streams are SIGKILLed mid-response. Fix: raise terminationGracePeriodSeconds to at least 80"
    ],
    "spot-grace-too-long": [
        "models[llama-3-1-8b].drain.terminationGracePeriodSeconds: 120 s is above ~110 s, but pool gpu-l4-a10g uses spot capacity, which gives a 2-minute notice; the drain cannot be honoured. Fix: lower it to 110 or less, or use an on-demand pool"
    ],
    "startup-budget-too-short": [
        "models[llama-3-1-8b].startup.budgetSeconds: startup budget (120 s) is below the pessimistic load time of 16 GB of checkpoint from huggingface plus a cold engine start (~336 s); the kubelet would kill the pod before the model loads, in a crash loop. Fix: raise it to at least 336, or unset it"
    ],
    "tp-not-dividing": [
        "models[llama-3-1-8b].tensorParallelSize: tensorParallelSize (3) must divide the GPUs per node of pool gpu-l4-a10g (1); vLLM would fail at startup after a long image pull. Fix: use a tensorParallelSize that divides 1, or a pool with more GPUs per node",
    ],
    "model-does-not-fit": [
        "models[llama-3-1-8b]: does not fit pool gpu-l4-a10g: needs 135.5 GiB per NVIDIA L4 (weights 131.5 GiB + KV cache for one 8192-token sequence 2.5 GiB, over tensorParallelSize 1, + 1.5 GiB overhead), but has 20.6 GiB (22.4 GiB x gpuMemoryUtilization 0.92); vLLM would fail at startup. Fix: raise tensorParallelSize, quantize, shorten maxModelLen, or use another pool: the smallest catalog instance that fits is g6e.12xlarge (4 x NVIDIA L40S) at tensorParallelSize 4",
        # then what follows from it: a 70B checkpoint from Hugging Face, whose pessimistic warm scale-up outlasts what the ALB lets the gateway hold
        "ingress.idleTimeoutSeconds: 600 s caps how long llama-3-1-8b's gateway holds a request at 540 s (a hold, a 30 s "
        "pick and 30 s of margin inside the ALB's idle timeout), short of its pessimistic warm scale-up (2328 s): during a "
        "slow scale-up callers get 429 before a new replica can serve them. Fix: raise it to at least 2388, or accept the "
        "earlier 429s",
    ],
    "mig-profile-wrong-gpu": [
        "gpuPools[gpu-l4-a10g].sharing.mig.profile: MIG profile 3g.40gb does not exist on NVIDIA A100 40GB; the MIG manager would leave the GPUs unpartitioned and no pod could schedule. Fix: use one of 1g.5gb, 1g.10gb, 2g.10gb, 3g.20gb, 4g.20gb, 7g.40gb"
    ],
    "mig-and-time-slicing": [
        "gpuPools[gpu-l4-a10g].sharing: a pool cannot use both MIG and time-slicing; the device plugin applies one sharing strategy per node. Fix: split it into two pools, one with timeSlicing and one with mig"
    ],
    "mig-on-mixed-gpus": [
        "gpuPools[gpu-l4-a10g].sharing.mig: a MIG pool must have one GPU model (this one has NVIDIA A10G, NVIDIA L4), because MIG profile names depend on it. Fix: keep the pool to instance types with the same GPU"
    ],
    "mig-on-a10g": [
        "gpuPools[gpu-l4-a10g].sharing.mig: NVIDIA A10G does not support MIG (only A100, H100 and H200 do). Fix: use timeSlicing on this GPU, or a p4d/p4de/p5/p5en pool for MIG"
    ],
    "pool-missing": [
        "models[llama-3-1-8b].pool: pool 'gpu-h100' is not in gpuPools (have: gpu-l4-a10g); the model would have nowhere to run. Fix: use one of those names or add the pool"
    ],
    "invalid-k8s-name": [
        "models[Llama_8B].name: 'Llama_8B' is not a valid Kubernetes name; it becomes a namespace, Service and NodePool name, which must be a DNS-1123 label. Fix: use lowercase letters, digits and '-', start with a letter, end with a letter or digit, at most 63 characters"
    ],
    "time-slice-memory": [
        "models[llama-3-1-8b].gpuMemoryUtilization: gpuMemoryUtilization 0.92 x 2 time-slice replicas of pool gpu-l4-a10g = 1.84 of one GPU; time-slicing does not split memory, so the replicas sharing a GPU would run out of memory at startup. Fix: set gpuMemoryUtilization to at most 0.47"
    ],
    "gpu-limit-below-min": [
        "gpuPools[gpu-l4-a10g].gpuLimit: gpuLimit (1) is below the 2 GPUs of the nodes its models need at minimum replicas; "
        "Karpenter would stop launching nodes and replicas would stay Pending. Fix: raise gpuLimit to at least 2"
    ],
    "internet-facing-open": [
        "ingress: scheme is internet-facing but allowedCidrs is empty; the models would be open to the whole internet. Fix: list client CIDRs in ingress.allowedCidrs, or use scheme internal"
    ],
    "internet-facing-private-cidr": [
        "ingress.allowedCidrs[0]: '10.0.0.0/8' is inside the non-public range 10.0.0.0/8; public allow-lists take public CIDRs (traffic from inside the VPC uses private paths). Fix: remove it, or list the public egress CIDR that this network leaves through"
    ],
    "model-named-like-custom-gpu-operator-namespace": [
        "models[nvidia-gpu].name: 'nvidia-gpu' is a namespace the platform or Kubernetes owns, and each model gets a namespace of its own name. Fix: choose another name",
    ],
    "sse-keep-alive-in-extra-args": [
        "models[llama-3-1-8b].extraArgs: --sse-keep-alive-interval may not be in extraArgs: the platform derives it from "
        "ingress.idleTimeoutSeconds. Fix: remove --sse-keep-alive-interval",
    ],
    "private-only-endpoint-new-vpc": [
        "cluster.endpoint: only the private endpoint is on, in a VPC this stack creates, and its security group admits only the "
        "cluster itself: nothing could reach the API server during pulumi up, and every Kubernetes object would fail after the "
        "cluster is created. Fix: list the network `pulumi up` runs from (VPN, transit gateway, a CI runner's subnet) in cluster.endpoint.privateAccessCidrs, or its security group in cluster.endpoint.privateAccessSecurityGroupIds; or turn on cluster.endpoint.public with publicCidrs",
    ],
    "private-only-endpoint-existing-vpc": [
        "cluster.endpoint: only the private endpoint is on and no network or security group is allowed to reach it: pulumi up "
        "reaches the API server only if it runs from inside the cluster's security group (e.g. a runner on a cluster node). "
        "Fix: list the network `pulumi up` runs from (VPN, transit gateway, a CI runner's subnet) in cluster.endpoint.privateAccessCidrs, or its security group in cluster.endpoint.privateAccessSecurityGroupIds; or turn on cluster.endpoint.public with publicCidrs",
    ],
    "private-access-not-a-security-group": [
        "cluster.endpoint.privateAccessSecurityGroupIds[0]: 'runner-sg' is not a security group id. Fix: write sg-<8 or 17 hex digits>",
    ],
    "image-snapshot-on-al2023": [
        "gpuPools[gpu-l4-a10g].imageSnapshot: is a Bottlerocket data volume, but the pool runs al2023, whose images live on "
        "its root volume: the snapshot would be mounted nowhere containerd reads. Fix: set amiFamily: bottlerocket on the "
        "pool, or remove imageSnapshot",
    ],
    "image-snapshot-not-a-snapshot": [
        "gpuPools[gpu-l4-a10g].imageSnapshot.snapshotId: 'vol-0123456789abcdef0' is not an EBS snapshot id. Fix: write "
        "snap- and 8 or 17 hex digits (`aws ec2 describe-snapshots --owner-ids self` lists yours)",
    ],
    "reserved-capacity": [
        "gpuPools[gpu-l4-a10g].capacityTypes: reserved needs capacity reservations selected on the pool's node class, which "
        "the platform does not write yet: Karpenter would never offer a reserved node, and a reserved-only pool would never "
        "launch one. Fix: use spot and/or on-demand",
    ],
    "principal-admin-and-access": [
        "cluster.access[0].principalArn: names the principal role/platform-admin of account 123456789012 again (first at "
        "cluster.adminRoleArns[0]): EKS gives a principal one access entry and refuses a second (409 "
        "ResourceInUseException) after the cluster exists. Fix: keep it in adminRoleArns (ClusterAdmin covers every other "
        "policy) and remove it here",
    ],
    "principal-twice-in-access": [
        "cluster.access[1].principalArn: names the principal role/team-a of account 123456789012 again (first at "
        "cluster.access[0].principalArn): EKS gives a principal one access entry and refuses a second (409 "
        "ResourceInUseException) after the cluster exists. Fix: merge them into one access item with "
        "`policies: [{policy: ..., namespaces: [...]}, ...]`",
    ],
    "access-policy-and-policies": [
        "cluster.access[0]: needs exactly one of policy and policies. Fix: write `policy: <ClusterAdmin|Admin|Edit|View>` "
        "(with optional namespaces) for one policy, or `policies: [{policy: ..., namespaces: [...]}, ...]` for several",
    ],
    "access-policy-listed-twice": [
        "cluster.access[0]: Edit is listed twice: an access entry associates each policy once, with one scope. Fix: list each "
        "policy once, with every namespace it covers",
    ],
    "deploy-role-declared-again": [
        "cluster.adminRoleArns[0]: is the deploy role (cluster.deployRoleArn): EKS already gives the principal that creates "
        "the cluster an admin access entry, and a second entry for it fails with 409 ResourceInUseException right after the "
        "cluster is created. Fix: remove it here, and run the first pulumi up as the deploy role",
    ],
    "gpu-operator-mig-manager-on": [
        "gpuOperator.extraValues.migManager.enabled: must stay false: with the AMI's host driver the MIG manager restarts "
        "kubelet to change MIG mode and Karpenter's nodes never come back Ready (NVIDIA/gpu-operator#2415); MIG pools are "
        "partitioned at boot by their EC2NodeClass instead. Fix: remove the override",
    ],
    "rollout-surge-beyond-the-limit": [
        "gpuPools[gpu-l4-a10g].gpuLimit: gpuLimit (3) is below the 4 GPUs of the nodes llama-3-1-8b alone needs at maximum replicas "
        "(3) plus a rolling update's surge of 1 replica (1), in whole nodes (1 per g6.xlarge); Karpenter would stop at the limit and "
        "its scale-out or rollout would stall. Fix: raise gpuLimit to at least 4, or lower models[llama-3-1-8b].replicas.max",
    ],
    "zones-count": [
        "network: availabilityZones lists 1 zone but azCount is 2; each zone gets one public and one private subnet. Fix: list 2 zones",
    ],
    "zones-mixed": ["network: availabilityZones mixes zone names and zone ids. Fix: use names only or ids only"],
    "zones-not-a-zone": [
        "network.availabilityZones[1]: 'east' is neither an availability zone name nor a zone id. Fix: write a name such as "
        "us-east-1a, or a zone id such as use1-az4 (the same physical zone in every account)",
    ],
    "zones-other-region": [
        f"network.availabilityZones[{i}]: 'us-west-2{z}' is not a zone of us-east-1 (aws:region); the subnet could not be "
        "created there. Fix: use a zone of us-east-1, or correct aws:region"
        for i, z in enumerate("ab")
    ],
    "zone-ids-other-region": [
        f"network.availabilityZones[{i}]: 'usw2-az{i + 1}' is not a zone of us-east-1 (aws:region); the subnet could not be "
        "created there. Fix: use a zone of us-east-1, or correct aws:region"
        for i in range(2)
    ],
    "pool-zone-outside-the-vpc": [
        "gpuPools[gpu-l4-a10g].zones: us-east-1d is not among network.availabilityZones (us-east-1a, us-east-1b); the VPC has "
        "no subnet there, so Karpenter could never launch those nodes. Fix: list zones of the VPC only, or leave zones unset",
    ],
    "system-group-too-small": [
        "cluster.systemNodeGroup: with one of its 2 nodes lost, 1 x m7i.large leave 1735m CPU and 6689 MiB for the system "
        "pods, which request 2980m CPU and 6184 MiB (Karpenter, Prometheus, KEDA, the GPU operator, CoreDNS, the CSI "
        "controller, the models' gateways; see config/facts/system_capacity.py): pods would stay Pending and nothing "
        "scales this group. Fix: raise minSize and desiredSize to 4 or set instanceTypes to [m6i.xlarge] (replaces the "
        "node group)",
    ],
    "scheduler-alerts-back-on": [
        "observability.extraValues.kubeScheduler.enabled: EKS does not expose this component to scrape, so its Down alert "
        "would fire forever and page on nothing. Fix: remove the override",
    ],
    "prometheus-volume-retained": [
        "observability.extraValues.prometheus.prometheusSpec.persistentVolumeClaimRetentionPolicy.whenDeleted: is Retain: "
        "`pulumi destroy` would leave Prometheus's EBS volume behind, billed and outside the stack. Fix: remove the override, "
        "or snapshot the volume before destroying if the metrics must be kept",
    ],
    "one-system-node": [
        "cluster.systemNodeGroup.minSize: is 1: there is no spare node, so losing it stops Karpenter, KEDA, CoreDNS and "
        "monitoring at once (the capacity check counts that one node). Fix: set minSize: 2 for a cluster that must keep scaling",
    ],
    "zero-cpu": [
        "models[llama-3-1-8b].resources.cpu: '0' is not a positive quantity; vLLM needs CPU and memory to start. "
        "Fix: request e.g. cpu 4, memory 32Gi",
    ],
    "reserved-namespace": [
        "models[monitoring].name: 'monitoring' is a namespace the platform or Kubernetes owns, and each model gets a namespace of its own name. Fix: choose another name",
        "ingress.certificateArn: is not set: monitoring is served over plain HTTP inside the VPC. Fix: set an ACM certificate ARN to serve HTTPS (HTTP then redirects)",
    ],
    "kubernetes-version": [
        "cluster.kubernetesVersion: Kubernetes 1.28 is not one this program is tested with; the pinned Karpenter, KEDA and add-ons support 1.35. Fix: set cluster.kubernetesVersion to one of 1.35"
    ],
    "log-types-without-audit": [
        "cluster.logTypes: missing audit; without them there is no audit trail of who did what to the cluster. Fix: include api, audit and authenticator in cluster.logTypes"
    ],
    "managed-flag-in-extra-args": [
        "models[llama-3-1-8b].extraArgs: --api-key may not be in extraArgs: API keys come from the apiKeys Pulumi secret through a Kubernetes Secret (VLLM_API_KEY), never from args. Fix: remove --api-key"
    ],
    "revision-branch": [
        "models[llama-3-1-8b].revision: 'main' is not a pinned commit; a branch such as main can change the weights under a running fleet. Fix: use the 40-hex commit id shown on the model's Hugging Face 'Files' history"
    ],
    "unknown-instance-type": [
        "gpuPools[gpu-l4-a10g].instanceTypes: g7.xlarge not in the GPU catalog, so capacity and cost cannot be checked. Fix: use one of g5.12xlarge, g5.24xlarge, g5.2xlarge, g5.48xlarge, g5.4xlarge, g5.8xlarge, g5.xlarge, g6.12xlarge, g6.2xlarge, g6.48xlarge, g6.4xlarge, g6.xlarge, g6e.12xlarge, g6e.2xlarge, g6e.48xlarge, g6e.4xlarge, g6e.xlarge, p4d.24xlarge, p4de.24xlarge, p5.48xlarge, p5.4xlarge, p5en.48xlarge (or add it to config/facts/catalog.py with its source)"
    ],
    "pool-types-and-families": [
        "gpuPools[gpu-l4-a10g]: set exactly one of instanceTypes or instanceFamilies. Fix: list instance types (g6.xlarge, ...) or families (g6, ...)"
    ],
    "node-too-small": [
        "models[llama-3-1-8b].resources: cpu 3 / memory 64Gi fit no instance type of pool gpu-l4-a10g (largest: g6.2xlarge, 8 vCPU / 32 GiB, of which about 90% / 85% is allocatable); the pods would stay Pending. Fix: lower resources or add larger instance types to the pool"
    ],
    "network-mode": ["network: mode must be one of 'new', 'existing'. Fix: set mode to one of those"],
    "vpc-cidr-prefix": [
        "network.cidr: '10.0.0.0/24' has prefix /24; a VPC CIDR must be /16 to /20 here so that every AZ gets public and private subnets with room for pod IPs. Fix: use a /16 (recommended: GPU pods take VPC IPs through the VPC CNI) up to /20"
    ],
    "system-sizes": [
        "cluster.systemNodeGroup: sizes must satisfy minSize <= desiredSize <= maxSize (got 3, 2, 3). Fix: adjust the three sizes"
    ],
    "prod-one-system-node": [
        *DEV_AS_PROD_INSECURE,
        "cluster.systemNodeGroup.minSize: prod needs at least 2 system nodes (got 1); Karpenter, KEDA and the monitoring stack would all go down with one node. Fix: set minSize: 2",
        *DEV_AS_PROD_FRAGILE,
    ],
    "gpu-operator-driver-on": [
        "gpuOperator.extraValues.driver.enabled: must be false on EKS accelerated AMIs, which ship the NVIDIA driver; a second copy fights the first and GPUs never register. Fix: remove the override"
    ],
    "gpu-operator-uncovered-taint": [
        "gpuOperator.extraValues.daemonsets.tolerations: gpu NodePool 'gpu-l4-a10g' taint dedicated=llm:NoSchedule is not tolerated by the GPU operator's daemonsets; its GPUs would never register and Karpenter would never mark the nodes initialized. Fix: remove the override (the platform tolerates every pool taint) or add a toleration for it"
    ],
    "prod-without-tls": [*DEV_AS_PROD_INSECURE, *DEV_AS_PROD_FRAGILE],
    "domain-with-scheme": [
        "ingress.domain: 'https://llm.example.com' is not a DNS domain. Fix: write e.g. llm.example.com (lowercase, no scheme, no trailing dot)"
    ],
    # the fixture's model keeps replicas, so it has a gateway, whose higher queue threshold the bound must exceed
    "waiting-bound-below-trigger": [
        "models[llama-3-1-8b].maxWaitingRequests: 3 is not above the gateway's queue threshold (10, twice "
        "autoscaling.queueDepthPerReplica): a replica would answer 503 to requests the gateway still sends it instead "
        "of the gateway holding them. Fix: raise maxWaitingRequests above 10, or remove it"
    ],
    "graph-sizes-in-extra-args": [
        "models[llama-3-1-8b].extraArgs: --cudagraph-capture-sizes sets CUDA-graph capture sizes, and so does "
        "engine.cudaGraphCaptureMax (64, as --max-cudagraph-capture-size); vLLM refuses both at once and the replica "
        "would crash-loop. Fix: set engine.cudaGraphCaptureMax: null to pass your own sizes, or remove --cudagraph-capture-sizes"
    ],
    "graph-sizes-in-a-compilation-config": [
        "models[llama-3-1-8b].extraArgs: -cc sets CUDA-graph capture sizes, and so does engine.cudaGraphCaptureMax (64, as "
        "--max-cudagraph-capture-size); vLLM refuses both at once and the replica would crash-loop. Fix: set "
        "engine.cudaGraphCaptureMax: null to pass your own sizes, or remove -cc"
    ],
    "admission-flag-in-extra-args": [
        "models[llama-3-1-8b].extraArgs: --max-num-queued-reqs may not be in extraArgs: set maxWaitingRequests (the "
        "platform adds the running batch, which vLLM counts too). Fix: remove --max-num-queued-reqs"
    ],
    "bottlerocket-sharing": [
        "models[llama-3-1-8b].gpuMemoryUtilization: gpuMemoryUtilization 0.92 x 2 time-slice replicas of pool gpu-l4-a10g = 1.84 of one GPU; time-slicing does not split memory, so the replicas sharing a GPU would run out of memory at startup. Fix: set gpuMemoryUtilization to at most 0.47",
        "gpuPools[gpu-l4-a10g].sharing: GPU sharing is not supported on Bottlerocket pools here: its device plugin is built into the OS and ignores the GPU operator's sharing config. Fix: use amiFamily al2023 for this pool",
    ],
}


ALL_CASES = {**CASES, **classes.CASES, **gateway.CASES}
ALL_EXPECTED = {**EXPECTED, **classes.EXPECTED, **gateway.EXPECTED}


def test_every_case_has_an_expectation() -> None:
    assert len(ALL_CASES) == len(CASES) + len(classes.CASES) + len(gateway.CASES)  # no name taken twice
    assert set(ALL_CASES) == set(ALL_EXPECTED)


@pytest.mark.parametrize("case", sorted(ALL_CASES))
def test_bad_input_message(case: str) -> None:
    assert new_problems_after(ALL_CASES[case]) == ALL_EXPECTED[case]


def test_problems_are_reported_all_at_once() -> None:
    def several(d: dict[str, Any]) -> None:
        CASES["min-above-max"](d)
        CASES["memory-24GB"](d)
        CASES["unknown-top-key"](d)
        CASES["public-endpoint-no-cidrs"](d)

    found = new_problems_after(several)
    expected = EXPECTED["min-above-max"] + EXPECTED["memory-24GB"] + EXPECTED["unknown-top-key"] + EXPECTED["public-endpoint-no-cidrs"]
    assert sorted(found) == sorted(expected)


def test_input_values_are_never_echoed() -> None:
    """A secret pasted into the wrong field must not reach the error output (hide_input_in_errors)."""
    token = "hf_SeCrEtToKeN1234567890"
    found = new_problems_after(lambda d: (m0(d).update(maxModelLen=token), d["cluster"].update(logRetentionDays=[token])))
    why = (
        "the stack file is plain text that anyone who can read the repository can read, and the value would reach the cluster "
        "in plain objects. Fix: move it to the hfToken secret: run `pulumi config set --secret hfToken <value>`, and delete it "
        "here (revoke it if the file was ever committed)"
    )
    # refused where it was pasted, naming the secret it belongs in; the type error quotes no part of it
    assert found == [
        f"cluster.logRetentionDays[0]: holds what looks like a Hugging Face token; {why}",
        f"models[llama-3-1-8b].maxModelLen: holds what looks like a Hugging Face token; {why}",
        "cluster.logRetentionDays: expected an integer, got a list of 1 entry. Fix: write a whole number without quotes",
    ]
    assert not any(token in p for p in found)


def test_a_root_cause_is_reported_before_what_follows_from_it() -> None:
    """A model too large for its pool also throws off its scale-up budget and so its hold: the fit comes first."""
    from tests.conftest import problems_after

    found = problems_after(lambda d: m0(d).update(parametersBillions=70.6, architecture={"numLayers": 80, "numKvHeads": 8, "headDim": 128}))
    assert found[0].startswith("models[llama-3-1-8b]: does not fit pool gpu-l4-a10g")
    assert any(p.startswith("ingress.idleTimeoutSeconds:") for p in found[1:])
