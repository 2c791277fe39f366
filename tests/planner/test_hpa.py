"""The HPA arithmetic, read from the ScaledObjects the program renders (no restated thresholds)."""

from __future__ import annotations

from typing import Any

import pytest

from builders.serving import scaling
from config.derived import capacity
from offline import harness
from planner import hpa
from tests.conftest import DEV, fixture_run, parse, stack_data, values

SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"


def _scaled_object(run: harness.RunResult, model: str) -> dict[str, Any]:
    found = [values(r) for r in run.of_type(SCALED_OBJECT) if values(r)["metadata"]["name"] == model]
    assert len(found) == 1
    return found[0]


@pytest.fixture(scope="module")
def prod_8b() -> dict[str, Any]:
    return _scaled_object(fixture_run("full-prod"), "llama-3-1-8b")


def test_triggers_are_read_with_their_rendered_targets(prod_8b: dict[str, Any]) -> None:
    assert hpa.triggers(prod_8b) == [hpa.Trigger("queue-depth", "AverageValue", 5.0), hpa.Trigger("kv-cache", "Value", 0.8)]
    assert (prod_8b["spec"]["minReplicaCount"], prod_8b["spec"]["maxReplicaCount"]) == (2, 12)


def test_queue_depth_is_the_total_over_the_acceptable_wait_per_replica(prod_8b: dict[str, Any]) -> None:
    # 4 replicas with 10 waiting each (40 in all), KV cache at its target: ceil(40 / 5) = 8
    assert hpa.from_scaled_object(prod_8b, current=4, readings={"queue-depth": 40, "kv-cache": 0.8}) == 8
    # The classic mistake, a per-pod average (10) under AverageValue, proposes ceil(10 / 5) = 2:
    # only the KV-cache trigger, at its target, holds the current 4
    assert hpa.from_scaled_object(prod_8b, current=4, readings={"queue-depth": 10, "kv-cache": 0.8}) == 4


def test_kv_cache_scales_the_current_count_by_usage_over_target(prod_8b: dict[str, Any]) -> None:
    # 0.96 average against 0.8 on 5 replicas: ceil(5 x 1.2) = 6
    assert hpa.from_scaled_object(prod_8b, current=5, readings={"queue-depth": 0, "kv-cache": 0.96}) == 6
    # within the 10 % tolerance nothing moves
    assert hpa.from_scaled_object(prod_8b, current=5, readings={"queue-depth": 0, "kv-cache": 0.85}) == 5


def test_the_largest_proposal_wins_within_the_rendered_bounds(prod_8b: dict[str, Any]) -> None:
    assert hpa.from_scaled_object(prod_8b, current=4, readings={"queue-depth": 300, "kv-cache": 0.4}) == 12
    assert hpa.from_scaled_object(prod_8b, current=4, readings={"queue-depth": 0, "kv-cache": 0.0}) == 2


def test_the_guardrail_trigger_counts_when_rendered() -> None:
    scaled = _scaled_object(fixture_run("internet-facing-tls"), "llama-3-1-8b")
    assert [t.name for t in hpa.triggers(scaled)] == ["queue-depth", "kv-cache", "ttft-p95"]
    # p95 time to first token at twice its 1.5 s target doubles 2 replicas
    assert hpa.from_scaled_object(scaled, current=2, readings={"queue-depth": 0, "kv-cache": 0.5, "ttft-p95": 3.0}) == 4


def test_a_config_threshold_reaches_the_arithmetic_through_the_scaled_object() -> None:
    data = stack_data(DEV)
    data["models"][0]["autoscaling"] = {"queueDepthPerReplica": 10}
    cfg = parse(data)
    pool = cfg.pool(cfg.models[0].pool)
    assert pool is not None
    relaxed = scaling.scaled_object(cfg.models[0], "http://prometheus:9090", pool, scales_to_zero=False)
    rendered = _scaled_object(fixture_run(DEV), "llama-3-1-8b")
    readings = {"queue-depth": 15, "kv-cache": 0.8}
    assert hpa.from_scaled_object(rendered, current=1, readings=readings) == 3  # ceil(15 / 5), the default
    assert hpa.from_scaled_object(relaxed, current=1, readings=readings) == 2  # ceil(15 / 10)


def test_a_missing_reading_is_an_error_not_a_zero(prod_8b: dict[str, Any]) -> None:
    with pytest.raises(KeyError, match="kv-cache"):
        hpa.from_scaled_object(prod_8b, current=2, readings={"queue-depth": 3})


def _at_zero_scaled_object() -> tuple[dict[str, Any], int]:
    """The scale-to-zero fixture's ScaledObject, built as the program builds it, and its replica's max-num-seqs."""
    cfg = parse(stack_data("scale-to-zero-dev"))
    model = cfg.models[0]
    pool = cfg.pool(model.pool)
    assert pool is not None
    assert model.replicas.min == 0
    return scaling.scaled_object(model, "http://prometheus:9090", pool, scales_to_zero=True), capacity.max_num_seqs(model, pool)


def test_the_gateway_trigger_is_read_with_its_activation() -> None:
    scaled, seqs = _at_zero_scaled_object()
    found = {t.name: t for t in hpa.triggers(scaled)}
    assert list(found) == ["queue-depth", "kv-cache", scaling.GATEWAY_REQUESTS_TRIGGER]  # the schedule is a cron, not a metric
    assert found[scaling.GATEWAY_REQUESTS_TRIGGER] == hpa.Trigger(scaling.GATEWAY_REQUESTS_TRIGGER, "AverageValue", float(seqs), 0.0)
    # activationThreshold rides beside the threshold; the others default to KEDA's 0
    assert found["queue-depth"].activation == 0.0


def test_an_activation_threshold_is_parsed_not_taken_for_the_target() -> None:
    scaled, _ = _at_zero_scaled_object()
    for t in scaled["spec"]["triggers"]:
        if t["name"] == scaling.GATEWAY_REQUESTS_TRIGGER:
            t["metadata"]["activationThreshold"] = "3"
    gateway = next(t for t in hpa.triggers(scaled) if t.name == scaling.GATEWAY_REQUESTS_TRIGGER)
    assert gateway.activation == 3.0
    assert gateway.target != 3.0


def test_requests_at_the_gateway_scale_beyond_one_replica() -> None:
    scaled, seqs = _at_zero_scaled_object()
    idle = {"queue-depth": 0, "kv-cache": 0.0}
    # one request held while the first replica starts: one replica; 1.5 replicas' sequences in flight: ceil(1.5) = 2 (max is 3)
    assert hpa.from_scaled_object(scaled, current=1, readings={**idle, scaling.GATEWAY_REQUESTS_TRIGGER: 1}) == 1
    assert hpa.from_scaled_object(scaled, current=1, readings={**idle, scaling.GATEWAY_REQUESTS_TRIGGER: 1.5 * seqs}) == 2
    with pytest.raises(KeyError, match=scaling.GATEWAY_REQUESTS_TRIGGER):
        hpa.from_scaled_object(scaled, current=1, readings=idle)
