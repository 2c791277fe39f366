"""`make plan STACK=<s> [TRAFFIC=<file>] [DAYS=<n>]`: replay traffic through what the stack deploys.

Writes build/<stack>/plan/: plan.json (the numbers, camelCase keys, byte-identical for the same
inputs), report.md (the autoscaled fleet against a static one and the oracle lower bound) and one
PNG per model (request rate, desired and ready replicas, nodes, queue depth and requests held at the
gateway, TTFT p99 over time).
The stack file is read and validated as `pulumi preview` would (no Pulumi, no cloud); the HPA,
KEDA and NodePool settings come from the objects builders/ render for it.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from config import stack_file
from config.derived import state
from config.errors import ConfigError
from config.facts import catalog
from config.sections.stack import StackConfig
from config.validate import parse_stack_config
from planner import oracle, prices, report, traffic
from planner.serving import Measured, performance
from planner.simulate import MINUTE, ROUTINGS, Options, Result, minute_p99, simulate

ROOT = Path(__file__).resolve().parent.parent
NOT_MODELLED = (
    "spot interruptions",
    "underutilized consolidation (only empty nodes are removed, within the always-active disruption budgets)",
    "scheduled disruption budgets",
    "node drift and expiry",
    "KV-cache preemption in the fleet replay (the step-level engine model has it; shared prefixes are replayed)",
    "the system node group, NAT gateways, load balancers and storage (GPU nodes only)",
)


def load_stack(stack: str, path: Path | None = None) -> StackConfig:
    """The stack file, split and validated as the program reads it (secrets are not needed)."""
    file = path or ROOT / f"Pulumi.{stack}.yaml"
    raw = stack_file.read_document(file.read_text(), file.name)
    data, _, problems = stack_file.split(raw, lambda key: isinstance(raw.get(key), dict) and "secure" in raw[key])
    if problems:
        raise ConfigError(problems)
    cfg, _ = parse_stack_config(data)
    return cfg


def default_traffic(stack: str) -> Path:
    return ROOT / "traffic" / f"{stack}.yaml"


def requests_for(
    cfg: StackConfig, traffic_path: Path, seconds: int, seed: int, prefix: traffic.SharedPrefix | None = None
) -> dict[str, traffic.Requests]:
    """The traffic's requests per model; `prefix` in place of every model's shared prefixes (a trace's
    requests then draw theirs from a stream of their own)."""
    names = [m.name for m in cfg.models]
    if traffic_path.suffix == ".csv":
        trace = traffic.load_trace(traffic_path, names)
        if prefix is None:
            return trace
        return {name: traffic.with_prefix(r, prefix, traffic.stream(seed, f"prefix:{name}")) for name, r in trace.items()}
    profile = traffic.load_profile(traffic_path)
    curves = traffic.for_models(profile, names)
    if prefix is not None:
        curves = {name: t.model_copy(update={"shared_prefix": prefix}) for name, t in curves.items()}
    # One stream per model, keyed by its name: adding or reordering a model leaves the others' arrivals alone.
    return {name: traffic.generate(t, seconds, traffic.stream(seed, name), profile.timezone) for name, t in curves.items()}


def _percentiles(values: np.ndarray) -> dict[str, float]:
    values = values[~np.isnan(values)]
    if not len(values):
        return {"p50": 0.0, "p95": 0.0, "p99": 0.0, "max": 0.0}
    p50, p95, p99 = np.percentile(values, [50, 95, 99])
    return {"p50": _r(p50), "p95": _r(p95), "p99": _r(p99), "max": _r(values.max())}


def _r(value: float, digits: int = 4) -> float:
    return float(round(float(value), digits))


def _money(cost_seconds: float, seconds: int) -> float:
    """Average dollars per hour from the sum over seconds of the live nodes' hourly prices."""
    return cost_seconds / seconds if seconds else 0.0


@dataclass(frozen=True)
class Bounds:
    """The two lower bounds (planner/oracle.py): replicas per model and minute, and dollars per minute."""

    needed: dict[str, np.ndarray]
    cost: np.ndarray
    slo_rates: dict[str, float]
    slo_needed: dict[str, np.ndarray]
    slo_cost: np.ndarray


def over_objective(arrival: np.ndarray, ttft: np.ndarray, served: np.ndarray, objective: float, seconds: int) -> tuple[int, int, float]:
    """(minutes whose P99 time to first token, an unanswered request counting as a miss, exceeds the
    objective; the worst minute, or -1 when none is over; that minute's P99, infinite when its misses
    are unanswered requests). Minutes without requests are not judged."""
    minutes = math.ceil(seconds / MINUTE)
    p99 = minute_p99(arrival, np.where(served, np.nan_to_num(ttft, nan=np.inf), np.inf), minutes)
    over = int((p99 > objective).sum())
    if not over:
        return 0, -1, 0.0
    worst = int(np.argmax(p99))
    return over, worst, float(p99[worst])


def _worst(minute: int, p99: float) -> dict[str, Any] | None:
    """The worst minute and its P99 (null when unanswered requests are what put it over)."""
    if minute < 0:
        return None
    return {"at": clock(minute), "ttftP99Seconds": _r(p99) if math.isfinite(p99) else None}


def clock(minute: int) -> str:
    """A minute of the replay as day and UTC time ("day 1 10:32 UTC")."""
    return f"day {minute // 1440 + 1} {minute % 1440 // 60:02d}:{minute % 60:02d} UTC"


def summarize(
    cfg: StackConfig, result: Result, static: Result, bounds: Bounds, measured: dict[str, Measured] | None = None
) -> dict[str, Any]:
    seconds = result.seconds
    needed = bounds.needed
    hours_per_month = catalog.HOURS_PER_MONTH
    derived = state.of(cfg)
    models: dict[str, Any] = {}
    for name, s in result.models.items():
        m = s.config
        pool = cfg.pool(m.pool)
        assert pool is not None
        slo = m.slo or cfg.observability.slo
        ready = np.array(result.series[name]["ready"]) if result.series[name]["ready"] else np.zeros(1)
        perf = performance(m, pool, measured=(measured or {}).get(name))
        prompt = float(s.requests.prompt.mean()) if len(s.requests) else 512.0
        output = float(s.requests.output.mean()) if len(s.requests) else 256.0
        st = static.models[name]
        met = s.served & (np.nan_to_num(s.ttft, nan=np.inf) <= slo.ttft_p99_seconds)
        over, worst, worst_p99 = over_objective(s.requests.arrival, s.ttft, s.served, slo.ttft_p99_seconds, seconds)
        static_over = over_objective(st.requests.arrival, st.ttft, st.served, slo.ttft_p99_seconds, seconds)[0]
        models[name] = {
            "requests": len(s.requests),
            "served": int(s.served.sum()),
            "dropped": int(len(s.requests) - s.served.sum()),
            # the gateway's flow control: held (then served, shed, or held at the end), and what it shed
            "held": s.held,
            "longestHoldSeconds": _r(s.longest_hold_seconds),
            "holdTtlSeconds": s.hold.ttl_seconds if s.hold else 0,
            "shed": {"ttlExpired": s.shed_ttl, "noEndpoints": s.shed_no_endpoints},
            "refusedByVllm": s.refused,
            "unanswered": s.unanswered,
            # running or queued on a replica whose GPU failed (counted in unanswered: each a miss)
            "cutByGpuFailures": s.cut_by_failures,
            "ttftSeconds": _percentiles(s.ttft),
            "queueWaitSeconds": _percentiles(s.wait),
            "replicas": {"avg": _r(ready.mean(), 3), "min": int(ready.min()), "max": int(ready.max())},
            "replicaCapacity": {
                "requestsPerSecond": _r(perf.saturated_requests_per_second(prompt, output), 3),
                "kvCacheTokens": perf.kv_capacity_tokens,
                "maxNumSeqs": perf.max_num_seqs,
            },
            "scaleUpSeconds": derived.model(name).scale_up.as_output(),
            # a request not answered (503 with no ready replica, lost in a drain) misses its objective
            "sloAttainment": _r(float(met.mean()) if len(met) else 1.0),
            "ttftSloSeconds": slo.ttft_p99_seconds,
            # per minute, the P99 of time to first token (an unanswered request a miss) against the objective
            "minutesOverSlo": over,
            "worstMinute": _worst(worst, worst_p99),
            "avgQueueDepth": _r(float(np.mean(result.series[name]["queue"])) if result.series[name]["queue"] else 0.0, 3),
            "static": {
                "replicas": len(st.replicas),
                "served": int(st.served.sum()),
                "held": st.held,
                "shed": st.shed_ttl + st.shed_no_endpoints,
                "ttftSeconds": _percentiles(st.ttft),
                "minutesOverSlo": static_over,
                "avgQueueDepth": _r(float(np.mean(static.series[name]["queue"])) if static.series[name]["queue"] else 0.0, 3),
            },
            "oracle": {"replicasAvg": _r(float(needed[name].mean()) if len(needed[name]) else 0.0, 3)},
            "sloOracle": {
                "replicasAvg": _r(float(bounds.slo_needed[name].mean()) if len(bounds.slo_needed[name]) else 0.0, 3),
                # what one replica answers per second within the objective (0: not even a trickle)
                "requestsPerSecondPerReplica": _r(bounds.slo_rates.get(name, 0.0), 3),
            },
        }
    pools: dict[str, Any] = {}
    for name in result.pools:
        node_seconds = result.node_seconds[name]
        nodes = np.array(result.series[f"pool:{name}"]["nodes"]) if result.series[f"pool:{name}"]["nodes"] else np.zeros(1)
        total = node_seconds["spot"] + node_seconds["on-demand"]
        pools[name] = {
            "avgNodes": _r(nodes.mean(), 3),
            "maxNodes": int(nodes.max()),
            "nodeHours": {"spot": _r(node_seconds["spot"] / 3600, 2), "onDemand": _r(node_seconds["on-demand"] / 3600, 2)},
            "spotRatio": _r(node_seconds["spot"] / total, 3) if total else 0.0,
            "utilization": _r(result.used_seconds[name] / total, 3) if total else 0.0,
            "perHour": _r(_money(sum(result.cost_seconds[name].values()), seconds), 4),
            # GPU nodes that failed (--gpu-failures) and those Karpenter repaired (karpenter.nodeRepair)
            "gpuFailures": {
                "failed": len(result.failures.get(name, [])),
                "repaired": sum(1 for _, repaired in result.failures.get(name, []) if repaired is not None),
            },
        }
    autoscaled = _money(sum(sum(c.values()) for c in result.cost_seconds.values()), seconds)
    fixed = _money(sum(sum(c.values()) for c in static.cost_seconds.values()), seconds)
    lower = float(bounds.cost.sum()) / (seconds / 3600) if seconds else 0.0
    feasible = float(bounds.slo_cost.sum()) / (seconds / 3600) if seconds else 0.0

    def money(per_hour: float) -> dict[str, float]:
        return {"perHour": _r(per_hour, 4), "perMonth": _r(per_hour * hours_per_month, 2)}

    return {
        "models": models,
        "pools": pools,
        "cost": {
            "hoursPerMonth": hours_per_month,
            "autoscaled": money(autoscaled),
            "static": money(fixed),
            "oracle": money(lower),
            "sloOracle": money(feasible),
            "autoscaledOverOracle": _r(autoscaled / lower, 3) if lower else None,
            "autoscaledOverSloOracle": _r(autoscaled / feasible, 3) if feasible else None,
            "autoscaledOverStatic": _r(autoscaled / fixed, 3) if fixed else None,
        },
        "assumptions": {
            "onDemandPrices": "config/facts/catalog.py (us-east-1 list prices)",
            "spotPrices": f"{prices.SPOT_SOURCE}; {prices.SPOT_DATE}; other types at {prices.SPOT_DISCOUNT} x on-demand",
            "notModelled": list(NOT_MODELLED),
        },
    }


def _started() -> None:
    """Nothing: submitted first, so the worker process is up before the work it is given."""


def run(
    cfg: StackConfig,
    traffic_path: Path,
    *,
    days: float | None = None,
    seed: int = 0,
    spot_availability: float = 0.9,
    static_replicas: int | None = None,
    cold_start: bool = False,
    routing: str = "gateway",
    prefix: traffic.SharedPrefix | None = None,
    sweep: bool = False,
    progress: bool = False,
    gpu_failures: float = 0.0,
    measured: dict[str, Measured] | None = None,
) -> tuple[dict[str, Any], Result, Result]:
    if days is None:
        days = traffic.trace_days(traffic_path) if traffic_path.suffix == ".csv" else 1.0
    seconds = int(days * traffic.DAY_SECONDS)
    planned = [m.name for m in cfg.models]
    # A second process finds some models' SLO rates, then replays the static baseline, while this one
    # finds the rest, the bounds, and replays the autoscaled fleet: all are deterministic, so where they
    # run changes nothing but the wall time.
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        pool.submit(_started)  # it starts (and imports the planner) while this one draws the traffic
        requests = requests_for(cfg, traffic_path, seconds, seed, prefix)
        cfg, warnings = with_traffic(cfg, requests, traffic_path.name)
        for warning in warnings:
            print(f"warning: {warning}", file=sys.stderr)
        beyond = sum(int((r.arrival >= seconds).sum()) for r in requests.values())
        if beyond:
            print(f"{traffic_path.name}: {beyond} requests after {days:g} day(s) are not replayed", file=sys.stderr)
        bar = _progress(seconds) if progress else None
        step = bar.update if bar else None
        fixed = {m.name: static_replicas or m.replicas.max for m in cfg.models}
        static_options = Options(seconds, spot_availability, fixed, seed, routing=routing, gpu_failures=gpu_failures, measured=measured)
        mine = measured or {}
        # the SLO rates: the worker from the first model on, this process from the last back, each taking
        # what the other has not begun
        there = {m.name: pool.submit(oracle.slo_rate, cfg, m, requests[m.name], seed, mine.get(m.name)) for m in cfg.models}
        pending = pool.submit(simulate, cfg, requests, static_options)
        rates: dict[str, float] = {}
        for m in reversed(cfg.models):
            if not there[m.name].cancel():
                break  # the worker has it, and every model before it
            rates[m.name] = oracle.slo_rate(cfg, m, requests[m.name], seed, mine.get(m.name))
        rates |= {name: f.result() for name, f in there.items() if name not in rates}
        bounds = lower_bounds(cfg, requests, seconds, {m.name: rates[m.name] for m in cfg.models}, measured)
        # the replay starts as the stack would be running at that hour: the replicas the first minute's
        # traffic keeps within the objective (a model at zero at midnight with night traffic is awake)
        start = None if cold_start else {name: int(need[0]) for name, need in bounds.slo_needed.items() if len(need)}
        options = Options(
            seconds, spot_availability, None, seed, start_replicas=start, routing=routing, gpu_failures=gpu_failures, measured=measured
        )
        result = simulate(cfg, requests, options, step)
        static = pending.result()
    if bar:
        bar.close()
    plan = summarize(cfg, result, static, bounds, measured)
    if sweep:
        groups = prefix.groups if prefix is not None else traffic.SharedPrefix().groups
        plan["routingSweep"] = routing_sweep(cfg, traffic_path, seconds, seed, spot_availability, start, groups)
    for name, s in result.models.items():
        if s.requests.shared():
            plan["models"][name]["prefixHitRate"] = _r(s.prefix_hit_rate, 3)
    plan = {
        "stack": cfg.environment,
        "traffic": traffic_path.name,
        "days": days,
        "seed": seed,
        "spotAvailability": spot_availability,
        "coldStart": cold_start,
        "routing": routing,
        "gpuFailuresPerNodeDay": gpu_failures,
        "nodeRepair": cfg.karpenter.node_repair,
        "warnings": warnings,
        "notPlanned": [name for name in planned if name not in {m.name for m in cfg.models}],
        **plan,
    }
    return plan, result, static


SWEEP_SHARES = (0.0, 0.25, 0.5, 0.75)
SWEEP_ROUTINGS = ("round-robin", "gateway")


def routing_sweep(
    cfg: StackConfig, traffic_path: Path, seconds: int, seed: int, spot_availability: float, start: dict[str, int] | None, groups: int
) -> list[dict[str, Any]]:
    """The autoscaled fleet with each shared-prefix share and each routing (an ALB straight to the pods,
    the gateway as rendered): cost, and each model's TTFT and minutes over its objective."""
    cases = [(share, routing) for share in SWEEP_SHARES for routing in SWEEP_ROUTINGS]
    loads = {
        share: requests_for(cfg, traffic_path, seconds, seed, traffic.SharedPrefix(share=share, groups=groups)) for share in SWEEP_SHARES
    }
    with ProcessPoolExecutor(max_workers=2, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [
            pool.submit(simulate, cfg, loads[share], Options(seconds, spot_availability, None, seed, start_replicas=start, routing=routing))
            for share, routing in cases
        ]
        results = [f.result() for f in futures]
    rows = []
    for (share, routing), result in zip(cases, results, strict=True):
        per_hour = _money(sum(sum(c.values()) for c in result.cost_seconds.values()), seconds)
        models = {}
        for name, s in result.models.items():
            objective = (s.config.slo or cfg.observability.slo).ttft_p99_seconds
            ttft = _percentiles(s.ttft)
            models[name] = {
                "ttftP50Seconds": ttft["p50"],
                "ttftP99Seconds": ttft["p99"],
                "minutesOverSlo": over_objective(s.requests.arrival, s.ttft, s.served, objective, seconds)[0],
                "prefixHitRate": _r(s.prefix_hit_rate, 3),
            }
        rows.append({"prefixShare": share, "routing": routing, "costPerMonth": _r(per_hour * catalog.HOURS_PER_MONTH, 2), "models": models})
    return rows


def with_traffic(cfg: StackConfig, requests: dict[str, traffic.Requests], source: str) -> tuple[StackConfig, list[str]]:
    """The stack's models that have traffic to replay, and a warning for each left out: a model
    without requests would show a perfect SLO on nothing and pay for itself in the static fleet only."""
    quiet = [m for m in cfg.models if not len(requests.get(m.name, ()))]
    if len(quiet) == len(cfg.models):
        raise ValueError(
            f"no model of the stack has a request in {source}: give at least one of {', '.join(m.name for m in cfg.models)} traffic"
        )
    warnings = [
        f"{m.name} has no traffic in {source}: left out of every fleet (its floor of {m.replicas.min} replica(s) is not costed); "
        f"add it to the traffic to plan it"
        for m in quiet
    ]
    if not quiet:
        return cfg, []
    return cfg.model_copy(update={"models": [m for m in cfg.models if m not in quiet]}), warnings


def lower_bounds(
    cfg: StackConfig,
    requests: dict[str, traffic.Requests],
    seconds: int,
    rates: dict[str, float],
    measured: dict[str, Measured] | None = None,
) -> Bounds:
    """Both lower bounds, from each model's SLO rate (`oracle.slo_rate`)."""
    needed = oracle.replicas_needed(cfg, requests, seconds, measured)
    slo_needed = oracle.slo_replicas_needed(cfg, requests, seconds, rates)
    return Bounds(needed, oracle.cost_per_minute(cfg, needed), rates, slo_needed, oracle.cost_per_minute(cfg, slo_needed))


def _prefix(share: float | None, groups: int) -> traffic.SharedPrefix | None:
    if share is None:
        return None
    try:
        return traffic.SharedPrefix(share=share, groups=groups)
    except ValueError as err:
        raise ValueError(f"--prefix-share {share} / --prefix-groups {groups}: give a share from 0 to 0.99 and 1 or more groups") from err


def _measured(path: Path | None) -> dict[str, Measured] | None:
    """`--measured`: the fitted replica `make measure` wrote (planner/measure.py), by model."""
    if path is None:
        return None
    data = json.loads(path.read_text())
    try:
        return {data["model"]: Measured(**data["measured"])}
    except (KeyError, TypeError) as err:
        raise ValueError(f"{path.name} is not a `make measure` result (its `model` and `measured` are missing)") from err


def _progress(total: int) -> Any:
    if not sys.stderr.isatty():
        return None
    from tqdm import tqdm  # type: ignore[import-untyped]

    return tqdm(total=total, unit="s", desc="replay", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("stack")
    parser.add_argument("--file", type=Path, help="stack file (default: Pulumi.<stack>.yaml)")
    parser.add_argument("--traffic", type=Path, help="profile (.yaml) or trace (.csv); default traffic/<stack>.yaml")
    parser.add_argument("--days", type=float, help="days to replay (default: 1 for a profile, the whole trace for a CSV)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--spot-availability", type=float, default=0.9, help="chance a spot launch finds capacity")
    parser.add_argument("--static-replicas", type=int, help="the static fleet's replicas per model (default: max)")
    parser.add_argument(
        "--routing", choices=ROUTINGS, default="gateway", help="how requests pick a replica (default: the gateway as rendered)"
    )
    parser.add_argument("--prefix-share", type=float, help="share of each prompt that is a shared prefix, for every model (0 to 0.99)")
    parser.add_argument("--prefix-groups", type=int, default=traffic.SharedPrefix().groups, help="distinct shared prefixes")
    parser.add_argument(
        "--routing-sweep", action="store_true", help="also replay prefix shares 0-75 %% with and without the gateway's routing"
    )
    parser.add_argument(
        "--cold-start", action="store_true", help="start every model at its minimum, not as the first minute's traffic keeps it"
    )
    parser.add_argument(
        "--gpu-failures",
        type=float,
        default=0.0,
        help="GPU node failures per node per day (default 0): each cuts what its replicas serve; with karpenter.nodeRepair "
        "the node is replaced after 10 minutes, its replicas through a new node (a miss)",
    )
    parser.add_argument("--measured", type=Path, help="a model's replica as `make measure` fitted it (its JSON)")
    parser.add_argument("--out", type=Path, default=ROOT / "build")
    args = parser.parse_args(argv)
    try:
        cfg = load_stack(args.stack, args.file)
    except ConfigError as err:
        print(f"{args.stack}: " + err.report(), file=sys.stderr)
        return 2
    traffic_path = args.traffic or default_traffic(args.stack)
    if not traffic_path.exists():
        print(f"no traffic at {traffic_path}: pass TRAFFIC=<profile.yaml or trace.csv>", file=sys.stderr)
        return 2
    try:
        plan, result, _ = run(
            cfg,
            traffic_path,
            days=args.days,
            seed=args.seed,
            spot_availability=args.spot_availability,
            static_replicas=args.static_replicas,
            cold_start=args.cold_start,
            routing=args.routing,
            prefix=_prefix(args.prefix_share, args.prefix_groups),
            sweep=args.routing_sweep,
            progress=True,
            gpu_failures=args.gpu_failures,
            measured=_measured(args.measured),
        )
    except (ValueError, ConfigError, OSError) as err:
        print(f"{traffic_path.name}: {err}", file=sys.stderr)
        return 2
    out = args.out / args.stack / "plan"
    out.mkdir(parents=True, exist_ok=True)
    (out / "plan.json").write_text(json.dumps(plan, indent=2, sort_keys=True) + "\n")
    (out / "report.md").write_text(report.markdown(plan))
    for name, m in result.models.items():
        report.plot(name, result, out / f"{name}.png", (m.config.slo or cfg.observability.slo).ttft_p99_seconds)
    print(report.markdown(plan))
    pictures = ", ".join(f"{n}.png" for n in result.models)
    print(f"Wrote {os.path.relpath(out)}/: plan.json, report.md, {pictures}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
