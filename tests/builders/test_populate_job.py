"""The populate Job as builders/serving/populate.py renders it: how its tries fail, retry and end."""

from __future__ import annotations

import math
from typing import Any

import kubernetes_validate
import pytest

from builders.serving import populate
from builders.serving import weights_script as script
from builders.serving.workload import Sources
from config.derived import capacity
from config.facts import speed, versions
from config.sections.models import ModelConfig
from tests.conftest import PROD, parse, stack_data

CFG = parse(stack_data(PROD))
STREAMED = [m for m in CFG.models if m.streams_from_s3]
SOURCES = Sources(image="vllm/vllm-openai:test", bucket="weights", region="us-east-1")


def _job(model: ModelConfig) -> dict[str, Any]:
    pool = next(p for p in CFG.gpu_pools if p.name == model.pool)
    return populate.job(model, pool, SOURCES, hf_token=True, models=list(CFG.models))


def test_the_fixture_streams_a_small_and_a_large_checkpoint() -> None:
    # the large one is where one try outgrows the half-hour floor and the budget matters
    assert {populate.try_seconds(m) > populate.MIN_SECONDS for m in STREAMED} == {False, True}


@pytest.mark.parametrize("model", STREAMED, ids=lambda m: m.name)
def test_the_job_validates_against_the_kubernetes_schema(model: ModelConfig) -> None:
    kubernetes_validate.validate(_job(model), versions.KUBERNETES_DEFAULT, strict=True)


@pytest.mark.parametrize("model", STREAMED, ids=lambda m: m.name)
def test_a_permanent_failure_stops_the_job_and_an_eviction_costs_no_retry(model: ModelConfig) -> None:
    spec = _job(model)["spec"]
    assert spec["template"]["spec"]["restartPolicy"] == "Never"  # a pod failure policy requires it
    # in order, first match wins: exit code 2 ends the Job even on a pod that was also disrupted
    assert spec["podFailurePolicy"]["rules"] == [
        {"action": "FailJob", "onExitCodes": {"containerName": "populate", "operator": "In", "values": [script.PERMANENT]}},
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
    ]
    (container,) = spec["template"]["spec"]["containers"]
    assert container["name"] == "populate"  # the container the FailJob rule names
    assert spec["backoffLimit"] == populate.BACKOFF_LIMIT


@pytest.mark.parametrize("model", STREAMED, ids=lambda m: m.name)
def test_each_try_has_its_deadline_and_the_job_pays_for_a_late_failure_and_a_full_retry(model: ModelConfig) -> None:
    spec = _job(model)["spec"]
    one_try = spec["template"]["spec"]["activeDeadlineSeconds"]
    whole = spec["activeDeadlineSeconds"]
    assert one_try == populate.try_seconds(model) >= populate.MIN_SECONDS
    assert whole == populate.populate_seconds(model) == populate.BUDGETED_TRIES * one_try
    # a try that fails just before its own deadline leaves a whole try's time for the retry
    assert whole - one_try >= one_try


def test_one_try_is_twice_the_expected_node_image_and_download_and_at_least_half_an_hour() -> None:
    for model in STREAMED:
        expected = (
            capacity.checkpoint_gb(model) / speed.HUGGING_FACE_RATE.value
            + speed.NODE_READY.value
            + speed.IMAGE_SIZE_GB.value / speed.IMAGE_PULL_RATE.value
        )
        assert populate.try_seconds(model) == max(populate.MIN_SECONDS, math.ceil(2 * expected)), model.name
