"""The gateway's routing choices: what precise prefix-cache routing needs from the model."""

from __future__ import annotations

from collections.abc import Iterator

from config.checks.common import model_path
from config.derived import state
from config.errors import Problem
from config.sections.models import vllm_flag
from config.sections.stack import StackConfig

PRECISE_FLAGS = {
    "--block-size": "the picker hashes KV blocks of exactly the size the platform passes",
    "--kv-events-config": "the picker subscribes to the events endpoint the platform configures",
    "--prefix-caching-hash-algo": "the picker reproduces vLLM's block hashes only with sha256_cbor",
    "--no-enable-prefix-caching": "without vLLM's prefix cache there are no blocks to route on",
    "--enable-prefix-caching": "the platform passes it",
}


def rule_precise_routing(cfg: StackConfig) -> Iterator[Problem]:
    """models[].routing.prefixCache precise: only with a gateway, and vLLM's KV-event flags are the platform's."""
    derived = state.of(cfg)
    for m in cfg.models:
        if m.routing.prefix_cache != "precise":
            continue
        path = model_path(m)
        if derived.model(m.name).scales_to_zero:
            yield Problem(
                f"{path}.routing.prefixCache",
                "precise needs the model's gateway, and a model at replicas.min 0 is reached through the HTTP add-on's "
                "interceptor, which routes round robin. Fix: set replicas.min to 1 or more, or use approximate",
            )
        for i, arg in enumerate(m.extra_args):
            flag = vllm_flag(arg.split("=", 1)[0])
            if flag in PRECISE_FLAGS:
                yield Problem(
                    f"{path}.extraArgs[{i}]",
                    f"{flag} is managed with routing.prefixCache precise: {PRECISE_FLAGS[flag]}. Fix: remove it",
                )
