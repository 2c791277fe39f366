"""The weights script the populate Job and the replicas' wait run: against an in-memory S3 and hub.

The fakes implement exactly the boto3 calls the script makes (list_objects_v2 and its paginator,
with each object's Size, get_object, upload_file, put_object, delete_object, object tagging).
Checkpoint sizes are in bytes and small, so the fake hub writes each file at its listed size.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError

from builders.serving import populate
from builders.serving import weights_script as script
from builders.serving.workload import Sources
from tests.conftest import PROD, parse, stack_data

REPO, REV, OLD = "meta-llama/Llama-3.1-8B-Instruct", "a" * 40, "b" * 40
REPOSITORY = f"models/{REPO}/"


class FakeS3:
    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}
        self.tags: dict[str, list[dict[str, str]]] = {}
        self.calls: list[str] = []
        self.errors: list[Exception] = []
        """Raised by the next listings, one each, before they answer again."""

    def _item(self, key: str) -> dict[str, Any]:
        return {"Key": key, "Size": len(self.objects[key])}

    def list_objects_v2(self, Bucket: str, Prefix: str, MaxKeys: int) -> dict[str, Any]:  # noqa: N803 (boto3's names)
        if self.errors:
            raise self.errors.pop(0)
        keys = sorted(k for k in self.objects if k.startswith(Prefix))[:MaxKeys]
        return {"Contents": [self._item(k) for k in keys]} if keys else {}

    def get_object(self, Bucket: str, Key: str) -> dict[str, Any]:  # noqa: N803
        return {"Body": io.BytesIO(self.objects[Key])}

    def delete_object(self, Bucket: str, Key: str) -> None:  # noqa: N803
        self.calls.append(f"delete {Key}")
        del self.objects[Key]
        self.tags.pop(Key, None)

    def upload_file(self, path: str, bucket: str, key: str) -> None:
        self.calls.append(f"upload {key}")
        self.objects[key] = Path(path).read_bytes()

    def put_object(self, Bucket: str, Key: str, Body: bytes) -> None:  # noqa: N803
        self.calls.append(f"put {Key}")
        self.objects[Key] = Body

    def get_paginator(self, name: str) -> FakeS3:
        assert name == "list_objects_v2"
        return self

    def paginate(self, Bucket: str, Prefix: str) -> list[dict[str, Any]]:  # noqa: N803
        keys = sorted(k for k in self.objects if k.startswith(Prefix))
        return [{"Contents": [self._item(k) for k in keys[:2]]}, {"Contents": [self._item(k) for k in keys[2:]]}]

    def get_object_tagging(self, Bucket: str, Key: str) -> dict[str, Any]:  # noqa: N803
        return {"TagSet": self.tags.get(Key, [])}

    def put_object_tagging(self, Bucket: str, Key: str, Tagging: dict[str, Any]) -> None:  # noqa: N803
        self.tags[Key] = Tagging["TagSet"]

    def delete_object_tagging(self, Bucket: str, Key: str) -> None:  # noqa: N803
        self.tags.pop(Key, None)


class FakeHub:
    def __init__(self, files: dict[str, int], fail_at: int | None = None) -> None:
        self.listing = files
        self.downloads: list[str] = []
        self.fail_at = fail_at
        """The download (0-based) that fails as a network error would, as in a try that dies mid-way."""

    def files(self, repo: str, revision: str) -> list[tuple[str, int]]:
        return list(self.listing.items())

    def download(self, repo: str, revision: str, name: str, scratch: str) -> str:
        if len(self.downloads) == self.fail_at:
            raise ConnectionResetError("the hub closed the connection")
        self.downloads.append(name)
        path = Path(scratch) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x" * self.listing[name])
        return str(path)


CHECKPOINT = {
    "model-00001-of-00002.safetensors": 5_000,
    "model-00002-of-00002.safetensors": 1_000,
    "model.safetensors.index.json": 20,
    "config.json": 8,
    "tokenizer.json": 90,
    "original/consolidated.00.pth": 16_000,
    "README.md": 40,
}
"""A checkpoint's shape, in bytes: sorted, the script copies config.json, model-00001..., model-00002...,
model.safetensors.index.json, tokenizer.json."""


def _args(tmp_path: Path, mode: str = "populate", **extra: Any) -> argparse.Namespace:
    argv = [mode, "--bucket", "weights", "--repo", REPO, "--revision", REV, "--repository", REPOSITORY]
    argv += ["--scratch", str(tmp_path), "--scratch-bytes", str(30 * 10**9), "--keep", REV]
    args = script.parse(argv)
    for key, value in extra.items():  # e.g. timeout_seconds
        setattr(args, key, value)
    return args


def test_copies_what_vllm_reads_one_file_at_a_time_and_writes_the_marker_last(tmp_path: Path) -> None:
    s3, hub = FakeS3(), FakeHub(CHECKPOINT)
    assert script.populate(_args(tmp_path), s3, hub, log=lambda _: None) == 0
    prefix = f"{REPOSITORY}{REV}"
    copied = sorted(k.removeprefix(prefix + "/") for k in s3.objects if k != f"{prefix}/{script.MARKER}")
    assert copied == sorted(
        [
            "model-00001-of-00002.safetensors",
            "model-00002-of-00002.safetensors",
            "model.safetensors.index.json",
            "config.json",
            "tokenizer.json",
        ]
    )
    assert s3.calls[-1] == f"put {prefix}/{script.MARKER}"  # the marker only after every file
    marker = json.loads(s3.objects[f"{prefix}/{script.MARKER}"])
    assert (marker["revision"], marker["bytes"]) == (REV, sum(CHECKPOINT[n] for n in copied))
    assert list(tmp_path.rglob("*.safetensors")) == []  # scratch holds no file after its upload


def test_a_complete_revision_is_not_copied_again(tmp_path: Path) -> None:
    s3, hub = FakeS3(), FakeHub(CHECKPOINT)
    assert script.populate(_args(tmp_path), s3, hub, log=lambda _: None) == 0
    s3.calls.clear()
    hub.downloads.clear()
    assert script.populate(_args(tmp_path), s3, hub, log=lambda _: None) == 0
    assert hub.downloads == []
    assert s3.calls == []


def test_a_marker_whose_files_are_gone_is_copied_again(tmp_path: Path) -> None:
    s3, hub = FakeS3(), FakeHub(CHECKPOINT)
    assert script.populate(_args(tmp_path), s3, hub, log=lambda _: None) == 0
    del s3.objects[f"{REPOSITORY}{REV}/model-00002-of-00002.safetensors"]
    hub.downloads.clear()
    assert script.populate(_args(tmp_path), s3, hub, log=lambda _: None) == 0
    assert "model-00002-of-00002.safetensors" in hub.downloads


def test_a_retry_after_a_failure_mid_way_copies_only_the_missing_files(tmp_path: Path) -> None:
    s3, prefix = FakeS3(), f"{REPOSITORY}{REV}"
    with pytest.raises(ConnectionResetError):  # the first try dies on its third download
        script.populate(_args(tmp_path), s3, FakeHub(CHECKPOINT, fail_at=2), log=lambda _: None)
    assert sorted(s3.objects) == [f"{prefix}/config.json", f"{prefix}/model-00001-of-00002.safetensors"]
    # an object of another size (say, a file the hub changed under an unpinned name) is copied again
    s3.objects[f"{prefix}/config.json"] = b"x" * 3
    s3.calls.clear()
    hub, lines = FakeHub(CHECKPOINT), []
    assert script.populate(_args(tmp_path), s3, hub, log=lines.append) == 0
    assert hub.downloads == ["config.json", "model-00002-of-00002.safetensors", "model.safetensors.index.json", "tokenizer.json"]
    assert [c for c in s3.calls if c.startswith("upload")] == [f"upload {prefix}/{n}" for n in hub.downloads]
    assert "model-00001-of-00002.safetensors (0.00 GB) is already in S3" in lines
    assert len(s3.objects[f"{prefix}/config.json"]) == CHECKPOINT["config.json"]
    marker = json.loads(s3.objects[f"{prefix}/{script.MARKER}"])
    assert marker["bytes"] == sum(size for name, size in CHECKPOINT.items() if script.wanted(name))  # skipped files count


def test_a_checkpoint_without_safetensors_fails_for_good(tmp_path: Path) -> None:
    hub = FakeHub({"pytorch_model.bin": 16_000_000_000, "config.json": 800})
    with pytest.raises(script.Failure, match=r"has no \*\.safetensors files.*weights\.source: huggingface"):
        script.populate(_args(tmp_path), FakeS3(), hub, log=lambda _: None)


def test_a_file_larger_than_scratch_fails_before_any_download(tmp_path: Path) -> None:
    hub = FakeHub({"model.safetensors": 40 * 10**9, "config.json": 800})
    with pytest.raises(script.Failure, match=r"model\.safetensors \(40\.0 GB\) exceed the Job's scratch space of 30 GB"):
        script.populate(_args(tmp_path), FakeS3(), hub, log=lambda _: None)
    assert hub.downloads == []


def test_revisions_no_model_uses_are_retired_then_deleted_after_the_grace_days() -> None:
    s3 = FakeS3()
    for rev in (REV, OLD):
        for name in ("config.json", "model.safetensors", script.MARKER):
            s3.objects[f"{REPOSITORY}{rev}/{name}"] = b"x"
    day = dt.date(2026, 11, 30)
    assert script.sweep(s3, "weights", REPOSITORY, [REV], day, 7) == (3, 0, 0)
    retired = {k for k, tags in s3.tags.items() if tags == [{"Key": script.RETIRED_KEY, "Value": "2026-11-30"}]}
    assert retired == {f"{REPOSITORY}{OLD}/{n}" for n in ("config.json", "model.safetensors", script.MARKER)}
    # idempotent, and the retirement day does not move while the revision stays unused
    assert script.sweep(s3, "weights", REPOSITORY, [REV], day + dt.timedelta(days=6), 7) == (0, 0, 0)
    # a rollback inside the grace days: back in use, untagged, nothing to download again
    assert script.sweep(s3, "weights", REPOSITORY, [OLD], day + dt.timedelta(days=6), 7) == (3, 3, 0)
    assert all(k.startswith(f"{REPOSITORY}{REV}/") for k in s3.tags)
    # seven days after its retirement the newer revision is deleted; the one in use stays
    assert script.sweep(s3, "weights", REPOSITORY, [OLD], day + dt.timedelta(days=13), 7) == (0, 0, 3)
    assert sorted(s3.objects) == sorted(f"{REPOSITORY}{OLD}/{n}" for n in ("config.json", "model.safetensors", script.MARKER))


def test_a_revision_the_token_cannot_reach_fails_for_good(monkeypatch: pytest.MonkeyPatch) -> None:
    class GatedRepoError(Exception):
        pass

    class Api:
        def model_info(self, *args: Any, **kwargs: Any) -> None:
            raise GatedRepoError("401")

    monkeypatch.setitem(sys.modules, "huggingface_hub", types.SimpleNamespace(HfApi=Api))
    with pytest.raises(script.Failure, match="GatedRepoError: the repository is gated"):
        script.HuggingFaceHub().files(REPO, REV)


def test_wait_returns_once_the_marker_exists(tmp_path: Path) -> None:
    s3 = FakeS3()
    polls: list[float] = []

    def sleep(seconds: float) -> None:
        polls.append(seconds)
        if len(polls) == 2:
            s3.objects[f"{REPOSITORY}{REV}/{script.MARKER}"] = b"{}"

    assert script.wait(_args(tmp_path, "wait"), s3, sleep=sleep, log=lambda _: None) == 0
    assert len(polls) == 2


def test_wait_gives_up_at_its_deadline(tmp_path: Path) -> None:
    assert script.wait(_args(tmp_path, "wait", timeout_seconds=0), FakeS3(), sleep=lambda _: None, log=lambda _: None) == 1


def _denied() -> ClientError:
    return ClientError({"Error": {"Code": "AccessDenied", "Message": "Access Denied"}}, "ListObjectsV2")


def test_wait_polls_through_aws_and_network_errors(tmp_path: Path) -> None:
    """A denied listing (a revision change's policy update), no credentials yet (the Pod Identity
    agent starting), an endpoint that does not answer: each is one log line and another poll."""
    s3 = FakeS3()
    s3.objects[f"{REPOSITORY}{REV}/{script.MARKER}"] = b"{}"
    s3.errors = [_denied(), NoCredentialsError(), EndpointConnectionError(endpoint_url="https://s3.us-east-1.amazonaws.com")]
    polls: list[float] = []
    lines: list[str] = []
    assert script.wait(_args(tmp_path, "wait"), s3, sleep=polls.append, log=lines.append) == 0
    assert polls == [10, 10, 10]
    where = f"s3://weights/{REPOSITORY}{REV}"
    assert lines == [
        f"listing {where} failed: {code}; retrying in 10 s" for code in ("AccessDenied", "NoCredentialsError", "EndpointConnectionError")
    ]


def test_wait_on_errors_still_ends_at_its_deadline(tmp_path: Path) -> None:
    s3, lines = FakeS3(), []
    s3.errors = [_denied()]
    assert script.wait(_args(tmp_path, "wait", timeout_seconds=0), s3, sleep=lambda _: None, log=lines.append) == 1
    assert lines == [f"s3://weights/{REPOSITORY}{REV} is still incomplete after 0 s; the last listing failed: AccessDenied"]


def test_wait_does_not_swallow_what_is_no_aws_error(tmp_path: Path) -> None:
    s3 = FakeS3()
    s3.errors = [KeyError("Contents")]
    with pytest.raises(KeyError):
        script.wait(_args(tmp_path, "wait"), s3, sleep=lambda _: None, log=lambda _: None)


def test_aws_errors_are_told_by_class_name_without_botocore() -> None:
    class ClientError(Exception):  # what the script sees of botocore: a name and a response
        def __init__(self) -> None:
            self.response = {"Error": {"Code": "SlowDown"}}

    class BotoCoreError(Exception):
        pass

    class ReadTimeoutError(BotoCoreError):
        pass

    assert script.aws_error_code(ClientError()) == "SlowDown"
    assert script.aws_error_code(ReadTimeoutError()) == "ReadTimeoutError"
    assert script.aws_error_code(ConnectionResetError()) == "ConnectionResetError"
    assert script.aws_error_code(ValueError()) is None


def test_an_image_without_the_streamer_fails_clearly(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(script, "streamer_present", lambda: False)
    code = script.main(["wait", "--bucket", "weights", "--repo", REPO, "--revision", REV, "--repository", REPOSITORY])
    assert code == script.PERMANENT
    assert "lacks the Run:ai Model Streamer" in capsys.readouterr().err


MAIN_ARGS = ["--bucket", "weights", "--repo", REPO, "--revision", REV, "--repository", REPOSITORY]


@pytest.mark.parametrize("missing", ["boto3", "huggingface_hub"])
def test_populate_in_an_image_without_its_modules_fails_for_good(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], missing: str
) -> None:
    monkeypatch.setitem(sys.modules, "huggingface_hub", types.ModuleType("huggingface_hub"))
    monkeypatch.setitem(sys.modules, missing, None)  # `import` raises ImportError
    assert script.main(["populate", *MAIN_ARGS]) == script.PERMANENT  # the Job's FailJob rule: no retries
    err = capsys.readouterr().err
    assert f"populate: this image lacks the python module {missing}, which the populate Job needs" in err
    assert "vLLM's `runai` extra" in err
    assert "weights.source: huggingface" in err


def test_wait_in_an_image_without_boto3_fails_for_good(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "runai_model_streamer_s3", types.ModuleType("runai_model_streamer_s3"))
    monkeypatch.setitem(sys.modules, "boto3", None)
    assert script.main(["wait", *MAIN_ARGS]) == script.PERMANENT
    err = capsys.readouterr().err
    assert "wait: this image lacks the Run:ai Model Streamer (python module runai_model_streamer_s3) or boto3" in err
    assert "weights.source: huggingface" in err


def test_the_script_needs_nothing_beyond_the_standard_library_to_import() -> None:
    source = Path(script.__file__).read_text()
    top_level = [line for line in source.splitlines() if line.startswith(("import ", "from "))]
    stdlib = {"__future__", "argparse", "datetime", "fnmatch", "hashlib", "json", "os", "shutil", "subprocess", "sys", "tarfile"}
    stdlib |= {"tempfile", "time", "urllib", "collections", "typing"}
    assert all(line.split()[1].split(".")[0] in stdlib for line in top_level)
    assert all(name in sys.stdlib_module_names for name in stdlib)


class ConfigHub(FakeHub):
    """A hub whose config.json says how the checkpoint is quantized."""

    def __init__(self, files: dict[str, int], config: dict[str, Any]) -> None:
        super().__init__(files)
        self.config = json.dumps(config).encode()

    def download(self, repo: str, revision: str, name: str, scratch: str) -> str:
        path = Path(super().download(repo, revision, name, scratch))
        if name == "config.json":
            path.write_bytes(self.config)
        return str(path)


@pytest.mark.parametrize("scheme", ["awq", "gptq"])
def test_a_prequantized_setting_on_a_full_precision_checkpoint_fails_for_good(tmp_path: Path, scheme: str) -> None:
    s3 = FakeS3()
    hub = ConfigHub(CHECKPOINT, {"architectures": ["LlamaForCausalLM"], "torch_dtype": "bfloat16"})
    with pytest.raises(script.Failure) as raised:
        script.populate(_args(tmp_path, quantization=scheme), s3, hub, log=lambda _: None)
    assert str(raised.value) == (
        f"{REPO}@{REV} is not an {scheme} checkpoint (config.json's quantization_config.quant_method is absent): "
        f"quantization {scheme} names a pre-quantized checkpoint, and vLLM would load this one at full size, beyond the "
        f"memory the fit check allowed. Fix: point huggingFaceId at the {scheme} repository, or set quantization to none or fp8"
    )
    assert s3.objects == {}  # nothing copied before the check


def test_a_matching_prequantized_checkpoint_is_copied(tmp_path: Path) -> None:
    s3 = FakeS3()
    hub = ConfigHub(CHECKPOINT, {"quantization_config": {"quant_method": "AWQ", "bits": 4}})
    assert script.populate(_args(tmp_path, quantization="awq"), s3, hub, log=lambda _: None) == 0
    assert f"{REPOSITORY}{REV}/{script.MARKER}" in s3.objects


def test_the_job_tells_the_script_the_models_quantization() -> None:
    cfg = parse(stack_data(PROD))
    model = next(m for m in cfg.models if m.quantization == "fp8")
    pool = next(p for p in cfg.gpu_pools if p.name == model.pool)
    job = populate.job(model, pool, Sources(image="i", bucket="b", region="r"), hf_token=False, models=cfg.models)
    command = job["spec"]["template"]["spec"]["containers"][0]["command"]
    assert command[command.index("--quantization") + 1] == "fp8"
    assert script.parse(command[2:]).quantization == "fp8"
