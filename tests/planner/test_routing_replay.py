"""The gateway's routing replayed (issue 31, item 6): the picker's scorers with the weights the stack
renders, shared prefixes in the traffic, a cached prefix skipping its prefill, and the direction of
the published prefix-aware routing gains. Fixture stacks only."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest

from builders.gateway import router
from offline import golden
from planner import plan, simulate, traffic
from planner.simulate import Options, Replica, pick
from tests.conftest import DEV, parse, stack_data

HOUR = 3600


def _curve(rpm: float, prompt: float, output: float, share: float = 0.0, groups: int = 256) -> traffic.ModelTraffic:
    return traffic.ModelTraffic.model_validate(
        {
            "ratePerMinute": [[0, rpm], [24, rpm]],
            "promptTokens": {"mean": prompt, "sigma": 0.3},
            "outputTokens": {"mean": output, "sigma": 0.3},
            "sharedPrefix": {"share": share, "groups": groups},
        }
    )


# -- the traffic ---------------------------------------------------------------------------------------
def test_shared_prefixes_leave_the_rest_of_the_traffic_as_it_was() -> None:
    plain = traffic.generate(_curve(60, 512, 256), HOUR, traffic.stream(0, "m"))
    shared = traffic.generate(_curve(60, 512, 256, share=0.5, groups=8), HOUR, traffic.stream(0, "m"))
    for field in ("arrival", "prompt", "output"):
        assert np.array_equal(getattr(plain, field), getattr(shared, field)), field
    assert not plain.shared()
    assert shared.shared()
    assert shared.prefix_group is not None
    assert shared.prefix_tokens is not None
    assert set(shared.prefix_group[shared.prefix_group >= 0].tolist()) <= set(range(8))
    assert (shared.prefix_tokens < shared.prompt).all()  # a prompt keeps a token of its own
    assert shared.prefix_tokens.max() == round(0.5 * shared.prompt.mean())


def test_a_share_of_one_or_more_is_refused() -> None:
    with pytest.raises(ValueError, match="share"):
        _curve(60, 512, 256, share=1.0)


# -- the picker ----------------------------------------------------------------------------------------------
def _model(weights: tuple[float, float, float], share: float = 0.5) -> simulate.ModelReplay:
    cfg = parse(stack_data(DEV))
    reqs = traffic.generate(_curve(1, 512, 256), 60, traffic.stream(0, "m"))
    replay = simulate.Replay(cfg, {cfg.models[0].name: reqs}, Options(60))
    s = next(iter(replay.models.values()))
    s.weights, s.prefix_share = weights, share
    return s


def _queue(s: simulate.ModelReplay, r: Replica, *requests: int) -> None:
    """Requests waiting on a replica, counted in the model's total as dispatch counts them."""
    r.queue.extend(requests)
    s.queued += len(requests)


def test_the_picker_prefers_the_shortest_queue_then_the_emptiest_cache() -> None:
    s = _model((2.0, 2.0, 3.0))
    a, b, c = Replica("m", 0), Replica("m", 0), Replica("m", 0)
    _queue(s, a, 1, 2, 3)
    _queue(s, b, 4)
    _queue(s, c, 5)
    c.context = 0.5 * s.perf.kv_capacity_tokens
    assert pick(s, [a, b, c], -1) is b
    b.context = 0.9 * s.perf.kv_capacity_tokens
    assert pick(s, [a, b, c], -1) is c


def test_with_nothing_waiting_the_picker_takes_the_emptiest_cache_ties_in_turn() -> None:
    s = _model((2.0, 2.0, 3.0))
    a, b, c = Replica("m", 0), Replica("m", 0), Replica("m", 0)
    a.context, b.context, c.context = 300.0, 100.0, 200.0
    assert [pick(s, [a, b, c], -1) for s.turn in range(3)] == [b, b, b]
    b.context = c.context = a.context  # all alike: round the replicas from the turn
    assert [pick(s, [a, b, c], -1) for s.turn in range(4)] == [a, b, c, a]
    _queue(s, a, 1)  # one waits: the queue scorer now counts, and a loses to the idle ones
    assert pick(s, [a, b, c], -1) is not a


def test_the_picker_follows_a_cached_prefix_as_far_as_its_weight_carries() -> None:
    s = _model((2.0, 2.0, 3.0), share=0.75)
    idle, busy = Replica("m", 0), Replica("m", 0)
    busy.prefixes[7] = None
    _queue(s, busy, 1)
    # prefix 3 x 0.75 = 2.25 outweighs the queue scorer's 2: the request goes where its prefix is
    assert pick(s, [idle, busy], 7) is busy
    s.prefix_share = 0.25  # 0.75 no longer does
    assert pick(s, [idle, busy], 7) is idle
    s.weights = (2.0, 2.0, 0.0)  # least-loaded: the prefix scorer is off
    s.prefix_share = 0.75
    assert pick(s, [idle, busy], 7) is idle


def test_the_scorer_weights_are_the_rendered_pickers(monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = parse(stack_data(DEV))
    model = cfg.models[0]
    hold = simulate.state.of(cfg).model(model.name).hold
    assert simulate.scorer_weights(model, hold) == (2.0, 2.0, 3.0)
    rendered = router.epp_config

    def heavier_prefix(m: object, h: object) -> dict[str, object]:
        out = copy.deepcopy(rendered(m, h))  # type: ignore[arg-type]
        out["schedulingProfiles"][0]["plugins"][2]["weight"] = 9
        return out

    monkeypatch.setattr(router, "epp_config", heavier_prefix)
    assert simulate.scorer_weights(model, hold) == (2.0, 2.0, 9.0)


# -- the replay ------------------------------------------------------------------------------------------------
def _heavy_prefix_day(routing: str) -> simulate.ModelReplay:
    """The published setups' shape on dev's 3 replicas held at 3: long prompts mostly shared (5/6 of
    6,000 tokens), short answers, a third of what three A10Gs can prefill; six prefixes, as many as
    the three caches hold together (two each), so only routing keeps each one where it is cached."""
    data = copy.deepcopy(stack_data(DEV))
    data["models"][0]["replicas"] = {**data["models"][0].get("replicas", {}), "min": 3, "max": 3}
    data["models"][0]["maxModelLen"] = 8192
    cfg = parse(data)
    name = cfg.models[0].name
    reqs = traffic.generate(_curve(60, 6000, 100, share=5 / 6, groups=6), HOUR, traffic.stream(0, name))
    return simulate.simulate(cfg, {name: reqs}, Options(HOUR, routing=routing)).models[name]


def test_prefix_aware_routing_wins_where_prefills_dominate_as_published() -> None:
    """Direction and rough size of wave3-facts Part A 2.7 (llm-d: 6,000-token shared prefixes, TTFT p90
    154 s -> 0.9 s at the top rate; ai-on-eks: p90 3.9 s -> 0.15 s): prefix-aware routing hits the cache
    far more often than round robin and cuts time to first token by a large factor (replayed: hits 35 %
    -> 89 %, p50 291 -> 11 s, p90 380 -> 30 s: round robin queues for minutes, as the published top rates did)."""
    spread = _heavy_prefix_day("round-robin")
    affine = _heavy_prefix_day("gateway")
    assert affine.prefix_hit_rate > 2 * spread.prefix_hit_rate
    for q in (50, 90):
        assert np.nanpercentile(affine.ttft, q) < np.nanpercentile(spread.ttft, q) / 2, q


def test_make_plan_routing_sweep_and_its_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    profile = tmp_path / "day.yaml"
    profile.write_text(
        "models:\n  any:\n    ratePerMinute: [[0, 30], [24, 30]]\n    promptTokens: {mean: 512}\n    outputTokens: {mean: 128}\n"
    )
    args = [DEV, "--file", str(golden.fixtures()[DEV]), "--traffic", str(profile), "--days", "0.02", "--out", str(tmp_path)]
    assert plan.main([*args, "--routing-sweep"]) == 0
    data = json.loads((tmp_path / DEV / "plan" / "plan.json").read_text())
    rows = data["routingSweep"]
    assert [(r["prefixShare"], r["routing"]) for r in rows] == [(s, k) for s in plan.SWEEP_SHARES for k in plan.SWEEP_ROUTINGS]
    assert rows[0]["models"]["llama-3-1-8b"]["prefixHitRate"] == 0.0
    assert "## Routing and shared prefixes" in (tmp_path / DEV / "plan" / "report.md").read_text()
    capsys.readouterr()
    assert plan.main([*args, "--prefix-share", "1.5"]) == 2
    assert "give a share from 0 to 0.99" in capsys.readouterr().err
    assert plan.main([*args, "--prefix-share", "0.5", "--routing", "round-robin"]) == 0
    data = json.loads((tmp_path / DEV / "plan" / "plan.json").read_text())
    assert data["routing"] == "round-robin"
    assert 0 <= data["models"]["llama-3-1-8b"]["prefixHitRate"] <= 1
