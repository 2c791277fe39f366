"""The lower bound: the replicas the load needs each minute, there at once, packed as tightly as
the pool allows, on spot where the pool allows it. No autoscaler can cost less. Pure."""

from __future__ import annotations

import math

import numpy as np

from config.derived import state
from config.sections.stack import StackConfig
from planner import nodepool, prices
from planner.serving import performance
from planner.traffic import Requests

MINUTE = 60


def replicas_needed(cfg: StackConfig, requests: dict[str, Requests], seconds: int) -> dict[str, np.ndarray]:
    """Per model and minute: ceil(arrival rate / what a saturated replica completes per second)."""
    minutes = math.ceil(seconds / MINUTE)
    out = {}
    for m in cfg.models:
        pool = cfg.pool(m.pool)
        assert pool is not None
        reqs = requests.get(m.name)
        counts = np.zeros(minutes)
        if reqs is not None and len(reqs):
            counts = np.bincount((reqs.arrival // MINUTE).astype(np.int64), minlength=minutes)[:minutes].astype(float)
            prompt, output = float(reqs.prompt.mean()), float(reqs.output.mean())
            rate = performance(m, pool).saturated_requests_per_second(prompt, output)
            # capped at max: beyond it the deployed fleet cannot go either, so the comparison stays fair
            out[m.name] = np.minimum(np.ceil(counts / MINUTE / rate), m.replicas.max)
        else:
            out[m.name] = counts
    return out


def cost_per_minute(cfg: StackConfig, needed: dict[str, np.ndarray]) -> np.ndarray:
    """Dollars per minute of the oracle fleet: every replica at the cheapest price per replica slot
    of its pool (spot where its rendered NodePool allows it), as fractions of nodes: no packing of whole nodes,
    shared or not, can cost less."""
    total = np.zeros(len(next(iter(needed.values()))) if needed else 0)
    derived = state.of(cfg)
    for pool in cfg.gpu_pools:
        kind = "spot" if "spot" in nodepool.rendered(cfg, pool).capacity_types else "on-demand"
        for name in derived.pool(pool.name).models:
            model = derived.model(name)
            if not model.hosts:
                continue
            per_replica = min(prices.hourly(t, kind) / model.replicas_per_node[t.name] for t in model.hosts)
            total += needed[name] * per_replica / 60
    return total
