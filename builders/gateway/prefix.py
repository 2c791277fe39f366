"""What vLLM runs with for the gateway's prefix-cache routing (models[].routing.prefixCache). Pure.

approximate needs nothing from vLLM beyond the metrics it always emits. precise needs vLLM to
publish its KV-cache events over ZMQ, with block hashes the picker can reproduce: sha256_cbor
hashing, a fixed PYTHONHASHSEED and a block size equal to the picker's (wave 3 facts A 2.3).
"""

from __future__ import annotations

import json
from typing import Any

from config.facts.conventions import VLLM_PORT
from config.sections.models import ModelConfig

KV_EVENTS_PORT = 5557
"""vLLM publishes KV-cache events here (ZMQ) when routing on the precise prefix cache: the port the picker
dials on each pod unless told otherwise (llm-d-router v0.10.0 pkg/kvevents/pool.go DefaultPodReconcilerConfig,
SocketPort 5557; ai-on-eks' 5556 needs the picker configured to match). The default is relied on rather than
set: the producer decodes its kvEventsConfig over upstream defaults, and a partial one would be a guess at
how the decoder merges."""
PREFIX_BLOCK_SIZE = 64
"""Tokens per KV block when routing on the precise prefix cache, passed to vLLM (--block-size) and to the
picker (tokenProcessorConfig.blockSize) alike, as ai-on-eks does (wave 3 facts A 2.3). Upstream's
preciseprefixcache README says the two need not match; one value keeps the picker's block keys the
engine's own."""
PYTHON_HASH_SEED = "42"
"""vLLM's block hashes must not vary per process for the picker to match them."""


def precise(model: ModelConfig) -> bool:
    return model.routing.prefix_cache == "precise"


def vllm_args(model: ModelConfig) -> list[str]:
    """What vLLM needs for the chosen routing (the queue and KV scorers read metrics vLLM always emits)."""
    if not precise(model):
        return []
    events = {
        "enable_kv_cache_events": True,
        "publisher": "zmq",
        "endpoint": f"tcp://*:{KV_EVENTS_PORT}",
        "topic": f"kv@$(POD_IP):{VLLM_PORT}@{model.name}",
    }
    return [
        "--enable-prefix-caching",
        "--prefix-caching-hash-algo",
        "sha256_cbor",
        "--block-size",
        str(PREFIX_BLOCK_SIZE),
        "--kv-events-config",
        json.dumps(events, separators=(",", ":")),
    ]


def vllm_env(model: ModelConfig) -> list[dict[str, Any]]:
    if not precise(model):
        return []
    return [
        {"name": "PYTHONHASHSEED", "value": PYTHON_HASH_SEED},
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
    ]
