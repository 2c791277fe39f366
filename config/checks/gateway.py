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
    """Every model's request path (config/derived/path.py RequestPath.problems, where each invariant is stated
    once): the gateway's thresholds above KEDA's targets and vLLM's waiting bound above the gateway's queue
    threshold, the hold inside the ALB's idle timeout, a model at zero's hold beyond its cold start, and the
    timeout chain link by link."""
    derived = state.of(cfg)
    for m in cfg.models:
        path = model_path(m)
        for problem in derived.model(m).path.problems(m.name):
            if problem.field == "admission":
                where = f"{path}.maxWaitingRequests" if m.max_waiting_requests is not None else path
            elif problem.field == "autoscaling.kvCacheUsageTarget":
                where = f"{path}.autoscaling.kvCacheUsageTarget"
            else:
                where = "ingress.idleTimeoutSeconds"
            yield Problem(where, problem.message, problem.severity)
