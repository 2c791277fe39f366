"""The plan shows its misses and two lower bounds (issue 31, items 4 and 5): the SLO-feasible rate
of one replica at its boundary, the SLO oracle against the saturated one, minutes over the
objective, a model without traffic left out, the replay's start, and profiles on their own clock.
Fixture stacks only."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import numpy as np
import pytest

from offline import golden
from planner import oracle, plan, report, traffic
from planner.serving import performance
from planner.simulate import MINUTE, Options, minute_p99, simulate
from planner.traffic import Requests
from tests.conftest import DEV, PROD, parse, stack_data

HOUR = 3600


def _constant(rpm: float, prompt: float = 512, output: float = 256, sigma: float = 0.6) -> traffic.ModelTraffic:
    return traffic.ModelTraffic.model_validate(
        {
            "ratePerMinute": [[0, rpm], [24, rpm]],
            "promptTokens": {"mean": prompt, "sigma": sigma},
            "outputTokens": {"mean": output, "sigma": sigma},
        }
    )


def _one_replica_p99(cfg: object, name: str, rate: float, objective: float) -> float:
    """The P99 TTFT (unanswered: infinite) one replica gives a fresh Poisson stream at `rate`."""
    alone = parse(_single(name, 1, 1))
    rng = traffic.stream(7, "check")
    seconds = HOUR
    reqs = traffic.generate(_constant(rate * 60), seconds, rng)
    result = simulate(alone, {name: reqs}, Options(seconds + 600, static_replicas={name: 1}))
    s = result.models[name]
    judged = reqs.arrival >= oracle.TRIAL_WARMUP_SECONDS
    ttft = np.where(s.served, np.nan_to_num(s.ttft, nan=np.inf), np.inf)[judged]
    return float(np.percentile(ttft, 99, method="higher"))


def _single(name: str, low: int, high: int) -> dict[str, object]:
    data = copy.deepcopy(stack_data(DEV))
    model = data["models"][0]
    assert model["name"] == name
    model["replicas"] = {**model.get("replicas", {}), "min": low, "max": high}
    return data


# -- the SLO-feasible rate ----------------------------------------------------------------------------
def test_the_slo_rate_is_where_one_replica_meets_its_objective_and_no_further() -> None:
    """A boundary pair on a fresh stream: 15 % under the rate the P99 is within the objective, 25 %
    over it is not (near saturation an hour's P99 swings with its bursts); and the rate is below what
    a saturated replica completes."""
    cfg = parse(stack_data(DEV))
    model = cfg.models[0]
    objective = (model.slo or cfg.observability.slo).ttft_p99_seconds
    sample = traffic.generate(_constant(60), HOUR, traffic.stream(0, model.name))
    rate = oracle.slo_rate(cfg, model, sample)
    pool = cfg.pool(model.pool)
    assert pool is not None
    saturated = performance(model, pool).saturated_requests_per_second(float(sample.prompt.mean()), float(sample.output.mean()))
    assert 0 < rate < saturated
    assert _one_replica_p99(cfg, model.name, 0.85 * rate, objective) <= objective
    assert _one_replica_p99(cfg, model.name, 1.25 * rate, objective) > objective


def test_a_tighter_objective_gives_a_lower_rate_and_an_impossible_one_none() -> None:
    data = copy.deepcopy(stack_data(DEV))
    sample = traffic.generate(_constant(60), HOUR, traffic.stream(0, "x"))
    rates = []
    for objective in (2.0, 0.5, 0.01):
        data["observability"]["slo"] = {**data["observability"].get("slo", {}), "ttftP99Seconds": objective}
        cfg = parse(data)
        rates.append(oracle.slo_rate(cfg, cfg.models[0], sample))
    assert rates[0] > rates[1] > 0
    assert rates[2] == 0.0  # no replica answers in 10 ms: not even a trickle


def test_the_slo_oracle_keeps_min_and_floors_and_never_needs_less_than_the_saturated_one() -> None:
    data = copy.deepcopy(stack_data("scale-to-zero-dev"))
    cfg = parse(data)
    name = cfg.models[0].name
    seconds = 24 * HOUR
    counts = np.zeros(seconds // MINUTE)
    counts[600:660] = 240  # an hour at 4 requests a second, nothing else
    arrival = np.repeat(np.arange(len(counts)) * MINUTE, counts.astype(int)).astype(float)
    reqs = {name: Requests(arrival, np.full(len(arrival), 512), np.full(len(arrival), 256))}
    model = cfg.models[0]
    rate = oracle.slo_rate(cfg, model, reqs[name])  # the model's own, not a hand-picked one
    slo = oracle.slo_replicas_needed(cfg, reqs, seconds, {name: rate})[name]
    saturated = oracle.replicas_needed(cfg, reqs, seconds)[name]
    assert (slo >= saturated).all()
    assert slo[630] == min(math.ceil(4 / rate), model.replicas.max)
    floor = np.array(oracle_floors(model, seconds))
    assert (slo >= floor).all()
    assert floor.max() >= 1
    assert slo[0] == 0  # outside the schedule and without traffic, a model at zero needs nothing
    # a rate of 0 (the objective is out of reach) needs max wherever there is traffic
    assert oracle.slo_replicas_needed(cfg, reqs, seconds, {name: 0.0})[name][630] == model.replicas.max


def oracle_floors(model: object, seconds: int) -> list[int]:
    from planner.simulate import floors

    return floors(model, seconds)[: seconds // MINUTE]  # type: ignore[arg-type]


# -- minutes over the objective ---------------------------------------------------------------------------
@pytest.mark.parametrize("shuffled", [False, True])
def test_each_minutes_p99_is_its_nearest_rank_value(shuffled: bool) -> None:
    rng = np.random.default_rng(7)
    arrival = np.sort(rng.uniform(0, 30 * MINUTE, 5000))
    arrival[:40] = 3 * MINUTE + 0.5  # a minute of ties
    arrival = np.sort(arrival)
    ttft = rng.lognormal(0, 1, len(arrival))
    ttft[::97] = np.nan  # never answered: left out here (over_objective counts them)
    ttft[::89] = np.inf
    if shuffled:
        order = rng.permutation(len(arrival))
        arrival, ttft = arrival[order], ttft[order]
    got = minute_p99(arrival, ttft, 32)
    for m in range(32):
        values = np.sort(ttft[(arrival // MINUTE == m) & ~np.isnan(ttft)])
        want = values[math.ceil(0.99 * len(values)) - 1] if len(values) else 0.0
        assert got[m] == want, m
    assert got[30] == got[31] == 0.0
    assert np.isinf(got).any()


def test_minutes_over_the_objective_count_unanswered_requests_as_misses() -> None:
    arrival = np.array([10.0, 20.0, 70.0, 130.0, 200.0])
    ttft = np.array([0.5, 0.6, 3.0, np.nan, 0.4])
    served = np.array([True, True, True, False, True])
    over, worst, p99 = plan.over_objective(arrival, ttft, served, 2.0, 5 * MINUTE)
    assert over == 2  # minute 1 (3 s) and minute 2 (an unanswered request); minute 4 has none: not judged
    assert (worst, p99) == (2, math.inf)  # the unanswered request is the worst miss
    # a minute whose only misses are unanswered is named, never one within the objective
    only_unanswered = plan.over_objective(np.array([10.0, 70.0]), np.array([1.5, np.nan]), np.array([True, False]), 2.0, 2 * MINUTE)
    assert only_unanswered == (1, 1, math.inf)
    answered = plan.over_objective(arrival, np.nan_to_num(ttft, nan=0.3), np.ones(5, dtype=bool), 2.0, 5 * MINUTE)
    assert answered == (1, 1, 3.0)
    assert plan.over_objective(arrival, np.nan_to_num(np.minimum(ttft, 1.0), nan=0.3), np.ones(5, dtype=bool), 2.0, 5 * MINUTE) == (
        0,
        -1,
        0.0,
    )
    # at the boundary: a P99 equal to the objective is within it
    assert plan.over_objective(np.array([5.0]), np.array([2.0]), np.array([True]), 2.0, MINUTE)[0] == 0
    assert plan.clock(1440 + 605) == "day 2 10:05 UTC"


def test_the_report_shows_the_minutes_over_the_objective_and_both_bounds(tmp_path: Path) -> None:
    profile = tmp_path / "day.yaml"
    # 200 requests a minute for dev's max of 3 replicas: minutes over the objective while it scales
    profile.write_text(
        "models:\n  m:\n    ratePerMinute: [[0, 200], [24, 200]]\n    promptTokens: {mean: 512}\n    outputTokens: {mean: 256}\n"
    )
    data, result, _ = plan.run(parse(stack_data(DEV)), profile, days=0.1)
    m = data["models"]["llama-3-1-8b"]
    assert m["minutesOverSlo"] > 0
    worst = m["worstMinute"]["ttftP99Seconds"]
    assert worst is None or worst > m["ttftSloSeconds"]  # None: unanswered requests put it over
    cost = data["cost"]
    assert cost["oracle"]["perHour"] <= cost["sloOracle"]["perHour"]
    assert cost["autoscaledOverSloOracle"] == pytest.approx(cost["autoscaled"]["perHour"] / cost["sloOracle"]["perHour"], abs=1e-3)
    text = report.markdown(data)
    assert f"{m['minutesOverSlo']:,} minute(s) with a P99 TTFT over" in text
    assert "| SLO oracle | Saturated oracle |" in text.replace("Autoscaled ", "")
    assert "(llama-3-1-8b.png)" in text
    report.plot("llama-3-1-8b", result, tmp_path / "p.png", objective=0.1)  # clipped: the annotation path runs
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"


# -- models without traffic, and the replay's start ---------------------------------------------------------
def test_a_model_without_traffic_is_a_warning_and_left_out_of_every_fleet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = parse(stack_data(PROD))
    assert len(cfg.models) > 1
    first = cfg.models[0].name
    profile = tmp_path / "one.yaml"
    profile.write_text(
        f"models:\n  {first}:\n    ratePerMinute: [[0, 30], [24, 30]]\n    promptTokens: {{mean: 512}}\n    outputTokens: {{mean: 128}}\n"
    )
    data, result, static = plan.run(cfg, profile, days=0.02)
    assert set(data["models"]) == {first} == set(result.models) == set(static.models)
    assert len(data["warnings"]) == len(cfg.models) - 1
    assert data["notPlanned"] == [m.name for m in cfg.models if m.name != first]
    assert all("no traffic in one.yaml" in w for w in data["warnings"])
    assert "Warning:" in report.markdown(data)
    assert "left out of every fleet" in capsys.readouterr().err
    quiet = tmp_path / "none.yaml"
    quiet.write_text(
        f"models:\n  {first}:\n    ratePerMinute: [[0, 0], [24, 0]]\n    promptTokens: {{mean: 512}}\n    outputTokens: {{mean: 128}}\n"
    )
    with pytest.raises(ValueError, match="no model of the stack has a request"):
        plan.run(cfg, quiet, days=0.02)


def test_the_replay_starts_as_the_first_minutes_traffic_keeps_the_model_unless_asked_cold(tmp_path: Path) -> None:
    data = copy.deepcopy(stack_data("scale-to-zero-dev"))
    data["models"][0]["autoscaling"].pop("schedules")
    cfg = parse(data)
    profile = tmp_path / "night.yaml"
    profile.write_text(
        "models:\n  m:\n    ratePerMinute: [[0, 4], [24, 4]]\n    promptTokens: {mean: 512}\n    outputTokens: {mean: 256}\n"
    )
    warm, result, _ = plan.run(cfg, profile, days=0.05)
    cold, cold_result, _ = plan.run(cfg, profile, days=0.05, cold_start=True)
    name = cfg.models[0].name
    assert result.series[name]["ready"][0] == 1
    assert cold_result.series[name]["ready"][0] == 0
    assert warm["models"][name]["longestHoldSeconds"] < 5 < cold["models"][name]["longestHoldSeconds"]
    assert cold["coldStart"] is True
    assert warm["coldStart"] is False


# -- profiles on their own clock ------------------------------------------------------------------------------
def test_a_profile_is_read_on_its_time_zone_across_daylight_saving() -> None:
    peak = traffic.ModelTraffic.model_validate(
        {
            "ratePerMinute": [[0, 0], [9, 0], [9.01, 60], [10, 60], [10.01, 0], [24, 0]],
            "promptTokens": {"mean": 8},
            "outputTokens": {"mean": 8},
        }
    )
    winter = np.array([14.5 * HOUR])  # Monday 5 January, 14:30 UTC = 09:30 in New York (UTC-5)
    summer = winter + 70 * 24 * HOUR  # 16 March, after the switch to UTC-4: 10:30 in New York
    assert peak.rate_per_second(winter, "America/New_York")[0] == pytest.approx(1.0)
    assert peak.rate_per_second(summer, "America/New_York")[0] == 0.0
    assert peak.rate_per_second(summer - HOUR, "America/New_York")[0] == pytest.approx(1.0)
    assert peak.rate_per_second(winter, "UTC")[0] == 0.0


def test_an_unknown_time_zone_is_refused_with_the_fix(tmp_path: Path) -> None:
    profile = tmp_path / "day.yaml"
    profile.write_text(
        "timezone: Mars/Olympus\nmodels:\n  m:\n    ratePerMinute: [[0, 1], [24, 1]]\n    promptTokens: {mean: 8}\n    outputTokens: {mean: 8}\n"
    )
    with pytest.raises(Exception, match=r"unknown time zone 'Mars/Olympus'.*IANA"):
        traffic.load_profile(profile)


def test_the_plan_json_carries_both_bounds_and_the_misses(tmp_path: Path) -> None:
    profile = tmp_path / "day.yaml"
    profile.write_text(
        "models:\n  any:\n    ratePerMinute: [[0, 30], [24, 30]]\n    promptTokens: {mean: 512}\n    outputTokens: {mean: 128}\n"
    )
    code = plan.main([DEV, "--file", str(golden.fixtures()[DEV]), "--traffic", str(profile), "--days", "0.02", "--out", str(tmp_path)])
    assert code == 0
    data = json.loads((tmp_path / DEV / "plan" / "plan.json").read_text())
    m = data["models"]["llama-3-1-8b"]
    assert {"minutesOverSlo", "worstMinute", "sloOracle"} <= set(m)
    assert "minutesOverSlo" in m["static"]
    assert {"sloOracle", "autoscaledOverSloOracle"} <= set(data["cost"])
    assert (tmp_path / DEV / "plan" / "report.md").read_text().count("](llama-3-1-8b.png)") == 1


def test_a_warm_start_is_not_scaled_away_by_the_first_reconcile() -> None:
    """Started at the replicas the first minute needs, the HPA's window remembers them: empty queues at
    t=0 do not take the fleet down before the traffic arrives."""
    data = copy.deepcopy(stack_data(DEV))
    data["models"][0]["replicas"] = {**data["models"][0].get("replicas", {}), "min": 1, "max": 6}
    data["gpuPools"][0]["gpuLimit"] = 12
    cfg = parse(data)
    name = cfg.models[0].name
    reqs = {name: traffic.generate(_constant(150), 600, traffic.stream(0, name))}
    result = simulate(cfg, reqs, Options(600, start_replicas={name: 3}))
    assert result.series[name]["ready"][:2] == [3.0, 3.0]


def test_shared_prefixes_raise_the_slo_rate() -> None:
    cfg = parse(stack_data(DEV))
    model = cfg.models[0]
    plain = traffic.generate(_constant(60, prompt=1500, output=100), HOUR, traffic.stream(0, "p"))
    shared = traffic.with_prefix(plain, traffic.SharedPrefix(share=0.8, groups=2), traffic.stream(0, "q"))
    assert oracle.slo_rate(cfg, model, shared) > oracle.slo_rate(cfg, model, plain)


def test_the_saturated_oracle_counts_every_shared_prefix_as_cached() -> None:
    """A lower bound: no routing hits more than every prefix, so shared prefixes lower what it needs."""
    cfg = parse(stack_data(DEV))
    name = cfg.models[0].name
    plain = traffic.generate(_constant(300, prompt=2000, output=50), HOUR, traffic.stream(0, "p"))
    shared = traffic.with_prefix(plain, traffic.SharedPrefix(share=0.8, groups=4), traffic.stream(0, "q"))
    without = oracle.replicas_needed(cfg, {name: plain}, HOUR)[name]
    with_prefixes = oracle.replicas_needed(cfg, {name: shared}, HOUR)[name]
    assert with_prefixes.sum() < without.sum()


def test_the_saturated_oracle_rounds_a_minutes_replicas_up_never_down() -> None:
    """A minute whose arrivals are a little over two replicas' saturated rate needs three replicas (one that
    counts too few passes every test that only asks it to count no more than the fleet)."""
    cfg = parse(_single("llama-3-1-8b", 1, 3))
    (model,) = cfg.models
    pool = cfg.pool(model.pool)
    assert pool is not None
    rate = performance(model, pool).saturated_requests_per_second(512.0, 128.0)
    minutes = 3
    per_minute = [math.floor(2 * rate * MINUTE) + 1, math.floor(2 * rate * MINUTE) - 1, 1]  # just over two, just under, one
    arrival = np.concatenate([m * MINUTE + np.linspace(0, MINUTE, n, endpoint=False) for m, n in enumerate(per_minute)])
    n = len(arrival)
    reqs = Requests(arrival, np.full(n, 512), np.full(n, 128))
    needed = oracle.replicas_needed(cfg, {model.name: reqs}, minutes * MINUTE)[model.name]
    assert needed.tolist()[:minutes] == [3, 2, 1]
