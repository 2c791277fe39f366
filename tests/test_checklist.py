"""Every row of the reliability checklist (docs/upstream-facts.md#reliability-checklist), enforced.

ROWS maps each checklist id to the tests that enforce it and to one check of its own: a function
of a stack's config or render that reports the property's violations. Each row is shown, here,
to hold on the fixture render (the check reports nothing) and to be caught when broken (the same
check, run on a copy with the property broken, reports it): a mutation per row, kept as a test.
The checks are the ones the platform's own gates use wherever one exists (config rules, the
policy pack, the IAM invariants, the network evaluator), so a row cannot pass here while the gate
that guards it is gone.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import kubernetes_validate
import pytest

from builders.karpenter import iam as karpenter_iam
from builders.serving.workload import HF_TOKEN_SECRET
from config.facts import versions
from config.facts.conventions import EBS_CSI_SERVICE_ACCOUNT, KEDA_NAMESPACE, NODE_ROLE_POLICIES, SYSTEM_NODE_LABEL
from offline.mocks import Registration
from policy import checks
from tests.config.checks.test_bad_inputs import ALL_CASES
from tests.conftest import DEV, FIXTURES, PROD, SHARED, edited, fixture_run, parse, problems_after, shared_path, stack_data, values
from tests.support import karpenter as karpenter_upstream
from tests.support.flows import build_world, leaks, undefended_namespaces
from tests.support.iam import node_role_findings, trust_scoped_findings, wildcard_writes
from tests.support.karpenter import nodepool_disruption_findings
from tests.support.mutations import p0
from tests.support.policy import container, edit_policy, resource_args, stack_of, stack_violations
from tests.support.program import run_patched
from tests.support.promql import FAMILIES, rendered_queries, series_in, unknown_series_findings
from tests.support.workloads import pod_security_findings, pods, secret_env_findings
from tests.test_front_door import build_door, holes, side_doors
from tests.validators import cloudformation as upstream_cfn
from tests.validators import crds

IDS = (
    *(f"CL-{i}" for i in range(1, 7)),
    *(f"NK-{i}" for i in range(1, 8)),
    *(f"IAM-{i}" for i in range(1, 8)),
    *(f"WS-{i}" for i in range(1, 7)),
    *(f"WR-{i}" for i in range(1, 8)),
    *(f"AS-{i}" for i in range(1, 6)),
    *(f"OB-{i}" for i in range(1, 5)),
    *(f"MV-{i}" for i in range(1, 6)),
)
"""The 47 rows of the checklist."""

Check = Callable[[bool], list[str]]
"""check(broken): the property's violations on the fixture (broken=False) or on a broken copy."""


@dataclass(frozen=True)
class Row:
    enforced_by: tuple[str, ...]
    """Tests (`path::function`) that fail when the property breaks."""
    check: Check
    """This row's own check, run here on the fixture and on a broken copy."""
    expect: str
    """Text the check reports when the property is broken."""


# -- building blocks -----------------------------------------------------------------------------------


def _regs(stack: str = PROD) -> list[Registration]:
    return list(fixture_run(stack).registrations)


def _docs(regs: list[Registration], type_token: str) -> list[dict[str, Any]]:
    return [values(r) for r in regs if r.type == type_token]


def render_check(
    find: Callable[[list[Registration]], list[str]], break_it: Callable[[list[Registration]], list[Registration]], stack: str = PROD
) -> Check:
    return lambda broken: find(break_it(_regs(stack)) if broken else _regs(stack))


def config_case(case: str, path: str) -> Check:
    """A config rule: the bad-input case that breaks the property (tests/config/test_bad_inputs*.py).
    Only problems at the rule's config path count, so the fixture's other warnings cannot hide or fake it."""
    return lambda broken: [p for p in problems_after(ALL_CASES[case] if broken else (lambda d: None), DEV) if p.startswith(path)]


def config_change(mutate: Callable[[dict[str, Any]], object], stack: str, path: str) -> Check:
    return lambda broken: [p for p in problems_after(mutate if broken else (lambda d: None), stack) if p.startswith(path)]


def policy_check(
    name: str,
    type_token: str,
    resource: str | None,
    mutate: Callable[[dict[str, Any]], object],
    stack: str = PROD,
    on: tuple[str, ...] | None = None,
) -> Check:
    """A policy-pack check (policy/checks.py) on one resource, broken by `mutate`; with `on`, the check
    runs on every resource of those types (the whole render's workloads, say) and one of them is broken."""

    def check(broken: bool) -> list[str]:
        found: list[str] = []
        regs = edited(_regs(stack), type_token, resource, mutate) if broken else _regs(stack)
        for r in regs:
            if r.type in (on or ()) or (on is None and r.type == type_token and (resource is None or r.name == resource)):
                checks.CHECKS[name][1](resource_args(r), lambda message, urn=None: found.append(message))
        return found

    return check


def _pods(regs: list[Registration]) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(name, pod template metadata, pod spec) of every workload the program renders, of every kind."""
    return pods(regs)


def program_check(find: Callable[[list[Registration], str], list[str]], stack: str, target: str, edit: Callable[..., Any]) -> Check:
    """A row's check over the render of every fixture; broken, over a fresh run of the real program
    on `stack` with the builder `target` changed by `edit` (tests/support/program.py): the break is in
    code, and the check must see it in what the program renders."""

    def check(broken: bool) -> list[str]:
        if broken:
            return find(run_patched(stack, target, edit), stack)
        return [f"{fixture}: {f}" for fixture in FIXTURES for f in find(_regs(fixture), fixture)]

    return check


# -- relational checks over the render -------------------------------------------------------------------


def kms_findings(regs: list[Registration]) -> list[str]:
    out = []
    for key in _docs(regs, "aws:kms/key:Key"):
        if not key.get("enableKeyRotation"):
            out.append("KMS key rotation is off")
        for s in json.loads(key["policy"])["Statement"]:
            principal = s.get("Principal")
            if principal == "*" or (isinstance(principal, dict) and "*" in [principal.get("AWS")]):
                out.append("KMS key policy has a '*' principal")
    return out


def node_security_group_findings(regs: list[Registration]) -> list[str]:
    """Nodes use the EKS cluster security group (the control plane reaches every port); none of our own."""
    out = [f"custom security group {r.name}" for r in regs if r.type == "aws:ec2/securityGroup:SecurityGroup"]
    cluster = _docs(regs, "eks:index:Cluster")[0]
    if not cluster.get("skipDefaultSecurityGroups"):
        out.append("pulumi-eks creates its own node security group")
    return out


def interruption_findings(regs: list[Registration]) -> list[str]:
    out = []
    queue = _docs(regs, "aws:sqs/queue:Queue")[0]
    if queue.get("messageRetentionSeconds") != 300 or not queue.get("sqsManagedSseEnabled"):
        out.append("queue retention or encryption differs from Karpenter's template")
    policy = json.loads(_docs(regs, "aws:sqs/queuePolicy:QueuePolicy")[0]["policy"])
    if not any(s.get("Sid") == "DenyHTTP" for s in policy["Statement"]):
        out.append("queue policy lacks DenyHTTP")
    targets = _docs(regs, "aws:cloudwatch/eventTarget:EventTarget")
    if len(targets) != 5 or any(not t["arn"].endswith(f":{queue['name']}") for t in targets):
        out.append("the five EventBridge rules do not all target the queue")
    releases = {r.name: values(r) for r in regs if r.type == "kubernetes:helm.sh/v3:Release"}
    if releases["karpenter-release"]["values"]["settings"].get("interruptionQueue") != queue["name"]:
        out.append("Karpenter's settings.interruptionQueue is not the queue")
    if any("termination-handler" in str(d.get("chart")) for d in releases.values()):
        out.append("the node termination handler is installed beside Karpenter")
    return out


def karpenter_controller_findings(regs: list[Registration]) -> list[str]:
    """The controller runs on the system node group, two replicas, with its PDB and system-cluster-critical."""
    release = next(values(r) for r in regs if r.type == "kubernetes:helm.sh/v3:Release" and r.name == "karpenter-release")
    chart_values = release["values"]
    out = []
    if chart_values.get("replicas") != 2:
        out.append(f"Karpenter runs {chart_values.get('replicas')} replicas, not 2")
    if chart_values.get("priorityClassName") != "system-cluster-critical":
        out.append("Karpenter's priority is not system-cluster-critical")
    if not chart_values.get("podDisruptionBudget"):
        out.append("Karpenter has no PodDisruptionBudget")
    (role_key,) = SYSTEM_NODE_LABEL
    system = {(d.get("labels") or {}).get(role_key) for d in _docs(regs, "aws:eks/nodeGroup:NodeGroup")} - {None}
    if (chart_values.get("nodeSelector") or {}).get(role_key) not in system:
        out.append("Karpenter is not pinned to the system node group (it could run on capacity it manages)")
    return out


def nodepool_findings(regs: list[Registration]) -> list[str]:
    out = []
    for pool in _docs(regs, "kubernetes:karpenter.sh/v1:NodePool"):
        name, spec = pool["metadata"]["name"], pool["spec"]
        taints = spec["template"]["spec"].get("taints") or []
        if not any(t["key"] == "nvidia.com/gpu" and t["effect"] == "NoSchedule" for t in taints):
            out.append(f"NodePool {name} lacks the nvidia.com/gpu:NoSchedule taint")
        if not spec.get("limits"):
            out.append(f"NodePool {name} has no limits")
        keys = {r["key"] for r in spec["template"]["spec"]["requirements"]}
        gpu_keys = {"node.kubernetes.io/instance-type", "karpenter.k8s.aws/instance-family"}
        if not (gpu_keys & keys or any(k.startswith("karpenter.k8s.aws/instance-gpu") for k in keys)):
            out.append(f"NodePool {name} does not pin GPU instance types")
        if "karpenter.sh/capacity-type" not in keys:
            out.append(f"NodePool {name} does not say which capacity types it may launch")
        expire = spec["template"]["spec"].get("expireAfter", "720h")
        if expire != "Never" and not spec["template"]["spec"].get("terminationGracePeriod"):
            out.append(f"NodePool {name} expires nodes without a terminationGracePeriod")
    for node_class in _docs(regs, "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"):
        for term in node_class["spec"]["amiSelectorTerms"]:
            if not re.fullmatch(r"[a-z0-9]+@v\d{8}", term.get("alias", "")):
                out.append(f"EC2NodeClass {node_class['metadata']['name']} AMI alias {term.get('alias')} is not pinned")
    return out


def karpenter_policy_diff(broken: bool) -> list[str]:
    """The controller policies against Karpenter's CloudFormation template of the pinned version."""
    upstream = upstream_cfn.policy_documents(karpenter_upstream.upstream_karpenter(), karpenter_upstream.upstream_names())
    ours = karpenter_iam.controller_policies(karpenter_upstream.SCOPE, karpenter_upstream.NODE_ROLE, karpenter_upstream.QUEUE)
    if broken:
        first = sorted(ours)[0]
        ours[first]["Statement"][0]["Action"] = ["ec2:*"]
    return [
        f"{stem} differs from the upstream template"
        for stem, doc in ours.items()
        if upstream_cfn.normalize(doc) != upstream_cfn.normalize(upstream[f"{stem}Policy"])
    ]


def ebs_csi_findings(regs: list[Registration]) -> list[str]:
    out = []
    addon = next(d for d in _docs(regs, "aws:eks/addon:Addon") if d["addonName"] == "aws-ebs-csi-driver")
    roles = {r.id: r.name for r in regs if r.type == "aws:iam/role:Role"}
    associations = addon.get("podIdentityAssociations") or []
    if [a["serviceAccount"] for a in associations] != ["ebs-csi-controller-sa"]:
        out.append("the EBS CSI driver's identity is not its controller service account's")
    role_names = {str(a["roleArn"]).rsplit("/", 1)[-1] for a in associations}
    attached = {
        str(d["policyArn"]).rsplit("/", 1)[-1]
        for d in _docs(regs, "aws:iam/rolePolicyAttachment:RolePolicyAttachment")
        if d["role"] in role_names
    }
    if attached != {"AmazonEBSCSIDriverPolicy"}:
        out.append(f"the EBS CSI role carries {sorted(attached)}")
    assert role_names <= set(roles), role_names
    return out


def keda_aws_findings(regs: list[Registration]) -> list[str]:
    """KEDA queries in-cluster Prometheus: it gets no AWS identity."""
    out = [
        f"{d['serviceAccount']} in keda has an AWS role"
        for d in _docs(regs, "aws:eks/podIdentityAssociation:PodIdentityAssociation")
        if d["namespace"] == KEDA_NAMESPACE
    ]
    for release in _docs(regs, "kubernetes:helm.sh/v3:Release"):
        if release.get("namespace") == KEDA_NAMESPACE and "eks.amazonaws.com/role-arn" in json.dumps(release.get("values")):
            out.append(f"{release.get('name', 'a KEDA release')} annotates a service account with an IAM role")
    return out


def psa_findings(regs: list[Registration]) -> list[str]:
    """Model namespaces enforce `restricted`; beside a gateway (the router chart renders the Endpoint Picker's
    container with no securityContext, builders/serving/workload.py namespace) `baseline` enforced with
    `restricted` warned and audited (the checklist's "or baseline enforce plus restricted warn/audit")."""
    cfg = parse(stack_data(PROD))
    labels = {d["metadata"]["name"]: d["metadata"]["labels"] for d in _docs(regs, "kubernetes:core/v1:Namespace")}
    gateways = {d["namespace"] for d in _docs(regs, "kubernetes:helm.sh/v3:Release") if d["chart"] == versions.LLM_D_ROUTER.name}
    out = []
    for m in cfg.models:
        enforce, warn, audit = (labels.get(m.name, {}).get(f"pod-security.kubernetes.io/{k}") for k in ("enforce", "warn", "audit"))
        if enforce == "restricted":
            continue
        if m.name in gateways and (enforce, warn, audit) == ("baseline", "restricted", "restricted"):
            continue
        beside = "beside its gateway: restricted, or baseline with restricted warn and audit" if m.name in gateways else "not restricted"
        out.append(f"model namespace {m.name} enforces {enforce} with warn {warn} and audit {audit}, {beside}")
    for ns in (cfg.gpu_operator.namespace, cfg.observability.namespace):
        enforce = labels.get(ns, {}).get("pod-security.kubernetes.io/enforce")
        if enforce != "privileged":
            out.append(f"{ns} enforces {enforce}, not privileged (it needs host access)")
    return out


def service_account_findings(regs: list[Registration]) -> list[str]:
    accounts = {(d["metadata"]["namespace"], d["metadata"]["name"]): d for d in _docs(regs, "kubernetes:core/v1:ServiceAccount")}
    out = []
    for name, _, pod in _pods(regs):
        ns = name.split("/")[0]
        if ns == "default":
            out.append(f"{name} runs in the default namespace")
        if pod.get("automountServiceAccountToken") is not False:
            out.append(f"{name} mounts a service account token")
        account = pod.get("serviceAccountName")
        if account in (None, "default"):
            out.append(f"{name} runs as its namespace's default service account")
        if account and (ns, account) in accounts and accounts[(ns, account)].get("automountServiceAccountToken") is not False:
            out.append(f"service account {ns}/{account} automounts its token")
    return out


def pdb_findings(regs: list[Registration]) -> list[str]:
    """One PDB per model Deployment, maxUnavailable 1, selecting its pods; and no PDB of the render (the
    gateways' proxies and pickers too) that blocks a drain: maxUnavailable 1, or minAvailable 0 (a budget
    kept only to be awaited, the pickers')."""
    pdbs = _docs(regs, "kubernetes:policy/v1:PodDisruptionBudget")
    out = []
    for pdb in pdbs:
        spec = {k: v for k, v in pdb["spec"].items() if k in ("maxUnavailable", "minAvailable")}
        if spec not in ({"maxUnavailable": 1}, {"minAvailable": 0}):
            out.append(f"PDB {pdb['metadata']['namespace']}/{pdb['metadata']['name']} is neither maxUnavailable: 1 nor minAvailable: 0")
    for r in regs:
        if r.type != "kubernetes:apps/v1:Deployment" or not r.name.startswith("model-"):
            continue
        doc = values(r)
        labels = doc["spec"]["template"]["metadata"]["labels"]
        mine = [
            pdb
            for pdb in pdbs
            if pdb["metadata"]["namespace"] == doc["metadata"]["namespace"]
            and all(labels.get(k) == v for k, v in pdb["spec"]["selector"]["matchLabels"].items())
        ]
        if len(mine) != 1:
            out.append(f"{doc['metadata']['name']} has {len(mine)} PodDisruptionBudgets selecting its pods, not one")
        elif mine[0]["spec"].get("maxUnavailable") != 1 or "minAvailable" in mine[0]["spec"]:
            out.append(f"{doc['metadata']['name']}'s PDB is not maxUnavailable: 1")
    return out


def selector_findings(regs: list[Registration]) -> list[str]:
    """Service, PDB and NetworkPolicy select the model's pods; the ScaledObject targets its Deployment."""
    out = []
    deployments = {(d["metadata"]["namespace"], d["metadata"]["name"]): d for d in _docs(regs, "kubernetes:apps/v1:Deployment")}

    def pods_of(ns: str, selector: dict[str, str]) -> list[str]:
        return [
            name
            for (n, name), d in deployments.items()
            if n == ns and all(d["spec"]["template"]["metadata"]["labels"].get(k) == v for k, v in selector.items())
        ]

    for svc in _docs(regs, "kubernetes:core/v1:Service"):
        if not pods_of(svc["metadata"]["namespace"], svc["spec"]["selector"]):
            out.append(f"Service {svc['metadata']['name']} selects no pod")
    for policy in _docs(regs, "kubernetes:networking.k8s.io/v1:NetworkPolicy"):
        selector = (policy["spec"].get("podSelector") or {}).get("matchLabels")
        ns = policy["metadata"]["namespace"]
        if selector and (ns, policy["metadata"]["name"]) in deployments and not pods_of(ns, selector):
            out.append(f"NetworkPolicy {ns}/{policy['metadata']['name']} selects no pod")
    for scaled in _docs(regs, "kubernetes:keda.sh/v1alpha1:ScaledObject"):
        if (scaled["metadata"]["namespace"], scaled["spec"]["scaleTargetRef"]["name"]) not in deployments:
            out.append(f"ScaledObject {scaled['metadata']['name']} targets no Deployment")
    return out


def do_not_disrupt_findings(regs: list[Registration]) -> list[str]:
    return [
        f"{name} is never disrupted (karpenter.sh/do-not-disrupt: true)"
        for name, meta, _ in _pods(regs)
        if (meta.get("annotations") or {}).get("karpenter.sh/do-not-disrupt") == "true"
    ]


def trigger_findings(regs: list[Registration]) -> list[str]:
    cfg = parse(stack_data(PROD))
    out = []
    for scaled in _docs(regs, "kubernetes:keda.sh/v1alpha1:ScaledObject"):
        name = scaled["metadata"]["name"]
        if not scaled["spec"].get("fallback"):
            out.append(f"{name} has no fallback")
        for t in scaled["spec"]["triggers"]:
            if t["type"] != "prometheus":
                continue
            m = t["metadata"]
            if m.get("ignoreNullValues") != "false":
                out.append(f"{name}: a lost metric would read as zero (ignoreNullValues)")
            if (
                f".{cfg.observability.namespace}.svc" not in m["serverAddress"]
                or "kube-prometheus-stack-prometheus" not in m["serverAddress"]
            ):
                out.append(f"{name} queries {m['serverAddress']}, not the stack's Prometheus")
            if not isinstance(m["threshold"], str) or float(m["threshold"]) <= 0:
                out.append(f"{name}: threshold {m['threshold']!r} is not a positive number string")
    return out


REQUIRED_ALERTS = {
    "vLLM down or absent": (r"\bup\b|absent\(", ("up", "vllm:")),
    "queue depth": (r"vllm:num_requests_waiting|llm:vllm_requests_waiting", ("vllm:", "llm:")),
    "KEDA scaler errors": (r"keda_scaler(_detail)?_errors", ("keda_",)),
    "Karpenter nodes not initialized or interrupted": (r"karpenter_|operator_nodeclaim", ("karpenter_", "operator_")),
    "GPU health (DCGM)": (r"DCGM_", ("DCGM_",)),
}
"""OB-3's alerts: what each watches, the pattern of its expression, and the families it reads."""


def alert_findings(regs: list[Registration], stack: str = PROD) -> list[str]:
    """OB-3: each required alert exists and reads only series the pinned versions expose (a KEDA
    alert on the obsolete keda_scaler_errors_total is no alert: it never fires)."""
    known = unknown_series_findings(regs)
    alerts = [
        (rule["alert"], rule["expr"])
        for d in _docs(regs, "kubernetes:monitoring.coreos.com/v1:PrometheusRule")
        for g in d["spec"]["groups"]
        for rule in g["rules"]
        if "alert" in rule
    ]
    out = [f for f in known if f.startswith("rule ") and f.split(" ", 2)[1] in {a for a, _ in alerts}]
    live = [(a, e) for a, e in alerts if not any(f.startswith(f"rule {a} reads ") for f in out)]
    for what, (pattern, families) in REQUIRED_ALERTS.items():
        if not any(re.search(pattern, e) and any(n.startswith(families) for n in series_in(e)) for _, e in live):
            out.append(f"no alert on {what}")
    return out


def metric_name_findings(regs: list[Registration], stack: str = PROD) -> list[str]:
    """AS-3: every series every rendered query reads (alerts, recording rules, dashboards, KEDA
    triggers; vllm:*, DCGM_*, kube_*, karpenter_*, keda_*, up) is in the pinned versions' tables or
    recorded by the render's own rules."""
    assert set(FAMILIES) >= {"vllm:", "DCGM_", "kube_", "karpenter_", "keda_"}
    assert rendered_queries(regs), "the render has no query"
    return unknown_series_findings(regs)


def network_findings(broken: bool) -> list[str]:
    """Default deny in every namespace we create, and the VPC CNI enforcing policies at all."""
    regs = _regs(DEV)
    if broken:
        regs = edited(regs, "aws:eks/addon:Addon", "cluster-vpc-cni", lambda d: d.update(configurationValues="{}"))
    out = undefended_namespaces(build_world(DEV))
    vpc_cni = next(d for d in _docs(regs, "aws:eks/addon:Addon") if d["addonName"] == "vpc-cni")
    if json.loads(vpc_cni.get("configurationValues") or "{}").get("enableNetworkPolicy") != "true":
        out.append("the VPC CNI does not enforce NetworkPolicies (enableNetworkPolicy)")
    return out


def strict_validation(broken: bool) -> list[str]:
    doc = copy.deepcopy(values(fixture_run(DEV).one("kubernetes:apps/v1:Deployment", "model-llama-3-1-8b-deployment")))
    if broken:
        doc["spec"]["replica"] = doc["spec"].pop("replicas", 1)
    version = parse(stack_data(DEV)).cluster.kubernetes_version
    try:
        kubernetes_validate.validate(doc, version, strict=True)
    except kubernetes_validate.ValidationError as err:
        return [f"kubernetes-validate: {err.message}"]
    return []


def crd_validation(broken: bool) -> list[str]:
    doc = copy.deepcopy(values(fixture_run(DEV).of_type("kubernetes:karpenter.sh/v1:NodePool")[0]))
    if broken:
        doc["spec"]["disruption"]["consolidationPolicy"] = "WhenUnderutilized"  # the v1beta1 spelling
    return crds.errors(doc, shared_path("crds", "karpenter.sh_nodepools.yaml"))


def vllm_port_sources(broken: bool) -> list[str]:
    """OB-2: vLLM admits only its gateway and Prometheus (the policy pack); on the fixture
    also the relational checks: no forbidden flow, and at L7 no unguarded vLLM route and no /v1 but
    through the front door (tests/test_front_door.py)."""
    admit_alb = edit_policy(
        "llama-3-1-8b", "llama-3-1-8b", lambda d: d["spec"]["ingress"][0]["from"].append({"ipBlock": {"cidr": "10.40.0.0/18"}})
    )
    found = stack_violations("vllm-port-sources", stack_of(fixture_run(DEV), admit_alb if broken else None))
    if not broken:
        door = build_door("internet-facing-tls")
        found += leaks(door.world) + holes(door) + side_doors(door)
    return found


def _deploymentedited(stack: str, mutate: Callable[[dict[str, Any]], object]) -> Callable[[list[Registration]], list[Registration]]:
    name = next(
        r.name
        for r in fixture_run(stack).of_type("kubernetes:apps/v1:Deployment")
        if r.name.startswith("model-") and r.name.endswith("-deployment")
    )
    return lambda regs: edited(regs, "kubernetes:apps/v1:Deployment", name, mutate)


def _set(path: list[str], value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(doc: dict[str, Any]) -> None:
        for key in path[:-1]:
            doc = doc[key]
        doc[path[-1]] = value

    return mutate


def _container_set(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(doc: dict[str, Any]) -> None:
        container(doc).setdefault("securityContext", {})[key] = value

    return mutate


def _single_type_pool(d: dict[str, Any]) -> None:
    pool = p0(d)
    pool.pop("instanceFamilies", None)
    pool["instanceTypes"] = ["g6.12xlarge"]
    pool["capacityTypes"] = ["spot", "on-demand"]


def _prod_window(seconds: int) -> Callable[[dict[str, Any]], None]:
    def mutate(d: dict[str, Any]) -> None:
        d["models"][0].setdefault("autoscaling", {})["scaleDown"] = {"stabilizationWindowSeconds": seconds, "pods": 1, "periodSeconds": 60}

    return mutate


def _spot_only_prod(d: dict[str, Any]) -> None:
    pool = next(p for p in d["gpuPools"] if p["name"] == next(m["pool"] for m in d["models"]))
    pool["capacityTypes"] = ["spot"]


# -- code breaks: builder outputs changed as a bad commit would change them ------------------------------


def _populate_container(job: dict[str, Any]) -> dict[str, Any]:
    (c,) = job["spec"]["template"]["spec"]["containers"]
    return c  # type: ignore[no-any-return]


def _populate_adds_sys_admin(job: dict[str, Any], *_: Any, **__: Any) -> None:
    """Mutation M16: the weights populate Job's container adds SYS_ADMIN."""
    _populate_container(job)["securityContext"].setdefault("capabilities", {})["add"] = ["SYS_ADMIN"]


def _populate_reads_the_token_from_env(job: dict[str, Any], *_: Any, **__: Any) -> None:
    """Mutation M18: the populate Job also gets the HF token as HF_TOKEN through secretKeyRef."""
    _populate_container(job)["env"].append({"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": HF_TOKEN_SECRET, "key": "token"}}})


def _shared_pools_repack(node_pool: dict[str, Any], pool: Any, *_: Any, **__: Any) -> None:
    """Mutation M31b: the time-sliced and MIG pools' NodePools consolidate WhenEmptyOrUnderutilized."""
    if pool.sharing.mode != "none":
        node_pool["spec"]["disruption"]["consolidationPolicy"] = "WhenEmptyOrUnderutilized"


def _ebs_csi_trust_unpinned(document: dict[str, Any], cluster: str, namespace: str, account: str) -> None:
    """The EBS CSI role's Pod Identity trust forgets its service account (any pod of kube-system could assume it)."""
    if account == EBS_CSI_SERVICE_ACCOUNT:
        for statement in document["Statement"]:
            statement["Condition"]["StringEquals"].pop("aws:RequestTag/kubernetes-service-account")


def _kv_cache_on_the_removed_name(query: str, *_: Any, **__: Any) -> str:
    """The KV-cache trigger queries vllm:gpu_cache_usage_perc (removed in vLLM 0.12)."""
    return query.replace("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")


def _keda_alert_on_the_obsolete_name(groups: list[dict[str, Any]], *_: Any, **__: Any) -> None:
    """Mutation M43: KedaScalerErrors reads keda_scaler_errors_total, which KEDA 2.20 no longer exports."""
    for g in groups:
        for rule in g["rules"]:
            rule["expr"] = rule["expr"].replace("keda_scaler_detail_errors_total", "keda_scaler_errors_total")


def _nk5(regs: list[Registration], stack: str) -> list[str]:
    return nodepool_disruption_findings(regs, parse(stack_data(stack)))


def _plus(*row_checks: Check) -> Check:
    return lambda broken: [f for c in row_checks for f in c(broken)]


# -- the rows ---------------------------------------------------------------------------------------------

T = "tests/"
ROWS: dict[str, Row] = {
    "CL-1": Row(
        (
            f"{T}policy/test_policies.py::test_policy_fails_on_a_broken_resource",
            f"{T}config/checks/test_bad_inputs.py::test_bad_input_message",
        ),
        policy_check(
            "eks-endpoint-exposure",
            "eks:index:Cluster",
            None,
            lambda p: p.update(endpointPublicAccess=True, publicAccessCidrs=["0.0.0.0/0"]),
        ),
        "0.0.0.0/0",
    ),
    "CL-2": Row(
        (
            f"{T}components/test_cluster.py::test_secrets_key_rotates_and_has_no_wildcard_principal",
            f"{T}test_checkov_cloudformation.py::test_a_break_is_caught_by_checkov",
        ),
        render_check(kms_findings, lambda regs: edited(regs, "aws:kms/key:Key", None, lambda d: d.update(enableKeyRotation=False))),
        "rotation is off",
    ),
    "CL-3": Row(
        (f"{T}policy/test_policies.py::test_policy_fails_on_a_broken_resource",),
        policy_check("eks-control-plane-logs", "eks:index:Cluster", None, lambda p: p.update(enabledClusterLogTypes=["api"])),
        "audit",
    ),
    "CL-4": Row(
        (
            f"{T}policy/test_policies.py::test_policy_fails_on_a_broken_resource",
            f"{T}config/checks/test_preflight.py::test_the_first_up_runs_as_the_deploy_role_and_later_ones_as_it_or_an_admin",
        ),
        policy_check("eks-access-entries", "eks:index:Cluster", None, lambda p: p.update(authenticationMode="CONFIG_MAP")),
        "CONFIG_MAP",
    ),
    "CL-5": Row(
        (
            f"{T}config/checks/test_bad_inputs.py::test_bad_input_message",
            f"{T}components/test_serving.py::test_every_core_object_passes_kubernetes_validate_strict",
        ),
        config_case("kubernetes-version", "cluster.kubernetesVersion:"),
        "is not one this program is tested with",
    ),
    "CL-6": Row(
        (f"{T}components/test_cluster.py::test_cluster_security_inputs",),
        render_check(
            node_security_group_findings,
            lambda regs: [*regs, dataclasses.replace(regs[0], type="aws:ec2/securityGroup:SecurityGroup", name="nodes", inputs={})],
        ),
        "custom security group",
    ),
    "NK-1": Row(
        (
            f"{T}policy/test_policies.py::test_policy_fails_on_a_broken_resource",
            f"{T}policy/test_policies.py::test_ec2_node_class_imds_override_is_caught",
        ),
        policy_check(
            "imdsv2-on-node-paths",
            "aws:ec2/launchTemplate:LaunchTemplate",
            None,
            lambda p: p["metadataOptions"].update(httpPutResponseHopLimit=2),
        ),
        "hop limit",
    ),
    "NK-2": Row(
        (
            f"{T}components/test_karpenter.py::test_interruption_queue_rules_and_wiring",
            f"{T}components/test_karpenter.py::test_the_interruption_queue_is_always_wired",
        ),
        render_check(
            interruption_findings,
            lambda regs: edited(
                regs,
                "kubernetes:helm.sh/v3:Release",
                "karpenter-release",
                lambda d: d["values"]["settings"].update(interruptionQueue="other"),
            ),
        ),
        "interruptionQueue",
    ),
    "NK-3": Row(
        (
            f"{T}config/checks/test_bad_inputs.py::test_bad_input_message",
            f"{T}config/facts/test_system_capacity.py::test_karpenter_replicas_never_share_a_node_upstream",
        ),
        render_check(
            karpenter_controller_findings,
            lambda regs: edited(regs, "kubernetes:helm.sh/v3:Release", "karpenter-release", lambda d: d["values"].pop("priorityClassName")),
        ),
        "not system-cluster-critical",
    ),
    "NK-4": Row(
        (
            f"{T}components/test_karpenter.py::test_manifests_validate_against_the_upstream_crds",
            f"{T}components/test_karpenter.py::test_cel_checks_catch_what_jsonschema_misses",
        ),
        render_check(
            nodepool_findings,
            lambda regs: edited(
                regs, "kubernetes:karpenter.sh/v1:NodePool", None, lambda d: d["spec"]["template"]["spec"].update(taints=[])
            ),
        ),
        "nvidia.com/gpu:NoSchedule",
    ),
    "NK-5": Row(
        (
            f"{T}config/checks/test_bad_inputs.py::test_bad_input_message",
            f"{T}planner/test_replay.py::test_consolidation_respects_the_disruption_budgets",
        ),
        _plus(
            config_case("underutilized-consolidation-on-a-serving-pool", "gpuPools["),
            program_check(_nk5, PROD, "builders.karpenter.nodepools.node_pool", _shared_pools_repack),
        ),
        "WhenEmptyOrUnderutilized under",
    ),
    "NK-6": Row(
        (
            f"{T}components/test_gpu_operator.py::test_daemonsets_tolerate_every_taint_of_every_pool",
            f"{T}components/test_gpu_operator.py::test_coverage_fails_for_an_uncovered_taint_and_generation_follows_new_taints",
        ),
        config_case("gpu-operator-uncovered-taint", "gpuOperator.extraValues.daemonsets.tolerations:"),
        "taint",
    ),
    "NK-7": Row(
        (f"{T}config/checks/test_bad_inputs.py::test_bad_input_message",),
        config_change(_single_type_pool, DEV, "gpuPools["),
        "spot pool with 1 instance type(s)",
    ),
    "IAM-1": Row(
        (
            f"{T}policy/test_policies.py::test_pod_identity_and_irsa_trusts_are_checked",
            f"{T}test_checkov_cloudformation.py::test_a_break_is_caught_by_checkov",
        ),
        program_check(lambda regs, _: trust_scoped_findings(regs), PROD, "builders.iam.pod_identity_trust_policy", _ebs_csi_trust_unpinned),
        "Role cluster-ebs-csi: its Pod Identity trust does not pin the service account",
    ),
    "IAM-2": Row(
        (f"{T}components/test_karpenter.py::test_controller_policies_equal_the_upstream_template",),
        karpenter_policy_diff,
        "differs from the upstream",
    ),
    "IAM-3": Row(
        (
            f"{T}components/test_ingress.py::test_controller_policy_equals_the_upstream_document",
            f"{T}config/checks/test_bad_inputs.py::test_bad_input_message",
        ),
        config_case("escape-lbc-region", "ingress.extraValues.region:"),
        "is derived by the platform",
    ),
    "IAM-4": Row(
        (f"{T}components/test_cluster.py::test_ebs_csi_driver_uses_pod_identity",),
        render_check(
            ebs_csi_findings,
            lambda regs: edited(
                regs,
                "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
                next(r.name for r in regs if r.type == "aws:iam/rolePolicyAttachment:RolePolicyAttachment" and "ebs-csi" in r.name),
                lambda d: d.update(policyArn="arn:aws:iam::aws:policy/AmazonEC2FullAccess"),
            ),
        ),
        "AmazonEC2FullAccess",
    ),
    "IAM-5": Row(
        (f"{T}components/test_serving.py::test_keda_release_and_values",),
        render_check(
            keda_aws_findings,
            lambda regs: [
                *regs,
                dataclasses.replace(
                    regs[0],
                    type="aws:eks/podIdentityAssociation:PodIdentityAssociation",
                    name="keda-operator",
                    inputs={"namespace": "keda", "serviceAccount": "keda-operator", "roleArn": "arn:aws:iam::123456789012:role/x"},
                ),
            ],
        ),
        "has an AWS role",
    ),
    "IAM-6": Row(
        (
            f"{T}test_iam_invariants.py::test_an_extra_node_policy_is_found",
            f"{T}policy/test_policies.py::test_policy_fails_on_a_broken_resource",
        ),
        render_check(
            node_role_findings,
            lambda regs: edited(
                regs,
                "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
                "karpenter-node-amazonssmmanagedinstancecore",
                lambda d: d.update(policyArn="arn:aws:iam::aws:policy/AdministratorAccess"),
            ),
        ),
        "AdministratorAccess",
    ),
    "IAM-7": Row(
        (
            f"{T}test_iam_invariants.py::test_a_wildcard_write_is_found",
            f"{T}test_checkov_cloudformation.py::test_a_break_is_caught_by_checkov",
        ),
        render_check(
            wildcard_writes,
            lambda regs: edited(
                regs,
                "aws:iam/rolePolicy:RolePolicy",
                "model-llama-3-1-8b-weights-read",
                lambda d: d.update(policy=json.dumps({"Statement": [{"Effect": "Allow", "Action": "iam:PassRole", "Resource": "*"}]})),
            ),
        ),
        "iam:PassRole on every resource",
    ),
    "WS-1": Row(
        (
            f"{T}components/test_serving.py::test_namespace_is_restricted_and_ready_for_alb_readiness_gates",
            f"{T}components/test_gpu_operator.py::test_namespace_is_privileged",
        ),
        render_check(
            psa_findings,
            lambda regs: edited(
                regs,
                "kubernetes:core/v1:Namespace",
                "model-llama-3-1-8b-namespace",
                lambda d: d["metadata"]["labels"].pop("pod-security.kubernetes.io/warn"),
            ),
        ),
        "enforces baseline with warn None and audit restricted, beside its gateway",
    ),
    "WS-2": Row(
        (f"{T}components/test_serving.py::test_pod_meets_pod_security_restricted",),
        program_check(lambda regs, _: pod_security_findings(regs), PROD, "builders.serving.populate.job", _populate_adds_sys_admin),
        "populate adds capabilities ['SYS_ADMIN']",
    ),
    "WS-3": Row(
        (f"{T}components/test_serving.py::test_namespace_is_restricted_and_ready_for_alb_readiness_gates",),
        render_check(
            service_account_findings, _deploymentedited(PROD, _set(["spec", "template", "spec", "automountServiceAccountToken"], True))
        ),
        "mounts a service account token",
    ),
    "WS-4": Row(
        (
            f"{T}policy/test_policies.py::test_policy_fails_on_a_broken_resource",
            f"{T}config/checks/test_bad_inputs.py::test_bad_input_message",
        ),
        policy_check(
            "pinned-images",
            "kubernetes:apps/v1:Deployment",
            "model-llama-3-1-8b-deployment",
            lambda p: container(p).update(image="vllm/vllm-openai:latest"),
        ),
        "latest",
    ),
    "WS-5": Row(
        (
            f"{T}components/test_serving.py::test_limits_equal_requests_but_cpu_and_gpu_resource_per_sharing_mode",
            f"{T}policy/test_policies.py::test_policy_fails_on_a_broken_resource",
        ),
        policy_check(
            "requests-and-limits",
            "kubernetes:apps/v1:Deployment",
            "model-llama-3-1-8b-deployment",
            lambda p: container(p)["resources"]["limits"].update(memory="64Gi"),
            on=checks.WORKLOADS,
        ),
        "memory but limits 64Gi",
    ),
    "WS-6": Row(
        (
            f"{T}components/test_serving.py::test_hf_token_only_as_a_mounted_secret",
            f"{T}offline/test_render.py::test_no_secret_value_is_written",
            f"{T}config/test_load.py::test_plaintext_token_is_refused_without_echoing_it",
        ),
        _plus(
            program_check(
                lambda regs, _: secret_env_findings(regs), PROD, "builders.serving.populate.job", _populate_reads_the_token_from_env
            ),
            policy_check(
                "secrets-only-from-secrets",
                "kubernetes:apps/v1:Deployment",
                "model-llama-3-1-8b-deployment",
                lambda p: container(p).setdefault("env", []).append({"name": "HF_TOKEN", "value": "hf_x"}),
            ),
        ),
        "reads Secret hf-token/token into env HF_TOKEN",
    ),
    "WR-1": Row(
        (
            f"{T}components/test_serving.py::test_probes_and_drain",
            f"{T}config/derived/test_scaleup.py::test_the_startup_probe_allows_the_pessimistic_load_with_margin",
        ),
        config_case("startup-budget-too-short", "models[llama-3-1-8b].startup."),
        "below the pessimistic",
    ),
    "WR-2": Row(
        (
            f"{T}components/test_ingress.py::test_deregistration_delay_fits_the_drain",
            f"{T}config/checks/test_bad_inputs.py::test_bad_input_message",
        ),
        config_case("grace-below-drain", "models[llama-3-1-8b].drain:"),
        "terminationGracePeriodSeconds",
    ),
    "WR-3": Row(
        (f"{T}components/test_serving.py::test_selectors_are_consistent",),
        render_check(
            pdb_findings,
            lambda regs: edited(regs, "kubernetes:policy/v1:PodDisruptionBudget", None, lambda d: d["spec"].update(maxUnavailable=0)),
        ),
        "maxUnavailable: 1",
    ),
    "WR-4": Row(
        (f"{T}components/test_serving.py::test_replicas_spread_over_zones_only_when_each_fills_a_node",),
        config_change(lambda d: d["models"][0]["replicas"].update(min=1), PROD, "models[llama-3-1-8b].replicas.min:"),
        "fewer than 2 minimum replicas",
    ),
    "WR-5": Row(
        (f"{T}components/test_serving.py::test_selectors_are_consistent",),
        render_check(
            selector_findings,
            lambda regs: edited(regs, "kubernetes:core/v1:Service", None, lambda d: d["spec"].update(selector={"app": "nothing"})),
        ),
        "selects no pod",
    ),
    "WR-6": Row(
        (f"{T}config/test_fixture_stacks.py::test_prod_loads_with_only_its_placement_warnings",),
        config_change(_spot_only_prod, PROD, "models[llama-3-1-8b].pool:"),
        "spot-only",
    ),
    "WR-7": Row(
        (f"{T}components/test_serving.py::test_scheduling_on_the_pool",),
        render_check(
            do_not_disrupt_findings,
            _deploymentedited(
                PROD,
                lambda d: d["spec"]["template"]["metadata"].setdefault("annotations", {}).update({"karpenter.sh/do-not-disrupt": "true"}),
            ),
        ),
        "never disrupted",
    ),
    "AS-1": Row(
        (
            f"{T}config/checks/test_bad_inputs.py::test_bad_input_message",
            f"{T}components/test_serving.py::test_scaled_objects_validate_against_the_keda_crd",
        ),
        config_case("min-above-max", "models[llama-3-1-8b].replicas:"),
        "min (5) > max (4)",
    ),
    "AS-2": Row(
        (
            f"{T}components/test_serving.py::test_each_trigger_query_returns_exactly_one_sample",
            f"{T}components/test_serving.py::test_keda_crd_catches_a_numeric_threshold",
            f"{T}planner/test_hpa.py::test_a_missing_reading_is_an_error_not_a_zero",
        ),
        render_check(
            trigger_findings,
            lambda regs: edited(
                regs,
                "kubernetes:keda.sh/v1alpha1:ScaledObject",
                None,
                lambda d: d["spec"]["triggers"][0]["metadata"].update(ignoreNullValues="true"),
            ),
        ),
        "ignoreNullValues",
    ),
    "AS-3": Row(
        (f"{T}builders/test_observability_rules.py::test_every_query_uses_only_known_vllm_metric_names",),
        program_check(metric_name_findings, PROD, "builders.serving.scaling.kv_cache_query", _kv_cache_on_the_removed_name),
        "reads vllm:gpu_cache_usage_perc: removed before vLLM",
    ),
    "AS-4": Row(
        (
            f"{T}config/derived/test_scaleup.py::test_the_default_scale_down_window_covers_the_budget",
            f"{T}config/checks/test_bad_inputs.py::test_bad_input_message",
        ),
        config_change(_prod_window(60), PROD, "models[llama-3-1-8b].autoscaling.scaleDown.stabilizationWindowSeconds:"),
        "in prod: a dip of a few scrapes",
    ),
    "AS-5": Row(
        (
            f"{T}components/test_scale_to_zero.py::test_the_scaled_object_wakes_on_the_gateways_requests_and_keeps_its_floors",
            f"{T}config/checks/test_bad_inputs.py::test_bad_input_message",
        ),
        config_case("idle-after-shorter-than-the-budget", "models[llama-3-1-8b].autoscaling.idleAfter:"),
        "shorter than",
    ),
    "OB-1": Row(
        (
            f"{T}components/test_observability.py::test_nothing_is_exposed_and_grafana_uses_the_secret",
            f"{T}config/checks/test_bad_inputs.py::test_bad_input_message",
        ),
        config_case("escape-grafana-admin", "observability.extraValues.grafana.admin:"),
        "is derived by the platform",
    ),
    "OB-2": Row(
        (
            f"{T}components/test_ingress.py::test_only_v1_is_routed",
            f"{T}components/test_ingress.py::test_no_service_is_exposed_directly",
            f"{T}test_network_flows.py::test_vllm_open_to_the_vpc_is_found",
            f"{T}test_network_flows.py::test_vllm_open_to_the_load_balancer_is_found",
            f"{T}test_network_flows.py::test_a_client_namespace_admitted_to_vllm_is_found",
            f"{T}policy/test_policies.py::test_vllm_open_beyond_the_gateway_fails",
            f"{T}test_front_door.py::test_vllms_unguarded_routes_are_unreachable",
            f"{T}test_front_door.py::test_an_envoy_route_for_every_path_is_a_hole",
        ),
        vllm_port_sources,
        "admits vLLM's pods (8000) from the address range 10.40.0.0/18",
    ),
    "OB-3": Row(
        (
            f"{T}builders/test_observability_rules.py::test_every_alert_has_unit_tests",
            f"{T}builders/test_observability_rules.py::test_promtool_rejects_a_broken_expression",
        ),
        program_check(alert_findings, PROD, "builders.observability.rules.rule_groups", _keda_alert_on_the_obsolete_name),
        "no alert on KEDA scaler errors",
    ),
    "OB-4": Row(
        (
            f"{T}test_network_flows.py::test_a_namespace_without_default_deny_is_found",
            f"{T}policy/test_policies.py::test_a_namespace_without_default_deny_fails",
            f"{T}components/test_cluster.py::test_addons_are_pinned_and_configured",
        ),
        network_findings,
        "enableNetworkPolicy",
    ),
    "MV-1": Row(
        (
            f"{T}components/test_serving.py::test_every_core_object_passes_kubernetes_validate_strict",
            f"{T}components/test_serving.py::test_strict_validation_catches_a_typo",
        ),
        strict_validation,
        "replica",
    ),
    "MV-2": Row(
        (
            f"{T}components/test_karpenter.py::test_manifests_validate_against_the_upstream_crds",
            f"{T}components/test_karpenter.py::test_crd_validation_catches_v1beta1_shapes",
        ),
        crd_validation,
        "WhenUnderutilized",
    ),
    "MV-3": Row(
        (f"{T}config/checks/test_bad_inputs.py::test_bad_input_message",),
        config_case("memory-24GB", "models[llama-3-1-8b].resources.memory:"),
        "is not a Kubernetes quantity",
    ),
    "MV-4": Row(
        (f"{T}config/checks/test_bad_inputs.py::test_bad_input_message",), config_case("hpa-name-too-long", "models["), "name too long"
    ),
    "MV-5": Row(
        (
            f"{T}config/checks/test_bad_inputs.py::test_bad_input_message",
            f"{T}components/test_observability.py::test_release_is_pinned_and_named_for_a_stable_prometheus_address",
        ),
        config_case("vllm-not-a-release", "models[llama-3-1-8b].image:"),
        "is not a r",
    ),
}


def test_every_checklist_row_is_mapped() -> None:
    assert len(IDS) == 47
    assert sorted(ROWS) == sorted(IDS)
    checklist = SHARED / "reference" / "reliability-checklist.md"
    if checklist.exists():  # CI has ../shared beside the checkout
        assert sorted(set(re.findall(r"^\| ((?:CL|NK|IAM|WS|WR|AS|OB|MV)-\d+) \|", checklist.read_text(), re.MULTILINE))) == sorted(IDS)


@pytest.mark.parametrize("row", IDS)
def test_every_enforcing_test_exists(row: str) -> None:
    for node in ROWS[row].enforced_by:
        path, function = node.split("::")
        module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
        assert callable(getattr(module, function, None)), node


@pytest.mark.parametrize("row", IDS)
def test_the_row_holds_on_the_fixture(row: str) -> None:
    """No finding at all: any violation of the row's check on the fixture fails, not only the mutated one."""
    assert ROWS[row].check(False) == []


@pytest.mark.parametrize("row", IDS)
def test_breaking_the_row_is_caught(row: str) -> None:
    found = ROWS[row].check(True)
    assert any(ROWS[row].expect in f for f in found), found


def test_node_role_policies_are_the_checklists() -> None:
    """IAM-6 names the node role's managed policies: worker node, CNI, ECR pull, SSM."""
    assert sorted(NODE_ROLE_POLICIES) == sorted(
        ["AmazonEKSWorkerNodePolicy", "AmazonEKS_CNI_Policy", "AmazonEC2ContainerRegistryPullOnly", "AmazonSSMManagedInstanceCore"]
    )
