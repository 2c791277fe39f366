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

KV_EVENTS_PORT = 5556
"""vLLM publishes KV-cache events here (ZMQ) when routing on the precise prefix cache."""
PREFIX_BLOCK_SIZE = 64
"""Tokens per KV block when routing on the precise prefix cache: vLLM's --block-size and the picker's
tokenProcessorConfig.blockSize must be equal (wave 3 facts A 2.3, ai-on-eks manifests)."""
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
