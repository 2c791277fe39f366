"""Every pod the program's own manifests would run, and the WS-2 and WS-6 findings over them."""

from __future__ import annotations

import copy
from typing import Any

from builders.serving.workload import API_KEY_SECRET
from config.facts.conventions import LWS_WORKER_INDEX_LABEL
from offline.mocks import Registration
from policy import checks
from tests.conftest import values

POD = "kubernetes:core/v1:Pod"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
CRON_JOB = "kubernetes:batch/v1:CronJob"
WORKLOAD_KINDS = (*checks.WORKLOADS, CRON_JOB, POD)
"""Deployments, StatefulSets, DaemonSets, Jobs, CronJobs and bare Pods: every kind that runs containers."""


def _templates(kind: str, doc: dict[str, Any]) -> list[dict[str, Any]]:
    if kind == POD:
        return [doc]
    if kind == CRON_JOB:
        return [doc["spec"]["jobTemplate"]["spec"]["template"]]
    return checks.pod_templates(doc)


def pods(regs: list[Registration]) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(namespace/name, pod metadata, pod spec) of every workload the program renders, of every kind (a
    LeaderWorkerSet's leader and worker templates each)."""
    found = []
    for r in regs:
        if r.type in WORKLOAD_KINDS:
            doc = values(r)
            for template in _templates(r.type, doc):
                found.append(
                    (
                        f"{doc['metadata'].get('namespace', 'default')}/{doc['metadata']['name']}",
                        template.get("metadata") or {},
                        template["spec"],
                    )
                )
    return found


def containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    """Init containers (sidecars too), containers and ephemeral containers."""
    return [*(pod.get("initContainers") or []), *(pod.get("containers") or []), *(pod.get("ephemeralContainers") or [])]


HOST_NAMESPACES = ("hostNetwork", "hostPID", "hostIPC", "hostUsers")


def pod_security_findings(regs: list[Registration]) -> list[str]:
    """WS-2 on every container of every workload: non-root (uid >= 10000), no privilege escalation,
    no privileged mode, capabilities exactly `drop: [ALL]` (nothing added), RuntimeDefault seccomp,
    read-only root with a size-limited emptyDir for what is written (/dev/shm in memory); and no
    host namespace, host path or host port (PSS restricted)."""
    out = []
    for name, _, pod in pods(regs):
        pod_ctx = pod.get("securityContext") or {}
        for key in HOST_NAMESPACES:
            if key != "hostUsers" and pod.get(key):
                out.append(f"{name} shares the node's {key[4:]} namespace ({key}: true)")
        volumes = {v["name"]: v for v in pod.get("volumes") or []}
        for v in volumes.values():
            if "hostPath" in v:
                out.append(f"{name} mounts the node's {v['hostPath'].get('path')} (hostPath volume {v['name']})")
            if "emptyDir" in v and not (v["emptyDir"] or {}).get("sizeLimit"):
                out.append(f"{name}: emptyDir {v['name']} has no sizeLimit")
        for c in containers(pod):
            ctx = {**pod_ctx, **(c.get("securityContext") or {})}
            where = f"{name}/{c['name']}"
            if not ctx.get("runAsNonRoot") or int(ctx.get("runAsUser", 0)) < 10000:
                out.append(f"{where} may run as root or below uid 10000")
            if ctx.get("allowPrivilegeEscalation") is not False:
                out.append(f"{where} allows privilege escalation")
            if ctx.get("privileged"):
                out.append(f"{where} is privileged")
            capabilities = ctx.get("capabilities") or {}
            if capabilities.get("drop") != ["ALL"]:
                out.append(f"{where} keeps capabilities")
            if capabilities.get("add"):
                out.append(f"{where} adds capabilities {capabilities['add']}")
            if set(capabilities) - {"drop", "add"}:
                out.append(f"{where} has unknown capability fields {sorted(set(capabilities) - {'drop', 'add'})}")
            if (ctx.get("seccompProfile") or {}).get("type") != "RuntimeDefault":
                out.append(f"{where} has no RuntimeDefault seccomp profile")
            if ctx.get("readOnlyRootFilesystem") is not True:
                out.append(f"{where} has a writable root filesystem")
            if ctx.get("procMount") not in (None, "Default"):
                out.append(f"{where} unmasks /proc (procMount {ctx['procMount']})")
            for port in c.get("ports") or []:
                if port.get("hostPort"):
                    out.append(f"{where} binds host port {port['hostPort']}")
            for m in c.get("volumeMounts") or []:
                if m.get("mountPath") == "/dev/shm":
                    v = volumes.get(m["name"]) or {}
                    if (v.get("emptyDir") or {}).get("medium") != "Memory":
                        out.append(f"{where}: /dev/shm is not a Memory emptyDir")
    return out


SECRET_NAME = checks.SECRET_ENV
"""What names a secret-looking variable: the policy pack's own pattern (HF_TOKEN, API_KEY, PASSWORD, SECRET...)."""

KEY_IN_ENV = ("VLLM_API_KEY", API_KEY_SECRET, "api-key")
"""The one secret that may reach a container through its environment: the model's API key, read by
vLLM's OpenAI server only from --api-key or the VLLM_API_KEY variable (no file option; a flag would put
it in the pod spec and the process list), from the model's Secret through secretKeyRef, into the
model Deployment's vllm container alone (the explanation tests/test_checkov_kubernetes.py gives
CKV_K8S_35, KEY_IN_ENV)."""


def _is_the_api_key(kind: str, container: dict[str, Any], env: dict[str, Any]) -> bool:
    ref = (env.get("valueFrom") or {}).get("secretKeyRef") or {}
    name, secret, key = KEY_IN_ENV
    # vLLM reads its key from the environment: the replicas' engine, and the compile warm-up's, which runs the
    # replica's exact environment (builders/serving/warmup.py: vLLM's compile cache is keyed by it)
    engine = (kind, container.get("name")) in {
        ("kubernetes:apps/v1:Deployment", "vllm"),
        (checks.LEADER_WORKER_SET, "vllm"),
        ("kubernetes:batch/v1:Job", "warm"),
    }
    return engine and env.get("name") == name and set(env) == {"name", "valueFrom"} and (ref.get("name"), ref.get("key")) == (secret, key)


def secret_env_findings(regs: list[Registration]) -> list[str]:
    """WS-6 on every container of every workload: no secret in the environment, neither a literal
    value nor a Secret reference (secretKeyRef, envFrom secretRef); only the vLLM API key (KEY_IN_ENV)
    passes. A secret-named variable may only be a file path (HF_TOKEN_PATH); no secret flag in args."""
    out = []
    for r in regs:
        if r.type not in WORKLOAD_KINDS:
            continue
        for name, _, pod in pods([r]):
            for c in containers(pod):
                where = f"{name}/{c['name']}"
                for env in c.get("env") or []:
                    var = str(env.get("name", ""))
                    from_secret = "secretKeyRef" in (env.get("valueFrom") or {})
                    if _is_the_api_key(r.type, c, env):
                        continue
                    if from_secret:
                        ref = env["valueFrom"]["secretKeyRef"]
                        out.append(f"{where} reads Secret {ref.get('name')}/{ref.get('key')} into env {var}: mount it as a file")
                    elif SECRET_NAME.search(var) and not var.endswith("_PATH"):
                        out.append(f"{where} sets {var} in its environment: mount the Secret as a file")
                for source in c.get("envFrom") or []:
                    if "secretRef" in source:
                        out.append(f"{where} loads Secret {source['secretRef'].get('name')} into its environment (envFrom)")
                for arg in [*(c.get("args") or []), *(c.get("command") or [])]:
                    if str(arg).split("=", 1)[0] in checks.SECRET_FLAGS:
                        out.append(f"{where} passes {str(arg).split('=', 1)[0]} on the command line")
    return out


def model_pod(run: Any, model: str) -> dict[str, Any]:
    """The pod spec of a model's replicas (its Deployment's template, or its LeaderWorkerSet's leader's), from an
    offline run."""
    return model_template(run, model)["spec"]  # type: ignore[no-any-return]


def model_workload(run: Any, model: str) -> dict[str, Any]:
    """A model's Deployment, or its LeaderWorkerSet where its replicas span nodes, from an offline run."""
    found = [*run.of_type(DEPLOYMENT), *run.of_type(checks.LEADER_WORKER_SET)]
    (doc,) = [values(r) for r in found if r.name in (f"model-{model}-deployment", f"model-{model}-leaderworkerset")]
    return doc  # type: ignore[no-any-return]


LWS_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"


def running_pods(doc: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(pod name, template with the labels its controller adds) of a Deployment, Job or LeaderWorkerSet as it would
    run: one pod per template, a LeaderWorkerSet's leader (`<name>`) and one worker (`<name>-worker`), labelled by
    LeaderWorkerSet v0.10.0 with their set's name and their index in the group ("0" the leader)."""
    name = doc["metadata"]["name"]
    templates = checks.pod_templates(doc)
    if "leaderWorkerTemplate" not in (doc.get("spec") or {}):
        return [(name, templates[0])]
    out = []
    for index, (pod, template) in enumerate(zip((name, f"{name}-worker"), templates, strict=True)):
        labelled = copy.deepcopy(template)
        labelled.setdefault("metadata", {})["labels"] = {
            **(template.get("metadata") or {}).get("labels", {}),
            LWS_NAME_LABEL: name,
            LWS_WORKER_INDEX_LABEL: str(index),
        }
        out.append((pod, labelled))
    return out


def model_template(run: Any, model: str) -> dict[str, Any]:
    """The pod template of a model's replicas: its Deployment's, or the leader's of its groups."""
    return checks.pod_templates(model_workload(run, model))[0]
