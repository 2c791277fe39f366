"""Two bounds on what the autoscaled fleet costs. Pure.

- **Saturated** (`replicas_needed`): each minute, the arrival rate over what a saturated replica
  completes per second. No autoscaler can cost less, but its queues are unbounded: that fleet
  misses the latency objective at its own peaks.
- **SLO-feasible** (`slo_replicas_needed`): each minute, the arrival rate over the rate one replica
  answers with its P99 TTFT within the model's objective (`slo_rate`, found by replaying one replica
  at constant rates), and never below `replicas.min` or the schedule floor of that minute: the
  fleet that meets the objective with the stack's own floors if each replica carries one replica's
  share. Not a strict bound: N replicas behind the gateway pool their bursts and carry a little more
  than N times one replica's rate.

Both are there at once, capped at `max`, and priced per replica slot at the pool's cheapest type
(spot where the pool allows it): no packing of whole nodes costs less.
"""

from __future__ import annotations

import math

import numpy as np

from config.derived import state
from config.sections.models import ModelConfig
from config.sections.stack import StackConfig
from planner import nodepool, prices, traffic
from planner.serving import Measured, performance
from planner.simulate import Options, floors, simulate
from planner.traffic import Requests

MINUTE = 60
TRIAL_SECONDS = 3600
"""Constant traffic per trial of `slo_rate`: an hour, as near saturation the P99 of a shorter trial
swings with its bursts (15 minutes put the dev replica 10 % above the rate an hour holds)..."""
TRIAL_REQUESTS = 20_000
"""... or as long as this many requests take, when that is shorter (never under TRIAL_MIN_SECONDS): a P99
over 20,000 requests is steady, and a replica answering 25 a second need not replay 90,000."""
TRIAL_MIN_SECONDS = 900
TRIAL_WARMUP_SECONDS = 120
"""The trial's first seconds are not judged (the replica starts empty)."""
TRIAL_DRAWS = 2
"""Independent draws a rate must meet the objective on."""
TRIAL_STEPS = 8
"""Bisection steps between 0 and the saturated rate: within 0.4 % of it."""


def replicas_needed(
    cfg: StackConfig, requests: dict[str, Requests], seconds: int, measured: dict[str, Measured] | None = None
) -> dict[str, np.ndarray]:
    """Per model and minute: ceil(arrival rate / what a saturated replica completes per second), its
    requests' shared prefixes all cached."""
    out = {}
    for m in cfg.models:
        pool = cfg.pool(m.pool)
        assert pool is not None
        reqs = requests.get(m.name)
        counts = _counts(reqs, seconds)
        if reqs is not None and len(reqs):
            # every shared prefix a hit (no routing does better): the prefill that is left to compute
            fresh = reqs.prompt - reqs.prefix_tokens if reqs.prefix_tokens is not None else reqs.prompt
            perf = performance(m, pool, measured=(measured or {}).get(m.name))
            rate = perf.saturated_requests_per_second(float(fresh.mean()), float(reqs.output.mean()))
            # capped at max: beyond it the deployed fleet cannot go either, so the comparison stays fair
            out[m.name] = np.minimum(np.ceil(counts / MINUTE / rate), m.replicas.max)
        else:
            out[m.name] = counts
    return out


def slo_replicas_needed(cfg: StackConfig, requests: dict[str, Requests], seconds: int, rates: dict[str, float]) -> dict[str, np.ndarray]:
    """Per model and minute: ceil(arrival rate / `rates[model]`), at least `replicas.min` and the
    minute's schedule floor, at most `max` (a model no rate serves within its objective needs `max`
    whenever it has traffic)."""
    minutes = math.ceil(seconds / MINUTE)
    out = {}
    for m in cfg.models:
        counts = _counts(requests.get(m.name), seconds)
        rate = rates.get(m.name, 0.0)
        need = np.ceil(counts / MINUTE / rate) if rate > 0 else np.where(counts > 0, m.replicas.max, 0)
        floor = np.array((floors(m, seconds) or [0] * (minutes + 1))[:minutes], dtype=float)
        out[m.name] = np.minimum(np.maximum(np.maximum(need, floor), m.replicas.min), m.replicas.max).astype(float)
    return out


def slo_rate(cfg: StackConfig, model: ModelConfig, requests: Requests, seed: int = 0, measured: Measured | None = None) -> float:
    """Requests per second one replica answers with the P99 of its time to first token within the
    model's objective (`slo.ttftP99Seconds`), none shed or refused: constant Poisson traffic with the
    model's own prompt and output lengths (and shared prefixes), replayed through the same gateway and
    replica as the fleet, the rate found by bisection between 0 and the saturated rate, a rate passing
    only when TRIAL_DRAWS independent draws all meet the objective (near the rate a single draw's P99
    swings with its bursts). 0 when even a trickle misses."""
    if not len(requests):
        return 0.0
    pool = cfg.pool(model.pool)
    assert pool is not None
    objective = (model.slo or cfg.observability.slo).ttft_p99_seconds
    bounds = model.replicas.model_copy(update={"min": 1, "max": 1})
    one = model.model_copy(update={"replicas": bounds, "autoscaling": model.autoscaling.model_copy(update={"schedules": []})})
    alone = cfg.model_copy(update={"models": [one]})
    high = performance(model, pool, measured=measured).saturated_requests_per_second(
        float(requests.prompt.mean()), float(requests.output.mean())
    )
    draws = [
        _draw(requests, traffic.stream(seed, f"slo:{model.name}:{k}"), math.ceil(1.1 * high * TRIAL_SECONDS) + 1_000)
        for k in range(TRIAL_DRAWS)
    ]

    def meets(rate: float) -> bool:
        seconds = max(TRIAL_MIN_SECONDS, min(TRIAL_SECONDS, math.ceil(TRIAL_REQUESTS / rate)))
        for unit, sample in draws:
            arrival = unit / rate  # the same draw at every rate (common random numbers)
            n = int(np.searchsorted(arrival, seconds))
            trial = _head(sample, arrival, n)
            options = Options(
                seconds + 600, static_replicas={model.name: 1}, seed=seed, measured={model.name: measured} if measured else None
            )
            result = simulate(alone, {model.name: trial}, options)
            s = result.models[model.name]
            judged = trial.arrival >= TRIAL_WARMUP_SECONDS
            ttft = np.where(s.served, np.nan_to_num(s.ttft, nan=np.inf), np.inf)[judged]
            if len(ttft) and np.percentile(ttft, 99, method="higher") > objective:
                return False
        return True

    low = 0.0
    if not meets(high / 2**TRIAL_STEPS):
        return 0.0
    for _ in range(TRIAL_STEPS):
        mid = (low + high) / 2
        if mid > 0 and meets(mid):
            low = mid
        else:
            high = mid
    return low


def _draw(requests: Requests, rng: np.random.Generator, n: int) -> tuple[np.ndarray, Requests]:
    """Unit-rate Poisson arrivals and `n` requests resampled from the model's (lengths and prefixes)."""
    unit = np.cumsum(rng.exponential(1.0, n))
    pick = rng.integers(0, len(requests), n)
    groups = requests.prefix_group[pick] if requests.prefix_group is not None else None
    tokens = requests.prefix_tokens[pick] if requests.prefix_tokens is not None else None
    return unit, Requests(unit, requests.prompt[pick], requests.output[pick], groups, tokens)


def _head(sample: Requests, arrival: np.ndarray, n: int) -> Requests:
    groups = sample.prefix_group[:n] if sample.prefix_group is not None else None
    tokens = sample.prefix_tokens[:n] if sample.prefix_tokens is not None else None
    return Requests(arrival[:n], sample.prompt[:n], sample.output[:n], groups, tokens)


def cost_per_minute(cfg: StackConfig, needed: dict[str, np.ndarray]) -> np.ndarray:
    """Dollars per minute of an oracle fleet: every replica at the cheapest price per replica slot
    of its pool (spot where its rendered NodePool allows it), as fractions of nodes: no packing of whole nodes,
    shared or not, can cost less."""
    total = np.zeros(len(next(iter(needed.values()))) if needed else 0)
    derived = state.of(cfg)
    for pool in cfg.gpu_pools:
        kind = "spot" if "spot" in nodepool.rendered(cfg, pool).capacity_types else "on-demand"
        for name in derived.pool(pool.name).models:
            model = derived.model(name)
            if not model.hosts or name not in needed:
                continue
            per_replica = min(prices.hourly(t, kind) * model.nodes_per_replica[t.name] for t in model.hosts)
            total += needed[name] * per_replica / 60
    return total


def _counts(reqs: Requests | None, seconds: int) -> np.ndarray:
    minutes = math.ceil(seconds / MINUTE)
    if reqs is None or not len(reqs):
        return np.zeros(minutes)
    return np.bincount((reqs.arrival // MINUTE).astype(np.int64), minlength=minutes)[:minutes].astype(float)
