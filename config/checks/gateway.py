"""The gateway's routing choices: what precise prefix-cache routing needs from the model."""

from __future__ import annotations

from collections.abc import Iterator

from config.checks.common import model_path
from config.derived import hold, state
from config.derived.scaleup import HOLD_MARGIN_SECONDS
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
    """models[].routing.prefixCache precise: vLLM's KV-event flags are the platform's."""
    for m in cfg.models:
        if m.routing.prefix_cache != "precise":
            continue
        path = model_path(m)
        for i, arg in enumerate(m.extra_args):
            flag = vllm_flag(arg.split("=", 1)[0])
            if flag in PRECISE_FLAGS:
                yield Problem(
                    f"{path}.extraArgs[{i}]",
                    f"{flag} is managed with routing.prefixCache precise: {PRECISE_FLAGS[flag]}. Fix: remove it",
                )


def rule_hold(cfg: StackConfig) -> Iterator[Problem]:
    """Flow control of every model's gateway: its thresholds above KEDA's targets and vLLM's bound, its
    hold inside the ALB's idle timeout, and for a model at zero a hold that outlasts its cold start
    (config/derived/hold.py)."""
    derived = state.of(cfg)
    for m in cfg.models:
        facts = derived.model(m.name)
        held = facts.hold
        path = model_path(m)
        target = m.autoscaling.kv_cache_usage_target
        if held.kv_threshold <= target:
            yield Problem(
                f"{path}.autoscaling.kvCacheUsageTarget",
                f"{target:g} leaves the gateway no KV-cache threshold above it: the gateway would hold requests at "
                "KEDA's target, vLLM's KV use would sit there, and the model would never scale out. Fix: set it "
                "below 1, e.g. 0.8",
            )
        bound = m.max_waiting_requests
        if bound is not None and bound <= held.queue_threshold:
            yield Problem(
                f"{path}.maxWaitingRequests",
                f"{bound} is not above the gateway's queue threshold ({held.queue_threshold}, twice "
                "autoscaling.queueDepthPerReplica): a replica would answer 503 to requests the gateway still sends it "
                f"instead of the gateway holding them. Fix: raise maxWaitingRequests above {held.queue_threshold}, or remove it",
            )
        if hold.ttl_cap(cfg.ingress.idle_timeout_seconds) < 1:
            least = hold.idle_timeout_for(1)
            yield Problem(
                "ingress.idleTimeoutSeconds",
                f"{cfg.ingress.idle_timeout_seconds} s leaves {m.name}'s gateway no time to hold a request: a hold, a "
                f"{hold.PICK_TIMEOUT_SECONDS} s pick and {HOLD_MARGIN_SECONDS} s of margin must fit inside the ALB's idle "
                f"timeout. Fix: raise it to at least {least}",
            )
        elif held.cold_start and held.ttl_seconds < facts.scale_up.miss:
            need = hold.idle_timeout_for(facts.scale_up.miss)
            yield Problem(
                "ingress.idleTimeoutSeconds",
                f"{cfg.ingress.idle_timeout_seconds} s caps how long {m.name}'s gateway holds a request at {held.ttl_seconds} s "
                f"(a hold, a {hold.PICK_TIMEOUT_SECONDS} s pick and {HOLD_MARGIN_SECONDS} s of margin inside the ALB's idle "
                f"timeout), short of its expected cold start ({facts.scale_up.miss} s): {m.name} scales to zero, and the first "
                f"request after a quiet spell would get a 503 before a replica can serve it. Fix: raise it to at least {need} "
                f"({hold.idle_timeout_for(held.wanted_seconds)} covers the pessimistic cold start), "
                "or keep replicas.min >= 1",
            )
        elif held.ttl_seconds < held.wanted_seconds:
            start = "cold start" if held.cold_start else "warm scale-up"
            during = "a slow cold start the first callers get 503" if held.cold_start else "a slow scale-up callers get 429"
            yield Problem(
                "ingress.idleTimeoutSeconds",
                f"{cfg.ingress.idle_timeout_seconds} s caps how long {m.name}'s gateway holds a request at "
                f"{held.ttl_seconds} s (a hold, a {hold.PICK_TIMEOUT_SECONDS} s pick and {HOLD_MARGIN_SECONDS} s of margin "
                f"inside the ALB's idle timeout), short of its pessimistic {start} ({held.wanted_seconds} s): during "
                f"{during} before a new replica can serve them. Fix: raise it to at least "
                f"{hold.idle_timeout_for(held.wanted_seconds)}, or accept the earlier "
                f"{'503' if held.cold_start else '429'}s",
                "warning",
            )
