"""Bad stack files, class by class: each case with its exact message, and valid variants that must render.

Classes: the file itself, namespaces, pasted credentials, escape hatches over derived values, secrets half in
plain text, region consistency, image references and vLLM releases, networks, autoscaling step limits, and
messages that must say why. (tests/config/checks/test_bad_inputs.py holds the earlier catalog.)
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from config import stack_file
from config.errors import HIDDEN
from offline import harness, render
from tests.conftest import DEV, PROD, ROOT, fixture_input, new_problems_after, parse, stack_data
from tests.support.mutations import EXISTING_VPC, m0, p0

ACM_WEST = "arn:aws:acm:us-west-2:123456789012:certificate/0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"


CASES: dict[str, Callable[[dict[str, Any]], object]] = {
    "region-is-a-zone": lambda d: d.update(region="us-east-1a"),
    "region-free-text": lambda d: d.update(region="virginia"),
    "image-repository-with-tag": lambda d: m0(d).update(image={"repository": "vllm/vllm-openai:latest"}),
    "image-repository-with-digest": lambda d: m0(d).update(image={"repository": "vllm/vllm-openai@sha256:" + "a" * 64}),
    "image-repository-not-a-reference": lambda d: m0(d).update(image={"repository": "Vllm Images/openai"}),
    "vllm-too-old": lambda d: m0(d).update(image={"tag": "v0.8.5"}),
    "vllm-not-a-release": lambda d: m0(d).update(image={"tag": "nightly-2026-11-01"}),
    "subnet-listed-twice": lambda d: d.update(
        network={**EXISTING_VPC, "privateSubnetIds": ["subnet-0a1b2c3d4e5f60711", "subnet-0a1b2c3d4e5f60711"]}
    ),
    "subnet-public-and-private": lambda d: d.update(network={**EXISTING_VPC, "publicSubnetIds": ["subnet-0a1b2c3d4e5f60711"]}),
    "internet-facing-without-public-subnets": lambda d: (
        d.update(network=dict(EXISTING_VPC)),
        d.update(
            ingress={
                "scheme": "internet-facing",
                "allowedCidrs": ["198.51.100.0/24"],
                "certificateArn": "arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d",
            }
        ),
    ),
    "load-balancer-subnets-outside-the-vpc": lambda d: d.update(
        network={**EXISTING_VPC, "loadBalancerSubnetCidrs": ["10.60.0.0/18", "10.99.0.0/24"]}
    ),
    "interface-endpoints-outside-the-vpc": lambda d: d.update(
        network={**EXISTING_VPC, "secondaryCidrs": ["100.64.0.0/16"], "interfaceEndpointCidrs": ["100.65.0.0/24"]}
    ),
    "internal-model-without-callers": lambda d: m0(d).update(expose=False),
    "load-balancer-subnets-not-named": lambda d: d.update(network={**EXISTING_VPC, "loadBalancerSubnetCidrs": []}),
    "scale-down-without-a-limit": lambda d: m0(d).update(
        autoscaling={"scaleDown": {"stabilizationWindowSeconds": 300, "periodSeconds": 60}}
    ),
    "scale-up-without-a-limit": lambda d: m0(d).update(autoscaling={"scaleUp": {"stabilizationWindowSeconds": 0, "periodSeconds": 15}}),
    "hf-token-pasted-as-repository": lambda d: m0(d).update(huggingFaceId="hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"),
    "aws-key-pasted-as-cluster-name": lambda d: d["cluster"].update(name="AKIAIOSFODNN7EXAMPLE"),
    "openai-key-pasted-as-revision": lambda d: m0(d).update(revision="sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz012345"),
    "aws-secret-pasted-as-domain": lambda d: d.update(ingress={"domain": "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY12"}),
    "escape-lbc-vpc-id": lambda d: d.update(ingress={"extraValues": {"vpcId": "vpc-0123456789abcdef0"}}),
    "escape-lbc-cluster-name": lambda d: d.update(ingress={"extraValues": {"clusterName": "other"}}),
    "escape-lbc-region": lambda d: d.update(ingress={"extraValues": {"region": "eu-west-1"}}),
    "escape-lbc-service-account": lambda d: d.update(ingress={"extraValues": {"serviceAccount": {"name": "lbc"}}}),
    "escape-karpenter-queue": lambda d: d.update(karpenter={"extraValues": {"settings": {"interruptionQueue": "other"}}}),
    "escape-karpenter-cluster-name": lambda d: d.update(karpenter={"extraValues": {"settings": {"clusterName": "other"}}}),
    "escape-karpenter-replicas": lambda d: d.update(karpenter={"extraValues": {"replicas": 3}}),
    "escape-karpenter-node-selector": lambda d: d.update(karpenter={"extraValues": {"nodeSelector": {"x": "y"}}}),
    "escape-keda-replicas": lambda d: d.update(keda={"extraValues": {"operator": {"replicaCount": 3}}}),
    "escape-kps-fullname": lambda d: d.update(observability={"extraValues": {"fullnameOverride": "prom"}}),
    "escape-kps-retention": lambda d: d.update(observability={"extraValues": {"prometheus": {"prometheusSpec": {"retention": "90d"}}}}),
    "escape-grafana-admin": lambda d: d.update(observability={"extraValues": {"grafana": {"admin": {"existingSecret": "x"}}}}),
    "escape-device-plugin-config": lambda d: d.update(gpuOperator={"extraValues": {"devicePlugin": {"config": {"name": "mine"}}}}),
    "escape-mig-strategy": lambda d: d.update(gpuOperator={"extraValues": {"mig": {"strategy": "single"}}}),
    "duplicate-pool": lambda d: d["gpuPools"].append(dict(p0(d))),
    "consolidate-after-2d": lambda d: p0(d).update(disruption={"consolidateAfter": "2d"}),
    "expire-after-weeks": lambda d: p0(d).update(disruption={"expireAfter": "4w"}),
    "ami-with-family-prefix": lambda d: d.update(karpenter={"amiVersions": {"al2023": "al2023@latest"}}),
    "certificate-other-region": lambda d: d.update(ingress={"certificateArn": ACM_WEST}),
    "pool-zone-other-region": lambda d: p0(d).update(zones=["us-west-2a"]),
    "zero-memory": lambda d: m0(d)["resources"].update(memory="0"),
    "escape-karpenter-node-overlay-gate": lambda d: d.update(
        karpenter={"extraValues": {"settings": {"featureGates": {"nodeOverlay": False}}}}
    ),
    "escape-kps-monitor-selection": lambda d: d.update(
        observability={"extraValues": {"prometheus": {"prometheusSpec": {"podMonitorSelectorNilUsesHelmValues": True}}}}
    ),
    "escape-kps-service-port": lambda d: d.update(observability={"extraValues": {"prometheus": {"service": {"port": 9091}}}}),
    "escape-karpenter-irsa-annotation": lambda d: d.update(
        karpenter={"extraValues": {"serviceAccount": {"annotations": {"eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:role/x"}}}}
    ),
    "pool-zone-id": lambda d: p0(d).update(zones=["use1-az1"]),
    "single-private-subnet-existing": lambda d: d.update(network={**EXISTING_VPC, "privateSubnetIds": ["subnet-0a1b2c3d4e5f60711"]}),
    # fast scale-up: weights from S3, the image cache, warm headroom, the scale-up budget
    "s3-with-pt-load-format": lambda d: m0(d).update(weights={"source": "s3"}, extraArgs=["--load-format", "pt"]),
    "s3-with-loader-config": lambda d: m0(d).update(weights={"source": "s3"}, extraArgs=['--model-loader-extra-config={"concurrency": 4}']),
    "weights-source-typo": lambda d: m0(d).update(weights={"source": "S3"}),
    # vLLM reads a long flag's underscores as dashes: the other spelling is the same flag
    "managed-flag-underscored": lambda d: m0(d).update(extraArgs=["--max_model_len=4096"]),
    "s3-with-underscored-load-format": lambda d: m0(d).update(weights={"source": "s3"}, extraArgs=["--load_format=pt"]),
    "headroom-above-limit": lambda d: p0(d).update(headroom=5),
    "headroom-without-models": lambda d: d["gpuPools"].append(
        {"name": "gpu-spare", "instanceTypes": ["g6.xlarge", "g6.2xlarge", "g6.4xlarge"], "gpuLimit": 2, "headroom": 1}
    ),
    "headroom-not-a-multiple": lambda d: (
        p0(d).update(instanceTypes=["g6.12xlarge"], capacityTypes=["on-demand"], gpuLimit=16, headroom=3),
        m0(d).update(tensorParallelSize=2),
    ),
    "cache-without-docker-hub-user": lambda d: d.update(imageCache={"enabled": True}),
    "cache-unsupported-registry": lambda d: (
        d.update(imageCache={"enabled": True}),
        m0(d).update(image={"repository": "ghcr.io/example/vllm", "tag": "v0.33.0"}),
    ),
    "s3-without-gateway-endpoint": lambda d: (m0(d).update(weights={"source": "s3"}), d["network"].update(s3GatewayEndpoint=False)),
    # scale to zero: bounds, windows, and a hold through a cold start inside the ALB's idle timeout
    "idle-after-shorter-than-the-budget": lambda d: (
        d.update(ingress={"idleTimeoutSeconds": 900}),
        m0(d).update(replicas={"min": 0, "max": 3}, autoscaling={"idleAfter": "2m"}),
    ),
    "alb-idle-timeout-below-a-cold-start": lambda d: (
        d.update(ingress={"domain": "llm.dev.corp.internal", "idleTimeoutSeconds": 300}),
        m0(d).update(replicas={"min": 0, "max": 3}),
    ),
    "alb-idle-timeout-below-a-pessimistic-cold-start": lambda d: (
        d.update(ingress={"idleTimeoutSeconds": 700}),
        m0(d).update(replicas={"min": 0, "max": 3}),
    ),
    "schedule-above-max": lambda d: m0(d).update(
        autoscaling={"schedules": [{"start": "0 8 * * 1-5", "end": "0 18 * * 1-5", "replicas": 5}]}
    ),
    "overlapping-schedules": lambda d: m0(d).update(
        autoscaling={
            "schedules": [
                {"start": "0 8 * * 1-5", "end": "0 18 * * 1-5", "replicas": 2},
                {"start": "0 17 * * 1-5", "end": "0 20 * * 1-5", "replicas": 3},
            ]
        }
    ),
    "schedule-bad-cron-and-zone": lambda d: m0(d).update(
        autoscaling={"schedules": [{"timezone": "Mars/Olympus", "start": "0 8 * * MONDAY", "end": "0 18 * *", "replicas": 2}]}
    ),
    "schedule-on-day-seven": lambda d: m0(d).update(
        autoscaling={"schedules": [{"start": "0 8 * * 7", "end": "0 18 * * 7", "replicas": 2}]}
    ),
    "schedule-zero-length": lambda d: m0(d).update(
        autoscaling={"schedules": [{"start": "0 8 * * 1-5", "end": "0  8 * * 1-5", "replicas": 2}]}
    ),
    # disruption controls are rules
    "underutilized-consolidation-on-a-serving-pool": lambda d: p0(d).update(disruption={"consolidationPolicy": "WhenEmptyOrUnderutilized"}),
    "karpenter-pdb-and-priority-removed": lambda d: d.update(
        karpenter={"extraValues": {"priorityClassName": "", "podDisruptionBudget": None}}
    ),
    "gp3-throughput-without-iops": lambda d: d.update(karpenter={"volumeThroughputMibps": 1000, "volumeIops": 3000}),
    "scale-down-window-below-budget": lambda d: m0(d).update(
        autoscaling={"scaleDown": {"stabilizationWindowSeconds": 60, "pods": 1, "periodSeconds": 60}}
    ),
}

EXPECTED: dict[str, list[str]] = {
    "s3-with-pt-load-format": [
        "models[llama-3-1-8b].extraArgs[0]: --load-format pt cannot load an s3:// model; vLLM accepts only runai_streamer or runai_streamer_sharded there and would fail at start. Fix: remove the flag (the platform sets runai_streamer), or set weights.source: huggingface"
    ],
    "s3-with-loader-config": [
        "models[llama-3-1-8b].extraArgs[0]: --model-loader-extra-config is set by the platform when weights stream from S3 (the streamer's concurrency and memory limit, from the replica's CPU and memory). Fix: remove it"
    ],
    "managed-flag-underscored": [
        "models[llama-3-1-8b].extraArgs: --max_model_len may not be in extraArgs: set maxModelLen. Fix: remove --max_model_len"
    ],
    "s3-with-underscored-load-format": [
        "models[llama-3-1-8b].extraArgs[0]: --load-format pt cannot load an s3:// model; vLLM accepts only runai_streamer or runai_streamer_sharded there and would fail at start. Fix: remove the flag (the platform sets runai_streamer), or set weights.source: huggingface"
    ],
    "weights-source-typo": ["models[llama-3-1-8b].weights.source: must be one of 's3' or 'huggingface'. Fix: use one of those values"],
    "headroom-above-limit": [
        "gpuPools[gpu-l4-a10g].headroom: headroom (5 GPUs) is more than the pool's gpuLimit (4); Karpenter could never launch it, let alone the replicas. Fix: lower headroom or raise gpuLimit",
    ],
    "headroom-without-models": [
        "gpuPools[gpu-spare].headroom: headroom 1 on a pool no model uses; placeholders would hold GPUs for nothing. Fix: remove headroom, or put a model on the pool"
    ],
    "headroom-not-a-multiple": [
        "gpuPools[gpu-l4-a10g].headroom: headroom 3 is not a multiple of 2, the GPUs of the pool's largest replica (tensorParallelSize 2); a placeholder holds one replica's GPUs on one node. Fix: set headroom to 2 or 4"
    ],
    "cache-without-docker-hub-user": [
        "imageCache.dockerHubUsername: is not set, but the image of llama-3-1-8b comes from Docker Hub, which ECR's pull-through cache only imports from with a Docker Hub user and access token. Fix: set imageCache.dockerHubUsername and the dockerHubAccessToken secret, or set imageCache.enabled: false"
    ],
    "cache-unsupported-registry": [
        "models[llama-3-1-8b].image.repository: imageCache is on but ghcr.io is not a registry the pull-through cache fronts (docker.io, quay.io, public.ecr.aws, registry.k8s.io); this image is pulled from ghcr.io directly. Fix: nothing, if that is intended (e.g. your own ECR); or mirror it to a supported registry"
    ],
    "s3-without-gateway-endpoint": [
        "network.s3GatewayEndpoint: models stream weights from S3 but the VPC has no S3 gateway endpoint: every replica start pulls its checkpoint through the NAT gateway, slower and billed per GB. Fix: remove s3GatewayEndpoint: false"
    ],
    "idle-after-shorter-than-the-budget": [
        "models[llama-3-1-8b].autoscaling.idleAfter: 2m is shorter than the model's scale-up budget on a new node (622 s): it would go back to zero sooner than a cold start takes. Fix: set idleAfter to at least 11m",
    ],
    "alb-idle-timeout-below-a-cold-start": [
        "ingress.idleTimeoutSeconds: 300 s caps how long llama-3-1-8b's gateway holds a request at 240 s (a hold, a 30 s pick and 30 s of margin inside the ALB's idle timeout), short of its expected cold start (622 s): llama-3-1-8b scales to zero, and the first request after a quiet spell would get a 503 before a replica can serve it. Fix: raise it to at least 682 (849 covers the pessimistic cold start), or keep replicas.min >= 1",
    ],
    "alb-idle-timeout-below-a-pessimistic-cold-start": [
        "ingress.idleTimeoutSeconds: 700 s caps how long llama-3-1-8b's gateway holds a request at 640 s (a hold, a 30 s pick and 30 s of margin inside the ALB's idle timeout), short of its pessimistic cold start (789 s): during a slow cold start the first callers get 503 before a new replica can serve them. Fix: raise it to at least 849, or accept the earlier 503s",
    ],
    "schedule-above-max": [
        "models[llama-3-1-8b].autoscaling.schedules[0].replicas: 5 is above replicas.max (3); the HPA would stop at max. Fix: lower it or raise max",
    ],
    "overlapping-schedules": [
        "models[llama-3-1-8b].autoscaling.schedules[1]: overlaps schedules[0]: while both are open the larger floor applies (the HPA takes the largest trigger). Fix: nothing, if nested floors are meant; else make the windows disjoint",
    ],
    "schedule-bad-cron-and-zone": [
        "models[llama-3-1-8b].autoscaling.schedules[0].timezone: 'Mars/Olympus' is not an IANA time zone. Fix: write e.g. UTC, Europe/Berlin or America/New_York",
        "models[llama-3-1-8b].autoscaling.schedules[0].start: '0 8 * * MONDAY' is not a cron expression KEDA takes: day of week 'MONDAY': 'MONDAY' is neither a number (0-6) nor a name (sun-sat, any case). Fix: write five fields, e.g. `0 8 * * mon-fri`",
        "models[llama-3-1-8b].autoscaling.schedules[0].end: '0 18 * *' is not a cron expression KEDA takes: '0 18 * *' has 4 fields; cron takes five: minute hour day-of-month month day-of-week. Fix: write five fields, e.g. `0 8 * * mon-fri`",
    ],
    "schedule-zero-length": [
        "models[llama-3-1-8b].autoscaling.schedules[0]: start and end are the same; KEDA rejects such a window. Fix: give the window a different end",
    ],
    "schedule-on-day-seven": [
        "models[llama-3-1-8b].autoscaling.schedules[0].start: '0 8 * * 7' is not a cron expression KEDA takes: day of week '7' is outside 0-6. Fix: write five fields, e.g. `0 8 * * mon-fri`",
        "models[llama-3-1-8b].autoscaling.schedules[0].end: '0 18 * * 7' is not a cron expression KEDA takes: day of week '7' is outside 0-6. Fix: write five fields, e.g. `0 8 * * mon-fri`",
    ],
    "underutilized-consolidation-on-a-serving-pool": [
        "gpuPools[gpu-l4-a10g].disruption.consolidationPolicy: WhenEmptyOrUnderutilized lets Karpenter evict replicas of llama-3-1-8b to repack nodes: each eviction reloads a model and cuts its streams. Fix: use WhenEmpty, or set disruption.allowUnderutilizedConsolidation: true to accept it",
    ],
    "karpenter-pdb-and-priority-removed": [
        "karpenter.extraValues.podDisruptionBudget: is pinned by the platform: a drain of the system nodes must never take every Karpenter controller at once. Fix: remove the override",
        "karpenter.extraValues.priorityClassName: is pinned by the platform: Karpenter runs as system-cluster-critical, so nothing preempts the controller that brings capacity back. Fix: remove the override",
    ],
    "gp3-throughput-without-iops": [
        "karpenter: volumeThroughputMibps 1000 needs at least 4000 volumeIops (gp3 allows 0.25 MiB/s per IOPS); EC2 would refuse to launch the nodes. Fix: raise volumeIops to 4000 or lower volumeThroughputMibps"
    ],
    "scale-down-window-below-budget": [
        "models[llama-3-1-8b].autoscaling.scaleDown.stabilizationWindowSeconds: 60 s is shorter than the model's scale-up budget on a new node (622 s): a replica removed after a burst takes longer to come back than the calm that removed it. Fix: raise it to at least 622"
    ],
    "region-is-a-zone": [
        "region: 'us-east-1a' is an availability zone, not a region. Fix: set aws:region to us-east-1",
    ],
    "region-free-text": [
        "region: 'virginia' is not an AWS region. Fix: set aws:region to a region such as us-east-1",
    ],
    "image-repository-with-tag": [
        "models[llama-3-1-8b].image.repository: repository 'vllm/vllm-openai:latest' carries a tag or digest; the image reference would become 'vllm/vllm-openai:latest:<tag>', which no registry resolves. Fix: put the tag in image.tag and the digest in image.digest, and only the repository here",
    ],
    "image-repository-with-digest": [
        "models[llama-3-1-8b].image.repository: repository 'vllm/vllm-openai@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' carries a tag or digest; the image reference would become 'vllm/vllm-openai@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa:<tag>', which no registry resolves. Fix: put the tag in image.tag and the digest in image.digest, and only the repository here",
    ],
    "image-repository-not-a-reference": [
        "models[llama-3-1-8b].image.repository: 'Vllm Images/openai' is not an image repository. Fix: write e.g. vllm/vllm-openai or <registry>/<path>",
    ],
    "vllm-too-old": [
        "models[llama-3-1-8b].image.tag: vLLM v0.8.5 is older than v0.33.0, the oldest release with every flag and metric the platform uses (--shutdown-timeout, --sse-keep-alive-interval, vllm:kv_cache_usage_perc): the pods would not start, or autoscaling would read metrics that are never emitted. Fix: use v0.33.0 or newer (the pinned default is v0.33.0)",
    ],
    "vllm-not-a-release": [
        "models[llama-3-1-8b].image: tag 'nightly-2026-11-01' of the upstream vLLM image is not a release (vX.Y.Z), so it cannot be checked against the flags and metrics the platform uses. Fix: pin a release tag such as v0.33.0",
    ],
    "subnet-listed-twice": [
        "network.privateSubnetIds: subnet-0a1b2c3d4e5f60711 is listed more than once in privateSubnetIds; the rule of subnets in two zones counts distinct subnets. Fix: list each subnet once",
    ],
    "subnet-public-and-private": [
        "network: subnet-0a1b2c3d4e5f60711 is listed as both private and public; nodes and internet-facing load balancers must not share subnets. Fix: list each subnet under one of privateSubnetIds or publicSubnetIds",
    ],
    "internet-facing-without-public-subnets": [
        "network.publicSubnetIds: is empty, but ingress.scheme is internet-facing: the load balancer controller needs public subnets (tag kubernetes.io/role/elb=1) for an internet-facing ALB and would leave the Ingress without an address. Fix: list the VPC's public subnets, or use ingress.scheme internal",
    ],
    "load-balancer-subnets-outside-the-vpc": [
        "network.loadBalancerSubnetCidrs: lists 10.99.0.0/24, outside the VPC's 10.60.0.0/16; every subnet is inside one of the VPC's CIDR blocks, so the NetworkPolicies would admit addresses no subnet of it has. Fix: list the subnets' CIDRs, each inside vpcCidr or one of secondaryCidrs",
    ],
    "interface-endpoints-outside-the-vpc": [
        "network.interfaceEndpointCidrs: lists 100.65.0.0/24, outside the VPC's 10.60.0.0/16, 100.64.0.0/16; every subnet is inside one of the VPC's CIDR blocks, so the NetworkPolicies would admit addresses no subnet of it has. Fix: list the subnets' CIDRs, each inside vpcCidr or one of secondaryCidrs",
    ],
    "internal-model-without-callers": [
        "models[llama-3-1-8b].clientNamespaces: is empty and the model is not exposed, so its NetworkPolicy admits no caller: only Prometheus reaches it. Fix: list the namespaces of the pods that call it, or set expose: true",
    ],
    "load-balancer-subnets-not-named": [
        "network.loadBalancerSubnetCidrs: is empty, so vLLM's port admits the load balancer from the whole VPC: any host or pod in it reaches /metrics and every route vLLM leaves unauthenticated. Fix: list the CIDRs of the subnets the ALB uses (private subnets for the internal scheme)",
    ],
    "scale-down-without-a-limit": [
        "models[llama-3-1-8b].autoscaling.scaleDown: neither percent nor pods is set, so the HPA would get no policy for this direction and move without any step limit. Fix: set pods (e.g. 1 for one replica per period) or percent",
    ],
    "scale-up-without-a-limit": [
        "models[llama-3-1-8b].autoscaling.scaleUp: neither percent nor pods is set, so the HPA would get no policy for this direction and move without any step limit. Fix: set pods (e.g. 1 for one replica per period) or percent",
    ],
    "hf-token-pasted-as-repository": [
        "models[llama-3-1-8b].huggingFaceId: holds what looks like a Hugging Face token; the stack file is plain text that anyone who can read the repository can read, and the value would reach the cluster in plain objects. "
        "Fix: move it to the hfToken secret: run `pulumi config set --secret hfToken <value>`, and delete it here (revoke it if the file was ever committed)",
    ],
    "aws-key-pasted-as-cluster-name": [
        "cluster.name: holds what looks like an AWS access key id; the stack file is plain text that anyone who can read the repository can read, and the value would reach the cluster in plain objects. Fix: delete it here; `pulumi up` uses the AWS "
        "credentials of the shell or CI runner it runs in, from a profile or an assumed role (revoke it if the file was ever committed)",
    ],
    "openai-key-pasted-as-revision": [
        "models[llama-3-1-8b].revision: holds what looks like an API key; the stack file is plain text that anyone who can read the repository can read, and the value would reach the cluster in plain objects. Fix: if it is a model endpoint's key, move "
        "it to the apiKeys secret: run `pulumi config set --secret --path 'apiKeys.<model>' <key>`, and delete it here (revoke it if the file was ever committed)",
    ],
    "aws-secret-pasted-as-domain": [
        "ingress.domain: holds what looks like an AWS secret access key; the stack file is plain text that anyone who can "
        "read the repository can read, and the value would reach the cluster in plain objects. Fix: delete it here; "
        "`pulumi up` uses the AWS credentials of the shell or CI runner it runs in, from a profile or an assumed role "
        "(revoke it if the file was ever committed)",
    ],
    "escape-lbc-vpc-id": [
        "ingress.extraValues.vpcId: is derived by the platform, and other resources rely on the value it sets (an override would point them at something that does not exist). Fix: remove the override and set network (the VPC the stack creates or network.vpcId) instead",
    ],
    "escape-lbc-cluster-name": [
        "ingress.extraValues.clusterName: is derived by the platform, and other resources rely on the value it sets (an override would point them at something that does not exist). Fix: remove the override and set cluster.name instead",
    ],
    "escape-lbc-region": [
        "ingress.extraValues.region: is derived by the platform, and other resources rely on the value it sets (an override would point them at something that does not exist). Fix: remove the override and set aws:region instead",
    ],
    "escape-lbc-service-account": [
        "ingress.extraValues.serviceAccount.name: is derived by the platform, and other resources rely on the value it sets (an override would point them at something that does not exist). Fix: remove the override (its Pod Identity association names this service account)",
    ],
    "escape-karpenter-queue": [
        "karpenter.extraValues.settings.interruptionQueue: is derived by the platform, and other resources rely on the value it sets (an override would point them at something that does not exist). Fix: remove the override (the stack creates the queue and names it after the cluster)",
    ],
    "escape-karpenter-cluster-name": [
        "karpenter.extraValues.settings.clusterName: is derived by the platform, and other resources rely on the value it sets (an override would point them at something that does not exist). Fix: remove the override and set cluster.name instead",
    ],
    "escape-karpenter-replicas": [
        "karpenter.extraValues.replicas: is derived by the platform, and other resources rely on the value it sets (an override would point them at something that does not exist). Fix: remove the override and set karpenter.replicas instead",
    ],
    "escape-karpenter-node-selector": [
        "karpenter.extraValues.nodeSelector: is derived by the platform, and other resources rely on the value it sets (an override would point them at something that does not exist). Fix: remove the override (Karpenter runs on the system nodes, never on the nodes it manages)",
    ],
    "escape-keda-replicas": [
        "keda.extraValues.operator.replicaCount: is derived by the platform, and other resources rely on the value it sets (an override would point them at something that does not exist). Fix: remove the override and set keda.operatorReplicas instead",
    ],
    "escape-kps-fullname": [
        "observability.extraValues.fullnameOverride: is derived by the platform, and other resources rely on the value it sets (an override would point them at something that does not exist). Fix: remove the override (the Prometheus address KEDA and the outputs use is derived from it)",
    ],
    "escape-kps-retention": [
        "observability.extraValues.prometheus.prometheusSpec.retention: is derived by the platform, and other resources rely on the value it sets (an override would point them at something that does not exist). Fix: remove the override and set observability.retention instead",
    ],
    "escape-grafana-admin": [
        "observability.extraValues.grafana.admin: is derived by the platform, and other resources rely on the value it sets (an override would point them at something that does not exist). Fix: remove the override and set the grafanaAdminPassword secret instead",
    ],
    "escape-device-plugin-config": [
        "gpuOperator.extraValues.devicePlugin.config: is derived by the platform, and other resources rely on the value it sets (an override would point them at something that does not exist). Fix: remove the override and set gpuPools[].sharing (the device-plugin configs are rendered from the pools) instead",
    ],
    "escape-mig-strategy": [
        "gpuOperator.extraValues.mig.strategy: is derived by the platform, and other resources rely on the value it sets (an override would point them at something that does not exist). Fix: remove the override (MIG slices are requested as nvidia.com/mig-<profile> (mixed strategy))",
    ],
    "duplicate-pool": [
        "gpuPools[1].name: 'gpu-l4-a10g' is already used by gpuPools[0]; names must be unique, because each becomes a NodePool, and models pick their pool by name (the second would replace the first). Fix: rename one",
    ],
    "consolidate-after-2d": [
        "gpuPools[gpu-l4-a10g].disruption.consolidateAfter: '2d' is not a duration Karpenter accepts (pattern <n>s|m|h, e.g. 90s, 10m, 24h). Fix: write 48h instead of 2d",
    ],
    "expire-after-weeks": [
        "gpuPools[gpu-l4-a10g].disruption.expireAfter: '4w' is not a duration Karpenter accepts (pattern <n>s|m|h, e.g. 90s, 10m, 24h). Fix: write hours, minutes or seconds, e.g. 24h, 90m or 45s",
    ],
    "ami-with-family-prefix": [
        "karpenter.amiVersions.al2023: al2023@latest must be pinned to a release; the latest alias (or a malformed version) drifts every GPU node on each AMI release and replaces them all at once. Fix: pin al2023@vYYYYMMDD, e.g. v20260930",
    ],
    "certificate-other-region": [
        "ingress.certificateArn: is a certificate of us-west-2, but the stack (aws:region) is in us-east-1; an ALB can only use a certificate of its own region. Fix: request or import the certificate in us-east-1",
    ],
    "pool-zone-other-region": [
        "gpuPools[gpu-l4-a10g].zones[0]: 'us-west-2a' is not a zone of us-east-1 (aws:region); no node of the pool could launch there. Fix: use a zone of us-east-1",
    ],
    "zero-memory": [
        "models[llama-3-1-8b].resources.memory: '0' is not a positive quantity; vLLM needs CPU and memory to start. Fix: request e.g. cpu 4, memory 32Gi",
    ],
    "single-private-subnet-existing": [
        "network.privateSubnetIds: lists one subnet; EKS places the control plane's network interfaces in at least two zones and refuses a cluster with fewer. Fix: list private subnets of at least two zones",
    ],
    "escape-karpenter-node-overlay-gate": [
        "karpenter.extraValues.settings.featureGates.nodeOverlay: is derived by the platform, and other resources rely on the "
        "value it sets (an override would point them at something that does not exist). Fix: remove the override (sharing "
        "pools need the NodeOverlays it enables)",
    ],
    "escape-kps-monitor-selection": [
        "observability.extraValues.prometheus.prometheusSpec.podMonitorSelectorNilUsesHelmValues: is derived by the platform, "
        "and other resources rely on the value it sets (an override would point them at something that does not exist). "
        "Fix: remove the override (the platform's monitors and rules live outside the chart's release and are selected only "
        "this way)",
    ],
    "escape-kps-service-port": [
        "observability.extraValues.prometheus.service.port: is derived by the platform, and other resources rely on the value "
        "it sets (an override would point them at something that does not exist). Fix: remove the override (the Prometheus "
        "address KEDA and the outputs use includes it)",
    ],
    "escape-karpenter-irsa-annotation": [
        "karpenter.extraValues.serviceAccount.annotations.eks.amazonaws.com/role-arn: is derived by the platform, and other "
        "resources rely on the value it sets (an override would point them at something that does not exist). Fix: remove "
        "the override and set karpenter.identity instead",
    ],
    "pool-zone-id": [
        "gpuPools[gpu-l4-a10g].zones[0]: 'use1-az1' is a zone id; a pool's zones are matched against node zone names. Fix: "
        "write the zone's name (e.g. us-east-1a), or name zones by id in network.availabilityZones and leave the pool's zones "
        "unset",
    ],
}


# CASES and EXPECTED run in tests/config/checks/test_bad_inputs.py with the earlier catalog, one table.


def test_no_credential_is_printed_back() -> None:
    for case in (
        "hf-token-pasted-as-repository",
        "aws-key-pasted-as-cluster-name",
        "openai-key-pasted-as-revision",
        "aws-secret-pasted-as-domain",
    ):
        text = " ".join(new_problems_after(CASES[case]))
        assert HIDDEN in text or "holds what looks like" in text
        for secret in ("hf_AbCd", "AKIAIOSFODNN7", "sk-proj-", "wJalrXUtnFEMI"):
            assert secret not in text


# -- the file itself, namespaces and secrets: through the render, as a user runs it ----------------

FILE_CASES: dict[str, tuple[str, list[str]]] = {
    "merge-conflict-markers": (
        "config:\n  aws:region: us-east-1\n<<<<<<< HEAD\n  llm-platform:environment: dev\n=======\n  llm-platform:environment: prod\n>>>>>>> b\n",
        ["  - Pulumi.x.yaml:3: has merge-conflict markers (<<<<<<<, =======, >>>>>>>). Fix: resolve the conflict, keep one side"],
    ),
    "tab-indentation": (
        "config:\n  aws:region: us-east-1\n\tllm-platform:environment: dev\n",
        ["  - Pulumi.x.yaml:3: is not valid YAML (found character '\\t' that cannot start any token). Fix: indent with spaces, not tabs"],
    ),
    "no-config-section": (
        "aws:region: us-east-1\nllm-platform:environment: dev\n",
        [
            "  - Pulumi.x.yaml: has no `config:` section (aws:region, llm-platform:environment sit at the top level); Pulumi reads "
            "stack settings only under it. Fix: indent every key under `config:`"
        ],
    ),
    "empty-file": ("", ["  - Pulumi.x.yaml: is empty. Fix: add a `config:` section (see the README)"]),
    "config-not-a-mapping": (
        "config: [a, b]\n",
        ["  - Pulumi.x.yaml: config: is not a mapping. Fix: list `<namespace>:<key>: value` lines under it"],
    ),
    "unclosed-bracket": (
        "config:\n  aws:region: us-east-1\n  llm-platform:tags: {a: b\n",
        None,  # any YAML error: checked by its shape below
    ),
}


def _render(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text(text)
    out = tmp_path / "build"
    code = render.main(["x", "--file", str(path), "--out", str(out)])
    assert not out.exists()
    err = capsys.readouterr().err
    assert "Traceback" not in err
    errors, in_errors = [], False
    for line in err.splitlines():
        if " error" in line and line.rstrip().endswith(":") and not line.startswith("  - "):
            in_errors = True
        elif "warning" in line and line.rstrip().endswith(":") and not line.startswith("  - "):
            in_errors = False
        elif in_errors and line.startswith("  - "):
            errors.append(line)
    return code, errors


@pytest.mark.parametrize("case", sorted(FILE_CASES))
def test_a_broken_file_exits_2_with_where_and_why(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text, expected = FILE_CASES[case]
    code, lines = _render(tmp_path, text, capsys)
    assert code == 2
    if expected is None:
        assert len(lines) == 1
        assert lines[0].startswith("  - Pulumi.x.yaml:3: is not valid YAML (")
    else:
        assert lines == expected


def _shipped_with(raw_changes: dict[str, Any]) -> str:
    document = yaml.safe_load((ROOT / "tests" / "fixtures" / "stacks" / "minimal-dev.yaml").read_text())
    document["config"].update(raw_changes)
    return yaml.safe_dump(document)


NAMESPACE_CASES: dict[str, tuple[dict[str, Any], list[str]]] = {
    "misspelled-project-namespace": (
        {"llm_platform:observability": {"retention": "30d"}},
        [
            "  - llm_platform:observability: is in namespace 'llm_platform', which nothing reads (did you mean "
            "'llm-platform:observability'?); the setting would be ignored silently. Fix: use llm-platform:<key> for this "
            "program's settings"
        ],
    ),
    "unknown-namespace": (
        {"acme:owner": "team-a"},
        [
            "  - acme:owner: is in namespace 'acme', which nothing reads; the setting would be ignored silently. "
            "Fix: use llm-platform:<key> for this program's settings"
        ],
    ),
    "api-keys-half-plain": (
        {"llm-platform:apiKeys": {"llama-3-1-8b": {"secure": "v1:AAAA"}, "other": "plain-key"}},
        [
            "  - apiKeys.other: is plain text beside encrypted values, readable by anyone with the repository. Fix: run "
            "`pulumi config set --secret --path 'apiKeys.other' <value>`"
        ],
    ),
}


@pytest.mark.parametrize("case", sorted(NAMESPACE_CASES))
def test_namespaces_and_half_plain_secrets(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    changes, expected = NAMESPACE_CASES[case]
    code, lines = _render(tmp_path, _shipped_with(changes), capsys)
    assert code == 2
    assert lines == expected


def test_known_provider_namespaces_are_accepted() -> None:
    inp = fixture_input(DEV, overrides={"aws:profile": "ops", "kubernetes:context": "x", "pulumi:disable-default-providers": "[]"})
    _, _, problems = stack_file.split(inp.config, lambda key: key in inp.secret_keys)
    assert problems == []  # the namespace check runs here, on every run: provider namespaces pass it
    _, _, problems = stack_file.split({**inp.config, "acme:owner": "x"}, lambda key: key in inp.secret_keys)
    assert [p.path for p in problems] == ["acme:owner"]


# -- valid variants: no false positives ---------------------------------------------------------------

VALID: dict[str, Callable[[dict[str, Any]], object]] = {
    "existing-vpc-with-public-subnets": lambda d: d.update(
        network={**EXISTING_VPC, "publicSubnetIds": ["subnet-0a1b2c3d4e5f60721", "subnet-0a1b2c3d4e5f60722"]}
    ),
    "bottlerocket-default": lambda d: d.update(karpenter={"defaultAmiFamily": "bottlerocket"}),
    "irsa": lambda d: d.update(karpenter={"identity": "irsa"}),
    "instance-families": lambda d: p0(d).update(instanceTypes=None, instanceFamilies=["g6", "g5"], gpuCounts=[1]),
    "awq-model": lambda d: m0(d).update(quantization="awq"),
    "fp8-kv-cache": lambda d: m0(d).update(kvCacheDtype="fp8"),
    "own-registry-image": lambda d: m0(d).update(
        image={"repository": "123456789012.dkr.ecr.us-east-1.amazonaws.com/vllm/vllm-openai", "tag": "v0.33.0"}
    ),
    "newer-vllm": lambda d: m0(d).update(image={"tag": "v0.34.1"}),
    "no-models": lambda d: d.update(models=[]),
    "zone-ids": lambda d: d["network"].update(availabilityZones=["use1-az1", "use1-az4"]),
    "extra-values-still-tune": lambda d: d.update(karpenter={"extraValues": {"logLevel": "debug"}}),
    "expire-never": lambda d: p0(d).update(disruption={"expireAfter": "Never"}),
    "karpenter-other-annotations": lambda d: d.update(karpenter={"extraValues": {"serviceAccount": {"annotations": {"team": "ml"}}}}),
    "lbc-replica-count": lambda d: d.update(ingress={"extraValues": {"replicaCount": 3}}),
}


def test_prod_with_no_models_renders() -> None:
    pools = [{k: v for k, v in p.items() if k != "headroom"} for p in stack_data(PROD)["gpuPools"]]
    result = harness.run(fixture_input("full-prod", overrides={"llm-platform:models": [], "llm-platform:gpuPools": pools}))
    assert result.outputs["models"] == {}
    assert result.outputs["weightsBucket"] is None  # no model streams from S3: no bucket
    assert result.outputs["imageRegistry"] is None  # no image to cache: no rule


def test_internet_facing_with_tls_and_keys_renders() -> None:
    result = harness.run(fixture_input("internet-facing-tls"))
    assert result.outputs["models"]["llama-3-1-8b"]["baseUrl"] == "https://llama-3-1-8b.llm.example.com/v1"


@pytest.mark.parametrize("case", sorted(VALID))
def test_valid_variants_render(case: str) -> None:
    data = stack_data(DEV)
    VALID[case](data)
    parse(data)  # no error
    overrides = {f"llm-platform:{k}": v for k, v in data.items() if k not in ("region", "environment")}
    result = harness.run(fixture_input(DEV, overrides=overrides))
    assert result.outputs["clusterName"] == data["cluster"]["name"]


def test_the_missing_docker_hub_credential_is_said_once_and_the_other_models_still_checked() -> None:
    """Two Docker Hub models and one from a registry the cache does not front: one credential error (not one per
    model), and the third model's warning still comes (the rule used to stop at the first error)."""

    def mutate(d: dict[str, Any]) -> None:
        d.update(imageCache={"enabled": True})
        first = m0(d)
        second = {**first, "name": "llama-copy", "huggingFaceId": first["huggingFaceId"]}
        third = {**first, "name": "llama-ghcr", "image": {"repository": "ghcr.io/acme/vllm", "tag": "v0.33.0"}}
        d["models"] += [second, third]

    found = new_problems_after(mutate, DEV)
    assert sum(p.startswith("imageCache.dockerHubUsername: is not set") for p in found) == 1
    assert any(p.startswith("models[llama-ghcr].image.repository: imageCache is on but ghcr.io") for p in found), found
