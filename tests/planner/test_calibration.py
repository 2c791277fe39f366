"""The serving model against published vLLM measurements: every prediction within 30 %."""

from __future__ import annotations

import pytest

from config.facts import catalog
from planner import calibration

TOLERANCE = 0.30


@pytest.mark.parametrize("measurement", calibration.MEASUREMENTS, ids=lambda m: m.name)
def test_prediction_within_30_percent(measurement: calibration.Measurement) -> None:
    predicted = calibration.predict(measurement)
    assert abs(predicted / measurement.seconds - 1) <= TOLERANCE, (measurement.name, predicted, measurement.seconds)


def test_the_calibration_spans_gpus_models_and_both_phases() -> None:
    gpus = {catalog.INSTANCE_TYPES[m.instance].gpu.model for m in calibration.MEASUREMENTS}  # type: ignore[union-attr]
    assert len(gpus) >= 3
    assert {m.metric for m in calibration.MEASUREMENTS} == {"tpot", "ttft"}
    assert any(m.tensor_parallel > 1 for m in calibration.MEASUREMENTS)
    assert all(m.source for m in calibration.MEASUREMENTS)


def test_every_gpu_of_the_catalog_has_cited_peak_figures() -> None:
    for t in catalog.gpu_instance_types():
        gpu = t.gpu
        assert gpu is not None
        assert gpu.bf16_tflops > 0, gpu.model
        assert gpu.bandwidth_gbs > 0, gpu.model
        assert gpu.perf_source, gpu.model
