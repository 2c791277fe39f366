"""Published vLLM measurements the serving model is calibrated against, and the fit. Pure.

The measurements are a table beside this module, planner/calibration.yaml. Each names its source,
GPU, model, lengths, load and what was measured: saturated throughput (all requests sent at once),
time to first token and time per output token under a Poisson rate or a fixed client concurrency,
or the KV cache vLLM's profiling left. `predict` asks the same question of the step-level engine
(planner/engine.py) on the serving model's roofline (planner/serving.py); a request alone and the
KV cache are answered by the roofline directly. A third of the measurements (every third by name)
is held out of the fit; tests/planner/test_calibration.py checks the held-out third against the
target (75 % within ±30 % for throughput, TTFT and TPOT each) and keeps every measurement within a
loose bound.

`python -m planner.calibration` prints every prediction and the error table by metric and GPU;
`--fit` searches the efficiencies (coordinate descent on the mean absolute log error of the
training two-thirds; a few minutes) and prints what serving.py should carry.

Models are described by their published model cards (parameters, layers, KV heads, head size).
Measurements come from vLLM 0.2-era forks to 0.23 (the pinned engine is 0.33; no published set at
0.33 with these GPUs was found): each names its version where its source does. Lengths are the
means the source gives; a dataset without stated means (ShareGPT in sglang's sampler) takes
GPUStack's measured ShareGPT means (217 in, 201 out: 'Total input tokens: 217393' over 1,000
requests).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import yaml

from config.sections.gpu_pools import GpuPool
from config.sections.models import ModelConfig
from planner import engine
from planner.serving import Efficiency, ReplicaPerformance, performance

Model = dict[str, object]
LLAMA_8B: Model = {"parametersBillions": 8.03, "architecture": {"numLayers": 32, "numKvHeads": 8, "headDim": 128}}
LLAMA_70B: Model = {"parametersBillions": 70.6, "architecture": {"numLayers": 80, "numKvHeads": 8, "headDim": 128}}
LLAMA2_7B: Model = {"parametersBillions": 6.74, "architecture": {"numLayers": 32, "numKvHeads": 32, "headDim": 128}}
QWEN3_8B: Model = {"parametersBillions": 8.19, "architecture": {"numLayers": 36, "numKvHeads": 8, "headDim": 128}}
QWEN3_14B: Model = {"parametersBillions": 14.8, "architecture": {"numLayers": 40, "numKvHeads": 8, "headDim": 128}}
QWEN3_32B: Model = {"parametersBillions": 32.8, "architecture": {"numLayers": 64, "numKvHeads": 8, "headDim": 128}}
QWEN2_7B: Model = {"parametersBillions": 7.62, "architecture": {"numLayers": 28, "numKvHeads": 4, "headDim": 128}}
QWEN25_05B: Model = {"parametersBillions": 0.49, "architecture": {"numLayers": 24, "numKvHeads": 2, "headDim": 64}}
SHAREGPT = (217, 201)
"""GPUStack's ShareGPT means (docs/performance-lab: 'Total input tokens: 217393', ~201k generated, 1,000 requests)."""

Metric = Literal["requestsPerSecond", "outputTokensPerSecond", "ttft", "tpot", "kvTokens"]
Load = Literal["burst", "rate", "concurrency", "alone", "idle"]


@dataclass(frozen=True)
class Measurement:
    name: str
    source: str
    instance: str
    model: Model
    tensor_parallel: int
    prompt: int
    output: int
    load: Load
    """burst: `amount` requests at once (saturated); rate: Poisson at `amount` per second; concurrency:
    `amount` clients, each sending when its last request ends; alone: one request at a time; idle: no
    load (the KV cache at start)."""
    amount: float
    metric: Metric
    value: float
    """Seconds for ttft and tpot; per second for throughputs; tokens for kvTokens."""
    statistic: Literal["mean", "median", "total"] = "median"
    settings: dict[str, object] = dataclasses.field(default_factory=dict)
    """What the run set beside the defaults: maxModelLen, gpuMemoryUtilization, quantization."""
    scheduler_steps: int = 1
    """vLLM 0.6's --num-scheduler-steps the run used (new requests join every that many steps)."""
    excluded: str = ""
    """Why the measurement is neither fitted nor checked (it contradicts better-sourced ones), or ''."""

    @property
    def gpu(self) -> str:
        from config.facts import catalog

        gpu = catalog.INSTANCE_TYPES[self.instance].gpu
        assert gpu is not None
        return gpu.label

    @property
    def group(self) -> str:
        """What the target is judged on: throughput (either unit), ttft, tpot or kvTokens."""
        return "throughput" if self.metric in ("requestsPerSecond", "outputTokensPerSecond") else self.metric

    @property
    def held_out(self) -> bool:
        """Every third measurement by name within its group (of those not excluded) is kept out of the fit."""
        peers = sorted(m.name for m in MEASUREMENTS if not m.excluded and m.group == self.group)
        return not self.excluded and peers.index(self.name) % 3 == 2


MODELS: dict[str, Model] = {
    "LLAMA_8B": LLAMA_8B,
    "LLAMA_70B": LLAMA_70B,
    "LLAMA2_7B": LLAMA2_7B,
    "QWEN3_8B": QWEN3_8B,
    "QWEN3_14B": QWEN3_14B,
    "QWEN3_32B": QWEN3_32B,
    "QWEN2_7B": QWEN2_7B,
    "QWEN25_05B": QWEN25_05B,
}
"""The models calibration.yaml names, by name."""
DATA = Path(__file__).with_name("calibration.yaml")


def load(path: Path = DATA) -> tuple[Measurement, ...]:
    """The measurements of calibration.yaml: a source's {name} is the shared source of that name (its {page},
    the measurement's page), lengths ShareGPT are SHAREGPT, an exclusion names its reason."""
    data = yaml.safe_load(path.read_text())
    out = []
    for row in data["measurements"]:
        prompt, output = SHAREGPT if row.get("lengths") == "ShareGPT" else (row["prompt"], row["output"])
        sources = {name: text.format(page=row.get("page")) for name, text in data["sources"].items()}
        out.append(
            Measurement(
                name=row["name"],
                source=row["source"].format(**sources),
                instance=row["instance"],
                model=MODELS[row["model"]],
                tensor_parallel=row["tensorParallel"],
                prompt=prompt,
                output=output,
                load=row["load"],
                amount=row["amount"],
                metric=row["metric"],
                value=row["value"],
                statistic=row["statistic"],
                settings=row.get("settings", {}),
                scheduler_steps=row.get("schedulerSteps", 1),
                excluded=data["excluded"][row["excluded"]] if "excluded" in row else "",
            )
        )
    return tuple(out)


MEASUREMENTS = load()


def setup(m: Measurement) -> tuple[ModelConfig, GpuPool]:
    """The measurement's model and a pool of its instance type, as the platform's config describes them
    (vLLM profiling its own KV cache, as the published runs did)."""
    model = ModelConfig.model_validate(
        {
            "name": "calibration",
            "huggingFaceId": "calibration/model",
            "revision": "0" * 40,
            "pool": "calibration",
            "maxModelLen": 8192,
            "tensorParallelSize": m.tensor_parallel,
            "resources": {"cpu": "4", "memory": "16Gi"},
            "replicas": {"min": 1, "max": 1},
            "engine": {"explicitKvCache": False},
            **m.model,
            **m.settings,
        }
    )
    pool = GpuPool.model_validate({"name": "calibration", "instanceTypes": [m.instance], "gpuLimit": 8})
    return model, pool


def replica(m: Measurement, efficiency: Efficiency | None = None) -> ReplicaPerformance:
    return performance(*setup(m), efficiency)


REQUESTS = 400
"""Requests per simulated benchmark (bursts and rates): enough for a steady middle, fast enough to fit."""


def predict(m: Measurement, efficiency: Efficiency | None = None) -> float:
    """The serving model's answer to the measurement's question."""
    perf = replica(m, efficiency)
    if m.metric == "kvTokens":
        return float(perf.kv_capacity_tokens)
    if m.load == "alone":
        return perf.decode_step_seconds(1, m.prompt + m.output / 2) if m.metric == "tpot" else perf.ttft_alone(m.prompt)
    n = REQUESTS
    if m.load == "burst":
        n = min(int(m.amount), max(REQUESTS, 3 * perf.batch_limit(m.prompt + m.output / 2)))
        result = engine.run(perf, np.zeros(n), np.full(n, m.prompt), np.full(n, m.output), scheduler_steps=m.scheduler_steps)
    elif m.load == "rate":
        arrival = np.cumsum(np.random.default_rng(0).exponential(1 / m.amount, n))
        result = engine.run(perf, arrival, np.full(n, m.prompt), np.full(n, m.output), scheduler_steps=m.scheduler_steps)
    else:
        clients = int(m.amount)
        n = max(8 * clients, 64)
        result = engine.closed_loop(perf, clients, m.prompt, m.output, n, m.scheduler_steps)
    if m.metric == "requestsPerSecond":
        return _burst_rate(result) if m.load == "burst" else result.throughput()
    if m.metric == "outputTokensPerSecond":
        return (_burst_rate(result) if m.load == "burst" else result.throughput()) * m.output
    values = (result.ttft if m.metric == "ttft" else result.tpot)[len(result.ttft) // 4 :]
    return float(np.nanmedian(values) if m.statistic == "median" else np.nanmean(values))


def _burst_rate(result: engine.EngineResult) -> float:
    """Requests over the whole run, as a benchmark reports a burst: completed over the last completion."""
    done = (result.arrival + result.end)[~np.isnan(result.end)]
    return float(len(done) / done.max()) if len(done) else 0.0


def error(m: Measurement, efficiency: Efficiency | None = None) -> float:
    """log(predicted / measured): 0 is exact, ±0.26 is ±30 %."""
    return math.log(predict(m, efficiency) / m.value)


def table(efficiency: Efficiency | None = None) -> dict[str, dict[str, list[float]]]:
    """Per group and GPU, the relative errors (predicted / measured - 1) of the held-out measurements."""
    out: dict[str, dict[str, list[float]]] = {}
    for m in MEASUREMENTS:
        if m.held_out:
            out.setdefault(m.group, {}).setdefault(m.gpu, []).append(math.exp(error(m, efficiency)) - 1)
    return out


# The fit searches these values of each efficiency (the shipped ones must be among them).
GRIDS: dict[str, list[float]] = {
    "bandwidth": [0.7, 0.75, 0.8, 0.85, 0.9, 0.95],
    "kv_bandwidth": [0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6, 0.7, 0.8],
    "compute": [0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.8],
    "step_overhead": [0.001, 0.002, 0.003, 0.004, 0.006],
    "request_overhead": [0.01, 0.02, 0.03, 0.04, 0.06, 0.08, 0.1],
    "sequence_overhead": [0.0, 0.00002, 0.00003, 0.00005, 0.00007, 0.0001],
}


def training() -> list[Measurement]:
    """The measurements the efficiencies are fitted to: not held out, not excluded, not KV capacity."""
    return [m for m in MEASUREMENTS if not m.held_out and not m.excluded and m.metric != "kvTokens"]


def loss(efficiency: Efficiency, measurements: list[Measurement] | None = None) -> float:
    """The mean absolute log error over the training measurements (or these)."""
    return float(np.mean([abs(error(m, efficiency)) for m in measurements or training()]))


def fit(start: Efficiency | None = None, rounds: int = 6) -> Efficiency:
    """Coordinate descent over GRIDS on the training measurements' mean absolute log error, until a
    round changes nothing."""
    measurements = training()
    best = start or Efficiency()
    best_loss = loss(best, measurements)
    for _ in range(rounds):
        changed = False
        for field, values in GRIDS.items():
            for value in values:
                trial = dataclasses.replace(best, **{field: value})
                trial_loss = loss(trial, measurements)
                if trial_loss < best_loss - 1e-9:
                    best, best_loss, changed = trial, trial_loss, True
        if not changed:
            break
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The serving model against published vLLM measurements.")
    parser.add_argument("--fit", action="store_true", help="search the efficiencies on the training two-thirds")
    args = parser.parse_args(argv)
    eff = fit() if args.fit else Efficiency()
    print(f"efficiencies: {eff}")
    for m in MEASUREMENTS:
        predicted = predict(m, eff)
        print(
            f"{'held-out' if m.held_out else 'excluded' if m.excluded else 'fit     '} {m.name:34s} {m.metric:22s} "
            f"measured {m.value:12.4f} predicted {predicted:12.4f} ({predicted / m.value - 1:+.0%})"
        )
    print("held-out, share within ±30 % (n):")
    for metric, by_gpu in table(eff).items():
        every = [e for errors in by_gpu.values() for e in errors]
        cells = ", ".join(
            f"{gpu} {np.median(np.abs(errors)):.0%} median |error| (n={len(errors)})" for gpu, errors in sorted(by_gpu.items())
        )
        print(f"  {metric:22s} {np.mean(np.abs(every) <= 0.30):.0%} (n={len(every)}): {cells}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
