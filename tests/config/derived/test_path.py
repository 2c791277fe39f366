"""The request path's invariants (config/derived/path.py), each at its boundary: the pair of inputs on either
side of the limit, one accepted and one refused with its message."""

from __future__ import annotations

from typing import Any

from config.derived import path, state
from config.derived.hold import idle_timeout_for
from config.sections.stack import StackConfig
from tests.conftest import DEV, new_problems_after, parse, stack_data
from tests.support.mutations import m0


def _path(mutate: Any = None) -> path.RequestPath:
    data = stack_data(DEV)
    if mutate is not None:
        mutate(data)
    cfg = StackConfig.model_validate(data)  # the sections' own validation only: the rules would refuse what is tested
    return state.of(cfg).model(cfg.models[0]).path


def test_a_one_sequence_replica_with_a_small_queue_target_is_refused() -> None:
    """maxNumSeqs 1 and queueDepthPerReplica 0.2: vLLM's derived waiting bound (one batch) equals the gateway's
    queue threshold, so a replica would refuse what the gateway still sends it."""
    mutate = lambda d: m0(d).update(maxNumSeqs=1, autoscaling={**m0(d).get("autoscaling", {}), "queueDepthPerReplica": 0.2})  # noqa: E731
    held = _path(mutate)
    assert held.waiting_bound == held.hold.queue_threshold == 1
    (problem,) = new_problems_after(mutate)
    assert problem == (
        "models[llama-3-1-8b]: vLLM's waiting bound (1: one batch, maxNumSeqs) is not above the gateway's queue threshold "
        "(1, from autoscaling.queueDepthPerReplica): a replica would answer 503 to requests the gateway still sends it "
        "instead of the gateway holding them. Fix: set maxWaitingRequests above 1, or raise maxNumSeqs"
    )
    # its valid twin: a waiting bound one above the threshold
    assert new_problems_after(lambda d: (mutate(d), m0(d).update(maxWaitingRequests=2))) == []


def test_a_set_waiting_bound_at_the_threshold_is_refused_and_one_above_accepted() -> None:
    threshold = _path().hold.queue_threshold
    (problem,) = new_problems_after(lambda d: m0(d).update(maxWaitingRequests=threshold))
    assert problem.startswith(f"models[llama-3-1-8b].maxWaitingRequests: {threshold} is not above the gateway's queue threshold")
    assert new_problems_after(lambda d: m0(d).update(maxWaitingRequests=threshold + 1)) == []


def test_the_kv_threshold_must_stay_above_keda_s_target() -> None:
    def target(value: float) -> Any:
        return lambda d: m0(d).update(autoscaling={**m0(d).get("autoscaling", {}), "kvCacheUsageTarget": value})

    assert _path(target(0.95)).problems("m") == []
    assert [p.field for p in _path(target(1.0)).problems("m")] == ["autoscaling.kvCacheUsageTarget"]


def test_the_alb_must_leave_a_second_to_hold() -> None:
    least = idle_timeout_for(1)

    def idle(value: int) -> Any:
        return lambda d: d.setdefault("ingress", {}).update(idleTimeoutSeconds=value)

    assert "leaves llama-3-1-8b's gateway no time to hold" not in " ".join(p.message for p in _path(idle(least)).problems("llama-3-1-8b"))
    (problem,) = [p for p in _path(idle(least - 1)).problems("llama-3-1-8b") if p.severity == "error"]
    assert problem.field == "ingress.idleTimeoutSeconds"
    assert f"raise it to at least {least}" in problem.message


def test_the_path_carries_what_the_builders_render() -> None:
    cfg = parse(stack_data(DEV))
    facts = state.of(cfg).model(cfg.models[0])
    assert facts.path.hold == facts.hold
    assert facts.path.chain == path.chain(cfg.ingress.idle_timeout_seconds, facts.hold.ttl_seconds)
    assert facts.path.in_flight_bound is not None
    assert facts.path.waiting_bound is not None
    assert facts.path.in_flight_bound > facts.path.waiting_bound


def test_flow_control_outcomes_have_one_name() -> None:
    """The planner's codes, the alerts' labels and the status a caller gets come from one enum."""
    from builders.observability import rules
    from planner import simulate

    assert (simulate.SHED_TTL, simulate.SHED_NO_ENDPOINTS, simulate.REFUSED) == (
        path.Outcome.EVICTED_TTL,
        path.Outcome.REJECTED_NO_ENDPOINTS,
        path.Outcome.REFUSED_BY_REPLICA,
    )
    assert rules.SHED_OUTCOMES == ("EvictedTTL", "RejectedNoEndpoints", "RejectedCapacity")
    assert [o.status for o in path.SHED] == [429, 503, 429]
    assert path.Outcome.REFUSED_BY_REPLICA.label is None
