"""What the gateway's Endpoint Picker reads from vLLM exists in the pinned vLLM, and what precise prefix
routing needs is passed consistently to both sides."""

from __future__ import annotations

import json

from builders.gateway import prefix, router
from builders.observability.metrics import VLLM_GAUGES, VLLM_VERSION
from builders.serving.workload import vllm_args
from config.derived import state
from tests.conftest import DEV, parse, stack_data

# llm-d-router v0.10.0 pkg/epp/framework/plugins/datalayer/extractor/metrics/factories.go, engine "vllm":
# QueuedRequestsSpec, RunningRequestsSpec, KVUsageSpec, LoRASpec, CacheInfoSpec.
EPP_READS_FROM_VLLM = (
    "vllm:num_requests_waiting",
    "vllm:num_requests_running",
    "vllm:kv_cache_usage_perc",
    "vllm:lora_requests_info",
    "vllm:cache_config_info",
)


def test_every_series_the_picker_scrapes_is_a_gauge_of_the_pinned_vllm() -> None:
    missing = [name for name in EPP_READS_FROM_VLLM if name not in VLLM_GAUGES]
    assert missing == [], f"vLLM {VLLM_VERSION} does not emit {missing}: the picker would score on nothing"


def _precise() -> tuple[object, object]:
    data = stack_data(DEV)
    data["models"][0]["routing"] = {"prefixCache": "precise"}
    # the tokenizer sidecar beside the picker needs a third system node
    data["cluster"]["systemNodeGroup"].update(minSize=3, desiredSize=3)
    cfg = parse(data)
    return cfg, cfg.models[0]


def test_precise_routing_passes_one_block_size_and_one_events_port_to_both_sides() -> None:
    cfg, model = _precise()
    args = vllm_args(model, cfg.pool(model.pool), 600)  # type: ignore[attr-defined]
    assert args[args.index("--block-size") + 1] == str(prefix.PREFIX_BLOCK_SIZE)
    assert args[args.index("--prefix-caching-hash-algo") + 1] == "sha256_cbor"
    events = json.loads(args[args.index("--kv-events-config") + 1])
    assert events["endpoint"] == f"tcp://*:{prefix.KV_EVENTS_PORT}"
    assert events["enable_kv_cache_events"] is True
    # the topic names the pod's address, expanded by the kubelet from the env var the container gets
    assert "$(POD_IP)" in events["topic"]
    env = {e["name"] for e in prefix.vllm_env(model)}  # type: ignore[arg-type]
    assert {"PYTHONHASHSEED", "POD_IP"} <= env
    config = router.epp_config(model, state.of(cfg).model(model.name).hold)  # type: ignore[arg-type, attr-defined]
    producer = next(p for p in config["plugins"] if p["type"] == "precise-prefix-cache-producer")
    assert producer["parameters"]["tokenProcessorConfig"]["blockSize"] == prefix.PREFIX_BLOCK_SIZE


def test_approximate_routing_asks_nothing_of_vllm() -> None:
    cfg = parse(stack_data(DEV))
    model = cfg.models[0]
    assert model.routing.prefix_cache == "approximate"
    assert prefix.vllm_args(model) == []
    assert prefix.vllm_env(model) == []
    args = vllm_args(model, cfg.pool(model.pool), 600)  # type: ignore[arg-type]
    assert "--kv-events-config" not in args
