"""The replay: invariants, the static arithmetic, a load step against the scale-up budget, the
command line, and traffic inputs. Fixture stacks only (tests/fixtures/stacks/)."""

from __future__ import annotations

import ast
import copy
import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from config.derived import state
from config.facts import catalog, speed
from config.sections.stack import StackConfig
from offline import golden
from planner import oracle, plan, prices, traffic
from planner.fleet import Pool
from planner.simulate import HPA_SYNC_SECONDS, Options, simulate
from tests.conftest import DEV, PROD, parse, stack_data
from tests.support.mutations import dev_with

HOUR = 3600


def _constant(rpm: float, prompt: float = 512, output: float = 256) -> traffic.ModelTraffic:
    return traffic.ModelTraffic.model_validate(
        {
            "ratePerMinute": [[0, rpm], [24, rpm]],
            "promptTokens": {"mean": prompt, "sigma": 0},
            "outputTokens": {"mean": output, "sigma": 0},
        }
    )


def _requests(cfg: StackConfig, rpm: float, seconds: int, seed: int = 0) -> dict[str, traffic.Requests]:
    rng = np.random.default_rng(seed)
    return {m.name: traffic.generate(_constant(rpm), seconds, rng) for m in cfg.models}


def _per_hour(result: Any, seconds: int) -> float:
    return sum(sum(c.values()) for c in result.cost_seconds.values()) / seconds


def _dev(**model: Any) -> StackConfig:
    cfg: StackConfig = dev_with(**model)
    return cfg


# -- invariants --------------------------------------------------------------------------------------
@pytest.mark.parametrize("stack", [DEV, PROD])
def test_replicas_stay_within_their_bounds(stack: str) -> None:
    cfg = parse(stack_data(stack))
    profile = traffic.load_profile(Path(__file__).resolve().parents[2] / "traffic" / "seed-day.yaml")
    rng = np.random.default_rng(1)
    day = next(iter(profile.models.values()))
    requests = {m.name: traffic.generate(day, 12 * HOUR, rng) for m in cfg.models}
    result = simulate(cfg, requests, Options(12 * HOUR))
    for m in cfg.models:
        series = result.series[m.name]
        assert min(series["desired"]) >= m.replicas.min
        assert max(series["desired"]) <= m.replicas.max
        assert max(series["ready"]) <= m.replicas.max
    for pool in cfg.gpu_pools:
        gpus = [n.instance.gpu_count for n in result.pools[pool.name].nodes if n.gone_at is None]
        assert sum(gpus) <= pool.gpu_limit


def test_zero_traffic_costs_the_floor() -> None:
    cfg = parse(stack_data(DEV))
    result = simulate(cfg, _requests(cfg, 0, 2 * HOUR), Options(2 * HOUR, spot_availability=1.0))
    # one replica (the minimum) on the cheapest single-GPU node of the pool, at its spot price
    assert _per_hour(result, 2 * HOUR) == pytest.approx(prices.hourly(catalog.INSTANCE_TYPES["g6.xlarge"], "spot"))
    assert result.series["llama-3-1-8b"]["ready"] == [1.0] * 120


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(low=st.integers(0, 150), extra=st.integers(1, 300))
def test_more_traffic_never_costs_less_at_steady_state(low: int, extra: int) -> None:
    """The lighter day is the heavier one with requests taken away (every one of its requests arrives in the heavier
    day too, at the same time and size): comparing two independent draws made the property a coin toss near a
    replica threshold (low=98 extra=1, low=103 extra=2 failed at random)."""
    cfg = parse(stack_data(DEV))
    seconds = 3 * HOUR
    heavy = _requests(cfg, low + extra, seconds)
    keep = np.random.default_rng(1).random(len(next(iter(heavy.values())))) < low / (low + extra)
    light = {name: traffic.Requests(r.arrival[keep], r.prompt[keep], r.output[keep]) for name, r in heavy.items()}

    def steady(requests: dict[str, traffic.Requests]) -> float:
        result = simulate(cfg, requests, Options(seconds, spot_availability=1.0))
        nodes = result.series["pool:gpu-l4-a10g"]["nodes"]
        return float(np.mean(nodes[-60:]))  # the last hour

    assert steady(heavy) >= steady(light)


def test_same_inputs_give_the_same_plan_byte_for_byte(tmp_path: Path) -> None:
    profile = tmp_path / "day.yaml"
    profile.write_text((Path(__file__).resolve().parents[2] / "traffic" / "seed-day.yaml").read_text())
    cfg = parse(stack_data(DEV))
    first, _, _ = plan.run(cfg, profile, days=0.25, seed=7)
    second, _, _ = plan.run(cfg, profile, days=0.25, seed=7)
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)
    other, _, _ = plan.run(cfg, profile, days=0.25, seed=8)
    assert other != first  # the seed is what varies the arrivals


# -- the static arithmetic ------------------------------------------------------------------------------
def test_the_seeds_static_fleet_exactly() -> None:
    g5 = catalog.INSTANCE_TYPES["g5.2xlarge"]
    assert round(10 * g5.price_per_hour, 2) == 12.12
    assert round(10 * g5.price_per_hour * 720, 2) == 8726.40  # the seeds' 720-hour month
    data = copy.deepcopy(stack_data(DEV))
    data["gpuPools"][0].update(instanceTypes=["g5.2xlarge"], gpuLimit=12)
    data["models"][0]["replicas"] = {"min": 1, "max": 10}
    cfg = parse(data)
    static = simulate(cfg, _requests(cfg, 60, HOUR), Options(HOUR, static_replicas={"llama-3-1-8b": 10}))
    assert _per_hour(static, HOUR) == pytest.approx(12.12)
    assert all(n.capacity_type == "on-demand" for n in static.pools["gpu-l4-a10g"].nodes)


def test_the_oracle_is_a_lower_bound() -> None:
    cfg = parse(stack_data(PROD))
    profile = traffic.load_profile(Path(__file__).resolve().parents[2] / "traffic" / "seed-day.yaml")
    rng = np.random.default_rng(3)
    requests = {m.name: traffic.generate(next(iter(profile.models.values())), 6 * HOUR, rng) for m in cfg.models}
    result = simulate(cfg, requests, Options(6 * HOUR, spot_availability=1.0))
    needed = oracle.replicas_needed(cfg, requests, 6 * HOUR)
    assert oracle.cost_per_minute(cfg, needed).sum() / 6 <= _per_hour(result, 6 * HOUR)


# -- a load step against the scale-up budget --------------------------------------------------------------
def test_a_load_step_is_served_within_the_scale_up_budget() -> None:
    cfg = _dev()
    model = cfg.models[0]
    step_at = HOUR
    quiet = traffic.generate(_constant(1), step_at, np.random.default_rng(0))
    busy = traffic.generate(_constant(300), HOUR, np.random.default_rng(1))
    requests = {
        model.name: traffic.Requests(
            np.concatenate([quiet.arrival, busy.arrival + step_at]),
            np.concatenate([quiet.prompt, busy.prompt]),
            np.concatenate([quiet.output, busy.output]),
        )
    }
    result = simulate(cfg, requests, Options(2 * HOUR, spot_availability=1.0))
    replay = result.models[model.name]
    first_new = min(r.ready_at for r in replay.replicas if r.ready_at is not None and r.ready_at > 0)
    budget = state.of(cfg).model(model.name).scale_up
    assert state.of(cfg).model(model.name).exposure.exposed  # the load balancer term is in the budget
    # the budget counts a whole scrape interval and HPA sync of signal; the load balancer term is
    # inside the replica's start; Karpenter's batching wait rounds up to a whole second
    assert first_new - step_at <= budget.miss + 1
    assert first_new - step_at >= budget.miss - budget.terms["signal"] - HPA_SYNC_SECONDS


def test_flow_control_keeps_vllm_below_its_admission_bound() -> None:
    """The gateway holds what saturated replicas cannot take: vLLM's queue stops at the picker's
    threshold, below the rendered --max-num-queued-reqs, so vLLM refuses nothing and the gateway
    holds (and, past the TTL, sheds) the excess."""
    seconds = HOUR // 2
    cfg = _dev(replicas={"min": 1, "max": 1}, maxNumSeqs=8)
    result = simulate(cfg, _requests(cfg, 600, seconds), Options(seconds, spot_availability=1.0))
    replay = result.models["llama-3-1-8b"]
    hold = state.of(cfg).model("llama-3-1-8b").hold
    # derived: the batch of 8 plus 4 x queueDepthPerReplica (5); the picker's threshold 2 x 5
    assert replay.max_in_flight == 8 + 20
    assert hold.queue_threshold == 10
    assert max(result.series["llama-3-1-8b"]["queue"]) == hold.queue_threshold  # one replica: saturated at 10 waiting
    assert replay.refused == 0
    assert replay.held > 0
    assert max(result.series["llama-3-1-8b"]["held"]) > 0


def test_a_replica_refuses_what_its_queue_cannot_hold() -> None:
    """vLLM's bound still applies to what the gateway sends: with a picker threshold above it (what
    config/checks refuse), the replay honours the rendered --max-num-queued-reqs as vLLM counts it
    (running and waiting): past it a request is refused (503), not queued."""
    seconds = HOUR // 2
    one = {"replicas": {"min": 1, "max": 1}, "maxNumSeqs": 8}
    bounded, loose = _dev(**one), _dev(maxWaitingRequests=10_000, **one)
    requests = _requests(bounded, 600, seconds)
    never = {"llama-3-1-8b": dataclasses.replace(state.of(bounded).model("llama-3-1-8b").hold, queue_threshold=100_000)}
    kept = simulate(bounded, requests, Options(seconds, spot_availability=1.0, holds=never))
    free = simulate(loose, requests, Options(seconds, spot_availability=1.0, holds=never))
    assert kept.models["llama-3-1-8b"].max_in_flight == 8 + 20
    assert max(kept.series["llama-3-1-8b"]["queue"]) <= 20 < max(free.series["llama-3-1-8b"]["queue"])
    # what was admitted waited less than behind the unbounded queue, and the rest was refused at once
    assert np.nanmax(kept.models["llama-3-1-8b"].wait) < np.nanmax(free.models["llama-3-1-8b"].wait)
    assert kept.models["llama-3-1-8b"].refused > free.models["llama-3-1-8b"].refused  # (the unbounded one fills 10,000 deep)
    assert kept.models["llama-3-1-8b"].held == 0  # the picker never saw saturation
    assert kept.models["llama-3-1-8b"].served.sum() < len(requests["llama-3-1-8b"])


# -- the command line ---------------------------------------------------------------------------------
def test_make_plan_writes_the_plan_the_report_and_a_plot_per_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    profile = tmp_path / "day.yaml"
    profile.write_text(
        "models:\n  any-name:\n    ratePerMinute: [[0, 30], [24, 30]]\n    promptTokens: {mean: 512}\n    outputTokens: {mean: 128}\n"
    )
    code = plan.main([DEV, "--file", str(golden.fixtures()[DEV]), "--traffic", str(profile), "--days", "0.05", "--out", str(tmp_path)])
    assert code == 0
    folder = tmp_path / DEV / "plan"
    assert sorted(p.name for p in folder.iterdir()) == ["llama-3-1-8b.png", "plan.json", "report.md"]
    assert (folder / "llama-3-1-8b.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    data = json.loads((folder / "plan.json").read_text())
    m = data["models"]["llama-3-1-8b"]
    for key in ("requests", "served", "ttftSeconds", "queueWaitSeconds", "replicas", "replicaCapacity", "scaleUpSeconds", "sloAttainment"):
        assert key in m, key
    assert set(m["ttftSeconds"]) == {"p50", "p95", "p99", "max"}
    assert set(data["pools"]["gpu-l4-a10g"]) >= {"avgNodes", "maxNodes", "nodeHours"}
    assert set(data["cost"]) >= {"hoursPerMonth", "autoscaled", "static", "oracle"}
    assert data["cost"]["hoursPerMonth"] == catalog.HOURS_PER_MONTH
    assert "| Cost per month |" in capsys.readouterr().out


def test_traffic_for_a_model_the_stack_does_not_serve_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    profile = tmp_path / "day.yaml"
    base = "    ratePerMinute: [[0, 30], [24, 30]]\n    promptTokens: {mean: 512}\n    outputTokens: {mean: 128}\n"
    profile.write_text(f"models:\n  llama-3-1-8b:\n{base}  mistral-7b:\n{base}")
    code = plan.main([DEV, "--file", str(golden.fixtures()[DEV]), "--traffic", str(profile), "--out", str(tmp_path)])
    assert code == 2
    assert "mistral-7b, which the stack does not serve" in capsys.readouterr().err


def test_a_bad_profile_says_what_and_where(tmp_path: Path) -> None:
    profile = tmp_path / "day.yaml"
    profile.write_text(
        "models:\n  m:\n    ratePerMinute: [[1, 30], [24, 30]]\n    promptTokens: {mean: 512}\n    outputTokens: {mean: 1}\n"
    )
    with pytest.raises(Exception, match="ratePerMinute must run from hour 0 to hour 24"):
        traffic.load_profile(profile)


def test_a_csv_trace_replays_as_recorded(tmp_path: Path) -> None:
    trace = tmp_path / "trace.csv"
    trace.write_text("timestamp,model,prompt,output\n2026-11-30T09:00:00,chat,100,20\n2026-11-30T09:00:30,chat,300,40\n")
    requests = traffic.load_trace(trace, ["llama-3-1-8b"])["llama-3-1-8b"]
    assert requests.arrival.tolist() == [0.0, 30.0]
    assert requests.prompt.tolist() == [100, 300]
    assert requests.output.tolist() == [20, 40]


def test_token_lengths_have_the_profiles_mean() -> None:
    draws = traffic.generate(_constant(600, prompt=512, output=256), HOUR, np.random.default_rng(0))
    assert len(draws) == pytest.approx(600 * 60, rel=0.02)
    spread = traffic.ModelTraffic.model_validate(
        {"ratePerMinute": [[0, 600], [24, 600]], "promptTokens": {"mean": 512, "sigma": 0.6}, "outputTokens": {"mean": 256}}
    )
    assert traffic.generate(spread, HOUR, np.random.default_rng(0)).prompt.mean() == pytest.approx(512, rel=0.03)
    assert math.isclose(float(draws.output.mean()), 256)


@pytest.mark.parametrize(("budgets", "removed"), [([{"nodes": "0"}], 0), ([{"nodes": "1"}], 1), ([{"nodes": "50%"}], 2), ([], 3)])
def test_consolidation_respects_the_disruption_budgets(budgets: list[dict[str, str]], removed: int) -> None:
    data = copy.deepcopy(stack_data(DEV))
    data["gpuPools"][0]["disruption"] = {"consolidateAfter": "5m", "budgets": budgets}
    cfg = parse(data)
    pool, model = _pool(cfg)
    nodes = [pool.launch(model, 0.0) for _ in range(3)]  # three nodes, each with a replica that goes at 0
    placed = [pool.place(model, 0.0) for _ in nodes]
    assert {id(p[0]) for p in placed if p is not None} == {id(n) for n in nodes}
    for p in placed:
        assert p is not None
        pool.remove(model, p[0], 0.0)
    assert len(pool.live()) == 3
    pool.consolidate(299.0)
    assert len(pool.live()) == 3  # empty for less than consolidateAfter
    pool.consolidate(600.0)
    assert sum(1 for n in pool.nodes if n.gone_at is not None) == removed


def _pool(cfg: StackConfig) -> tuple[Pool, state.ModelState]:
    """The fixture's first pool, spot always available, and its first model's derived state."""
    return Pool.of(cfg, cfg.gpu_pools[0].name, 1.0, np.random.default_rng(0)), state.of(cfg).model(cfg.models[0].name)


def test_the_pools_methods_keep_its_counters() -> None:
    pool, model = _pool(parse(stack_data(DEV)))
    assert pool.schedule(model, 0.0) is None  # no node yet: it waits
    assert pool.waiting == 1
    before = pool.changes
    # the batch has not waited Karpenter's idle time: no launch yet
    assert pool.provision([model], 0.0) == [None]
    assert pool.waiting == 1
    [placed] = pool.provision([model], 0.0 + speed.KARPENTER_BATCH_IDLE.value)
    assert placed is not None
    assert placed[1] is False  # a new node, not warm
    assert pool.waiting == 0
    assert pool.changes > before
    assert pool.schedule(model, 5.0) is None  # the one node is full: it waits
    assert pool.waiting == 1
    pool.remove(model, None, 5.0)  # removed while it waited
    assert pool.waiting == 0


POOL_COUNTERS = ("waiting", "pending_placeholders", "changes")


def counter_writes(source: str) -> list[str]:
    """Assignments to a pool counter other than the pool's own (`self.<counter>`)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        )
        for target in targets:
            if isinstance(target, ast.Attribute) and target.attr in POOL_COUNTERS:
                found.append(f"{ast.unparse(target)} (line {node.lineno})")
    return found


def test_only_the_pool_changes_its_counters() -> None:
    root = Path(__file__).resolve().parents[2]
    fleet = root / "planner" / "fleet.py"
    assert counter_writes(fleet.read_text())  # the pool itself does
    assert all(w.startswith("self.") for w in counter_writes(fleet.read_text()))
    others = {
        str(path.relative_to(root)): writes
        for folder in ("planner", "offline", "tests")
        for path in (root / folder).rglob("*.py")
        if path != fleet and (writes := counter_writes(path.read_text()))
    }
    assert others == {}
    # the check sees a write from outside
    assert counter_writes("pool.waiting += 1\np.changes = 0\n") == ["pool.waiting (line 1)", "p.changes (line 2)"]


def test_a_pool_launches_within_the_rendered_gpu_limit() -> None:
    data = copy.deepcopy(stack_data(DEV))
    data["gpuPools"][0]["gpuLimit"] = 2
    data["models"][0]["replicas"] = {"min": 1, "max": 1}  # one replica and its rollout surge: 2 GPUs
    pool, model = _pool(parse(data))
    assert pool.settings.gpu_limit == 2
    launched = [pool.launch(model, 0.0) for _ in range(4)]
    assert sum(n.instance.gpu_count for n in launched if n is not None) <= 2
    assert launched[-1] is None


def test_the_oracle_stays_below_a_fleet_stuck_at_its_maximum() -> None:
    """600 requests a minute overwhelm dev's 3 replicas: the oracle is capped at max like the fleet."""
    cfg = parse(stack_data(DEV))
    requests = _requests(cfg, 600, 2 * HOUR)
    result = simulate(cfg, requests, Options(2 * HOUR, spot_availability=1.0))
    needed = oracle.replicas_needed(cfg, requests, 2 * HOUR)
    assert needed["llama-3-1-8b"].max() <= 3
    assert oracle.cost_per_minute(cfg, needed).sum() / 120 <= _per_hour(result, 2 * HOUR)
    # and the requests the capped fleet could not answer count against the objective
    replay = result.models["llama-3-1-8b"]
    assert replay.served.sum() < len(replay.requests)


def test_a_ttft_guardrail_is_replayed_not_read_as_zero() -> None:
    cfg = parse(stack_data("internet-facing-tls"))
    assert cfg.models[0].autoscaling.ttft_p95_seconds is not None
    result = simulate(cfg, _requests(cfg, 120, HOUR), Options(HOUR))
    scraped = result.models[cfg.models[0].name].scraped
    assert scraped is not None
    assert scraped["ttft-p95"] > 0


def test_a_trace_replays_its_whole_span_by_default(tmp_path: Path) -> None:
    trace = tmp_path / "trace.csv"
    trace.write_text("timestamp,model,prompt,output\n0,m,100,20\n172000,m,100,20\n")
    assert traffic.trace_days(trace) == pytest.approx(172001 / 86400)


def test_one_models_arrivals_do_not_depend_on_the_others() -> None:
    day = _constant(60)
    alone = traffic.generate(day, HOUR, traffic.stream(0, "chat"))
    again = traffic.generate(day, HOUR, traffic.stream(0, "chat"))
    other = traffic.generate(day, HOUR, traffic.stream(0, "code"))
    assert np.array_equal(alone.arrival, again.arrival)
    assert not np.array_equal(alone.arrival, other.arrival)


# -- scale to zero ---------------------------------------------------------------------------------------
def _working_day() -> traffic.ModelTraffic:
    """Nothing at night, 30 requests a minute in working hours (traffic/dev.yaml's shape)."""
    return traffic.ModelTraffic.model_validate(
        {
            "ratePerMinute": [[0, 0], [7, 0], [9, 30], [17, 30], [19, 0], [24, 0]],
            "promptTokens": {"mean": 512, "sigma": 0.6},
            "outputTokens": {"mean": 256, "sigma": 0.6},
        }
    )


def test_at_zero_the_model_idles_without_nodes_and_holds_the_first_request() -> None:
    always_on = parse(stack_data(DEV))
    data = copy.deepcopy(stack_data("scale-to-zero-dev"))
    data["models"][0]["autoscaling"].pop("schedules")  # no pre-warming: the first request meets a cold start
    at_zero = parse(data)
    day = 24 * HOUR
    requests = {"llama-3-1-8b": traffic.generate(_working_day(), day, traffic.stream(0, "llama-3-1-8b"))}
    on = simulate(always_on, requests, Options(day, spot_availability=1.0))
    idle = simulate(at_zero, requests, Options(day, spot_availability=1.0))
    assert _per_hour(idle, day) < 0.6 * _per_hour(on, day)
    # no GPU node from 21:00 to 06:00, long after the last request and before the first
    nodes = idle.series["pool:gpu-l4-a10g"]["nodes"]
    assert max(nodes[21 * 60 :]) == 0
    assert max(nodes[: 6 * 60]) == 0
    replay = idle.models["llama-3-1-8b"]
    assert replay.served.all()  # every request held at zero was answered, none dropped
    budget = state.of(at_zero).model("llama-3-1-8b").scale_up
    first_wait = float(np.nanmax(replay.wait))
    # the first request of the morning waits out a cold start: at least the start after the node, at most the budget
    assert budget.hit - budget.terms["signal"] <= first_wait <= budget.miss
    assert float(np.nanmax(on.models["llama-3-1-8b"].wait)) < 5


def test_a_schedule_pre_warms_the_working_day() -> None:
    cfg = parse(stack_data("scale-to-zero-dev"))
    day = 24 * HOUR
    requests = {"llama-3-1-8b": traffic.generate(_working_day(), day, traffic.stream(0, "llama-3-1-8b"))}
    result = simulate(cfg, requests, Options(day, spot_availability=1.0))
    ready = result.series["llama-3-1-8b"]["ready"]
    # the floor opens at 08:00 Berlin (07:00 UTC in January): a replica is up before 07:30 and stays through 17:00 UTC
    assert min(ready[int(7.5 * 60) : 17 * 60]) >= 1
    assert max(ready[: 6 * 60]) == 0


def test_on_the_seeds_day_zero_never_costs_more_than_one() -> None:
    """The seeds' nights still see 4 requests a minute: a model at min 0 never idles long enough to
    reach zero, so it costs what min 1 costs, and no request waits a cold start."""
    profile = traffic.load_profile(Path(__file__).resolve().parents[2] / "traffic" / "seed-day.yaml")
    day = next(iter(profile.models.values()))
    requests = {"llama-3-1-8b": traffic.generate(day, 24 * HOUR, traffic.stream(0, "llama-3-1-8b"))}
    data = copy.deepcopy(stack_data("scale-to-zero-dev"))
    data["models"][0]["autoscaling"].pop("schedules")
    zero = simulate(parse(data), requests, Options(24 * HOUR, spot_availability=1.0))
    one = simulate(parse(stack_data(DEV)), requests, Options(24 * HOUR, spot_availability=1.0))
    assert _per_hour(zero, 24 * HOUR) <= _per_hour(one, 24 * HOUR) + 1e-9
    assert min(zero.series["llama-3-1-8b"]["ready"][60:]) >= 1
