"""Preview-time policies for the LLM platform (Pulumi CrossGuard, Python).

Each check is a plain function of (ResourceValidationArgs, report_violation), so the tests call it
directly on resources captured by the recording mocks. `policy/__main__.py` bundles them into the
pack that `pulumi preview --policy-pack policy` runs.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import json
import re
from collections.abc import Callable, Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)


def _conventions() -> Any:
    """The program's config/facts/conventions.py, loaded by path: the pack runs in an environment of its own
    (pulumi-policy only), and the conventions module needs nothing beyond the standard library."""
    spec = importlib.util.spec_from_file_location(
        "llm_platform_conventions", Path(__file__).resolve().parent.parent / "config" / "facts" / "conventions.py"
    )
    if spec is None or spec.loader is None:
        raise ImportError("config/facts/conventions.py not found beside the policy pack")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CONVENTIONS = _conventions()
REQUIRED_LOG_TYPES = ("api", "audit", "authenticator")
WORKLOADS = ("kubernetes:apps/v1:Deployment", "kubernetes:apps/v1:StatefulSet", "kubernetes:apps/v1:DaemonSet", "kubernetes:batch/v1:Job")
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


def eks_access_entries(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Access is granted by access entries (API mode), not the aws-auth ConfigMap nobody reviews."""
    if args.resource_type != "eks:index:Cluster":
        return
    mode = args.props.get("authenticationMode") or "CONFIG_MAP"  # absent means the EKS default
    if mode not in ("API", "API_AND_CONFIG_MAP"):
        report(f"The cluster authenticates through {mode}: grant access with access entries (authenticationMode API).", None)


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


_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
_SUFFIXES: dict[str, int | Fraction] = {**_BINARY, **_DECIMAL, "m": Fraction(1, 1000)}


def _quantity(value: Any) -> Fraction | str:
    """A Kubernetes quantity as a number (`12Gi` and `12288Mi` are one amount); unparsable text stays as it is."""
    text = str(value).strip()
    for suffix in sorted(_SUFFIXES, key=len, reverse=True):
        if text.endswith(suffix):
            number, scale = text[: -len(suffix)], _SUFFIXES[suffix]
            break
    else:
        number, scale = text, 1
    amount: Fraction
    try:
        amount = Fraction(number) * scale
    except ValueError:
        return text
    return amount


def requests_and_limits(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """CPU and memory requests and limits are set on every container; memory and every extended resource
    (nvidia.com/gpu, MIG slices) set on both sides request what they limit, so the scheduler and Karpenter
    pack what runs (a GPU set on one side only is defaulted to the other by Kubernetes)."""
    if args.resource_type not in WORKLOADS:
        return
    for c in _containers(dict(args.props)):
        resources = c.get("resources") or {}
        requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
        for kind, values in (("requests", requests), ("limits", limits)):
            missing = [r for r in ("cpu", "memory") if r not in values]
            if missing:
                report(f"Container {c.get('name')} has no {kind} for {', '.join(missing)}.", None)
        for name in sorted(k for k in {*requests, *limits} if k == "memory" or "/" in k):
            if name in requests and name in limits and _quantity(requests[name]) != _quantity(limits[name]):
                report(f"Container {c.get('name')} requests {requests.get(name)} {name} but limits {limits.get(name)}.", None)


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
        if "NotPrincipal" in s:
            report(f"Role {args.name} trusts everyone but a NotPrincipal list: name the principals.", None)
            continue
        principal = s.get("Principal")
        aws = principal.get("AWS") if isinstance(principal, dict) else None
        services = _listed(principal.get("Service", [])) if isinstance(principal, dict) else []
        if principal == "*" or "*" in _listed(aws or []) or "*" in services:
            report(f"Role {args.name} can be assumed by any principal ('*').", None)
            continue
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


def iam_role_rights_visible(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """A role's rights come from attachments and role policies, which the other checks read; never
    from the role's own inlinePolicies or managedPolicyArns, which would pass them unseen."""
    if args.resource_type != "aws:iam/role:Role":
        return
    for key in ("inlinePolicies", "managedPolicyArns"):
        if args.props.get(key):
            report(f"Role {args.name} sets {key}: grant rights with RolePolicy or RolePolicyAttachment resources.", None)


UPSTREAM_WILDCARD_WRITERS = ("alb-controller-policy",)
"""Policies the upstream projects publish with writes on `Resource: *`, by resource name: the load
balancer controller's iam_policy.json (tag-conditioned; compared with the upstream file in the tests)."""
READ_PREFIXES = ("Describe", "Get", "List")


def iam_no_wildcard_writes(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Write and permission-management actions name their resources; `*` only where the upstream policy does."""
    if args.resource_type not in ("aws:iam/policy:Policy", "aws:iam/rolePolicy:RolePolicy") or args.name in UPSTREAM_WILDCARD_WRITERS:
        return
    for s in _statements(args.props.get("policy")):
        # NotResource on an Allow grants every resource but those listed: as broad as '*'
        if s.get("Effect") != "Allow" or ("*" not in _listed(s.get("Resource")) and "NotResource" not in s):
            continue
        writes = [a for a in _listed(s.get("Action")) if not str(a).split(":")[-1].startswith(READ_PREFIXES)]
        if writes:
            report(f"Policy {args.name} allows {', '.join(map(str, writes))} on every resource ('*'): name the resources.", None)


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
    "eks-access-entries": ("Cluster access is granted by access entries (authenticationMode API).", eks_access_entries),
    "imdsv2-on-node-paths": ("Nodes require IMDSv2 with hop limit 1.", imdsv2_on_node_paths),
    "pinned-images": ("Images are pinned by tag or digest, never latest.", pinned_images),
    "no-direct-load-balancer": ("No LoadBalancer or NodePort Service exposes a workload.", no_direct_load_balancer),
    "requests-and-limits": ("Containers set CPU and memory requests and limits; memory and GPUs: requests = limits.", requests_and_limits),
    "secrets-only-from-secrets": ("Tokens and API keys come from Secrets, not literals or args.", secrets_only_from_secrets),
    "iam-trust-scoped": ("Every role's trust is scoped: no '*', Pod Identity and IRSA as AWS documents them.", iam_trust_scoped),
    "iam-no-wildcard-actions": ("No IAM policy allows '*' or every action of a service.", iam_no_wildcard_actions),
    "iam-no-broad-managed-policies": (
        "No role gets AdministratorAccess, PowerUserAccess or a *FullAccess policy.",
        iam_no_broad_managed_policies,
    ),
    "iam-role-rights-visible": (
        "A role's rights come from attachments and role policies, not the role's own inline or managed lists.",
        iam_role_rights_visible,
    ),
    "iam-no-wildcard-writes": (
        "Writes name their resources; '*' only in the upstream load balancer controller policy.",
        iam_no_wildcard_writes,
    ),
}


NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
VLLM_PORT = 8000
ELB_SUBNET_TAG_PREFIX = "kubernetes.io/role/"
"""The load balancer controller's subnet discovery tags (`.../elb`, `.../internal-elb`); the pack runs
without the program's modules, so it reads the tags by their common prefix."""


def _is_default_deny(spec: dict[str, Any]) -> bool:
    return (
        not (spec.get("podSelector") or {})
        and set(spec.get("policyTypes") or []) == {"Ingress", "Egress"}
        and not spec.get("ingress")
        and not spec.get("egress")
    )


def namespaces_deny_by_default(args: StackValidationArgs, report: ReportViolation) -> None:
    """Every namespace the program creates has a default-deny NetworkPolicy (flows are then opened by name)."""
    denied = {
        (r.props.get("metadata") or {}).get("namespace")
        for r in args.resources
        if r.resource_type == NETWORK_POLICY and _is_default_deny(r.props.get("spec") or {})
    }
    for r in args.resources:
        if r.resource_type == "kubernetes:core/v1:Namespace":
            name = (r.props.get("metadata") or {}).get("name")
            if name not in denied:
                report(f"Namespace {name} has no default-deny NetworkPolicy: every pod in it is open both ways.", r.urn)


def _admits(rule: dict[str, Any], port: int) -> bool:
    ports = rule.get("ports") or []
    return not ports or any(
        p.get("port") is None or isinstance(p["port"], str) or p["port"] <= port <= p.get("endPort", p["port"]) for p in ports
    )


def vllm_port_sources(args: StackValidationArgs, report: ReportViolation) -> None:
    """vLLM's port admits addresses only from the load balancer's subnets: never the internet or the whole VPC.

    The VPC's and the load balancer subnets' ranges come from the stack's own Vpc and Subnet resources
    (an existing VPC has none here: only the internet and host-bits checks apply)."""
    vpcs = [
        ipaddress.ip_network(r.props["cidrBlock"])
        for r in args.resources
        if r.resource_type == "aws:ec2/vpc:Vpc" and r.props.get("cidrBlock")
    ]
    elb_subnets = {
        r.props.get("cidrBlock")
        for r in args.resources
        if r.resource_type == "aws:ec2/subnet:Subnet" and any(str(t).startswith(ELB_SUBNET_TAG_PREFIX) for t in (r.props.get("tags") or {}))
    }
    for r in args.resources:
        if r.resource_type != NETWORK_POLICY:
            continue
        for rule in (r.props.get("spec") or {}).get("ingress") or []:
            if not _admits(rule, VLLM_PORT):
                continue
            for peer in rule.get("from") or []:
                cidr = (peer.get("ipBlock") or {}).get("cidr")
                if cidr is None:
                    continue
                net = ipaddress.ip_network(cidr, strict=False)
                name = (r.props.get("metadata") or {}).get("name")
                if net.prefixlen == 0:
                    report(f"NetworkPolicy {name} admits port {VLLM_PORT} from every address ({cidr}).", r.urn)
                elif any(vpc.subnet_of(net) for vpc in vpcs):  # type: ignore[arg-type]
                    report(
                        f"NetworkPolicy {name} admits port {VLLM_PORT} from {cidr}, the whole VPC: admit the load balancer's subnets.",
                        r.urn,
                    )
                elif vpcs and cidr not in elb_subnets:
                    report(f"NetworkPolicy {name} admits port {VLLM_PORT} from {cidr}, not a load balancer subnet of the stack.", r.urn)


NODE_INLINE_ACTIONS = {"ecr:BatchImportUpstreamImage", "ecr:CreateRepository"}
"""The one inline right a node role may have: importing images through the ECR pull-through cache."""


def _role_of(resource: Any, roles_by_name: dict[str, Any]) -> Any:
    """The role an attachment or inline policy belongs to: the role among the resources its `role` input
    (else the resource as a whole) depends on (known at preview), else the role whose name its `role`
    input spells (a stack policy sees the roles' output names)."""
    candidates = (getattr(resource, "property_dependencies", None) or {}).get("role") or resource.dependencies or []
    roles = [d for d in candidates if d.resource_type == "aws:iam/role:Role"]
    if len(roles) == 1:
        return roles[0]
    return roles_by_name.get(str(resource.props.get("role")))


def iam_node_roles(args: StackValidationArgs, report: ReportViolation) -> None:
    """Every role EC2 assumes (each node path) carries exactly the node-role managed policies, and inline
    no more than the pull-through cache's import."""
    node_roles = {
        r.urn: r
        for r in args.resources
        if r.resource_type == "aws:iam/role:Role"
        and any(
            "ec2.amazonaws.com" in _listed((s.get("Principal") or {}).get("Service", []))
            for s in _statements(r.props.get("assumeRolePolicy"))
        )
    }
    attached: dict[str, set[str]] = {urn: set() for urn in node_roles}
    by_name = {str(r.props.get("name")): r for r in node_roles.values() if r.props.get("name")}
    for r in args.resources:
        role = _role_of(r, by_name) if r.resource_type.startswith("aws:iam/rolePolicy") else None
        if role is None or role.urn not in node_roles:
            continue
        if r.resource_type == "aws:iam/rolePolicyAttachment:RolePolicyAttachment":
            attached[role.urn].add(str(r.props.get("policyArn")).rsplit("/", 1)[-1])
        elif r.resource_type == "aws:iam/rolePolicy:RolePolicy":
            actions = {a for s in _statements(r.props.get("policy")) if s.get("Effect") == "Allow" for a in _listed(s.get("Action"))}
            if not actions <= NODE_INLINE_ACTIONS:
                extra = sorted(map(str, actions - NODE_INLINE_ACTIONS))
                report(f"Node role {role.name} has inline rights beyond the image cache's import: {', '.join(extra)}.", r.urn)
    expected = set(CONVENTIONS.NODE_ROLE_POLICIES)
    for urn, policies in attached.items():
        if policies != expected:
            extra, missing = sorted(policies - expected), sorted(expected - policies)
            carries, lacks = ", ".join(extra) or "nothing extra", ", ".join(missing) or "nothing"
            report(f"Node role {node_roles[urn].name} carries {carries} and lacks {lacks}.", urn)


STACK_CHECKS: dict[str, tuple[str, Callable[[StackValidationArgs, ReportViolation], None]]] = {
    "iam-node-roles": ("Node roles carry exactly the node-role managed policies, inline only the image cache's import.", iam_node_roles),
    "namespaces-deny-by-default": ("Every namespace the program creates has a default-deny NetworkPolicy.", namespaces_deny_by_default),
    "vllm-port-sources": ("vLLM's port admits the load balancer's subnets only, never the VPC or the internet.", vllm_port_sources),
}


def policies() -> list[ResourceValidationPolicy | StackValidationPolicy]:
    found: list[ResourceValidationPolicy | StackValidationPolicy] = [
        ResourceValidationPolicy(name=name, description=description, validate=check, enforcement_level=EnforcementLevel.MANDATORY)
        for name, (description, check) in CHECKS.items()
    ]
    found += [
        StackValidationPolicy(name=name, description=description, validate=check, enforcement_level=EnforcementLevel.MANDATORY)
        for name, (description, check) in STACK_CHECKS.items()
    ]
    return found
