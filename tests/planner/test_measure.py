"""`make measure` (issue 32, items 1-2): the benchmark Job as a client of the model, the sweep, the fit, and the
offline run against the fake server, whose known rates the fit must recover."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import kubernetes_validate
import numpy as np
import pytest

from builders import measure as manifests
from builders.gateway import router
from config.facts import versions
from config.sections.gpu_pools import GpuPool
from config.sections.models import ModelConfig
from config.sections.stack import StackConfig
from offline import measure as measure_run
from offline.mocks import Registration
from planner import measure, plan
from planner.serving import Measured, performance
from tests.conftest import DEV, PROD, parse, stack_data
from tests.support import workloads

FIXTURES = Path(__file__).parents[1] / "fixtures" / "stacks"
TRAFFIC = Path(__file__).parents[2] / "traffic" / "seed-day.yaml"


def _dev() -> tuple[StackConfig, ModelConfig]:
    cfg = parse(stack_data(DEV))
    return cfg, cfg.models[0]


def _pool(cfg: StackConfig, model: ModelConfig) -> GpuPool:
    pool = cfg.pool(model.pool)
    assert pool is not None
    return pool


# -- the fit -----------------------------------------------------------------------------------------------------


def test_the_fit_recovers_a_replica_the_engine_describes() -> None:
    """Points the planner's own engine answers for a known replica (an oracle independent of the fit's algebra):
    the fit lands on its weight read, its prefill compute and its batch."""
    cfg, model = _dev()
    pool = _pool(cfg, model)
    base = performance(model, pool)
    truth = Measured(weights_step_seconds=0.012, compute_seconds_per_token=1 / 6000, request_overhead=0.03, max_num_seqs=6)
    perf = truth.apply(base)
    template = measure.Point(1.0, 200, 0.0, 0.0, 0.0, 512, 128)
    saturated = perf.saturated_requests_per_second(512, 128)
    points = [measure.replay(perf, dataclasses.replace(template, rate=saturated * share)) for share in (0.1, 0.3, 0.5, 1.3)]
    points.append(measure.replay(perf, dataclasses.replace(template, rate=saturated * 0.1, prompt=1024)))
    fitted = measure.fit(points, base)
    assert fitted.weights_step_seconds == pytest.approx(truth.weights_step_seconds, rel=0.15)
    assert fitted.compute_seconds_per_token == pytest.approx(truth.compute_seconds_per_token, rel=0.15)
    assert fitted.max_num_seqs is not None
    assert abs(fitted.max_num_seqs - 6) <= 1


def test_a_sweep_that_never_saturates_leaves_the_batch_to_the_prediction() -> None:
    cfg, model = _dev()
    base = performance(model, _pool(cfg, model))
    points = [measure.Point(r, 50, r, 0.1, 0.01, 512, 128) for r in (0.5, 1.0)]
    fitted = measure.fit(points, base)
    assert fitted.max_num_seqs is None
    assert fitted.apply(base).max_num_seqs == base.max_num_seqs


def test_the_parser_reads_the_clients_lines_and_refuses_a_log_without_them() -> None:
    line = {
        "request_rate": 2.0,
        "completed": 40,
        "steady_request_throughput": 1.9,
        "median_ttft_ms": 120.0,
        "median_tpot_ms": 11.0,
        "mean_prompt_tokens": 512,
        "mean_output_tokens": 128,
    }
    (point,) = measure.parse("starting\nBENCH_RESULT " + json.dumps(line) + "\ndone\n")
    assert point == measure.Point(2.0, 40, 1.9, 0.12, 0.011, 512, 128)
    with pytest.raises(ValueError, match="no BENCH_RESULT line"):
        measure.parse("Traceback: connection refused\n")


# -- offline, end to end -----------------------------------------------------------------------------------------


def test_the_jobs_own_command_against_the_fake_recovers_its_rates() -> None:
    """The Job's client arguments (the fake's URL for the gateway's) against a fake that streams at known rates
    and queues past its batch; the fit recovers its time per token, prefill rate and batch within FIT_TOLERANCE."""
    cfg, model = _dev()
    fake = measure_run.FakeReplica(tpot=0.01, prefill_tokens_per_second=4000.0, batch=4)
    prompt, output = 200, 32
    expected = fake.saturated_rate(prompt, output)
    rates = [round(expected * share, 2) for share in (0.25, 0.6, 1.5)]
    s = measure.Sweep(rates, prompt, output, duration=4.0, max_requests=200, timeout=30.0)
    points = measure.parse(measure_run.run_fake(model, s, fake))
    assert [p.rate for p in points] == [*rates, rates[0]]
    assert points[-1].prompt == 2 * prompt
    base = performance(model, _pool(cfg, model))
    fitted = measure.fit(points, base)
    off = measure_run.recovered(fitted, fake, base)
    assert all(abs(v) <= measure_run.FIT_TOLERANCE for v in off.values()), off


# -- the Job ----------------------------------------------------------------------------------------------------


def test_the_job_is_a_bounded_client_of_the_model_that_passes_the_restricted_profile() -> None:
    cfg, model = _dev()
    s = measure.sweep(cfg, model, TRAFFIC, duration=30)
    namespace, script, job = measure.job_manifests(cfg, model, "measure", s)
    for doc in (namespace, script, job):
        kubernetes_validate.validate(doc, versions.KUBERNETES_DEFAULT, strict=True)
    spec = job["spec"]
    assert spec["backoffLimit"] == 0
    assert spec["activeDeadlineSeconds"] == manifests.deadline_seconds(s.rates, s.duration, s.timeout)
    assert spec["ttlSecondsAfterFinished"] == manifests.TTL_SECONDS
    (container,) = spec["template"]["spec"]["containers"]
    command = container["command"]
    assert command[command.index("--base-url") + 1] == router.url(model)
    assert int(command[command.index("--max-requests") + 1]) >= 1
    assert command[command.index("--probe-prompt-tokens") + 1] == str(2 * s.prompt)
    assert script["data"][manifests.SCRIPT_FILE].startswith('"""The benchmark client')
    regs = [Registration("kubernetes:batch/v1:Job", "measure", None, job, True)]
    assert workloads.pod_security_findings(regs) == []
    # the sweep runs past what one replica is expected to finish, from a quarter of it
    assert s.rates == sorted(s.rates)
    assert s.rates[-1] / s.rates[0] == pytest.approx(5, rel=0.02)


def test_the_api_key_comes_from_a_secret_of_the_client_namespace_where_the_model_needs_one() -> None:
    cfg = parse(stack_data("internet-facing-tls"))
    model = next(m for m in cfg.models if m.name == "llama-3-1-8b")
    s = measure.Sweep([1.0], 512, 128, 10, 10, 60)
    _, _, job = measure.job_manifests(cfg, model, "chat-app", s)
    env = job["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": manifests.API_KEY_ENV, "valueFrom": {"secretKeyRef": {"name": f"{model.name}-api-key", "key": "api-key"}}} in env


def test_a_prod_stack_and_a_model_without_a_client_namespace_are_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    prod = parse(stack_data(PROD)).models[0].name
    assert (
        measure_run.main([PROD, "--file", str(FIXTURES / f"{PROD}.yaml"), "--model", prod, "--target", "cluster", "--out", str(tmp_path)])
        == 2
    )
    assert "ALLOW_PROD=1" in capsys.readouterr().err
    _, model = _dev()
    args = [DEV, "--file", str(FIXTURES / f"{DEV}.yaml"), "--model", model.name, "--target", "cluster", "--out", str(tmp_path)]
    assert measure_run.main([*args, "--traffic", str(TRAFFIC)]) == 2
    assert "clientNamespaces" in capsys.readouterr().err


def test_the_cluster_steps_hold_the_model_at_one_replica_and_let_it_go() -> None:
    cfg, model = _dev()
    steps = measure.cluster_steps(cfg, model, "measure", Path("build/dev/measure/m.yaml"))
    assert steps[0].endswith(f"{manifests.PAUSED_REPLICAS}=1 --overwrite")
    assert steps[-1].endswith(f"{manifests.PAUSED_REPLICAS}-")
    assert any("wait --for=condition=complete" in s for s in steps)


# -- the plan with a measured replica -----------------------------------------------------------------------------


def test_a_measured_replica_replaces_the_prediction_in_the_plan(tmp_path: Path) -> None:
    cfg, model = _dev()
    profile = tmp_path / "day.yaml"
    profile.write_text(
        f"models:\n  {model.name}:\n    ratePerMinute: [[0, 60], [24, 60]]\n    promptTokens: {{mean: 512}}\n    outputTokens: {{mean: 128}}\n"
    )
    slow = Measured(weights_step_seconds=0.05, compute_seconds_per_token=1 / 2000, request_overhead=0.05, max_num_seqs=4)
    predicted, _, _ = plan.run(cfg, profile, days=0.02)
    measured, _, _ = plan.run(cfg, profile, days=0.02, measured={model.name: slow})
    name = model.name
    assert measured["models"][name]["replicaCapacity"]["maxNumSeqs"] == 4
    assert measured["models"][name]["ttftSeconds"]["p50"] > predicted["models"][name]["ttftSeconds"]["p50"]
    assert not np.isclose(
        measured["models"][name]["replicaCapacity"]["requestsPerSecond"], predicted["models"][name]["replicaCapacity"]["requestsPerSecond"]
    )


def test_the_jobs_log_is_fitted_into_what_make_plan_reads(tmp_path: Path) -> None:
    _, model = _dev()
    lines = [
        {"request_rate": r, "completed": 60, "steady_request_throughput": t, "median_ttft_ms": f, "median_tpot_ms": 12.0}
        | {"mean_prompt_tokens": p, "mean_output_tokens": 128}
        for r, t, f, p in ((0.5, 0.5, 110.0, 512), (1.0, 0.98, 115.0, 512), (3.0, 1.6, 900.0, 512), (0.5, 0.5, 200.0, 1024))
    ]
    log = tmp_path / "job.log"
    log.write_text("".join(f"BENCH_RESULT {json.dumps(line)}\n" for line in lines))
    args = [DEV, "--file", str(FIXTURES / f"{DEV}.yaml"), "--model", model.name, "--traffic", str(TRAFFIC), "--out", str(tmp_path)]
    assert measure_run.main([*args, "--log", str(log)]) == 0
    written = tmp_path / DEV / "measure" / f"{model.name}.json"
    found = plan._measured(written)
    assert found is not None
    fitted = found[model.name]
    assert fitted.compute_seconds_per_token == pytest.approx(0.09 / 512)
    assert fitted.max_num_seqs is not None  # 3 offered, 1.6 completed: the batch is read off it
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(ValueError, match="not a `make measure` result"):
        plan._measured(bad)
