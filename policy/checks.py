"""Preview-time policies for the LLM platform (Pulumi CrossGuard, Python).

Each check is a plain function of (ResourceValidationArgs, report_violation), so the tests call it
directly on resources captured by the recording mocks. `policy/__main__.py` bundles them into the
pack that `pulumi preview --policy-pack policy` runs.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Callable, Iterator
from typing import Any

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, ResourceValidationPolicy

REQUIRED_LOG_TYPES = ("api", "audit", "authenticator")
WORKLOADS = ("kubernetes:apps/v1:Deployment", "kubernetes:apps/v1:StatefulSet", "kubernetes:apps/v1:DaemonSet")
SECRET_ENV = re.compile(r"(HF_TOKEN|HUGGING_FACE_HUB_TOKEN|API_KEY|PASSWORD|SECRET)", re.IGNORECASE)
SECRET_FLAGS = ("--api-key", "--hf-token")


def _pod_spec(props: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = ((props.get("spec") or {}).get("template") or {}).get("spec") or {}
    return spec


def _containers(props: dict[str, Any]) -> Iterator[dict[str, Any]]:
    pod = _pod_spec(props)
    yield from pod.get("initContainers") or []
    yield from pod.get("containers") or []


def eks_endpoint_exposure(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """A public API endpoint needs a CIDR allow-list without 0.0.0.0/0, and the private endpoint on."""
    if args.resource_type != "eks:index:Cluster":
        return
    public = args.props.get("endpointPublicAccess", True)  # absent means the EKS default: public
    private = args.props.get("endpointPrivateAccess", False)
    cidrs = list(args.props.get("publicAccessCidrs") or [])
    if not public:
        return
    if not cidrs:
        report("The EKS API endpoint is public with no CIDR allow-list (EKS then allows 0.0.0.0/0).", None)
    for cidr in cidrs:
        if ipaddress.ip_network(cidr, strict=False).prefixlen == 0:
            report(f"The EKS API endpoint allows {cidr}: every address on the internet.", None)
    if not private:
        report("The EKS API endpoint is public but the private endpoint is off: nodes could not join.", None)


def eks_secrets_encryption(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Kubernetes Secrets are envelope-encrypted with a customer-managed KMS key."""
    if args.resource_type == "eks:index:Cluster" and not args.props.get("encryptionConfigKeyArn"):
        report("The EKS cluster does not encrypt Secrets with a KMS key (encryptionConfigKeyArn).", None)


def eks_control_plane_logs(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """The control plane logs api, audit and authenticator."""
    if args.resource_type != "eks:index:Cluster":
        return
    enabled = set(args.props.get("enabledClusterLogTypes") or [])
    missing = [t for t in REQUIRED_LOG_TYPES if t not in enabled]
    if missing:
        report(f"Control-plane log types missing: {', '.join(missing)}.", None)


def _imds_problems(options: dict[str, Any], tokens_key: str, hops_key: str) -> Iterator[str]:
    if options.get(tokens_key) != "required":
        yield "IMDSv2 is not required (httpTokens must be required)"
    hops = options.get(hops_key)
    if hops is None or int(hops) > 1:
        yield f"the IMDS hop limit is {hops} (must be 1, so pods cannot reach the node role)"


def imdsv2_on_node_paths(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Every way nodes are launched requires IMDSv2 with hop limit 1."""
    if args.resource_type == "aws:ec2/launchTemplate:LaunchTemplate":
        for problem in _imds_problems(args.props.get("metadataOptions") or {}, "httpTokens", "httpPutResponseHopLimit"):
            report(f"Launch template: {problem}.", None)
    if args.resource_type == "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass":
        options = (args.props.get("spec") or {}).get("metadataOptions")
        if options is not None:  # absent: the CRD default is required / hop limit 1
            for problem in _imds_problems(options, "httpTokens", "httpPutResponseHopLimit"):
                report(f"EC2NodeClass: {problem}.", None)


def pinned_images(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Container images carry a release tag or a digest, never `latest`."""
    if args.resource_type not in WORKLOADS:
        return
    for c in _containers(dict(args.props)):
        image = str(c.get("image", ""))
        name_part = image.split("@")[0].rsplit("/", 1)[-1]
        tag = name_part.split(":", 1)[1] if ":" in name_part else None
        if "@sha256:" not in image and (tag is None or tag == "latest"):
            report(f"Container {c.get('name')} uses an unpinned image {image!r}; pin a release tag or digest.", None)


def no_direct_load_balancer(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Model servers are reached through the ALB's /v1 routes only, never a LoadBalancer or NodePort Service."""
    if args.resource_type == "kubernetes:core/v1:Service":
        kind = (args.props.get("spec") or {}).get("type", "ClusterIP")
        if kind in ("LoadBalancer", "NodePort"):
            report(f"Service {args.name} is of type {kind}; vLLM's /metrics and control endpoints would be exposed.", None)


def requests_and_limits(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """CPU and memory requests and limits are set on every container."""
    if args.resource_type not in WORKLOADS:
        return
    for c in _containers(dict(args.props)):
        resources = c.get("resources") or {}
        for kind in ("requests", "limits"):
            missing = [r for r in ("cpu", "memory") if r not in (resources.get(kind) or {})]
            if missing:
                report(f"Container {c.get('name')} has no {kind} for {', '.join(missing)}.", None)


def secrets_only_from_secrets(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Tokens and keys reach containers from Secrets (a mounted file or secretKeyRef), never as literals."""
    if args.resource_type not in WORKLOADS:
        return
    for c in _containers(dict(args.props)):
        for env in c.get("env") or []:
            if SECRET_ENV.search(str(env.get("name", ""))) and "value" in env and not str(env.get("name", "")).endswith("_PATH"):
                report(f"Container {c.get('name')} sets {env['name']} as a literal; use a Secret.", None)
        for arg in [*(c.get("args") or []), *(c.get("command") or [])]:
            if str(arg).split("=", 1)[0] in SECRET_FLAGS:
                report(f"Container {c.get('name')} passes {arg.split('=', 1)[0]} on the command line; use a Secret.", None)


def _statements(document: Any) -> list[dict[str, Any]]:
    if isinstance(document, str):
        try:
            document = json.loads(document)
        except json.JSONDecodeError:
            return []
    statements = (document or {}).get("Statement") or []
    return [statements] if isinstance(statements, dict) else list(statements)


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


POD_IDENTITY_ACTIONS = {"sts:AssumeRole", "sts:TagSession"}


def iam_trust_scoped(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Nobody at large may assume a role: no `*` principal; Pod Identity with exactly AssumeRole and
    TagSession; a web identity (IRSA) only for one service account and audience."""
    if args.resource_type != "aws:iam/role:Role":
        return
    for s in _statements(args.props.get("assumeRolePolicy")):
        if s.get("Effect") != "Allow":
            continue
        principal = s.get("Principal")
        aws = principal.get("AWS") if isinstance(principal, dict) else None
        if principal == "*" or "*" in _listed(aws or []):
            report(f"Role {args.name} can be assumed by any principal ('*').", None)
            continue
        services = _listed(principal.get("Service", [])) if isinstance(principal, dict) else []
        if "pods.eks.amazonaws.com" in services and set(_listed(s.get("Action"))) != POD_IDENTITY_ACTIONS:
            report(f"Role {args.name}: EKS Pod Identity needs exactly sts:AssumeRole and sts:TagSession.", None)
        if isinstance(principal, dict) and principal.get("Federated"):
            keys = {k.rsplit(":", 1)[-1] for k in ((s.get("Condition") or {}).get("StringEquals") or {})}
            if not {"sub", "aud"} <= keys:
                report(f"Role {args.name}: a web-identity trust must pin the service account (sub) and audience (aud).", None)


def iam_no_wildcard_actions(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """No policy grants every action, or every action of a service."""
    if args.resource_type not in ("aws:iam/policy:Policy", "aws:iam/rolePolicy:RolePolicy"):
        return
    for s in _statements(args.props.get("policy")):
        if s.get("Effect") != "Allow":
            continue
        wild = [a for a in _listed(s.get("Action")) if a == "*" or str(a).endswith(":*")]
        if wild:
            report(f"Policy {args.name} allows {', '.join(map(str, wild))}: grant the actions the workload uses.", None)


BROAD_MANAGED_POLICY = re.compile(r":iam::aws:policy/(.*/)?(AdministratorAccess|PowerUserAccess|IAMFullAccess|[A-Za-z0-9]*FullAccess)$")


def iam_no_broad_managed_policies(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """No role gets an administrator or full-access AWS managed policy."""
    if args.resource_type != "aws:iam/rolePolicyAttachment:RolePolicyAttachment":
        return
    arn = str(args.props.get("policyArn") or "")
    if BROAD_MANAGED_POLICY.search(arn):
        report(f"Attachment {args.name} gives its role {arn.rsplit('/', 1)[-1]}.", None)


CHECKS: dict[str, tuple[str, Callable[[ResourceValidationArgs, ReportViolation], None]]] = {
    "eks-endpoint-exposure": ("The EKS API endpoint is private, or public only to an allow-list.", eks_endpoint_exposure),
    "eks-secrets-encryption": ("Kubernetes Secrets are encrypted with a KMS key.", eks_secrets_encryption),
    "eks-control-plane-logs": ("api, audit and authenticator logs are on.", eks_control_plane_logs),
    "imdsv2-on-node-paths": ("Nodes require IMDSv2 with hop limit 1.", imdsv2_on_node_paths),
    "pinned-images": ("Images are pinned by tag or digest, never latest.", pinned_images),
    "no-direct-load-balancer": ("No LoadBalancer or NodePort Service exposes a workload.", no_direct_load_balancer),
    "requests-and-limits": ("Containers set CPU and memory requests and limits.", requests_and_limits),
    "secrets-only-from-secrets": ("Tokens and API keys come from Secrets, not literals or args.", secrets_only_from_secrets),
    "iam-trust-scoped": ("Every role's trust is scoped: no '*', Pod Identity and IRSA as AWS documents them.", iam_trust_scoped),
    "iam-no-wildcard-actions": ("No IAM policy allows '*' or every action of a service.", iam_no_wildcard_actions),
    "iam-no-broad-managed-policies": (
        "No role gets AdministratorAccess, PowerUserAccess or a *FullAccess policy.",
        iam_no_broad_managed_policies,
    ),
}


def policies() -> list[ResourceValidationPolicy]:
    return [
        ResourceValidationPolicy(name=name, description=description, validate=check, enforcement_level=EnforcementLevel.MANDATORY)
        for name, (description, check) in CHECKS.items()
    ]
