"""`make measure STACK=<s> MODEL=<m> [TARGET=fake|cluster]`: planner/measure.py's sweep and fit, run.

`TARGET=fake` (the default, offline): the measure Job's own client command against offline/fake_openai.py,
which streams at known rates (a prefill rate, a time per token, a batch it answers at once, the rest queued);
the report gives how far the fit lands from those rates. `TARGET=cluster` writes the manifests and the kubectl
steps (a prod stack only with ALLOW_PROD=1).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from builders import bench_client
from builders import measure as manifests
from config.errors import ConfigError
from config.sections.models import ModelConfig
from offline.fake_openai import FakeModel, serving
from planner import plan, traffic
from planner.measure import Point, Sweep, cluster_steps, errors, fit, job_manifests, parse, report, sweep
from planner.serving import Measured, ReplicaPerformance, performance

FIT_TOLERANCE = 0.15
"""How far (relative) the fit may land from the fake's known rates: time per token, prefill rate and batch."""


@dataclass(frozen=True)
class FakeReplica:
    """The fake's known rates (what the fit must recover)."""

    tpot: float = 0.01
    prefill_tokens_per_second: float = 5000.0
    batch: int = 8

    def saturated_rate(self, prompt: int, output: int) -> float:
        return self.batch / (prompt / self.prefill_tokens_per_second + output * self.tpot)


def run_fake(model: ModelConfig, s: Sweep, fake: FakeReplica) -> str:
    """The Job's client command against the fake: the same arguments, the fake's URL for the gateway's, its log."""
    args = manifests.client_args(
        model, s.rates, duration=s.duration, prompt=s.prompt, output=s.output, max_requests=s.max_requests, api_key=False
    )
    server = FakeModel(
        model.name,
        None,
        token_seconds=fake.tpot,
        max_sequences=fake.batch,
        prefill_tokens_per_second=fake.prefill_tokens_per_second,
    )
    with serving(server) as url:
        args[args.index("--base-url") + 1] = url
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            bench_client.main([*args, "--timeout", f"{s.timeout:g}"])
    return out.getvalue()


def recovered(m: Measured, fake: FakeReplica, base: ReplicaPerformance) -> dict[str, float]:
    """Relative error of the fitted replica against the fake's rates (0 is exact)."""
    tpot = m.weights_step_seconds + base.step_overhead + base.sequence_overhead
    prefill_rate = 1 / m.compute_seconds_per_token if m.compute_seconds_per_token else math.inf
    return {
        "tpot": tpot / fake.tpot - 1,
        "prefillTokensPerSecond": prefill_rate / fake.prefill_tokens_per_second - 1,
        "batch": (m.max_num_seqs or 0) / fake.batch - 1,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("stack")
    parser.add_argument("--model", required=True)
    parser.add_argument("--file", type=Path)
    parser.add_argument("--traffic", type=Path)
    parser.add_argument("--target", choices=("fake", "cluster"), default="fake")
    parser.add_argument("--namespace", help="the client namespace the Job runs in (default: the model's first)")
    parser.add_argument("--duration", type=float, default=20.0, help="seconds of arrivals per rate")
    parser.add_argument("--allow-prod", action="store_true")
    parser.add_argument("--log", type=Path, help="the measure Job's log (TARGET=cluster's last step): fit it")
    parser.add_argument("--out", type=Path, default=plan.ROOT / "build")
    args = parser.parse_args(argv)
    try:
        cfg = plan.load_stack(args.stack, args.file)
    except ConfigError as err:
        print(f"{args.stack}: " + err.report(), file=sys.stderr)
        return 2
    model = next((m for m in cfg.models if m.name == args.model), None)
    if model is None:
        print(f"{args.stack}: no model {args.model}; MODEL= one of {', '.join(m.name for m in cfg.models)}", file=sys.stderr)
        return 2
    pool = cfg.pool(model.pool)
    assert pool is not None
    traffic_path = args.traffic or plan.default_traffic(args.stack)
    out = args.out / args.stack / "measure"
    out.mkdir(parents=True, exist_ok=True)
    base = performance(model, pool)
    if args.target == "cluster":
        if cfg.environment == "prod" and not args.allow_prod:
            print(
                f"{args.stack} is a prod stack: a sweep loads its replica to saturation. Pass ALLOW_PROD=1 to measure it.", file=sys.stderr
            )
            return 2
        namespace = args.namespace or (model.client_namespaces[0] if model.client_namespaces else None)
        if namespace is None or namespace not in model.client_namespaces:
            print(
                f"models[{model.name}].clientNamespaces: the Job runs as a client of the model, from a namespace its gateway "
                "admits. Fix: add one (e.g. `measure`) to clientNamespaces, deploy, and pass NAMESPACE=<it>",
                file=sys.stderr,
            )
            return 2
        s = sweep(cfg, model, traffic_path, args.duration)
        files = out / f"{model.name}.yaml"
        files.write_text(yaml.safe_dump_all(job_manifests(cfg, model, namespace, s), sort_keys=False))
        print("\n".join(cluster_steps(cfg, model, namespace, files)))
        print(f"then: make measure STACK={args.stack} MODEL={model.name} LOG={os.path.relpath(files.with_suffix('.log'))}")
        return 0
    if args.log is not None:
        try:
            points = parse(args.log.read_text())
        except (OSError, ValueError) as err:
            print(f"{args.log.name}: {err}", file=sys.stderr)
            return 2
        m = fit(points, base)
        return _write(args.stack, out / f"{model.name}.json", report(model, points, m, errors(_sweep_points(points), m.apply(base))))
    fake = FakeReplica()
    profile = traffic.for_models(traffic.load_profile(traffic_path), [model.name])[model.name]
    prompt, output = round(profile.prompt_tokens.mean), round(profile.output_tokens.mean)
    s = sweep(cfg, model, traffic_path, args.duration, expected=fake.saturated_rate(prompt, output))
    points = parse(run_fake(model, s, fake))
    m = fit(points, base)
    fitted = m.apply(base)
    result = {
        **report(model, points, m, errors(_sweep_points(points), fitted)),
        "fake": dataclasses.asdict(fake),
        "recovered": recovered(m, fake, base),
        "tolerance": FIT_TOLERANCE,
    }
    return _write(args.stack, out / f"{model.name}.json", result)


def _sweep_points(points: list[Point]) -> list[Point]:
    """The sweep's rates, without the probe of longer prompts."""
    return [p for p in points if p.prompt == points[0].prompt]


def _write(stack: str, path: Path, result: dict[str, Any]) -> int:
    path.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    print(json.dumps({k: result[k] for k in ("measured", "recovered", "medianAbsoluteError") if k in result}, indent=2))
    shown = os.path.relpath(path)
    print(f"Wrote {shown}: make plan STACK={stack} MEASURED={shown}")
    return 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
