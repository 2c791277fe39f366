"""The CEL validation rules of Karpenter's v1 CRDs (karpenter.sh_nodepools.yaml and
karpenter.k8s.aws_ec2nodeclasses.yaml at 1.14.1), re-implemented.

jsonschema ignores `x-kubernetes-validations`, so a manifest can pass schema validation offline
and still be rejected by the API server. These functions return the CRDs' own messages; the
config layer uses them to reject bad pool settings early, and the tests run them on every
rendered NodePool and EC2NodeClass.
"""

from __future__ import annotations

import re
from typing import Any

KARPENTER_SH_ALLOWED = ("karpenter.sh/capacity-type", "karpenter.sh/nodepool")
KARPENTER_AWS_ALLOWED = (
    "karpenter.k8s.aws/instance-tenancy",
    "karpenter.k8s.aws/capacity-reservation-type",
    "karpenter.k8s.aws/capacity-reservation-id",
    "karpenter.k8s.aws/capacity-reservation-interruptible",
    "karpenter.k8s.aws/ec2nodeclass",
    "karpenter.k8s.aws/instance-encryption-in-transit-supported",
    "karpenter.k8s.aws/instance-category",
    "karpenter.k8s.aws/instance-hypervisor",
    "karpenter.k8s.aws/instance-family",
    "karpenter.k8s.aws/instance-generation",
    "karpenter.k8s.aws/instance-local-nvme",
    "karpenter.k8s.aws/instance-size",
    "karpenter.k8s.aws/instance-cpu",
    "karpenter.k8s.aws/instance-cpu-manufacturer",
    "karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz",
    "karpenter.k8s.aws/instance-memory",
    "karpenter.k8s.aws/instance-ebs-bandwidth",
    "karpenter.k8s.aws/instance-network-bandwidth",
    "karpenter.k8s.aws/instance-gpu-name",
    "karpenter.k8s.aws/instance-gpu-manufacturer",
    "karpenter.k8s.aws/instance-gpu-count",
    "karpenter.k8s.aws/instance-gpu-memory",
    "karpenter.k8s.aws/instance-accelerator-name",
    "karpenter.k8s.aws/instance-accelerator-manufacturer",
    "karpenter.k8s.aws/instance-accelerator-count",
    "karpenter.k8s.aws/instance-capability-flex",
    "karpenter.k8s.aws/placement-group-id",
    "karpenter.k8s.aws/placement-group-partition",
)
ALIAS_FAMILIES = ("al2", "al2023", "bottlerocket", "windows2019", "windows2022", "windows2025")
NUMERIC_OPERATORS = ("Gt", "Lt", "Gte", "Lte")


def _domain(key: str) -> str:
    match = re.match(r"^([^/]+)", key)
    return match.group(1) if match else ""


def label_key_problems(key: str) -> list[str]:
    """Rules on NodePool template labels and requirement keys."""
    problems = []
    if key not in KARPENTER_SH_ALLOWED and _domain(key).endswith("karpenter.sh"):
        problems.append('label domain "karpenter.sh" is restricted')
    if key == "karpenter.sh/nodepool":
        problems.append('label "karpenter.sh/nodepool" is restricted')
    if key == "kubernetes.io/hostname":
        problems.append('label "kubernetes.io/hostname" is restricted')
    if key not in KARPENTER_AWS_ALLOWED and _domain(key).endswith("karpenter.k8s.aws"):
        problems.append('label domain "karpenter.k8s.aws" is restricted')
    return problems


def requirement_problems(requirement: dict[str, Any]) -> list[str]:
    """Rules on one NodePool requirement (key rules plus the list-level operator rules)."""
    problems = label_key_problems(str(requirement.get("key", "")))
    operator = requirement.get("operator")
    values = list(requirement.get("values") or [])
    if operator == "In" and not values:
        problems.append("requirements with operator 'In' must have a value defined")
    if operator in NUMERIC_OPERATORS and not (len(values) == 1 and str(values[0]).isdigit() and int(values[0]) >= 0):
        problems.append("requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value")
    if operator == "In" and requirement.get("minValues") is not None and len(values) < int(requirement["minValues"]):
        problems.append("requirements with 'minValues' must have at least that many values specified in the 'values' field")
    return problems


def nodepool_problems(manifest: dict[str, Any]) -> list[str]:
    spec = manifest.get("spec") or {}
    template = spec.get("template") or {}
    problems: list[str] = []
    for key in (template.get("metadata") or {}).get("labels") or {}:
        problems += label_key_problems(key)
    for requirement in (template.get("spec") or {}).get("requirements") or []:
        problems += requirement_problems(requirement)
    for budget in (spec.get("disruption") or {}).get("budgets") or []:
        if ("schedule" in budget) != ("duration" in budget):
            problems.append("'schedule' must be set with 'duration'")
    if "replicas" in spec and "weight" in spec:
        problems.append("Cannot set both 'spec.replicas' and 'spec.weight'")
    return problems


def ec2nodeclass_problems(manifest: dict[str, Any]) -> list[str]:
    spec = manifest.get("spec") or {}
    problems: list[str] = []
    terms = spec.get("amiSelectorTerms") or []
    aliases = [t["alias"] for t in terms if "alias" in t]
    for alias in aliases:
        if not re.match(r"^[a-zA-Z0-9]+@.+$", alias):
            problems.append("'alias' is improperly formatted, must match the format 'family@version'")
        elif alias.split("@")[0] not in ALIAS_FAMILIES:
            problems.append(f"family is not supported, must be one of the following: {', '.join(repr(f) for f in ALIAS_FAMILIES)}")
    if any("alias" in t and len(t) > 1 for t in terms):
        problems.append("'alias' is mutually exclusive, cannot be set with a combination of other fields in amiSelectorTerms")
    if aliases and len(terms) != 1:
        problems.append("'alias' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms")
    if ("role" in spec) == ("instanceProfile" in spec):
        problems.append("must specify exactly one of ['role', 'instanceProfile']")
    if not aliases and "amiFamily" not in spec:
        problems.append("must specify amiFamily if amiSelectorTerms does not contain an alias")
    for field in ("subnetSelectorTerms", "securityGroupSelectorTerms"):
        if not spec.get(field):
            problems.append(f"{field} must have at least one term")
    return problems


def nodeoverlay_problems(manifest: dict[str, Any]) -> list[str]:
    """Rules of the NodeOverlay CRD (karpenter.sh/v1alpha1): its requirement keys may name
    karpenter.sh/nodepool, unlike a NodePool's."""
    spec = manifest.get("spec") or {}
    problems: list[str] = []
    for requirement in spec.get("requirements") or []:
        key = str(requirement.get("key", ""))
        if key not in KARPENTER_SH_ALLOWED and _domain(key).endswith("karpenter.sh"):
            problems.append('label domain "karpenter.sh" is restricted')
        if key == "kubernetes.io/hostname":
            problems.append('label "kubernetes.io/hostname" is restricted')
        if key not in KARPENTER_AWS_ALLOWED and _domain(key).endswith("karpenter.k8s.aws"):
            problems.append('label domain "karpenter.k8s.aws" is restricted')
        operator, values = requirement.get("operator"), list(requirement.get("values") or [])
        if operator in ("In", "NotIn") and not values:
            problems.append(f"requirements with operator '{operator}' must have a value defined")
        if operator in NUMERIC_OPERATORS and not (len(values) == 1 and str(values[0]).isdigit()):
            problems.append("requirements operator 'Gt', 'Lt', 'Gte' or 'Lte' must have a single positive integer value")
    if any(k in ("cpu", "memory", "ephemeral-storage", "pods") for k in spec.get("capacity") or {}):
        problems.append("invalid resource restricted")
    if "price" in spec and "priceAdjustment" in spec:
        problems.append("cannot set both 'price' and 'priceAdjustment'")
    return problems
