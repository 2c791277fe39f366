"""The compile cache's keys: which torch.compile artifacts a replica may start from. Pure.

A warm-up Job per GPU type (builders/serving/warmup.py) starts the engine once and stores what it
compiled beside the weights (weights_script.py `warm`); every replica's init container copies the
archive of its own GPU's key in before vLLM starts (`wait --cache-key`). A key is a hash of everything
the artifacts depend on:

- the checkpoint: repository and revision (the graph's shapes and weights' dtypes);
- the GPU type: Inductor and Triton build kernels for one architecture (an L4 is sm_89, an A10G sm_86);
- the image, tag and digest: vLLM's, torch's and Triton's versions and vLLM's own code hash (vLLM 0.34
  recomputes its cache key, so a 0.33 cache would miss under it: ../shared/reference/engine-start-facts.md 2);
- tensor parallelism (one artifact directory per rank);
- the engine flags that shape the compiled graphs: every vLLM argument but the server's own (SERVER_FLAGS:
  address, served name, timeouts, admission), so changing those re-warms nothing. A flag of the graph list
  (`--max-cudagraph-capture-size`), the KV size, dtype, quantization, max-model-len and extraArgs all count.

vLLM checks its own hash of the environment, configuration, code and compiler before it loads an
artifact (`$VLLM_CACHE_ROOT/torch_compile_cache/<hash>/rank_<r>_<dp>/`, vllm/compilation/backends.py)
and compiles afresh where it differs, so a key too coarse costs a compile, never a wrong kernel; a key
too fine costs a warm-up. The warm-up runs the replica's engine arguments and environment (vLLM hashes
environment factors too: `envs.compile_factors()`, every vLLM variable but an ignored set), or every copy
would silently miss; it leaves out only what vLLM's hashes ignore (builders/serving/warmup.py).

A pool of several GPU types gets one key and one warm-up Job per type, all at once during `pulumi up`,
each on a node of its type (Karpenter's GPU-name label), rather than the first replica of each type
uploading its own: replicas only read the bucket (no write right on a serving pod), and the cache is
there before the first scale-up instead of after it. A replica that may land on several types learns
its own in its init container, which then requests the replica's GPU (the kubelet hands an init
container's devices on to the app container; a container without one cannot see the GPU).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from config.sections.models import ModelConfig

SERVER_FLAGS = (
    "--host",
    "--port",
    "--served-model-name",
    "--shutdown-timeout",
    "--sse-keep-alive-interval",
    "--max-num-queued-reqs",
)
"""Flags (each with its value) that do not shape what vLLM compiles: outside the key."""
KEY_LENGTH = 16


def engine_flags(args: Sequence[str]) -> list[str]:
    """vLLM's arguments without the server-only flags and their values."""
    out: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        name = arg.split("=", 1)[0]
        if name in SERVER_FLAGS:
            skip = "=" not in arg
            continue
        out.append(arg)
    return out


def key(model: ModelConfig, gpu_label: str, args: Sequence[str]) -> str:
    """The cache key of one GPU type: a short hash of what the artifacts depend on. Known at preview, from the
    config alone (it names the warm-up Job): the image as configured (tag and digest; the pull-through cache
    only changes where it is pulled from), the arguments after the model's path (the bucket's name is the
    stack's, and the repository and revision stand for it)."""
    inputs = {
        "repository": model.hugging_face_id,
        "revision": model.revision,
        "gpu": gpu_label,
        "image": model.image.reference,
        "tensorParallelSize": model.tensor_parallel_size,
        "engineFlags": engine_flags(args[1:]),
    }
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:KEY_LENGTH]


def keys(model: ModelConfig, gpu_labels: Sequence[str], args: Sequence[str]) -> dict[str, str]:
    """Per GPU label of the pool's hosts that hold a replica, its cache key; empty where the model starts without the cache.
    `args`: vLLM's arguments, the model's path first (workload.vllm_args)."""
    if not model.compile_cache_used:
        return {}
    return {label: key(model, label, args) for label in sorted(gpu_labels)}
