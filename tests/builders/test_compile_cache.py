"""The compile cache: the real weights script against a local directory standing in for S3, and the
warm-up Jobs the render writes, whose engine must be the replica's own.

`DirS3` keeps each object as a file under a directory, with its user metadata beside it, and answers
exactly the boto3 calls the script makes for the cache (list_objects_v2, get_object, upload_file with
ExtraArgs Metadata)."""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest

from builders.serving import compile_cache, warmup
from builders.serving import weights_script as script
from builders.serving import workload as builders
from config.derived import state
from config.facts.conventions import POOL_LABEL
from offline import harness
from tests.conftest import FIXTURES, PROD, fixture_run, parse, stack_data, values
from tests.support import workloads

REPO, REV = "meta-llama/Llama-3.1-8B-Instruct", "a" * 40
REPOSITORY = f"models/{REPO}/"
BUCKET = "weights"


class DirS3:
    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, key: str) -> Path:
        return self.root / "objects" / key

    def _meta(self, key: str) -> Path:
        return self.root / "metadata" / f"{key}.json"

    def list_objects_v2(self, Bucket: str, Prefix: str, MaxKeys: int) -> dict[str, Any]:  # noqa: N803 (boto3's names)
        base = self.root / "objects"
        keys = sorted(str(p.relative_to(base)) for p in base.rglob("*") if p.is_file()) if base.exists() else []
        found = [k for k in keys if k.startswith(Prefix)][:MaxKeys]
        return {"Contents": [{"Key": k, "Size": self._path(k).stat().st_size} for k in found]} if found else {}

    def get_object(self, Bucket: str, Key: str) -> dict[str, Any]:  # noqa: N803
        meta = json.loads(self._meta(Key).read_text()) if self._meta(Key).exists() else {}
        return {"Body": io.BytesIO(self._path(Key).read_bytes()), "Metadata": meta}

    def upload_file(self, path: str, bucket: str, key: str, ExtraArgs: dict[str, Any] | None = None) -> None:  # noqa: N803
        self._path(key).parent.mkdir(parents=True, exist_ok=True)
        self._path(key).write_bytes(Path(path).read_bytes())
        self._meta(key).parent.mkdir(parents=True, exist_ok=True)
        self._meta(key).write_text(json.dumps((ExtraArgs or {}).get("Metadata", {})))


class Engine:
    """Stands in for `vllm serve`: compiles (writes its caches) when started, serves after `polls` probes."""

    def __init__(self, root: Path, exit_code: int | None = None) -> None:
        self.root, self.exit_code, self.returncode = root, exit_code, None
        self.command: list[str] = []
        self.terminated = False

    def __call__(self, command: list[str]) -> Engine:
        self.command = command
        (self.root / "vllm" / "torch_compile_cache" / "abc123" / "rank_0_0").mkdir(parents=True)
        (self.root / "vllm" / "torch_compile_cache" / "abc123" / "rank_0_0" / "model").write_bytes(b"aot artifact")
        (self.root / "triton" / "kernel.cubin").parent.mkdir(parents=True)
        (self.root / "triton" / "kernel.cubin").write_bytes(b"\x7fELF sm_89")
        (self.root / "vllm-assets").mkdir()
        (self.root / "vllm-assets" / "config.json").write_text("{}")
        return self

    def poll(self) -> int | None:
        self.returncode = self.exit_code
        return self.exit_code

    def terminate(self) -> None:
        self.terminated = True

    def wait(self, timeout: float | None = None) -> int:
        return 0


def _args(root: Path, *keys: str, command: list[str] | None = None) -> argparse.Namespace:
    argv = ["wait", "--bucket", BUCKET, "--repo", REPO, "--revision", REV, "--repository", REPOSITORY, "--cache-root", str(root)]
    for k in keys:
        argv += ["--cache-key", k]
    if command:
        argv += ["--timeout-seconds", "60", "--poll-seconds", "0", "--", *command]
    return script.parse(argv)


def _warm(tmp_path: Path, s3: DirS3, key: str = "l4=k1", **engine: Any) -> tuple[int, Engine]:
    root = tmp_path / "warm-cache"
    root.mkdir()
    fake = Engine(root, **engine)
    probes = iter([False, False, True])
    code = script.warm(
        _args(root, key, command=["vllm", "serve", "s3://weights/x"]), s3, start=fake, probe=lambda _: next(probes), sleep=lambda _: None
    )
    return code, fake


def _replica(tmp_path: Path, name: str = "replica") -> Path:
    root = tmp_path / name
    root.mkdir()
    return root


def _copied_elsewhere(tmp_path: Path, s3: DirS3, key: str = "l4=k1") -> tuple[str, list[Path]]:
    """A fresh replica with this key copies the cache (its GPU unknown): the outcome, and what its cache root holds then."""
    root = _replica(tmp_path)
    outcome = script.copy_cache(_args(root, key), s3, gpu_name=lambda: None, log=lambda _: None)
    return outcome, list(root.iterdir())


def test_a_warmed_cache_is_copied_into_a_replica_whole(tmp_path: Path) -> None:
    s3 = DirS3(tmp_path / "bucket")
    code, engine = _warm(tmp_path, s3)
    assert code == 0
    assert engine.command == ["vllm", "serve", "s3://weights/x"]
    assert engine.terminated
    stored = script.cache_object(REPOSITORY, REV, "k1")
    assert stored == f"{REPOSITORY}compile-cache/{REV}/k1.tar.gz"
    with tarfile.open(s3._path(stored)) as tar:
        names = tar.getnames()
    assert "vllm/torch_compile_cache/abc123/rank_0_0/model" in names
    assert not any(n.startswith("vllm-assets") for n in names)  # the configs come from S3 anew
    root = _replica(tmp_path)
    outcome = script.copy_cache(_args(root, "l4=k1"), s3, gpu_name=lambda: None, log=lambda _: None)
    assert outcome == "hit"
    assert (root / "vllm" / "torch_compile_cache" / "abc123" / "rank_0_0" / "model").read_bytes() == b"aot artifact"
    assert (root / "triton" / "kernel.cubin").read_bytes() == b"\x7fELF sm_89"
    assert sorted(p.name for p in root.iterdir()) == ["triton", "vllm"]  # no staging left behind


def test_no_archive_yet_means_compile(tmp_path: Path) -> None:
    s3 = DirS3(tmp_path / "bucket")
    root = _replica(tmp_path)
    said: list[str] = []
    assert script.copy_cache(_args(root, "l4=k1"), s3, gpu_name=lambda: None, log=said.append) == "absent"
    assert list(root.iterdir()) == []
    assert "vLLM compiles" in said[-1]


@pytest.mark.parametrize("damage", ["truncated", "other-bytes", "no-metadata"])
def test_a_partial_or_altered_archive_is_not_used(tmp_path: Path, damage: str) -> None:
    s3 = DirS3(tmp_path / "bucket")
    _warm(tmp_path, s3)
    stored = s3._path(script.cache_object(REPOSITORY, REV, "k1"))
    if damage == "truncated":
        stored.write_bytes(stored.read_bytes()[:100])
    elif damage == "other-bytes":
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            info = tarfile.TarInfo("vllm/evil")
            tar.addfile(info, io.BytesIO(b""))
        stored.write_bytes(buf.getvalue())
    else:
        s3._meta(script.cache_object(REPOSITORY, REV, "k1")).unlink()
    assert _copied_elsewhere(tmp_path, s3) == ("partial", [])


def test_an_archive_that_does_not_extract_is_not_used(tmp_path: Path) -> None:
    s3 = DirS3(tmp_path / "bucket")
    key = script.cache_object(REPOSITORY, REV, "k1")
    junk = tmp_path / "junk"
    junk.write_bytes(b"not a tar archive")
    digest = script._digest(str(junk))
    s3.upload_file(str(junk), BUCKET, key, ExtraArgs={"Metadata": {"sha256": digest, "bytes": str(junk.stat().st_size)}})
    assert _copied_elsewhere(tmp_path, s3) == ("partial", [])


def test_another_keys_archive_is_never_fetched(tmp_path: Path) -> None:
    """The replica's key differs from the one warmed (another image or flags): it finds nothing and compiles."""
    s3 = DirS3(tmp_path / "bucket")
    _warm(tmp_path, s3, key="l4=k1")
    assert _copied_elsewhere(tmp_path, s3, "l4=k2") == ("absent", [])


def test_a_replica_picks_its_own_gpus_key_and_compiles_on_a_gpu_the_pool_has_no_key_for(tmp_path: Path) -> None:
    s3 = DirS3(tmp_path / "bucket")
    _warm(tmp_path, s3, key="l4=k-l4")
    keys = ("a10g=k-a10g", "l4=k-l4")
    on_l4 = _replica(tmp_path, "on-l4")
    assert script.copy_cache(_args(on_l4, *keys), s3, gpu_name=lambda: "NVIDIA L4", log=lambda _: None) == "hit"
    on_a10g = _replica(tmp_path, "on-a10g")
    assert script.copy_cache(_args(on_a10g, *keys), s3, gpu_name=lambda: "NVIDIA A10G", log=lambda _: None) == "absent"
    unknown = _replica(tmp_path, "unknown")
    assert script.copy_cache(_args(unknown, *keys), s3, gpu_name=lambda: None, log=lambda _: None) == "mismatch"
    assert list(on_a10g.iterdir()) == list(unknown.iterdir()) == []


@pytest.mark.parametrize(
    ("name", "labels", "expected"),
    [
        ("NVIDIA L40S", ("l4", "l40s"), "l40s"),
        ("NVIDIA L4", ("l4", "l40s"), "l4"),
        ("NVIDIA A10G", ("a10g", "l4"), "a10g"),
        ("NVIDIA A100-SXM4-40GB", ("a100", "h100"), "a100"),
        ("NVIDIA H100 80GB HBM3", ("a100", "h100"), "h100"),
        ("NVIDIA H200", ("a100", "h100"), None),
    ],
)
def test_the_gpu_name_tells_the_label(name: str, labels: tuple[str, ...], expected: str | None) -> None:
    assert script.own_label(dict.fromkeys(labels, "k"), lambda: name) == expected


def test_a_failing_bucket_never_fails_the_replica(tmp_path: Path) -> None:
    class Broken(DirS3):
        def list_objects_v2(self, **_: Any) -> dict[str, Any]:
            raise OSError("connection reset")

    root = _replica(tmp_path)
    assert script.copy_cache(_args(root, "l4=k1"), Broken(tmp_path / "b"), gpu_name=lambda: None, log=lambda _: None) == "error"


def test_a_stored_key_is_not_warmed_again(tmp_path: Path) -> None:
    s3 = DirS3(tmp_path / "bucket")
    _warm(tmp_path, s3)
    again = tmp_path / "again"
    again.mkdir()
    started: list[list[str]] = []
    code = script.warm(_args(again, "l4=k1", command=["vllm", "serve"]), s3, start=started.append, probe=lambda _: True)
    assert code == 0
    assert started == []


def test_an_engine_that_dies_before_serving_stores_nothing(tmp_path: Path) -> None:
    s3 = DirS3(tmp_path / "bucket")
    code, _ = _warm(tmp_path, s3, exit_code=1)
    assert code == 1
    assert s3.list_objects_v2(Bucket=BUCKET, Prefix=REPOSITORY, MaxKeys=10) == {}


def test_the_sweep_keeps_the_compile_cache_of_revisions_in_use(tmp_path: Path) -> None:
    s3 = DirS3(tmp_path / "bucket")
    _warm(tmp_path, s3)

    class Tagged(DirS3):
        def __init__(self, root: Path) -> None:
            super().__init__(root)
            self.tagged: list[str] = []

        def get_paginator(self, _: str) -> Any:
            outer = self

            class Pages:
                def paginate(self, Bucket: str, Prefix: str) -> list[dict[str, Any]]:  # noqa: N803
                    return [outer.list_objects_v2(Bucket=Bucket, Prefix=Prefix, MaxKeys=1000)]

            return Pages()

        def get_object_tagging(self, Bucket: str, Key: str) -> dict[str, Any]:  # noqa: N803
            return {"TagSet": []}

        def put_object_tagging(self, Bucket: str, Key: str, Tagging: dict[str, Any]) -> None:  # noqa: N803
            self.tagged.append(Key)

    bucket = Tagged(tmp_path / "bucket")
    assert script.sweep(bucket, BUCKET, REPOSITORY, [REV], dt.date(2026, 12, 4), 7) == (0, 0, 0)
    assert script.sweep(bucket, BUCKET, REPOSITORY, ["b" * 40], dt.date(2026, 12, 4), 7) == (1, 0, 0)
    assert bucket.tagged == [script.cache_object(REPOSITORY, REV, "k1")]


# -- the render: the warm-up runs the replica's engine, and the keys meet -------------------------


def _by_kind(run: harness.RunResult, kind: str, namespace: str) -> list[dict[str, Any]]:
    return [
        values(r) for r in run.registrations if r.type.endswith(f":{kind}") and values(r).get("metadata", {}).get("namespace") == namespace
    ]


@pytest.mark.parametrize("stack", FIXTURES)
def test_each_gpu_type_gets_a_warmup_running_the_replicas_engine(stack: str) -> None:
    run, cfg = fixture_run(stack), parse(stack_data(stack))
    derived = state.of(cfg)
    for model in cfg.models:
        pod = workloads.model_pod(run, model.name)
        vllm = pod["containers"][0]
        jobs = [j for j in _by_kind(run, "Job", model.name) if j["metadata"]["labels"]["app.kubernetes.io/name"] == "compile-warmup"]
        if not model.compile_cache_used:
            assert jobs == []
            continue
        labels = derived.model(model).gpu_labels
        assert labels
        wait = next(c for c in pod["initContainers"] if c["name"] == "wait-for-weights")
        command = wait["command"]
        replica_keys = dict(command[i + 1].split("=") for i, a in enumerate(command) if a == "--cache-key")
        assert sorted(replica_keys) == sorted(labels)
        assert command[command.index("--cache-root") + 1] == builders.CACHE_DIR
        assert {"name": "cache", "mountPath": builders.CACHE_DIR} in wait["volumeMounts"]
        if len(labels) > 1:  # it must see the GPU to tell its type, the one the app container then gets
            gpu = {k: v for k, v in vllm["resources"]["limits"].items() if k.startswith("nvidia.com/")}
            assert gpu.items() <= wait["resources"]["limits"].items()
        assert len(jobs) == len(labels)
        for job in jobs:
            spec = job["spec"]["template"]["spec"]
            label = spec["nodeSelector"]["karpenter.k8s.aws/instance-gpu-name"]
            (warm,) = spec["containers"]
            argv = warm["command"]
            # the replica's engine: its arguments but the server's own (on loopback), its environment but what vLLM's
            # compile cache ignores (the API key, which the warm-up never holds, and the keep-alive), resources, cache paths
            engine_argv = argv[argv.index("--") + 1 :]
            assert engine_argv[:2] == ["vllm", "serve"]
            assert engine_argv[2:] == [*compile_cache.engine_flags(vllm["args"]), "--host", "127.0.0.1", "--port", str(builders.PORT)]
            assert compile_cache.key(model, label, engine_argv[2:]) == compile_cache.key(model, label, vllm["args"])
            assert warm["env"] == [e for e in vllm["env"] if e["name"] not in warmup.KEY_NEUTRAL_ENV]
            assert not any("secretKeyRef" in (e.get("valueFrom") or {}) for e in warm["env"])
            assert job["metadata"]["annotations"] == {"pulumi.com/skipAwait": "true"}
            assert warm["resources"] == vllm["resources"]
            assert warm["image"] == vllm["image"]
            assert {"name": "cache", "mountPath": builders.CACHE_DIR} in warm["volumeMounts"]
            # where it writes: the key the replicas of that GPU type fetch, named in the Job
            assert argv[argv.index("--cache-key") + 1] == f"{label}={replica_keys[label]}"
            assert replica_keys[label][:10] in job["metadata"]["name"]
            assert argv[argv.index("--cache-root") + 1] == builders.CACHE_DIR
            assert argv[2] == "warm"
            assert spec["nodeSelector"][POOL_LABEL] == model.pool
            assert spec["serviceAccountName"] == f"{model.name}-warmup"


def test_the_key_follows_what_the_artifacts_depend_on_and_nothing_else() -> None:
    cfg = parse(stack_data(PROD))
    model = next(m for m in cfg.models if m.name == "llama-3-1-8b")
    pool = cfg.pool(model.pool)
    assert pool is not None

    def key(m: Any, alb: int = 900, bucket: str = "a") -> str:
        return compile_cache.key(m, "l4", builders.vllm_args(m, pool, alb, builders.Sources(image="x", bucket=bucket)))

    base = key(model)
    # server-only settings and the bucket's name leave it
    assert key(model, alb=600) == base
    assert key(model, bucket="b") == base
    drained = model.model_copy(update={"drain": model.drain.model_copy(update={"shutdown_timeout_seconds": 5})})
    assert key(drained) == base
    # what shapes the compiled graphs moves it
    assert key(model.model_copy(update={"revision": "c" * 40})) != base
    assert key(model.model_copy(update={"max_model_len": 4096})) != base
    graphs = model.model_copy(update={"engine": model.engine.model_copy(update={"cuda_graph_capture_max": 32})})
    assert key(graphs) != base
    assert key(model.model_copy(update={"image": model.image.model_copy(update={"tag": "v0.34.0"})})) != base
    assert compile_cache.key(model, "a10g", builders.vllm_args(model, pool, 900, builders.Sources(image="x", bucket="a"))) != base


def test_the_warmup_may_write_its_revisions_cache_only() -> None:
    from builders import weights

    doc = weights.warmup_policy("arn:aws:s3:::b", REPO, REV)
    writes = [s for s in doc["Statement"] if "s3:PutObject" in s["Action"]]
    assert [s["Resource"] for s in writes] == [f"arn:aws:s3:::b/{REPOSITORY}compile-cache/{REV}/*"]


def test_nothing_that_selects_replicas_selects_a_warmup(prod_run: harness.RunResult) -> None:
    """The Service, the PDB, the gateway's InferencePool and the PodMonitor must never count a warm-up as a replica."""
    cfg = parse(stack_data(PROD))
    monitors = [values(r)["spec"]["selector"] for r in prod_run.of_type("kubernetes:monitoring.coreos.com/v1:PodMonitor")]
    # the proxies' monitor selects by an Exists expression on the proxies' key, which a warm-up pod does not carry
    exists = [e["key"] for m in monitors for e in m.get("matchExpressions", []) if e["operator"] == "Exists"]
    assert exists
    assert not any(k in warmup.job_labels(m) for k in exists for m in cfg.models)
    monitors = [m["matchLabels"] for m in monitors if "matchLabels" in m]
    for model in cfg.models:
        pod_labels = warmup.job_labels(model)
        selectors = [builders.selector(model), builders.pod_disruption_budget(model)["spec"]["selector"]["matchLabels"]]
        selectors.append(builders.service(model)["spec"]["selector"])
        for selector in [*selectors, *monitors]:
            assert not selector.items() <= pod_labels.items(), (model.name, selector)
        assert builders.selector(model).items() <= builders.labels(model).items()  # the same check passes for a replica


def test_an_archive_with_a_path_out_of_the_cache_is_not_extracted(tmp_path: Path) -> None:
    """tarfile's `data` filter: an entry outside the cache, even with the digest the warm-up recorded, extracts nothing."""
    s3 = DirS3(tmp_path / "bucket")
    key = script.cache_object(REPOSITORY, REV, "k1")
    archive = tmp_path / "evil.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        # a link out of the cache, then a file through it: without the filter it lands beside the cache volume
        link = tarfile.TarInfo("vllm")
        link.type, link.linkname = tarfile.SYMTYPE, str(tmp_path)
        tar.addfile(link)
        info = tarfile.TarInfo("vllm/escaped")
        info.size = 4
        tar.addfile(info, io.BytesIO(b"evil"))
    meta = {"sha256": script._digest(str(archive)), "bytes": str(archive.stat().st_size)}
    s3.upload_file(str(archive), BUCKET, key, ExtraArgs={"Metadata": meta})
    root = _replica(tmp_path)
    assert script.copy_cache(_args(root, "l4=k1"), s3, gpu_name=lambda: None, log=lambda _: None) == "partial"
    assert list(root.iterdir()) == []
    assert not (tmp_path / "escaped").exists()
