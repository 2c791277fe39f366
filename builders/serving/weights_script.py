"""Copy one pinned Hugging Face revision into the weights bucket, or wait until it is there.

Runs inside the model's own vLLM image, which carries boto3 and huggingface_hub (upstream-facts
W2.1.4, W2.1.8), as a ConfigMap-mounted script:

- `populate` (the model's populate Job): fails clearly when the image lacks boto3 or
  huggingface_hub; skips when the revision's completion marker exists and every file it lists is
  there; otherwise copies the files vLLM reads (safetensors, configs, tokenizer) one at a time,
  each downloaded to scratch, uploaded, then deleted, so scratch only ever holds the largest file,
  and skips a file already in S3 with its size (a retry resumes where the failed try stopped);
  writes the marker last. Then it tags the objects of the repository's
  revisions no model of the stack uses any more with the day they were retired, untags the ones in
  use again (a rollback), and deletes those retired more than `--retire-days` ago. (An S3 lifecycle
  rule cannot do this: its expiration counts from an object's creation, not from its tagging.)
- `wait` (an init container of every replica): fails clearly when the image lacks the Run:ai
  Model Streamer, then waits for the marker; an AWS or network error (a denied or throttled
  listing, no credentials yet) is logged and polled through until the deadline. Given compile-cache
  keys (`--cache-key LABEL=KEY`, one per GPU type of the pool), it then copies the archive of its own
  GPU's key into the cache volume: absent, partial (its bytes or digest differ from what the warm-up
  recorded), unreadable or of another key, nothing is copied and vLLM compiles; the cache never fails
  a replica.
- `warm` (the model's compile warm-up Job, one per GPU type): starts vLLM once with the replica's exact
  command and environment, waits for /health, stops it, and stores what it compiled (`CACHE_DIRS` under
  the cache volume) as one archive at `<repository>compile-cache/<revision>/<key>.tar.gz`, with its
  size and SHA-256 in the object's metadata; a key already stored is not warmed again.

Standard library at import time; boto3 and huggingface_hub are imported where used, and botocore's
errors are told by class name, so the platform (and its tests) can import this module without them. Exit code 2 means a problem a retry
cannot fix (the Job's pod failure policy then stops at once).
"""

from __future__ import annotations

import argparse
import datetime as dt
import fnmatch
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

MARKER = ".llm-platform-complete.json"
RETIRED_KEY = "llm-platform/retired-on"
"""Tag of a retired object; its value is the day (YYYY-MM-DD, UTC) it was retired."""
WANTED = ("*.safetensors", "*.json", "*.model", "*.py", "*.txt", "*.tiktoken", "*.jinja")
"""What vLLM reads from a model directory; *.bin, *.pth, *.gguf and original/ stay behind."""
PERMANENT = 2
CACHE_PREFIX = "compile-cache"
"""Beside the revisions of a repository: `<repository>compile-cache/<revision>/<key>.tar.gz` (outside the
revision's own prefix, which vLLM lists when it loads the checkpoint)."""
CACHE_DIRS = ("vllm", "inductor", "triton", "flashinfer", "cuda")
"""What the archive holds, under the cache volume: vLLM's cache root (torch_compile_cache with its AOT
artifacts), Inductor's and Triton's kernels, FlashInfer's JIT modules and the CUDA JIT cache. Not the
downloaded configs (vllm-assets) or a Hugging Face cache."""
SHA256_META, BYTES_META = "sha256", "bytes"


class Failure(Exception):  # noqa: N818 (the script speaks of failures, not errors)
    """A problem a retry cannot fix."""


PERMANENT_HUB_ERRORS = {
    "GatedRepoError": "the repository is gated and the token has no access. Fix: accept the license on Hugging Face with "
    "the token's account, or set the hfToken secret",
    "RepositoryNotFoundError": "no such repository, or it is private to another account. Fix: check the model's huggingFaceId",
    "RevisionNotFoundError": "no such revision. Fix: pin an existing 40-hex commit in the model's revision",
}
"""huggingface_hub errors a retry cannot fix (exit 2 stops the Job at once)."""


class Hub(Protocol):
    def files(self, repo: str, revision: str) -> list[tuple[str, int]]: ...

    def download(self, repo: str, revision: str, name: str, scratch: str) -> str: ...


class HuggingFaceHub:
    """The hub through huggingface_hub; the token comes from HF_TOKEN_PATH, which the Job sets."""

    def files(self, repo: str, revision: str) -> list[tuple[str, int]]:
        from huggingface_hub import HfApi  # type: ignore[import-not-found]  # in the vLLM image only

        try:
            info = HfApi().model_info(repo, revision=revision, files_metadata=True)
        except Exception as err:
            if type(err).__name__ in PERMANENT_HUB_ERRORS:
                raise Failure(f"{repo}@{revision}: {type(err).__name__}: {PERMANENT_HUB_ERRORS[type(err).__name__]}") from None
            raise
        return [(s.rfilename, int(s.size or 0)) for s in info.siblings or []]

    def download(self, repo: str, revision: str, name: str, scratch: str) -> str:
        from huggingface_hub import hf_hub_download

        return str(hf_hub_download(repo_id=repo, filename=name, revision=revision, local_dir=scratch))


def wanted(name: str) -> bool:
    base = name.rsplit("/", 1)[-1]
    return not name.startswith("original/") and any(fnmatch.fnmatch(base, p) for p in WANTED)


def plan(files: Iterable[tuple[str, int]], scratch_bytes: int, repo: str, revision: str) -> list[tuple[str, int]]:
    """The files to copy; fails when the streamer could not load the revision, or a file outgrows scratch."""
    chosen = sorted((n, s) for n, s in files if wanted(n))
    if not any(n.endswith(".safetensors") for n, _ in chosen):
        raise Failure(
            f"{repo}@{revision} has no *.safetensors files, and the Run:ai Model Streamer loads only safetensors. "
            "Fix: pin a revision that has them, or set the model's weights.source: huggingface"
        )
    too_big = [f"{n} ({s / 1e9:.1f} GB)" for n, s in chosen if s > scratch_bytes]
    if too_big:
        raise Failure(
            f"{', '.join(too_big)} exceed the Job's scratch space of {scratch_bytes / 1e9:.0f} GB, which holds one "
            "file at a time. Fix: raise the populate scratch size in builders/serving/populate.py"
        )
    return chosen


def marker_exists(s3: Any, bucket: str, prefix: str) -> bool:
    """A listing, not a HEAD: without an unconditional s3:ListBucket a HEAD of a missing key is a
    403, while the listing's prefix is one the reader's policy allows."""
    key = f"{prefix}/{MARKER}"
    found = s3.list_objects_v2(Bucket=bucket, Prefix=key, MaxKeys=1).get("Contents", [])
    return any(item["Key"] == key for item in found)


def complete(s3: Any, bucket: str, prefix: str) -> bool:
    """The marker exists and every file it lists is in the bucket."""
    if not marker_exists(s3, bucket, prefix):
        return False
    listed = json.loads(s3.get_object(Bucket=bucket, Key=f"{prefix}/{MARKER}")["Body"].read())
    present = set(_keys(s3, bucket, f"{prefix}/"))
    return all(f"{prefix}/{name}" in present for name in listed.get("files", {}))


def _sizes(s3: Any, bucket: str, prefix: str) -> dict[str, int]:
    """Every object under the prefix with its size, in one paginated listing."""
    return {
        item["Key"]: int(item["Size"])
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        for item in page.get("Contents", [])
    }


def _keys(s3: Any, bucket: str, prefix: str) -> Iterable[str]:
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Contents", []):
            yield item["Key"]


def _retired_on(s3: Any, bucket: str, key: str) -> dt.date | None:
    for tag in s3.get_object_tagging(Bucket=bucket, Key=key).get("TagSet", []):
        if tag["Key"] == RETIRED_KEY:
            try:
                return dt.date.fromisoformat(tag["Value"])
            except ValueError:
                return None
    return None


def sweep(s3: Any, bucket: str, repository: str, keep: Sequence[str], today: dt.date, retire_days: int) -> tuple[int, int, int]:
    """Tag the objects of revisions outside `keep` with today's date, untag those inside, and
    delete those retired at least `retire_days` ago. Returns (retired, restored, deleted)."""
    retired = restored = deleted = 0
    kept = tuple(p for r in keep for p in (f"{repository}{r}/", f"{cache_prefix(repository, r)}"))
    for key in list(_keys(s3, bucket, repository)):
        in_use = key.startswith(kept)
        since = _retired_on(s3, bucket, key)
        if in_use and since is not None:
            s3.delete_object_tagging(Bucket=bucket, Key=key)
            restored += 1
        elif not in_use and since is None:
            s3.put_object_tagging(Bucket=bucket, Key=key, Tagging={"TagSet": [{"Key": RETIRED_KEY, "Value": today.isoformat()}]})
            retired += 1
        elif not in_use and since is not None and (today - since).days >= retire_days:
            s3.delete_object(Bucket=bucket, Key=key)
            deleted += 1
    return retired, restored, deleted


PREQUANTIZED = ("awq", "gptq")
"""Settings of `quantization` that name a pre-quantized checkpoint (its config.json says so)."""


def check_prequantized(hub: Hub, args: argparse.Namespace) -> None:
    """The checkpoint is quantized as the model's `quantization` says. vLLM reads the scheme from
    config.json (the platform passes no --quantization for AWQ or GPTQ, so vLLM picks its fastest
    kernel); a full-precision checkpoint there would load at four times the memory the fit check
    allowed, so a mismatch fails the Job for good."""
    with open(hub.download(args.repo, args.revision, "config.json", args.scratch), encoding="utf-8") as f:
        found = (json.load(f).get("quantization_config") or {}).get("quant_method")
    if str(found).lower() != args.quantization:
        raise Failure(
            f"{args.repo}@{args.revision} is not an {args.quantization} checkpoint (config.json's "
            f"quantization_config.quant_method is {found or 'absent'}): quantization {args.quantization} names a "
            "pre-quantized checkpoint, and vLLM would load this one at full size, beyond the memory the fit check "
            f"allowed. Fix: point huggingFaceId at the {args.quantization} repository, or set quantization to none or fp8"
        )


def populate(args: argparse.Namespace, s3: Any, hub: Hub, log: Callable[[str], None] = print) -> int:
    prefix = f"{args.repository}{args.revision}"
    if complete(s3, args.bucket, prefix):
        log(f"s3://{args.bucket}/{prefix} is complete; nothing to copy")
    else:
        files = plan(hub.files(args.repo, args.revision), args.scratch_bytes, args.repo, args.revision)
        if args.quantization in PREQUANTIZED:
            check_prequantized(hub, args)
        # What an earlier try of this Job left: an object is there whole or not at all (a multipart
        # upload shows only once completed), so a key with the listed size needs no second copy.
        present = _sizes(s3, args.bucket, f"{prefix}/")
        total = 0
        for name, size in files:
            total += size
            if present.get(f"{prefix}/{name}") == size:
                log(f"{name} ({size / 1e9:.2f} GB) is already in S3")
                continue
            local = hub.download(args.repo, args.revision, name, args.scratch)
            s3.upload_file(local, args.bucket, f"{prefix}/{name}")
            os.remove(local)
            log(f"copied {name} ({size / 1e9:.2f} GB)")
        manifest = {"repository": args.repo, "revision": args.revision, "files": dict(files), "bytes": total}
        s3.put_object(Bucket=args.bucket, Key=f"{prefix}/{MARKER}", Body=json.dumps(manifest).encode())
        log(f"s3://{args.bucket}/{prefix}: {len(files)} files, {total / 1e9:.1f} GB")
    today = dt.datetime.now(dt.UTC).date()
    retired, restored, deleted = sweep(s3, args.bucket, args.repository, args.keep, today, args.retire_days)
    log(f"revisions no model uses: {retired} objects retired today, {restored} back in use, {deleted} deleted")
    return 0


def streamer_present() -> bool:
    try:
        __import__("runai_model_streamer_s3")
        __import__("boto3")
    except ImportError:
        return False
    return True


def require_streamer() -> None:
    if not streamer_present():
        raise Failure(
            "this image lacks the Run:ai Model Streamer (python module runai_model_streamer_s3) or boto3, which vLLM needs "
            "to load s3:// weights. Fix: use an image built with vLLM's `runai` extra (the upstream vllm/vllm-openai "
            "image has it), or set the model's weights.source: huggingface"
        )


POPULATE_MODULES = ("boto3", "huggingface_hub")
"""What the populate Job imports from the image (boto3 uploads, huggingface_hub downloads)."""


def require_populate_modules() -> None:
    missing = []
    for module in POPULATE_MODULES:
        try:
            __import__(module)
        except ImportError:
            missing.append(module)
    if missing:
        raise Failure(
            f"this image lacks the python module{'s' if len(missing) > 1 else ''} {' and '.join(missing)}, which the "
            "populate Job needs to copy the revision into S3. Fix: use an image built with vLLM's `runai` extra (the "
            "upstream vllm/vllm-openai image has both), or set the model's weights.source: huggingface"
        )


def aws_error_code(err: BaseException) -> str | None:
    """The error code of a botocore or network error (worth another poll), else None. Told by class
    name, so this module imports without botocore: a ClientError carries the service's code
    (AccessDenied, SlowDown, ...); any other BotoCoreError (no credentials yet, an endpoint that
    does not answer) and an OSError are named by their class."""
    names = {cls.__name__ for cls in type(err).__mro__}
    if "ClientError" in names:
        response = getattr(err, "response", None)
        code = response.get("Error", {}).get("Code") if isinstance(response, dict) else None
        return str(code or type(err).__name__)
    if "BotoCoreError" in names or isinstance(err, OSError):
        return type(err).__name__
    return None


def wait(args: argparse.Namespace, s3: Any, sleep: Callable[[float], None] = time.sleep, log: Callable[[str], None] = print) -> int:
    prefix = f"{args.repository}{args.revision}"
    deadline = time.monotonic() + args.timeout_seconds
    last_error = None
    while True:
        try:
            if marker_exists(s3, args.bucket, prefix):
                return 0
            last_error = None
            note = f"waiting for s3://{args.bucket}/{prefix} (the populate Job writes it)"
        except Exception as err:
            last_error = aws_error_code(err)
            if last_error is None:
                raise
            note = f"listing s3://{args.bucket}/{prefix} failed: {last_error}; retrying in {args.poll_seconds:g} s"
        if time.monotonic() >= deadline:
            why = f"the last listing failed: {last_error}" if last_error else "is its populate Job running?"
            log(f"s3://{args.bucket}/{prefix} is still incomplete after {args.timeout_seconds} s; {why}")
            return 1
        log(note)
        sleep(args.poll_seconds)


# -- the compile cache ---------------------------------------------------------------------------


def cache_prefix(repository: str, revision: str) -> str:
    return f"{repository}{CACHE_PREFIX}/{revision}/"


def cache_object(repository: str, revision: str, key: str) -> str:
    return f"{cache_prefix(repository, revision)}{key}.tar.gz"


def parse_keys(pairs: Sequence[str]) -> dict[str, str]:
    """`LABEL=KEY` pairs (GPU label, cache key)."""
    keys = {}
    for pair in pairs:
        label, _, key = pair.partition("=")
        if not label or not key:
            raise Failure(f"--cache-key {pair!r} is not LABEL=KEY")
        keys[label] = key
    return keys


def nvidia_smi_gpu_name() -> str | None:
    """The name of the GPU this container was given (nvidia-smi, which the NVIDIA runtime mounts), None without one."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True, timeout=30, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    names = [line.strip() for line in out.stdout.splitlines() if line.strip()]
    return names[0] if names else None


def own_label(keys: dict[str, str], gpu_name: Callable[[], str | None]) -> str | None:
    """Which of the pool's GPU labels (Karpenter's instance-gpu-name: l4, a10g, h100, ...) this replica runs on:
    the only one, else the label that is a word of the GPU's name ("NVIDIA A10G" is a10g, "NVIDIA L40S" is l40s,
    never l4). None when no label matches."""
    if len(keys) == 1:
        return next(iter(keys))
    name = gpu_name()
    if not name:
        return None
    words = set(name.lower().replace("-", " ").replace("_", " ").split())
    found = [label for label in keys if label.lower() in words]
    return found[0] if len(found) == 1 else None


def _digest(path: str) -> str:
    sha = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


def object_exists(s3: Any, bucket: str, key: str) -> bool:
    """A listing, not a HEAD (see marker_exists)."""
    found = s3.list_objects_v2(Bucket=bucket, Prefix=key, MaxKeys=1).get("Contents", [])
    return any(item["Key"] == key for item in found)


def fetch_cache(s3: Any, bucket: str, key: str, root: str, log: Callable[[str], None] = print) -> str:
    """Copy one compile-cache archive into `root`. Returns what happened: `hit` (extracted), `absent`,
    `partial` (size or digest differ from the warm-up's record, or the archive does not extract). Nothing
    is left half-written: the archive is checked, extracted beside the cache, then moved in."""
    if not object_exists(s3, bucket, key):
        return "absent"
    staging = tempfile.mkdtemp(prefix=".compile-cache-", dir=root)
    try:
        response = s3.get_object(Bucket=bucket, Key=key)
        meta = {k.lower(): v for k, v in (response.get("Metadata") or {}).items()}
        archive = os.path.join(staging, "archive.tar.gz")
        with open(archive, "wb") as f:
            shutil.copyfileobj(response["Body"], f, 1 << 20)
        size, digest = os.path.getsize(archive), _digest(archive)
        if str(size) != meta.get(BYTES_META) or digest != meta.get(SHA256_META):
            log(f"s3://{bucket}/{key}: {size} bytes, sha256 {digest[:12]}, not what the warm-up stored; vLLM compiles")
            return "partial"
        tree = os.path.join(staging, "tree")
        try:
            with tarfile.open(archive, "r:gz") as tar:
                tar.extractall(tree, filter="data")
        except (tarfile.TarError, OSError, EOFError) as err:
            log(f"s3://{bucket}/{key} does not extract ({type(err).__name__}); vLLM compiles")
            return "partial"
        for name in CACHE_DIRS:
            source = os.path.join(tree, name)
            if os.path.isdir(source):
                shutil.rmtree(os.path.join(root, name), ignore_errors=True)
                os.replace(source, os.path.join(root, name))
        log(f"compile cache s3://{bucket}/{key}: {size / 1e6:.1f} MB copied in")
        return "hit"
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def copy_cache(args: argparse.Namespace, s3: Any, gpu_name: Callable[[], str | None], log: Callable[[str], None] = print) -> str:
    """The replica's step after the weights: its own key's archive into the cache volume. Never raises:
    whatever goes wrong, vLLM compiles."""
    keys = parse_keys(args.cache_key)
    label = own_label(keys, gpu_name)
    if label is None:
        log(f"no compile cache for this GPU ({gpu_name() or 'unknown'}; the pool's: {', '.join(sorted(keys))}); vLLM compiles")
        return "mismatch"
    key = cache_object(args.repository, args.revision, keys[label])
    try:
        outcome = fetch_cache(s3, args.bucket, key, args.cache_root, log)
    except Exception as err:  # the cache is an optimisation: a replica compiles rather than fails
        log(f"compile cache s3://{args.bucket}/{key} not copied ({aws_error_code(err) or type(err).__name__}); vLLM compiles")
        return "error"
    if outcome == "absent":
        log(f"no compile cache at s3://{args.bucket}/{key} yet (its warm-up Job writes it); vLLM compiles")
    return outcome


def store_cache(s3: Any, bucket: str, key: str, root: str, log: Callable[[str], None] = print) -> int:
    """Archive what vLLM compiled under `root` and upload it with its size and digest. Returns the bytes stored."""
    present = [name for name in CACHE_DIRS if os.path.isdir(os.path.join(root, name))]
    if not present:
        raise Failure(f"vLLM left nothing under {root} ({', '.join(CACHE_DIRS)}): is VLLM_CACHE_ROOT set to {root}/vllm?")
    with tempfile.TemporaryDirectory(prefix=".compile-cache-", dir=root) as scratch:
        archive = os.path.join(scratch, "archive.tar.gz")
        with tarfile.open(archive, "w:gz", compresslevel=1) as tar:
            for name in present:
                tar.add(os.path.join(root, name), arcname=name)
        size, digest = os.path.getsize(archive), _digest(archive)
        s3.upload_file(archive, bucket, key, ExtraArgs={"Metadata": {SHA256_META: digest, BYTES_META: str(size)}})
    log(f"compile cache stored at s3://{bucket}/{key}: {size / 1e6:.1f} MB ({', '.join(present)})")
    return size


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:  # the engine's own loopback address
            return bool(response.status == 200)
    except OSError:
        return False


def warm(
    args: argparse.Namespace,
    s3: Any,
    start: Callable[[list[str]], Any] = subprocess.Popen,
    probe: Callable[[str], bool] = healthy,
    sleep: Callable[[float], None] = time.sleep,
    log: Callable[[str], None] = print,
) -> int:
    """Start the engine once with the replica's command, wait until it serves, stop it, store its cache."""
    (label, key), *rest = parse_keys(args.cache_key).items()
    if rest:
        raise Failure("warm takes one --cache-key: the GPU type of the node it runs on")
    target = cache_object(args.repository, args.revision, key)
    if object_exists(s3, args.bucket, target):
        log(f"s3://{args.bucket}/{target} is stored; nothing to warm")
        return 0
    if not args.command:
        raise Failure("warm needs the engine's command after --")
    engine = start(list(args.command))
    deadline = time.monotonic() + args.timeout_seconds
    try:
        while not probe(args.health_url):
            if engine.poll() is not None:
                log(f"the engine exited with {engine.returncode} before it served ({label}); see its log above")
                return 1
            if time.monotonic() >= deadline:
                log(f"the engine did not serve within {args.timeout_seconds} s ({label})")
                return 1
            sleep(args.poll_seconds)
    finally:
        engine.terminate()
        try:
            engine.wait(timeout=60)
        except subprocess.TimeoutExpired:
            engine.kill()
            engine.wait()
    store_cache(s3, args.bucket, target, args.cache_root, log)
    return 0


def parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("populate", "wait", "warm"))
    parser.add_argument("--bucket", required=True)
    parser.add_argument("--repo", required=True, help="Hugging Face repository")
    parser.add_argument("--revision", required=True)
    parser.add_argument("--repository", required=True, help="the repository's object prefix, ending in /")
    parser.add_argument("--keep", nargs="*", default=[], help="revisions of the repository the stack uses")
    parser.add_argument("--scratch", default="/scratch")
    parser.add_argument("--scratch-bytes", type=int, default=0)
    parser.add_argument("--retire-days", type=int, default=7, help="days a retired revision stays before it is deleted")
    parser.add_argument("--quantization", default="none", help="the model's quantization setting (awq, gptq: checked)")
    parser.add_argument("--timeout-seconds", type=int, default=3600)
    parser.add_argument("--poll-seconds", type=float, default=10)
    parser.add_argument("--cache-key", action="append", default=[], help="LABEL=KEY: a GPU type and its compile-cache key")
    parser.add_argument("--cache-root", default="/cache", help="the cache volume vLLM's caches live under")
    parser.add_argument("--health-url", default="http://127.0.0.1:8000/health", help="warm: the engine's health endpoint")
    # warm: the engine's command line follows `--` (split off here: argparse would not take a positional after options)
    argv = list(argv)
    cut = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:cut])
    args.command = argv[cut + 1 :]
    return args


def main(argv: Sequence[str]) -> int:
    args = parse(argv)
    try:
        if args.mode in ("wait", "warm"):
            require_streamer()
        else:
            require_populate_modules()
        import boto3  # type: ignore[import-untyped]

        s3 = boto3.client("s3")
        if args.mode == "populate":
            return populate(args, s3, HuggingFaceHub())
        if args.mode == "warm":
            return warm(args, s3)
        done = wait(args, s3)
        if done == 0 and args.cache_key:
            copy_cache(args, s3, nvidia_smi_gpu_name)
        return done
    except Failure as err:
        print(f"{args.mode}: {err}", file=sys.stderr)
        return PERMANENT


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
