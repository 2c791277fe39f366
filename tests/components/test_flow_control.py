"""The gateway's flow control against KEDA, vLLM and the ALB, on every fixture's render.

Issue 29's trap: the picker's saturation detector holds the excess once a replica's queue or KV use
passes its thresholds; at or below KEDA's targets, vLLM's metrics would sit at target and the HPA
would never add the replica the held requests wait for."""

from __future__ import annotations

import math
from typing import Any

import pytest
import yaml

from builders.gateway import router
from config.derived import capacity, state
from config.derived import path as timeouts
from config.derived.hold import PICK_TIMEOUT_SECONDS, TTL_STEP_SECONDS
from config.derived.scaleup import HOLD_MARGIN_SECONDS
from offline import harness
from tests.conftest import FIXTURES, fixture_run, parse, stack_data, values
from tests.support import gateway as gw

SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"


def _picker_config(run: harness.RunResult, model: str) -> dict[str, Any]:
    release = values(gw.router_releases(run)[model])
    return yaml.safe_load(release["values"]["router"]["epp"]["pluginsCustomConfig"][router.EPP_CONFIG_FILE])


def _detector(config: dict[str, Any]) -> dict[str, Any]:
    ref = config["flowControl"]["saturationDetector"]["pluginRef"]
    (plugin,) = [p for p in config["plugins"] if p.get("name", p["type"]) == ref]
    assert plugin["type"] == "utilization-detector"
    return plugin["parameters"]


def _keda_targets(run: harness.RunResult, model: str) -> dict[str, float]:
    (scaled,) = [values(r) for r in run.of_type(SCALED_OBJECT) if values(r)["metadata"]["namespace"] == model]
    return {t["name"]: float(t["metadata"]["threshold"]) for t in scaled["spec"]["triggers"] if t["type"] == "prometheus"}


@pytest.mark.parametrize("stack", FIXTURES)
def test_keda_targets_sit_below_the_saturation_thresholds_for_every_model(stack: str) -> None:
    run, cfg = fixture_run(stack), parse(stack_data(stack))
    assert cfg.models
    for model in cfg.models:
        config = _picker_config(run, model.name)
        assert config["featureGates"] == ["flowControl"]
        detector, targets = _detector(config), _keda_targets(run, model.name)
        assert detector["queueDepthThreshold"] > targets["queue-depth"], model.name
        assert detector["kvCacheUtilThreshold"] > targets["kv-cache"], model.name
        assert detector["kvCacheUtilThreshold"] <= 1
        # and vLLM admits more than the picker still sends it: it never answers 503 before the picker holds
        pool = cfg.pool(model.pool)
        assert pool is not None
        assert capacity.max_waiting_requests(model, pool) > detector["queueDepthThreshold"], model.name


@pytest.mark.parametrize("stack", FIXTURES)
def test_the_ttl_is_the_pessimistic_scale_up_inside_the_albs_idle_timeout(stack: str) -> None:
    """Warm for a model that keeps replicas, cold (a node launch as well) for one at zero."""
    run, cfg = fixture_run(stack), parse(stack_data(stack))
    idle = cfg.ingress.idle_timeout_seconds
    for model in cfg.models:
        facts = state.of(cfg).model(model.name)
        slow = facts.scale_up.pessimistic_budget
        ttl = int(_picker_config(run, model.name)["flowControl"]["defaultRequestTTL"].removesuffix("s"))
        wanted = slow.miss if model.replicas.min == 0 else slow.hit
        # rounded up to 30 s steps, so a scale-up figure that moves a few seconds rolls no picker or proxy
        assert ttl == min(math.ceil(wanted / TTL_STEP_SECONDS) * TTL_STEP_SECONDS, idle - PICK_TIMEOUT_SECONDS - HOLD_MARGIN_SECONDS)
        assert ttl >= min(wanted, idle - PICK_TIMEOUT_SECONDS - HOLD_MARGIN_SECONDS)
        if model.replicas.min == 0:
            # the fixtures' ALB lets a model at zero hold through its expected cold start at least
            assert ttl >= facts.scale_up.miss, model.name
        assert ttl >= 1  # 0 s would turn the TTL off: hold forever
        # the hold, its pick and a margin end before the ALB cuts the connection; Envoy waits for all of it
        assert ttl + PICK_TIMEOUT_SECONDS + HOLD_MARGIN_SECONDS <= idle
        assert timeouts.chain(idle, ttl).problems() == []


def test_thresholds_move_with_kedas_targets() -> None:
    data = stack_data("minimal-dev")
    data["models"][0].setdefault("autoscaling", {}).update(queueDepthPerReplica=0.5, kvCacheUsageTarget=0.95)
    held = state.of(parse(data)).model("llama-3-1-8b").hold
    assert held is not None
    assert (held.queue_threshold, held.kv_threshold) == (1, 0.975)
