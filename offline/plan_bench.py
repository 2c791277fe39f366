"""Time the planner against the render, and replay the seed scenario: `make plan-bench`.

For each stack: the offline render (min of --runs), then a replay of 1 and of 7 days of the
stack's default traffic (traffic/<stack>.yaml), with their ratio to the render. Then the seeds'
day (traffic/seed-day.yaml) on a dev-like Llama-3.1-8B on g5.2xlarge (1-10 replicas, spot first)
against the seeds' static fleet of 10: monthly cost and P99 TTFT, next to the seeds' figures.
Reported, not asserted in tests.
"""

from __future__ import annotations

import argparse
import copy
import tempfile
import time
from contextlib import redirect_stdout
from io import StringIO

from config import stack_file
from config.validate import parse_stack_config
from offline import render
from planner import plan

SEED = {"static": 8726.40, "autoscaled": 2410.50, "ttft_p99": 0.185, "hours": 720}


def _render_seconds(stack: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as out, redirect_stdout(StringIO()):
            started = time.perf_counter()
            if render.main([stack, "--out", out]) != 0:
                raise SystemExit(f"render of {stack} failed")
            times.append(time.perf_counter() - started)
    return min(times)


def _replay_seconds(stack: str, days: float) -> float:
    cfg = plan.load_stack(stack)
    started = time.perf_counter()
    plan.run(cfg, plan.default_traffic(stack), days=days)
    return time.perf_counter() - started


def seed_scenario() -> dict[str, float]:
    path = plan.ROOT / "Pulumi.dev.yaml"
    raw = stack_file.read_document(path.read_text(), path.name)
    data, _, _ = stack_file.split(raw, lambda key: False)
    data = copy.deepcopy(data)
    data["gpuPools"][0].update(instanceTypes=["g5.2xlarge"], gpuLimit=12)
    data["models"][0]["replicas"] = {"min": 1, "max": 10}
    cfg, _ = parse_stack_config(data)
    result, _, _ = plan.run(cfg, plan.ROOT / "traffic" / "seed-day.yaml", days=1, static_replicas=10)
    model = result["models"]["llama-3-1-8b"]
    hours = SEED["hours"]
    return {
        "static": result["cost"]["static"]["perHour"] * hours,
        "autoscaled": result["cost"]["autoscaled"]["perHour"] * hours,
        "oracle": result["cost"]["oracle"]["perHour"] * hours,
        "static_p99": model["static"]["ttftSeconds"]["p99"],
        "autoscaled_p99": model["ttftSeconds"]["p99"],
        "spot": result["pools"]["gpu-l4-a10g"]["spotRatio"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("stacks", nargs="*", default=["dev", "prod"])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    for stack in args.stacks:
        rendered = _render_seconds(stack, args.runs)
        day = _replay_seconds(stack, 1)
        week = _replay_seconds(stack, 7)
        print(
            f"{stack}: render {rendered:.2f} s; replay 1 day {day:.2f} s ({day / rendered:.1f}x, target <= 4x); "
            f"7 days {week:.2f} s ({week / rendered:.1f}x, target <= 20x)"
        )
    s = seed_scenario()
    print(
        "seed day, Llama-3.1-8B on g5.2xlarge, per 720-hour month:\n"
        f"  static 10 x on-demand: ${s['static']:,.2f} (seeds: ${SEED['static']:,.2f}), P99 TTFT {s['static_p99']:.3f} s\n"
        f"  autoscaled:            ${s['autoscaled']:,.2f} (seeds: ${SEED['autoscaled']:,.2f}), P99 TTFT {s['autoscaled_p99']:.3f} s "
        f"(seeds: {SEED['ttft_p99']:.3f} s), spot ratio {s['spot']:.0%}\n"
        f"  oracle lower bound:    ${s['oracle']:,.2f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
