"""The scale-up budget of a model: from "the queue grew" to "the new replica receives traffic". Pure.

Every term comes from the config or from a published figure in `config/facts/speed.py`:

- signal: the last scrape of vLLM's metrics, then the HPA's next sync (it asks KEDA's metrics
  server, which queries Prometheus then; KEDA's pollingInterval only matters from zero), then
  the scale-up stabilization window;
- node launch (miss only): Karpenter's batching wait, then a GPU node from launch to schedulable;
- image pull (miss only): the image on a new node; a warm headroom node already has it, because
  its placeholder pods run the model's image;
- weights: the checkpoint over its source's rate (S3 through the streamer, or Hugging Face);
- engine start: vLLM's boot, its memory profiling unless the KV size is explicit, torch.compile and the
  CUDA graphs of its capture list (config/derived/engine.py, each part beside the term: `engine`);
- probe: one startup-probe period after the server answers, then one readiness-probe period;
- load balancer: the model's gateway finds the new replica among its pool's pods; the ALB's targets
  are the gateway's proxies, not replicas.

`hit`: a headroom node is free (a placeholder steps aside at once); `miss`: a node must launch.

`pessimistic`: every term at the slow end of its sources (../shared/reference/wave3-facts.md Part B):
Karpenter's longest batching wait and the high end of a GPU node's 2-3 minutes; the image pulled
without SOCI (the nodes do not turn it on), 2-4 minutes' high end; S3 at an xlarge host's network
ceiling; a cold engine at the slow end of the boot's sources. The budget for what must never be too
short: how long the gateway holds a request, the probes, a scale-down window.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from config.derived import capacity, engine
from config.facts import catalog, speed
from config.sections.gpu_pools import GpuPool
from config.sections.models import ModelConfig
from config.sections.types import duration_seconds

# The ALB target group's health checks the endpoints set (builders/ingress/endpoints.py).
ALB_HEALTHCHECK_INTERVAL_SECONDS = 5
ALB_HEALTHCHECK_TIMEOUT_SECONDS = 3
ALB_HEALTHY_THRESHOLD = 2
HOLD_MARGIN_SECONDS = 30
"""A held request's wait ends this long before the ALB's idle timeout, so the gateway answers (503 or
429) before the ALB cuts the connection, and a replica that just became ready still has time to send
its first token."""
TERMS = ("signal", "nodeLaunch", "imagePull", "weights", "engineStart", "probe", "loadBalancer")
MISS_ONLY = ("nodeLaunch", "imagePull")


@dataclass(frozen=True)
class ScaleUpBudget:
    """Seconds from a growing queue to a serving replica, term by term."""

    model: str
    terms: dict[str, int]
    """Each term in seconds, as a miss counts them."""
    pessimistic: dict[str, int] | None = None
    """The same terms at the slow end of each one's sources (what must never be too short: a hold)."""
    engine: dict[str, float] | None = None
    """The engine-start term's parts (config/derived/engine.py PARTS), in seconds."""
    pessimistic_engine: dict[str, float] | None = None

    @property
    def miss(self) -> int:
        return sum(self.terms.values())

    @property
    def hit(self) -> int:
        return sum(v for k, v in self.terms.items() if k not in MISS_ONLY)

    @property
    def pessimistic_budget(self) -> ScaleUpBudget:
        assert self.pessimistic is not None
        return ScaleUpBudget(self.model, self.pessimistic, engine=self.pessimistic_engine)

    def as_output(self) -> dict[str, object]:
        out: dict[str, object] = {"hit": self.hit, "miss": self.miss, "terms": dict(self.terms)}
        if self.engine is not None:
            out["engine"] = _rounded(self.engine)
        if self.pessimistic is not None:
            slow = self.pessimistic_budget
            out["pessimistic"] = {"hit": slow.hit, "miss": slow.miss, "terms": dict(slow.terms)}
            if slow.engine is not None:
                out["pessimistic"]["engine"] = _rounded(slow.engine)  # type: ignore[index]
        return out


def _rounded(parts: dict[str, float]) -> dict[str, float]:
    return {k: round(float(v), 1) for k, v in parts.items()}


def node_seconds(host: catalog.InstanceType | None) -> float:
    """A GPU node from launch to schedulable, by family (the published 60-90 s for accelerated instances)."""
    if host is None:
        return speed.NODE_READY.value
    return (speed.NODE_READY_P if host.family.startswith("p") else speed.NODE_READY_G).value


def image_seconds(host: catalog.InstanceType | None, pool: GpuPool | None = None) -> float:
    """The pinned vLLM image on a new node with SOCI parallel pull: unpack is CPU-bound, so a host with fewer
    vCPUs than the measured one is counted at its share of the measured rate (an estimate). A pool whose data
    volume comes from an image snapshot has it on disk."""
    if pool is not None and pool.image_snapshot is not None:
        return speed.IMAGE_SNAPSHOT_PULL.value
    share = min(1.0, host.vcpus / speed.IMAGE_PULL_VCPUS) if host is not None else 1.0
    return speed.VLLM_IMAGE_SIZE_GB.value / (speed.IMAGE_PULL_RATE.value * share)


def budget(model: ModelConfig, pool: GpuPool | None = None, *, scrape_interval: str) -> ScaleUpBudget:
    """The budget on the host Karpenter launches for a miss (the cheapest that holds a replica); the pessimistic
    one on the pool's slowest host for the weights (the lowest baseline)."""
    fast = engine.start(model, pool, cached=model.compile_cache_used)
    cold = engine.start(model, pool, pessimistic=True)
    host = capacity.weights_host(model, pool)
    slowest = capacity.weights_host(model, pool, pessimistic=True)
    signal = duration_seconds(scrape_interval) + speed.HPA_SYNC_PERIOD.value + model.autoscaling.scale_up.stabilization_window_seconds
    # Every model is reached through its gateway, which finds a new replica from the pool's pods (no ALB
    # registration: the ALB's targets are the gateway's proxies). In-cluster callers take the same path.
    balancer = speed.GATEWAY_ENDPOINT_DISCOVERY.value
    raw = {
        "signal": signal,
        "nodeLaunch": speed.KARPENTER_BATCH_IDLE.value + node_seconds(host),
        "imagePull": image_seconds(host, pool),
        "weights": capacity.weights_seconds(model, host),
        "engineStart": fast.seconds,
        "probe": model.startup.period_seconds + speed.PROBE_PERIOD.value,
        "loadBalancer": balancer,
    }
    slow = {
        **raw,
        "nodeLaunch": speed.KARPENTER_BATCH_MAX.value + speed.NODE_READY_SLOW.value,
        "imagePull": speed.IMAGE_PULL_SEQUENTIAL.value,
        "weights": capacity.weights_seconds(model, slowest, pessimistic=True),
        "engineStart": cold.seconds,
    }
    return ScaleUpBudget(
        model.name,
        {k: math.ceil(raw[k]) for k in TERMS},
        {k: math.ceil(slow[k]) for k in TERMS},
        engine=fast.parts,
        pessimistic_engine=cold.parts,
    )


def sources() -> list[tuple[str, speed.Figure]]:
    """The catalog rows the budget uses, for the render and the README."""
    return sorted(speed.CATALOG.items())
