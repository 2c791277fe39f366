"""`make measure STACK=<s> MODEL=<m> [TARGET=fake|cluster]`: one replica of a deployed model, measured, and the
serving model fitted to it.

The sweep: Poisson request rates from a quarter to 1.25 times what one replica is expected to complete when
full, with the model's mean prompt and answer lengths from its traffic profile, each for a bounded time and
number of requests (builders/bench_client.py, as the measure Job runs it: builders/measure.py). The model is held
at one replica while it runs (KEDA's paused-replicas annotation), so the sweep measures a replica.

The fit (`fit`, its docstring): the prefill compute per token from a probe of longer prompts, the decode step and
what each sequence adds from time per output token against the sequences decoding at once, the batch from a rate
the replica could not keep up with. The fitted replica replays each rate through the planner's engine (`errors`);
`make plan MEASURED=<file>` then plans with it. offline/measure.py runs it (`make measure`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import shlex
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from builders import bench_client
from builders import measure as manifests
from config.derived import exposure
from config.sections.models import ModelConfig
from config.sections.stack import StackConfig
from planner import engine, traffic
from planner.serving import Measured, ReplicaPerformance, performance

SWEEP = (0.25, 0.5, 0.75, 1.0, 1.25)
"""Rates as shares of one replica's expected saturated rate."""
SATURATED = 0.9
"""A rate whose completions fall below this share of the offered rate saturated the replica."""


@dataclass(frozen=True)
class Point:
    """One rate of the sweep, as the client reported it."""

    rate: float
    completed: int
    throughput: float
    """Requests per second between the first and the last completion."""
    ttft: float
    """Median seconds to the first token."""
    tpot: float
    """Median seconds per output token after the first."""
    prompt: float
    output: float


def parse(log: str) -> list[Point]:
    """The client's result lines (`BENCH_RESULT {json}`) from a log, in order."""
    points = []
    for line in log.splitlines():
        if not line.startswith(bench_client.MARKER):
            continue
        r = json.loads(line[len(bench_client.MARKER) :])
        points.append(
            Point(
                rate=float(r["request_rate"]),
                completed=int(r["completed"]),
                throughput=float(r["steady_request_throughput"]),
                ttft=float(r["median_ttft_ms"]) / 1000,
                tpot=float(r["median_tpot_ms"]) / 1000,
                prompt=float(r["mean_prompt_tokens"]),
                output=float(r["mean_output_tokens"]),
            )
        )
    if not points:
        raise ValueError(f"no {bench_client.MARKER.strip()} line in the log: the client did not finish a rate")
    return points


def fit(points: list[Point], base: ReplicaPerformance) -> Measured:
    """The replica the points describe, on the serving model's structure (`base` for what they cannot tell).

    Prefill: the lowest rate at two prompt lengths (the probe's twice the sweep's): the difference in time to
    first token over the difference in prompt is the compute per prompt token, the rest the per-request overhead.
    Decode: time per output token against the sequences decoding at once (Little's law: throughput x answer
    time), a line: its intercept the step alone (less the fixed step cost, the weight read), its slope what each
    further sequence adds (attention over its context). Batch: at a rate the replica could not keep up with, the
    sequences that rate's throughput and a request's time imply."""
    sweep = [p for p in points if p.prompt == points[0].prompt] or points
    low = min(sweep, key=lambda p: p.rate)
    probe = next((p for p in points if p.prompt > low.prompt), None)
    compute = base.compute_seconds_per_token
    if probe is not None:
        compute = max(1e-9, (probe.ttft - low.ttft) / (probe.prompt - low.prompt))
    unsaturated = [p for p in sweep if p.throughput >= SATURATED * p.rate] or sweep
    batches = np.array([p.throughput * max(0.0, p.output - 1) * p.tpot for p in unsaturated])
    tpots = np.array([p.tpot for p in unsaturated])
    slope, intercept = (0.0, low.tpot)
    if len(unsaturated) > 1 and np.ptp(batches) > 0:
        slope, intercept = (float(v) for v in np.polyfit(batches, tpots, 1))
    slope = max(0.0, slope)
    weights_step = max(1e-5, intercept - base.step_overhead)
    context = low.prompt + low.output / 2
    overhead = max(0.0, low.ttft - low.prompt * compute - base.step_overhead)
    saturated = [p for p in sweep if p.completed and p.throughput < SATURATED * p.rate]
    batch = None
    if saturated:
        thr = max(p.throughput for p in saturated)
        steps = max(0.0, low.output - 1)
        denominator = 1 - thr * steps * slope
        if denominator > 0:
            batch = max(1, round(thr * (low.ttft + steps * intercept) / denominator))
    return Measured(weights_step, compute, overhead, batch, kv_step_seconds_per_token=slope / context, sequence_overhead=0.0)


def replay(perf: ReplicaPerformance, point: Point, seed: int = 0) -> Point:
    """What the planner's engine answers to the point's step: as many requests at its rate, of its lengths."""
    requests = max(8, point.completed)
    arrival = np.cumsum(np.random.default_rng(seed).exponential(1 / point.rate, requests))
    prompt, output = np.full(requests, round(point.prompt)), np.full(requests, round(point.output))
    result = engine.run(perf, arrival, prompt, output)
    ends = np.sort((result.arrival + result.end)[~np.isnan(result.end)])
    steady = (len(ends) - 1) / (ends[-1] - ends[0]) if len(ends) > 1 and ends[-1] > ends[0] else 0.0
    return Point(
        point.rate, requests, steady, float(np.nanmedian(result.ttft)), float(np.nanmedian(result.tpot)), point.prompt, point.output
    )


def errors(points: list[Point], perf: ReplicaPerformance) -> list[dict[str, float]]:
    """Per rate, the fitted replica's relative error (predicted / measured - 1) in TTFT, TPOT and throughput."""
    out = []
    for p in points:
        q = replay(perf, p)
        out.append(
            {
                "rate": p.rate,
                "ttft": q.ttft / p.ttft - 1,
                "tpot": q.tpot / p.tpot - 1,
                "throughput": q.throughput / p.throughput - 1 if p.throughput else 0.0,
            }
        )
    return out


@dataclass(frozen=True)
class Sweep:
    rates: list[float]
    prompt: int
    output: int
    duration: float
    max_requests: int
    timeout: float


def sweep(cfg: StackConfig, model: ModelConfig, traffic_path: Path, duration: float = 60.0, expected: float | None = None) -> Sweep:
    """The rates and lengths: the model's traffic profile's mean lengths, rates around one replica's saturated rate
    (`expected`, else the serving model's prediction)."""
    profile = traffic.for_models(traffic.load_profile(traffic_path), [model.name])[model.name]
    prompt, output = round(profile.prompt_tokens.mean), round(profile.output_tokens.mean)
    pool = cfg.pool(model.pool)
    assert pool is not None
    predicted = performance(model, pool)
    rate = expected or predicted.saturated_requests_per_second(prompt, output)
    rates = [float(f"{rate * share:.3g}") for share in SWEEP]
    timeout = 10 * (predicted.ttft_alone(prompt) + output * predicted.tpot(1, prompt, output)) + 30
    return Sweep(rates, prompt, output, duration, max(1, math.ceil(max(rates) * duration)), timeout)


def job_manifests(cfg: StackConfig, model: ModelConfig, namespace: str, s: Sweep) -> list[dict[str, Any]]:
    """What `TARGET=cluster` applies: the client namespace, the script and the Job."""
    key = exposure.exposure(cfg, model).api_key_required
    args = manifests.client_args(
        model, s.rates, duration=s.duration, prompt=s.prompt, output=s.output, max_requests=s.max_requests, api_key=key
    )
    deadline = manifests.deadline_seconds(s.rates, s.duration, s.timeout)
    return [
        manifests.client_namespace(namespace),
        manifests.script_config_map(model, namespace),
        manifests.job(model, namespace, model.image.reference, args, deadline, key),
    ]


def cluster_steps(cfg: StackConfig, model: ModelConfig, namespace: str, files: Path) -> list[str]:
    """The kubectl steps around the Job: hold the model at one replica, run, read the log, clean up, let go."""
    so, job = f"scaledobject/{model.name}", f"job/{manifests.name(model)}"
    secret = manifests.api_key_secret(model)
    return [
        f"kubectl -n {model.name} annotate {so} {manifests.PAUSED_REPLICAS}=1 --overwrite",
        f'kubectl -n {namespace} create secret generic {secret} --from-literal=api-key="$(pulumi config get apiKeys --stack '
        f"{cfg.environment} | python3 -c 'import json,sys; print(json.load(sys.stdin)[{model.name!r}])')\" "
        "--dry-run=client -o yaml | kubectl apply -f -",
        f"kubectl apply -f {shlex.quote(str(files))}",
        f"kubectl -n {namespace} wait --for=condition=complete {job} --timeout=-1s",
        f"kubectl -n {namespace} logs {job} > {shlex.quote(str(files.with_suffix('.log')))}",
        f"kubectl -n {namespace} delete {job} configmap/{manifests.name(model)} secret/{secret}",
        f"kubectl -n {model.name} annotate {so} {manifests.PAUSED_REPLICAS}-",
    ]


def report(model: ModelConfig, points: list[Point], m: Measured, errs: list[dict[str, float]]) -> dict[str, Any]:
    return {
        "model": model.name,
        "points": [dataclasses.asdict(p) for p in points],
        "measured": dataclasses.asdict(m),
        "errors": errs,
        "medianAbsoluteError": {k: statistics.median(abs(e[k]) for e in errs) for k in ("ttft", "tpot", "throughput")},
    }
