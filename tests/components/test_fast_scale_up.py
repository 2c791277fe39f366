"""Fast scale-up, rendered: the weights bucket and who may read it, the populate Job and the replicas'
wait, the streamer, the image cache, warm headroom, and the scale-up budget in the outputs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from parliament import analyze_policy_string

from builders.serving import populate
from builders.serving import weights_script as script
from config.facts.conventions import HEADROOM_NAMESPACE
from config.sections import images
from offline import harness
from tests.conftest import DEV, PROD, fixture_run, parse, stack_data, values
from tests.support.iam import s3_allows
from tests.support.workloads import model_pod as _pod

DEPLOYMENT = "kubernetes:apps/v1:Deployment"
JOB = "kubernetes:batch/v1:Job"
MODEL = "llama-3-1-8b"
REVISION = "0e9e39f249a16976918f6564b8830bc894c89659"
REPOSITORY = "models/meta-llama/Llama-3.1-8B-Instruct/"
PREFIX = f"{REPOSITORY}{REVISION}"
REGISTRY = "123456789012.dkr.ecr.us-east-1.amazonaws.com"
CACHED_IMAGE = f"{REGISTRY}/llm-prod-docker-hub/vllm/vllm-openai:v0.33.0@sha256:{'0' * 64}"  # the fixture pins digests


def _one(run: harness.RunResult, type_token: str, name: str) -> dict[str, Any]:
    return values(run.one(type_token, name))


# -- the bucket -----------------------------------------------------------------------------------


def test_the_bucket_is_private_encrypted_tls_only_and_expires_what_is_retired(prod_run: harness.RunResult) -> None:
    bucket = prod_run.outputs["weightsBucket"]
    assert bucket.startswith("llm-prod-weights-")
    block = _one(prod_run, "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock", "weights")
    assert all(block[k] is True for k in ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets"))
    ownership = _one(prod_run, "aws:s3/bucketOwnershipControls:BucketOwnershipControls", "weights")
    assert ownership["rule"] == {"objectOwnership": "BucketOwnerEnforced"}
    sse = _one(prod_run, "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration", "weights")
    assert sse["rules"][0]["applyServerSideEncryptionByDefault"] == {"sseAlgorithm": "AES256"}
    policy = json.loads(_one(prod_run, "aws:s3/bucketPolicy:BucketPolicy", "weights")["policy"])
    (deny,) = policy["Statement"]
    assert (deny["Effect"], deny["Principal"], deny["Action"]) == ("Deny", "*", "s3:*")
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    assert deny["Resource"] == [f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*"]
    rules = {r["id"]: r for r in _one(prod_run, "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration", "weights")["rules"]}
    assert rules["abort-incomplete-uploads"]["abortIncompleteMultipartUpload"] == {"daysAfterInitiation": 1}
    # no expiration rule: S3 counts expiration from an object's upload, not from its retirement; the
    # populate Job deletes revisions retired weights.retiredRevisionDays ago (tests/builders/test_weights_script.py)
    assert list(rules) == ["abort-incomplete-uploads"]
    job = values(prod_run.one(JOB, f"model-{MODEL}-weights-job"))["spec"]["template"]["spec"]["containers"][0]["command"]
    assert job[job.index("--retire-days") + 1] == "7"
    # versioning stays off: a revision is never overwritten, each has its own prefix
    assert prod_run.of_type("aws:s3/bucketVersioning:BucketVersioning") == []


def test_no_bucket_when_no_model_streams(dev_run: harness.RunResult) -> None:
    assert dev_run.outputs["weightsBucket"] is None
    assert dev_run.of_type("aws:s3/bucket:Bucket") == []
    assert dev_run.of_type(JOB) == []


# -- who may read and write -------------------------------------------------------------------------


def _role_policy(run: harness.RunResult, name: str) -> dict[str, Any]:
    return json.loads(_one(run, "aws:iam/rolePolicy:RolePolicy", name)["policy"])  # type: ignore[no-any-return]


def test_replicas_read_every_revision_of_their_repository_and_write_nothing(prod_run: harness.RunResult) -> None:
    """Every revision, not only the current one: `pulumi up` updates this policy at once when the
    revision changes, while the old revision's pods keep starting until the new revision's
    populate Job has finished (builders/weights.py)."""
    bucket_arn = f"arn:aws:s3:::{prod_run.outputs['weightsBucket']}"
    policy = _role_policy(prod_run, f"model-{MODEL}-weights-read")
    actions = {a for s in policy["Statement"] for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}
    assert actions == {"s3:ListBucket", "s3:GetObject"}
    for revision in (REVISION, "b" * 40):  # the current one and the one a rollout leaves running
        prefix = f"{REPOSITORY}{revision}"
        for listed in (prefix, f"{prefix}/", f"{prefix}/{script.MARKER}"):  # the streamer's and the wait's listings
            assert s3_allows(policy, "s3:ListBucket", bucket_arn, prefix=listed), listed
        assert s3_allows(policy, "s3:GetObject", f"{bucket_arn}/{prefix}/model-00001-of-00004.safetensors")
        for write in ("s3:PutObject", "s3:DeleteObject", "s3:PutObjectTagging", "s3:DeleteObjectTagging", "s3:AbortMultipartUpload"):
            assert not s3_allows(policy, write, f"{bucket_arn}/{prefix}/config.json"), write
    # nothing of another repository, one whose name only starts like this one's included
    for other in ("models/meta-llama/Llama-3.3-70B-Instruct/", "models/meta-llama/Llama-3.1-8B-Instruct-2/"):
        assert not s3_allows(policy, "s3:ListBucket", bucket_arn, prefix=f"{other}{REVISION}/")
        assert not s3_allows(policy, "s3:GetObject", f"{bucket_arn}/{other}{REVISION}/config.json")
    assert not s3_allows(policy, "s3:ListBucket", bucket_arn, prefix="models/")
    assert not s3_allows(policy, "s3:ListBucket", bucket_arn)  # a listing of the whole bucket


def test_the_populate_job_writes_its_revision_and_retires_only_its_repository(prod_run: harness.RunResult) -> None:
    bucket_arn = f"arn:aws:s3:::{prod_run.outputs['weightsBucket']}"
    policy = _role_policy(prod_run, f"model-{MODEL}-weights-populate")
    by_sid = {s["Sid"]: s for s in policy["Statement"]}
    assert by_sid["WriteOwnRevision"]["Resource"] == f"{bucket_arn}/{PREFIX}/*"
    # tags and deletes reach the model's own repository only, never another model's weights
    assert by_sid["RetireOtherRevisions"]["Resource"] == f"{bucket_arn}/models/meta-llama/Llama-3.1-8B-Instruct/*"
    assert "s3:DeleteObject" in by_sid["RetireOtherRevisions"]["Action"]
    assert "s3:PutObject" not in by_sid["RetireOtherRevisions"]["Action"]
    assert s3_allows(policy, "s3:PutObject", f"{bucket_arn}/{PREFIX}/config.json")
    assert not s3_allows(policy, "s3:PutObject", f"{bucket_arn}/{REPOSITORY}{'b' * 40}/config.json")


@pytest.mark.parametrize("suffix", ["weights-read", "weights-populate"])
def test_parliament_finds_nothing_in_the_model_roles(prod_run: harness.RunResult, suffix: str) -> None:
    for model in parse(stack_data(PROD)).models:
        document = json.dumps(_role_policy(prod_run, f"model-{model.name}-{suffix}"))
        assert [f.issue for f in analyze_policy_string(document).findings] == []


def test_roles_are_bound_to_their_service_accounts(prod_run: harness.RunResult) -> None:
    for suffix, account in (("weights-read", MODEL), ("weights-populate", f"{MODEL}-weights")):
        association = _one(prod_run, "aws:eks/podIdentityAssociation:PodIdentityAssociation", f"model-{MODEL}-{suffix}")
        assert (association["namespace"], association["serviceAccount"]) == (MODEL, account)
        trust = json.loads(_one(prod_run, "aws:iam/role:Role", f"model-{MODEL}-{suffix}")["assumeRolePolicy"])
        (statement,) = trust["Statement"]
        assert statement["Principal"] == {"Service": "pods.eks.amazonaws.com"}
        # even a later association elsewhere (another cluster of the account too) could not lend this role to another service account
        assert statement["Condition"]["StringEquals"] == {
            "aws:RequestTag/eks-cluster-name": "llm-prod",
            "aws:RequestTag/kubernetes-namespace": MODEL,
            "aws:RequestTag/kubernetes-service-account": account,
        }


# -- populate Job and the replicas' wait --------------------------------------------------------------


def test_one_populate_job_per_revision_on_the_models_pool(prod_run: harness.RunResult) -> None:
    job = prod_run.one(JOB, f"model-{MODEL}-weights-job")
    doc = values(job)
    assert doc["metadata"]["name"] == f"{MODEL}-weights-{REVISION[:12]}"
    spec = doc["spec"]["template"]["spec"]
    assert spec["nodeSelector"] == {"llm-platform.io/gpu-pool": "gpu-l4-a10g"}
    assert spec["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert spec["serviceAccountName"] == f"{MODEL}-weights"
    (container,) = spec["containers"]
    assert container["image"] == CACHED_IMAGE  # the image lands on a pool node before the first replica
    assert "nvidia.com/gpu" not in container["resources"]["requests"]
    command = container["command"]
    assert command[:3] == ["python3", "/opt/llm-platform/weights.py", "populate"]
    assert command[command.index("--keep") + 1 :] == [REVISION]
    # the gated model's token is mounted into the Job, never into the replicas
    assert {"name": "HF_TOKEN_PATH", "value": "/var/run/secrets/huggingface/token"} in container["env"]
    assert doc["spec"]["podFailurePolicy"]["rules"][0]["onExitCodes"]["values"] == [script.PERMANENT]
    assert doc["metadata"]["annotations"] == {"pulumi.com/replaceUnready": "true"}
    minutes = f"{populate.populate_seconds(parse(stack_data(PROD)).models[0]) // 60}m"
    assert job.custom_timeouts == {"create": minutes, "update": minutes}


def test_the_job_is_not_a_vllm_pod(prod_run: harness.RunResult) -> None:
    job_labels = values(prod_run.one(JOB, f"model-{MODEL}-weights-job"))["spec"]["template"]["metadata"]["labels"]
    selector = values(prod_run.one("kubernetes:core/v1:Service", f"model-{MODEL}-service"))["spec"]["selector"]
    assert not selector.items() <= job_labels.items()  # the Service, the PDB and the monitors never pick it


def test_replicas_wait_for_the_revision_then_stream_it(prod_run: harness.RunResult) -> None:
    pod = _pod(prod_run, MODEL)
    (wait,) = pod["initContainers"]
    assert wait["image"] == pod["containers"][0]["image"] == CACHED_IMAGE
    assert wait["command"][2] == "wait"
    # as long as the whole Job may run, all its tries (builders/serving/populate.py)
    timeout = wait["command"][wait["command"].index("--timeout-seconds") + 1]
    assert timeout == str(populate.populate_seconds(parse(stack_data(PROD)).models[0]))
    vllm = pod["containers"][0]
    env = {e["name"]: e.get("value") for e in vllm["env"]}
    assert env["AWS_REGION"] == env["AWS_DEFAULT_REGION"] == "us-east-1"
    assert env["HF_HUB_OFFLINE"] == "1"
    assert env["VLLM_ASSETS_CACHE"].startswith("/cache/")
    assert "HF_TOKEN_PATH" not in env
    assert not any(v["name"] == "hf-token" for v in pod["volumes"])
    deployment = prod_run.one(DEPLOYMENT, f"model-{MODEL}-deployment")
    assert f"{JOB}::model-{MODEL}-weights-job" in deployment.dependencies


def test_the_script_config_map_is_the_tested_script(prod_run: harness.RunResult) -> None:
    data = _one(prod_run, "kubernetes:core/v1:ConfigMap", f"model-{MODEL}-weights-script")["data"]
    assert data == {"weights.py": Path(script.__file__).read_text(encoding="utf-8")}


def test_streaming_pods_may_reach_the_pod_identity_agent(prod_run: harness.RunResult) -> None:
    agent = {"to": [{"ipBlock": {"cidr": "169.254.170.23/32"}}], "ports": [{"protocol": "TCP", "port": 80}]}
    for name in (f"model-{MODEL}-netpol-{MODEL}", f"model-{MODEL}-netpol-weights"):
        policy = _one(prod_run, "kubernetes:networking.k8s.io/v1:NetworkPolicy", name)
        assert agent in policy["spec"]["egress"]
        https = [r for r in policy["spec"]["egress"] if r["ports"] == [{"protocol": "TCP", "port": 443}]]
        assert len(https) == 1
        assert https[0]["to"][0]["ipBlock"]["cidr"] == "0.0.0.0/0"
        assert "10.0.0.0/8" in https[0]["to"][0]["ipBlock"]["except"]
    job_policy = _one(prod_run, "kubernetes:networking.k8s.io/v1:NetworkPolicy", f"model-{MODEL}-netpol-weights")
    assert "ingress" not in job_policy["spec"]  # the Job takes no traffic


# -- images through the cache -----------------------------------------------------------------------


def test_prod_pulls_through_the_cache_and_dev_from_upstream(prod_run: harness.RunResult, dev_run: harness.RunResult) -> None:
    assert prod_run.outputs["imageRegistry"] == REGISTRY
    for model in parse(stack_data(PROD)).models:
        assert _pod(prod_run, model.name)["containers"][0]["image"] == CACHED_IMAGE
    assert _pod(dev_run, MODEL)["containers"][0]["image"] == "vllm/vllm-openai:v0.33.0"
    assert dev_run.of_type("aws:ecr/pullThroughCacheRule:PullThroughCacheRule") == []


def test_the_cache_rule_its_credential_and_the_node_roles(prod_run: harness.RunResult) -> None:
    rule = _one(prod_run, "aws:ecr/pullThroughCacheRule:PullThroughCacheRule", "image-cache-docker-hub")
    assert rule["upstreamRegistryUrl"] == "registry-1.docker.io"
    assert rule["ecrRepositoryPrefix"] == "llm-prod-docker-hub"
    secret = _one(prod_run, "aws:secretsmanager/secret:Secret", "image-cache-docker-hub")
    assert secret["name"].startswith(images.CREDENTIAL_SECRET_PREFIX)  # ECR reads no other secret
    version = prod_run.one("aws:secretsmanager/secretVersion:SecretVersion", "image-cache-docker-hub")
    assert harness.PLACEHOLDER not in json.dumps(version.redacted())  # the token stays a secret
    assert json.loads(values(version)["secretString"]) == {"username": "llm-platform-ci", "accessToken": harness.PLACEHOLDER}
    roles = {values(r)["role"] for r in prod_run.of_type("aws:iam/rolePolicy:RolePolicy") if r.name.startswith("image-cache-node-import")}
    node_roles = {prod_run.one("aws:iam/role:Role", n).id for n in ("karpenter-node", "cluster-system-nodes")}
    assert len(roles) == 2
    assert roles == node_roles
    policy = json.loads(values(prod_run.one("aws:iam/rolePolicy:RolePolicy", "image-cache-node-import-0"))["policy"])
    assert policy["Statement"][0]["Action"] == ["ecr:BatchImportUpstreamImage", "ecr:CreateRepository"]
    assert policy["Statement"][0]["Resource"] == ["arn:aws:ecr:us-east-1:123456789012:repository/llm-prod-docker-hub/*"]


@pytest.mark.parametrize(
    ("repository", "expected"),
    [
        ("vllm/vllm-openai", f"{REGISTRY}/s-docker-hub/vllm/vllm-openai:v0.33.0@sha256:{'a' * 64}"),
        ("docker.io/library/ubuntu", f"{REGISTRY}/s-docker-hub/library/ubuntu:v0.33.0@sha256:{'a' * 64}"),
        ("ubuntu", f"{REGISTRY}/s-docker-hub/library/ubuntu:v0.33.0@sha256:{'a' * 64}"),
        ("quay.io/org/vllm", f"{REGISTRY}/s-quay/org/vllm:v0.33.0@sha256:{'a' * 64}"),
        ("ghcr.io/org/vllm", f"ghcr.io/org/vllm:v0.33.0@sha256:{'a' * 64}"),
        (f"{REGISTRY}/mine/vllm", f"{REGISTRY}/mine/vllm:v0.33.0@sha256:{'a' * 64}"),
    ],
)
def test_image_rewrite_keeps_tag_and_digest(repository: str, expected: str) -> None:
    from config.sections.models import Image

    image = Image(repository=repository, tag="v0.33.0", digest=f"sha256:{'a' * 64}")
    assert images.image_reference(image, REGISTRY, "s") == expected
    assert images.image_reference(image, None, "s") == image.reference


def test_rule_prefixes_fit_ecr_and_keep_stacks_apart() -> None:
    long = images.rule_prefix("a-very-long-cluster-name-for-prod", images.DOCKER_HUB)
    assert len(long) <= 30
    assert long.endswith("-docker-hub")
    assert images.rule_prefix("llm-dev", images.DOCKER_HUB) != images.rule_prefix("llm-prod", images.DOCKER_HUB)


# -- warm headroom ----------------------------------------------------------------------------------


def test_headroom_placeholders_step_aside_for_any_replica(prod_run: harness.RunResult) -> None:
    priority = _one(prod_run, "kubernetes:scheduling.k8s.io/v1:PriorityClass", "headroom-priority-class")
    assert (priority["value"], priority["globalDefault"]) == (-1000, False)
    assert "preemptionPolicy" not in priority
    for model in parse(stack_data(PROD)).models:
        assert "priorityClassName" not in _pod(prod_run, model.name)  # priority 0: preempts placeholders
    doc = _one(prod_run, DEPLOYMENT, "headroom-gpu-l4-a10g")
    assert doc["metadata"]["namespace"] == HEADROOM_NAMESPACE
    assert doc["spec"]["replicas"] == 1
    pod = doc["spec"]["template"]["spec"]
    assert pod["priorityClassName"] == "llm-platform-headroom"
    assert pod["terminationGracePeriodSeconds"] == 0
    assert pod["nodeSelector"] == {"llm-platform.io/gpu-pool": "gpu-l4-a10g"}
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    (hold,) = pod["containers"]
    assert hold["image"] == CACHED_IMAGE  # the model's image, pulled onto the warm node
    assert hold["command"] == ["sleep", "infinity"]
    # cheap probes that run the binary the command already needs (no shell in the image required)
    for kind in ("livenessProbe", "readinessProbe"):
        assert hold[kind] == {"exec": {"command": ["sleep", "0"]}, "periodSeconds": 300, "timeoutSeconds": 5, "failureThreshold": 3}
    assert "startupProbe" not in hold
    # room for one 8B replica: its GPU, CPU and memory
    assert hold["resources"]["requests"] == {"cpu": "3000m", "memory": "12288Mi", "nvidia.com/gpu": "1"}
    assert hold["resources"]["limits"] == hold["resources"]["requests"]
    namespace = _one(prod_run, "kubernetes:core/v1:Namespace", "headroom-namespace")
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    deny = _one(prod_run, "kubernetes:networking.k8s.io/v1:NetworkPolicy", "headroom-netpol-default-deny")
    assert deny["spec"] == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}


def test_every_placeholder_container_is_probed_with_its_own_command() -> None:
    """A pool of several images: the pull-only containers carry the same probes, and each probe
    runs the binary of the container's own command; the held resources stay on the first."""
    from builders import headroom as builder
    from config.derived import headroom

    cfg = parse(stack_data(PROD))
    pool = cfg.pool("gpu-l4-a10g")
    assert pool is not None
    shape = headroom.placeholders(pool.model_copy(update={"headroom": 1}), [m for m in cfg.models if m.pool == pool.name])
    assert shape is not None
    doc = builder.deployment(pool, shape, ["vllm/vllm-openai:v0.33.0", "vllm/vllm-openai:v0.32.0"])
    first, pull_only = doc["spec"]["template"]["spec"]["containers"]
    assert pull_only["resources"]["requests"] == builder.PULL_ONLY
    assert first["resources"]["requests"]["nvidia.com/gpu"] == str(shape.count)
    for container in (first, pull_only):
        for kind in ("livenessProbe", "readinessProbe"):
            assert container[kind]["exec"]["command"][0] == container["command"][0]
            assert container[kind]["timeoutSeconds"] <= 5 <= 300 <= container[kind]["periodSeconds"]
    first["livenessProbe"]["exec"]["command"].append("x")
    assert pull_only["livenessProbe"]["exec"]["command"] == ["sleep", "0"]  # no probe shares its lists


def test_no_headroom_objects_without_headroom(dev_run: harness.RunResult) -> None:
    assert dev_run.of_type("kubernetes:scheduling.k8s.io/v1:PriorityClass") == []


def test_shared_pools_hold_a_whole_gpu_of_slices() -> None:
    from config.derived import headroom

    cfg = parse(stack_data(PROD))
    pool = cfg.pool("gpu-l40s-shared")
    assert pool is not None
    shape = headroom.placeholders(pool.model_copy(update={"headroom": 2}), [m for m in cfg.models if m.pool == pool.name])
    assert shape is not None
    # two time-slices per GPU: each placeholder holds both slices, and CPU and memory for two replicas
    assert (shape.pods, shape.resource, shape.count, shape.cpu_millis) == (2, "nvidia.com/gpu", 2, 3000)


# -- the budget in the outputs ------------------------------------------------------------------------


@pytest.mark.parametrize("stack", [DEV, PROD])
def test_every_model_exports_its_budget(stack: str) -> None:
    run = fixture_run(stack)
    for name, entry in run.outputs["models"].items():
        budget = entry["scaleUpSeconds"]
        assert budget["miss"] == sum(budget["terms"].values()), name
        assert budget["hit"] == budget["miss"] - budget["terms"]["nodeLaunch"] - budget["terms"]["imagePull"]
