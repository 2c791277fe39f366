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
LEADER_WORKER_SET = "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"
WORKLOADS = (
    "kubernetes:apps/v1:Deployment",
    "kubernetes:apps/v1:StatefulSet",
    "kubernetes:apps/v1:DaemonSet",
    "kubernetes:batch/v1:Job",
    LEADER_WORKER_SET,
)
SECRET_ENV = re.compile(r"(HF_TOKEN|HUGGING_FACE_HUB_TOKEN|API_KEY|PASSWORD|SECRET)", re.IGNORECASE)
SECRET_FLAGS = ("--api-key", "--hf-token")


def pod_templates(props: dict[str, Any]) -> list[dict[str, Any]]:
    """The pod templates of a workload: its one template, or a LeaderWorkerSet's leader and worker templates."""
    spec = props.get("spec") or {}
    if "leaderWorkerTemplate" in spec:
        group = spec["leaderWorkerTemplate"] or {}
        return [t for t in (group.get("leaderTemplate"), group.get("workerTemplate")) if t]
    return [spec.get("template") or {}]


def _containers(props: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for template in pod_templates(props):
        pod = template.get("spec") or {}
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


PROMETHEUS_POD = {"app.kubernetes.io/name": "prometheus"}
"""The Prometheus pods (prometheus-operator labels them so); builders/network_policies.py PROMETHEUS_POD."""
PROMETHEUS_CHART = "kube-prometheus-stack"


def _selects(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """Label-selector semantics (matchLabels and matchExpressions); an empty selector selects everything."""
    selector = selector or {}
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expr in selector.get("matchExpressions") or []:
        key, op, vals = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if (
            (op == "In" and labels.get(key) not in vals)
            or (op == "NotIn" and key in labels and labels[key] in vals)
            or (op == "Exists" and key not in labels)
            or (op == "DoesNotExist" and key in labels)
        ):
            return False
    return True


def _namespace_named(peer: dict[str, Any]) -> str | None:
    """The one namespace a peer's namespaceSelector names by its name label, else None."""
    selector = peer.get("namespaceSelector") or {}
    labels = selector.get("matchLabels") or {}
    if selector.get("matchExpressions") or set(labels) != {CONVENTIONS.NAMESPACE_NAME_LABEL}:
        return None
    return str(labels[CONVENTIONS.NAMESPACE_NAME_LABEL])


def _pods_among(peer: dict[str, Any], labels: dict[str, str]) -> bool:
    """The peer's podSelector selects only pods carrying `labels` (it requires each of them)."""
    match = (peer.get("podSelector") or {}).get("matchLabels") or {}
    return all(match.get(k) == v for k, v in labels.items())


def _vllm_peer_problem(peer: dict[str, Any], namespace: str, monitoring: str | None) -> str | None:
    """Why a peer may not reach vLLM's pods (None: it may): its own namespace's pods (the gateway) and the
    monitoring namespace's Prometheus, nothing else."""
    if "ipBlock" in peer:
        return f"the address range {peer['ipBlock'].get('cidr')} (the ALB and every caller reach the gateway, never vLLM)"
    if "namespaceSelector" not in peer:
        return None  # pods of vLLM's own namespace: the model's gateway
    named = _namespace_named(peer)
    if named == namespace:
        return None
    if named is not None and named == monitoring:
        return None if _pods_among(peer, PROMETHEUS_POD) else f"every pod of the monitoring namespace {named}, not its Prometheus"
    what = f"namespace {named}" if named else f"the namespaces {json.dumps(peer['namespaceSelector'], sort_keys=True)}"
    return f"{what} (clients call the model's gateway)"


def vllm_port_sources(args: StackValidationArgs, report: ReportViolation) -> None:
    """vLLM's pods admit only the model's gateway (pods of their own namespace) and the monitoring namespace's
    Prometheus: no address range at all (not the ALB's subnets, not the VPC, not the
    internet), no client namespace, no other namespace. vLLM guards only /v1 with its API key; the
    gateway serves /v1 alone.

    vLLM's pods are those of every Deployment (or LeaderWorkerSet) whose pod template carries vLLM's app label; a policy is
    theirs when it selects them (in their namespace); the monitoring namespace is kube-prometheus-stack's."""
    monitoring = next(
        (
            str(r.props.get("namespace"))
            for r in args.resources
            if r.resource_type == "kubernetes:helm.sh/v3:Release" and str(r.props.get("chart", "")).endswith(PROMETHEUS_CHART)
        ),
        None,
    )
    vllm_pods: dict[str, list[dict[str, str]]] = {}
    for r in args.resources:
        if r.resource_type not in ("kubernetes:apps/v1:Deployment", LEADER_WORKER_SET):
            continue
        for template in pod_templates(dict(r.props)):
            labels = (template.get("metadata") or {}).get("labels") or {}
            if all(labels.get(k) == v for k, v in CONVENTIONS.VLLM_APP_LABEL.items()):
                vllm_pods.setdefault(str((r.props.get("metadata") or {}).get("namespace")), []).append(labels)
    for r in args.resources:
        if r.resource_type != NETWORK_POLICY:
            continue
        meta, spec = r.props.get("metadata") or {}, r.props.get("spec") or {}
        namespace = str(meta.get("namespace"))
        if not any(_selects(spec.get("podSelector"), labels) for labels in vllm_pods.get(namespace, [])):
            continue
        name = f"{namespace}/{meta.get('name')}"
        for rule in spec.get("ingress") or []:
            ports = ", ".join(str(p.get("port", "every port")) for p in rule.get("ports") or []) or "every port"
            peers = rule.get("from") or []
            if not peers:
                report(f"NetworkPolicy {name} admits vLLM's pods ({ports}) from every source.", r.urn)
            for peer in peers:
                problem = _vllm_peer_problem(peer, namespace, monitoring)
                if problem is not None:
                    report(f"NetworkPolicy {name} admits vLLM's pods ({ports}) from {problem}.", r.urn)


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
    "vllm-port-sources": (
        "vLLM's pods admit only their gateway and Prometheus: no address range, no client or other namespace.",
        vllm_port_sources,
    ),
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
