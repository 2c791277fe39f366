"""The stack outputs contract: what other teams may read through StackReference.

Keys, types and meanings are a contract: renaming or removing one breaks consumers. The
README table is generated from this list and a test compares it with what the program exports.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OutputSpec:
    """One exported stack output."""

    key: str
    type: str
    description: str
    secret: bool = False


OUTPUTS: tuple[OutputSpec, ...] = (
    OutputSpec("region", "string", "AWS region of the stack."),
    OutputSpec("clusterName", "string", "EKS cluster name."),
    OutputSpec("clusterEndpoint", "string", "HTTPS endpoint of the Kubernetes API server."),
    OutputSpec("kubeconfig", "string (JSON)", "Kubeconfig that authenticates with `aws eks get-token`.", secret=True),
    OutputSpec("oidcProviderArn", "string", "ARN of the cluster's IAM OIDC provider, for IRSA roles of other teams."),
    OutputSpec("vpcId", "string", "VPC of the cluster (created or existing)."),
    OutputSpec("privateSubnetIds", "list of string", "Private subnets of the cluster, one per AZ."),
    OutputSpec("karpenterNodeRoleArn", "string", "IAM role of Karpenter-launched GPU nodes."),
    OutputSpec("interruptionQueueName", "string", "SQS queue Karpenter reads spot interruptions and health events from."),
    OutputSpec("gpuPools", "list of string", "Names of the GPU NodePools."),
    OutputSpec("prometheusUrl", "string", "In-cluster Prometheus address (what KEDA queries); ClusterIP only."),
    OutputSpec("weightsBucket", "string or null", "S3 bucket the models that stream from S3 read their weights from (null: none does)."),
    OutputSpec(
        "imageRegistry", "string or null", "ECR registry host of the pull-through cache model images come through (null: cache off)."
    ),
    OutputSpec(
        "loadBalancerHostname",
        "string or null",
        "**Added:** DNS name of the models' ALB (one per stack: every exposed model's Ingress is in one group; null when "
        "no model is exposed). Point `*.<ingress.domain>` at it (a CNAME, or a Route 53 alias), or call "
        "`http(s)://<it>/<model>/v1` on a stack without a domain.",
    ),
    OutputSpec(
        "models",
        "map of model name to {namespace, service, url, host, servedModelName, baseUrl, weightsSource, scaleUpSeconds}",
        "Per model: its namespace, the Service in-cluster callers reach it through and its OpenAI-compatible base URL "
        "there (`url`). **Changed value:** both now name the model's gateway (the `<model>-proxy` Service, port 8081) "
        "instead of the vLLM Service on port 8000, which admits only the gateway, for every model, those at "
        "replicas.min 0 included (the gateway holds their requests while a replica starts). **Deprecated:** `host` is "
        "null for every model (it was the Host header the KEDA HTTP add-on's interceptor routed models at zero by; "
        "the add-on is gone); kept so consumers that read it do not break, to be removed in a later release. Then "
        "the `model` name clients send, the base URL through the ALB (`baseUrl`, null when the model is not "
        "exposed), where its weights come from (`s3` or `huggingface`), and its scale-up budget `{hit, miss, terms, "
        "engine}` in seconds from a growing queue to a serving replica (`hit`: a warm headroom node is free; `miss`: a "
        "node must launch; `terms`: signal, nodeLaunch, imagePull, weights, engineStart, probe, loadBalancer: the "
        "gateway's discovery of a new replica, no longer an ALB registration; **added:** `engine`, the engineStart "
        "term's parts: cacheCopy, boot, tensorParallel, kvProfiling, compile, cudaGraphs; `pessimistic`: the same "
        "`{hit, miss, terms, engine}` at the slow end of each term's sources, the budget for what must never be too short).",
    ),
)

# The fields of each entry of the `models` output.
MODEL_FIELDS: tuple[str, ...] = ("namespace", "service", "url", "host", "servedModelName", "baseUrl", "weightsSource", "scaleUpSeconds")


def keys() -> list[str]:
    return [o.key for o in OUTPUTS]
