"""checkov's Kubernetes checks over the program's own manifests of every fixture render.

offline/render.py writes every Kubernetes object the program creates to manifests/ (the Helm
releases' values go to helm/: their templates are the upstream charts', not this program's);
checkov (an upstream scanner no one here wrote) judges those files. Every finding is fixed or
explained below, by check and object: a new finding fails, and so does an explanation that no
longer matches a finding (it would hide the next one). A broken copy of the prod render shows that
the scan reads what the builders write: each break is caught by the check named. One checkov run
covers every fixture and the broken copy.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from offline import harness, render
from policy.checks import pod_templates
from tests.conftest import FIXTURES, PROD, edited, fixture_run
from tests.validators import checkov

DEPLOYMENT = "kubernetes:apps/v1:Deployment"
JOB = "kubernetes:batch/v1:Job"

BY_TAG = [
    "Deployment/llama-3-1-8b/llama-3-1-8b",
    "Deployment/mistral-7b/mistral-7b",
    "Deployment/qwen-2-5-1-5b/qwen-2-5-1-5b",
    "Deployment/qwen-2-5-7b/qwen-2-5-7b",
    "Job/qwen-2-5-1-5b/qwen-2-5-1-5b-weights-989aa7980e4c",
    "Job/qwen-2-5-1-5b/qwen-2-5-1-5b-warm-l40s-5aa2fa6aaf",
    # the Bottlerocket fixture's image-snapshot pool model, streamed from S3 (its populate Job shares full-prod's name)
    "Job/qwen-2-5-7b/qwen-2-5-7b-weights-a09a35458c70",
    "Job/qwen-2-5-7b/qwen-2-5-7b-warm-l4-2b3f849ae8",
    # the multi-node fixture's groups (their templates scanned as Deployments: write_manifests) and populate Job
    "Deployment/llama-3-1-405b/llama-3-1-405b-leader",
    "Deployment/llama-3-1-405b/llama-3-1-405b-worker",
    "Job/llama-3-1-405b/llama-3-1-405b-weights-1c9e5a7b2d4f",
]
"""What runs a model image the non-prod fixtures pin by tag only (a model name is its namespace and Deployment)."""
PROD_WARMUPS = [
    "Job/llama-3-1-8b/llama-3-1-8b-warm-a10g-0e7fb60bfb",
    "Job/llama-3-1-8b/llama-3-1-8b-warm-l4-020fb21a45",
    "Job/llama-3-2-3b/llama-3-2-3b-warm-l40s-1d925f2408",
    "Job/llama-3-3-70b/llama-3-3-70b-warm-h100-1c7d00c105",
    "Job/qwen-2-5-7b/qwen-2-5-7b-warm-a100-b45d37d84d",
]
"""full-prod's compile warm-up Jobs (builders/serving/warmup.py): the replica's engine, with its environment."""
MODEL_IMAGE_IN_PROD = [
    *(f"Deployment/{model}/{model}" for model in ("llama-3-1-8b", "llama-3-2-3b", "llama-3-3-70b", "qwen-2-5-7b")),
    "Job/llama-3-1-8b/llama-3-1-8b-weights-0e9e39f249a1",
    "Job/llama-3-2-3b/llama-3-2-3b-weights-0cb88a4f764b",
    "Job/llama-3-3-70b/llama-3-3-70b-weights-6f6073b42301",
    "Job/qwen-2-5-7b/qwen-2-5-7b-weights-a09a35458c70",
    *PROD_WARMUPS,
    "Deployment/gpu-headroom/headroom-gpu-l4-a10g",
]
"""Everything of full-prod that runs a model's image: the replicas, the populate Jobs, the placeholders."""
API_KEY_DEPLOYMENTS = [f"Deployment/{model}/{model}" for model in ("llama-3-1-8b", "llama-3-2-3b", "llama-3-3-70b", "qwen-2-5-7b")]
"""The models whose endpoint needs an API key (full-prod's, internet-facing-tls's llama-3-1-8b). Their compile warm-ups
never hold the key (vLLM's compile cache does not depend on it: builders/serving/warmup.py)."""

TAG_ONLY = (
    "a non-prod stack may pin its image by release tag (`models[].image.tag`, never `latest`); prod "
    "must set `image.digest` (config/checks/artifacts.py rule_image_pinned), rendered as "
    "<repository>:<tag>@<digest>, which passes this check (test_prod_pins_every_model_image_by_digest)"
)
IF_NOT_PRESENT = (
    "IfNotPresent is deliberate, and checkov accepts it with a digest (prod): a replica or placeholder "
    "starting on a node that already has the ~10 GB vLLM image (warm headroom, a restart, a second "
    "replica) starts without the registry, while Always makes every pod start resolve the tag at the "
    "pull-through cache or upstream, so a registry outage or rate limit blocks scale-up; what Always "
    "protects (a pod reusing a private image another tenant's credentials pulled) has nothing to protect "
    "on a cluster that runs only the platform's own pods, from public upstream images in these stacks"
)
KEY_IN_ENV = (
    "vLLM's OpenAI server takes its key only from --api-key or the VLLM_API_KEY variable (no file "
    "option); a flag would put the key in the pod spec and the process list, so it comes from the "
    "model's Secret through secretKeyRef into the vllm container alone"
)

PROXIES = [
    f"Deployment/{m}/{m}-proxy-drained"
    for m in ("llama-3-1-8b", "llama-3-2-3b", "llama-3-3-70b", "qwen-2-5-7b", "qwen-2-5-1-5b", "mistral-7b", "llama-3-1-405b")
]
"""The platform's Envoy proxies of every fixture's models (builders/gateway/proxies.py)."""
ENVOY_BY_TAG = (
    "the Envoy image is pinned by release tag (config/facts/versions.py ENVOY_IMAGE, the router chart's own "
    "`distroless-v1.33.2`), pulled through the image cache where the stack has one; no digest is recorded for it "
    "offline. IfNotPresent for the same reason as the models' images: a proxy restarting on a node that has the "
    "image starts without the registry"
)

HEADLESS = (
    "a group's workers run `vllm serve --headless`: no API server, so nothing to probe over HTTP; the leader's probes "
    "stand for its group, and the LeaderWorkerSet recreates the whole group when a worker's process exits "
    "(RecreateGroupOnPodRestart, builders/serving/multinode.py)"
)
EXPLAINED: dict[tuple[str, str], str] = {
    **{(check, "Deployment/llama-3-1-405b/llama-3-1-405b-worker"): HEADLESS for check in ("CKV_K8S_8", "CKV_K8S_9")},
    **{(check, obj): ENVOY_BY_TAG for obj in PROXIES for check in ("CKV_K8S_43", "CKV_K8S_15")},
    **{("CKV_K8S_43", obj): TAG_ONLY for obj in BY_TAG},
    **{("CKV_K8S_15", obj): IF_NOT_PRESENT for obj in BY_TAG},
    **{("CKV_K8S_35", obj): KEY_IN_ENV for obj in API_KEY_DEPLOYMENTS},
}
"""Findings that stay, by (check id, Kind/namespace/name), with why."""

BROKEN = "broken-prod"
"""full-prod with the BREAKS applied."""


def _containers(pod: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield from pod.get("initContainers", [])
    yield from pod.get("containers", [])


def _pod(mutate: Callable[[dict[str, Any]], object]) -> Callable[[dict[str, Any]], object]:
    """A break of an object's pod template spec."""
    # never assumes what it breaks is there (a missing key would crash the module's fixture, not fail a check)
    return lambda inputs: mutate(inputs.setdefault("spec", {}).setdefault("template", {}).setdefault("spec", {}))


def _each_container(mutate: Callable[[dict[str, Any]], object]) -> Callable[[dict[str, Any]], object]:
    def change(pod: dict[str, Any]) -> None:
        for container in _containers(pod):
            mutate(container)

    return _pod(change)


def _no_probes(container: dict[str, Any]) -> None:
    container.pop("livenessProbe", None)
    container.pop("readinessProbe", None)


def _no_limits(container: dict[str, Any]) -> None:
    container.setdefault("resources", {}).pop("limits", None)


def _host_and_token(pod: dict[str, Any]) -> None:
    pod.update(hostNetwork=True, automountServiceAccountToken=True)


def _as_root(container: dict[str, Any]) -> None:
    container.setdefault("securityContext", {}).update(runAsNonRoot=False, runAsUser=0)


def _net_raw(container: dict[str, Any]) -> None:
    container.setdefault("securityContext", {})["capabilities"] = {"add": ["NET_RAW"]}


BREAKS: list[tuple[str, str, Callable[[dict[str, Any]], object], list[str]]] = [
    # (type, name, break, checks that must fail on that object)
    (DEPLOYMENT, "headroom-gpu-l4-a10g", _each_container(_no_probes), ["CKV_K8S_8", "CKV_K8S_9"]),
    (
        DEPLOYMENT,
        "model-llama-3-1-8b-deployment",
        _each_container(lambda c: c.setdefault("securityContext", {}).update(allowPrivilegeEscalation=True)),
        ["CKV_K8S_20"],
    ),
    (
        DEPLOYMENT,
        "model-llama-3-2-3b-deployment",
        _each_container(lambda c: c.setdefault("securityContext", {}).update(readOnlyRootFilesystem=False)),
        ["CKV_K8S_22"],
    ),
    (DEPLOYMENT, "model-llama-3-3-70b-deployment", _each_container(_no_limits), ["CKV_K8S_11", "CKV_K8S_13"]),
    (DEPLOYMENT, "model-qwen-2-5-7b-deployment", _pod(_host_and_token), ["CKV_K8S_19", "CKV_K8S_38"]),
    (JOB, "model-llama-3-1-8b-weights-job", _each_container(_as_root), ["CKV_K8S_23", "CKV_K8S_40"]),
    (JOB, "model-llama-3-2-3b-weights-job", _each_container(_net_raw), ["CKV_K8S_28", "CKV_K8S_37"]),
]

GUARDS = {
    "vllm": (
        "Deployment/llama-3-1-8b/llama-3-1-8b",
        [
            *("CKV_K8S_8", "CKV_K8S_9", "CKV_K8S_11", "CKV_K8S_13", "CKV_K8S_16", "CKV_K8S_19", "CKV_K8S_20"),
            *("CKV_K8S_22", "CKV_K8S_23", "CKV_K8S_28", "CKV_K8S_31", "CKV_K8S_37", "CKV_K8S_38", "CKV_K8S_40"),
        ],
    ),
    "populate": (
        "Job/llama-3-1-8b/llama-3-1-8b-weights-0e9e39f249a1",
        ["CKV_K8S_11", "CKV_K8S_13", "CKV_K8S_20", "CKV_K8S_22", "CKV_K8S_23", "CKV_K8S_38"],
    ),
    "headroom": (
        "Deployment/gpu-headroom/headroom-gpu-l4-a10g",
        ["CKV_K8S_8", "CKV_K8S_9", "CKV_K8S_11", "CKV_K8S_13", "CKV_K8S_20", "CKV_K8S_22", "CKV_K8S_23"],
    ),
}
"""Checks that must have run (passed or failed) on one object of the prod render: a check that never
runs guards nothing."""


def _broken_run() -> harness.RunResult:
    run = fixture_run(PROD)
    registrations = run.registrations
    for type_token, name, mutate, _ in BREAKS:
        registrations = edited(registrations, type_token, name, mutate)
    return dataclasses.replace(run, registrations=registrations)


def write_manifests(run: harness.RunResult, root: Path, variant: str) -> None:
    """The program's own Kubernetes objects as `make render` writes them, under root/variant/; beside each
    LeaderWorkerSet, its leader's and its worker's pod template as Deployments (`<name>-leader`, `<name>-worker`):
    checkov has no checks of its own for the kind, and its pods must pass the same ones."""
    with tempfile.TemporaryDirectory() as out:
        render.write(run, Path(out) / "render")
        shutil.move(Path(out) / "render" / "manifests", root / variant)
    for path in sorted((root / variant).rglob("leaderworkerset-*.yaml")):
        doc = yaml.safe_load(path.read_text())
        for role, template in zip(("leader", "worker"), pod_templates(doc), strict=True):
            meta = {**doc["metadata"], "name": f"{doc['metadata']['name']}-{role}"}
            labels = template["metadata"]["labels"]
            deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta}
            deployment["spec"] = {"replicas": 1, "selector": {"matchLabels": labels}, "template": template}
            path.with_name(f"deployment-{meta['name']}.yaml").write_text(yaml.safe_dump(deployment))


def _identity(doc: dict[str, Any]) -> str:
    meta = doc.get("metadata") or {}
    return f"{doc['kind']}/{meta.get('namespace') or '_cluster'}/{meta['name']}"


@dataclasses.dataclass(frozen=True)
class Scan:
    results: list[checkov.KubernetesResult]
    objects: dict[str, str]
    """Kind/namespace/name of the object in each file (relative to the scanned directory)."""

    def ran(self, variant: str) -> set[tuple[str, str]]:
        """(check id, object) of every check run on a render, passed or failed."""
        return {(r.check_id, self.objects[r.path]) for r in self.results if r.path.startswith(f"{variant}/")}

    def findings(self, variant: str) -> set[tuple[str, str]]:
        """(check id, object) of every failed check on a render."""
        return {(r.check_id, self.objects[r.path]) for r in self.results if r.path.startswith(f"{variant}/") and not r.passed}


@pytest.fixture(scope="module")
def scanned() -> Scan:
    """One checkov run over every fixture render and the broken copy."""
    checkov.require()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for stack in FIXTURES:
            write_manifests(fixture_run(stack), root, stack)
        write_manifests(_broken_run(), root, BROKEN)
        objects = {p.relative_to(root).as_posix(): _identity(yaml.safe_load(p.read_text())) for p in root.rglob("*.yaml")}
        return Scan(checkov.scan_kubernetes(root), objects)


@pytest.mark.parametrize("stack", FIXTURES)
def test_every_finding_is_fixed_or_explained(stack: str, scanned: Scan) -> None:
    unexplained = sorted(scanned.findings(stack) - set(EXPLAINED))
    assert unexplained == [], "checkov findings with no fix and no explanation in EXPLAINED"


def test_every_explanation_matches_a_finding(scanned: Scan) -> None:
    found = set().union(*(scanned.findings(stack) for stack in FIXTURES))
    assert sorted(set(EXPLAINED) - found) == []


def test_every_workload_file_was_judged(scanned: Scan) -> None:
    """A Deployment or Job checkov skipped (a parse it gave up on, a kind it does not know) would pass unseen."""
    judged = {r.path for r in scanned.results}
    workloads = {path for path, obj in scanned.objects.items() if obj.startswith(("Deployment/", "Job/"))}
    assert workloads, "the renders hold Deployments and Jobs"
    assert sorted(workloads - judged) == []


@pytest.mark.parametrize("guarded", sorted(GUARDS))
def test_the_checks_that_guard_the_pods_ran(guarded: str, scanned: Scan) -> None:
    obj, checks = GUARDS[guarded]
    ran = {check for check, o in scanned.ran(PROD) if o == obj}
    assert sorted(set(checks) - ran) == []


def test_prod_pins_every_model_image_by_digest(scanned: Scan) -> None:
    """What TAG_ONLY claims, and what keeps it from hiding a prod regression (EXPLAINED is keyed by
    object, and dev and prod share model names): in prod, both image checks pass on every object
    that runs a model image."""
    for check in ("CKV_K8S_43", "CKV_K8S_15"):
        passed = {obj for c, obj in scanned.ran(PROD) - scanned.findings(PROD) if c == check}
        assert sorted(set(MODEL_IMAGE_IN_PROD) - passed) == [], check


@pytest.mark.parametrize(
    ("type_token", "name", "checks"), [(t, n, c) for t, n, _, c in BREAKS], ids=[f"{n}-{c[0]}" for _, n, _, c in BREAKS]
)
def test_a_break_is_caught_by_checkov(type_token: str, name: str, checks: list[str], scanned: Scan) -> None:
    obj = _identity(render.manifest(fixture_run(PROD).one(type_token, name)))
    broken = scanned.findings(BROKEN) - scanned.findings(PROD)
    for check_id in checks:
        assert (check_id, obj) in broken, (check_id, obj, sorted(broken))


@pytest.mark.parametrize(("type_token", "name", "mutate"), [(t, n, m) for t, n, m, _ in BREAKS], ids=[n for _, n, _, _ in BREAKS])
def test_a_break_survives_an_object_without_its_property(type_token: str, name: str, mutate: Callable[[dict[str, Any]], object]) -> None:
    """Each break applies to an object stripped of every field, and to a container without a security context."""
    mutate({})
    mutate({"spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}})
