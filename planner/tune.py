"""`make tune STACK=<s> [TRAFFIC=<file>]`: the cheapest autoscaling settings whose replay meets the objective.

It replays the traffic through what the stack deploys (the same replay, seed and traffic as `make plan`) for
candidate settings of each model: `autoscaling.queueDepthPerReplica`, `autoscaling.kvCacheUsageTarget`, the
scale-down stabilization window, `replicas.min` and its pool's `headroom`, each within the config's bounds
and the rules (a candidate the checks refuse is never replayed). A setting **meets the objective** when every
model answers at least 99 % of its requests within its TTFT objective (the objective is a 99th percentile)
and at most 1 % of the replayed minutes have a P99 over it. Among those it picks the cheapest; while none
meets it, the one with the fewest minutes over. The search moves one setting at a time to the best
neighbouring value (coordinate descent) until no move improves, within a time bound.

It prints the stack-file diff (the file's comments kept; `--write` applies it), the shipped and the tuned
plan side by side, and the saving. Deterministic: the same stack, traffic and seed give the same result.
"""

from __future__ import annotations

import argparse
import copy
import difflib
import io
import math
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from config import stack_file
from config.derived import headroom
from config.errors import ConfigError
from config.facts.conventions import PROJECT
from config.sections.stack import StackConfig
from config.validate import parse_stack_config
from planner import oracle, plan, traffic
from planner.plan import ROOT
from planner.simulate import Options, simulate

ATTAINMENT = 0.99
"""Share of a model's requests answered within its TTFT objective (a P99 objective: 99 %)."""
MINUTES_OVER = 0.01
"""Share of the replayed minutes whose P99 TTFT may exceed the objective."""
TIME_BOUND_SECONDS = 600
"""Wall time the search may take on a 2-core machine; the best found by then is the answer."""

QUEUE_DEPTHS = (1.0, 2.0, 3.0, 5.0, 8.0, 12.0)
KV_TARGETS = (0.5, 0.6, 0.7, 0.8, 0.9)
SCALE_DOWN_WINDOWS = (60, 120, 300, 600, 900)
MAX_STEPS = 3
"""replicas.max (and min) may rise this far above the shipped max: a replica more only costs while it runs."""
"""Candidate values; the shipped value is always one of the candidates too."""


@dataclass(frozen=True)
class Knob:
    """One setting the search moves: where it is in the stack's config and its candidate values."""

    label: str
    """As the report and the diff's summary name it, e.g. `models[llama-3-1-8b].autoscaling.queueDepthPerReplica`."""
    path: tuple[str | int, ...]
    """Keys from the config (without the project prefix), e.g. ("models", 0, "autoscaling", "queueDepthPerReplica")."""
    candidates: tuple[Any, ...]
    """Empty for a setting that only follows another (a pool's gpuLimit follows its models' replicas.max)."""
    limits_pool: int | None = None
    """For replicas.max: the index of the model's pool, whose gpuLimit is raised to the least the checks accept."""


GPU_LIMIT_STEPS = 64
"""How far above its value a pool's gpuLimit is raised, one GPU at a time, for a raised replicas.max."""


def _get(data: dict[str, Any], path: tuple[str | int, ...], default: Any = None) -> Any:
    node: Any = data
    for key in path:
        try:
            node = node[key]
        except (KeyError, IndexError, TypeError):
            return default
    return node


def _set(data: dict[str, Any], path: tuple[str | int, ...], value: Any) -> None:
    node: Any = data
    for key in path[:-1]:
        if isinstance(key, str) and key not in node:
            node[key] = {}
        node = node[key]
    node[path[-1]] = value


def knobs(cfg: StackConfig) -> list[Knob]:
    """The settings searched, each model's then its pool's headroom, in a fixed order."""
    found: list[Knob] = []
    for i, m in enumerate(cfg.models):
        where = f"models[{m.name}]"
        a = m.autoscaling
        found += [
            Knob(
                f"{where}.autoscaling.queueDepthPerReplica",
                ("models", i, "autoscaling", "queueDepthPerReplica"),
                _with(QUEUE_DEPTHS, a.queue_depth_per_replica),
            ),
            Knob(
                f"{where}.autoscaling.kvCacheUsageTarget",
                ("models", i, "autoscaling", "kvCacheUsageTarget"),
                _with(KV_TARGETS, a.kv_cache_usage_target),
            ),
            Knob(
                f"{where}.autoscaling.scaleDown.stabilizationWindowSeconds",
                ("models", i, "autoscaling", "scaleDown", "stabilizationWindowSeconds"),
                _with(SCALE_DOWN_WINDOWS, a.scale_down.stabilization_window_seconds),
            ),
            Knob(f"{where}.replicas.min", ("models", i, "replicas", "min"), tuple(range(0, m.replicas.max + MAX_STEPS + 1))),
            Knob(
                f"{where}.replicas.max",
                ("models", i, "replicas", "max"),
                tuple(range(max(1, m.replicas.max - 1), m.replicas.max + MAX_STEPS + 1)),
                limits_pool=next(j for j, p in enumerate(cfg.gpu_pools) if p.name == m.pool),
            ),
        ]
    for j, pool in enumerate(cfg.gpu_pools):
        on_pool = [m for m in cfg.models if m.pool == pool.name]
        if not on_pool:
            continue
        chunk = headroom.chunk_gpus(pool, on_pool)
        found.append(Knob(f"gpuPools[{pool.name}].headroom", ("gpuPools", j, "headroom"), (0, chunk, 2 * chunk)))
        found.append(Knob(f"gpuPools[{pool.name}].gpuLimit", ("gpuPools", j, "gpuLimit"), ()))
    return found


def _with(values: tuple[Any, ...], shipped: Any) -> tuple[Any, ...]:
    return tuple(sorted({*values, shipped}))


@dataclass(frozen=True)
class Outcome:
    """What one candidate's replay gives."""

    per_hour: float
    minutes_over: dict[str, int]
    attainment: dict[str, float]
    minutes: int

    @property
    def meets(self) -> bool:
        allowed = math.floor(MINUTES_OVER * self.minutes)
        return all(a >= ATTAINMENT for a in self.attainment.values()) and all(o <= allowed for o in self.minutes_over.values())

    def rank(self) -> tuple[float, ...]:
        """Lower is better: every candidate that meets the objective before any that does not; then cost (or,
        short of the objective, fewer minutes over, then attainment, then cost)."""
        if self.meets:
            return (0.0, self.per_hour)
        return (1.0, float(sum(self.minutes_over.values())), -min(self.attainment.values(), default=1.0), self.per_hour)


class Evaluator:
    """Replays candidate configs of one stack on one traffic: the requests drawn once, each config replayed once."""

    def __init__(self, data: dict[str, Any], traffic_path: Path, days: float, seed: int, spot_availability: float) -> None:
        self.data = data
        self.seconds = int(days * traffic.DAY_SECONDS)
        self.seed = seed
        self.spot_availability = spot_availability
        cfg = self.parse(data)
        assert cfg is not None, "the shipped stack must pass its checks"
        self.requests = plan.requests_for(cfg, traffic_path, self.seconds, seed)
        traffic_cfg, _ = plan.with_traffic(cfg, self.requests, traffic_path.name)
        # each model's rate within the objective (its replicas' speed, which no searched setting changes): the replay
        # starts, as `make plan`'s does, with the replicas the first minute's traffic needs
        self.rates = {m.name: oracle.slo_rate(traffic_cfg, m, self.requests[m.name], seed) for m in traffic_cfg.models}
        self.cache: dict[str, Outcome | None] = {}

    @staticmethod
    def parse(data: dict[str, Any]) -> StackConfig | None:
        try:
            cfg, _ = parse_stack_config(copy.deepcopy(data))
        except ConfigError:
            return None
        return cfg

    def outcome(self, data: dict[str, Any]) -> Outcome | None:
        """The candidate's replay, None when the checks refuse it."""
        key = repr(data)
        if key not in self.cache:
            self.cache[key] = self._replay(data)
        return self.cache[key]

    def _replay(self, data: dict[str, Any]) -> Outcome | None:
        cfg = self.parse(data)
        if cfg is None:
            return None
        cfg, _ = plan.with_traffic(cfg, self.requests, "tune")
        needed = oracle.slo_replicas_needed(cfg, self.requests, self.seconds, self.rates)
        start = {name: int(need[0]) for name, need in needed.items() if len(need)}
        options = Options(self.seconds, self.spot_availability, None, self.seed, start_replicas=start)
        result = simulate(cfg, self.requests, options)
        over: dict[str, int] = {}
        attained: dict[str, float] = {}
        for name, s in result.models.items():
            slo = (s.config.slo or cfg.observability.slo).ttft_p99_seconds
            over[name] = plan.over_objective(s.requests.arrival, s.ttft, s.served, slo, self.seconds)[0]
            met = s.served & (np.nan_to_num(s.ttft, nan=np.inf) <= slo)
            attained[name] = float(met.mean()) if len(met) else 1.0
        cost = sum(sum(c.values()) for c in result.cost_seconds.values()) / self.seconds
        return Outcome(cost, over, attained, math.ceil(self.seconds / 60))


@dataclass(frozen=True)
class Search:
    shipped: dict[str, Any]
    best: dict[str, Any]
    shipped_outcome: Outcome
    best_outcome: Outcome
    replays: int
    moves: list[str]
    complete: bool
    """False when the time bound stopped it."""


def search(evaluator: Evaluator, *, time_bound: float = TIME_BOUND_SECONDS, tick: Callable[[], None] | None = None) -> Search:
    """Coordinate descent from the shipped settings: each round tries every knob's every other value with the
    rest as they are, and takes the best single move; it stops when no move improves (or at the time bound)."""
    start = time.monotonic()
    shipped = evaluator.data
    first = evaluator.outcome(shipped)
    assert first is not None
    cfg = evaluator.parse(shipped)
    assert cfg is not None
    dials = knobs(cfg)
    current, current_outcome = copy.deepcopy(shipped), first
    moves: list[str] = []
    complete = True
    while True:
        best: tuple[tuple[float, ...], dict[str, Any], Outcome, str] | None = None
        for candidate, label in _neighbours(current, dials):
            if time.monotonic() - start > time_bound:
                complete = False
                break
            outcome = evaluator.outcome(candidate)
            if tick:
                tick()
            if outcome is None:
                continue
            if outcome.rank() < current_outcome.rank() and (best is None or outcome.rank() < best[0]):
                best = (outcome.rank(), candidate, outcome, label)
        if best is None or not complete:
            if best is not None:
                current, current_outcome = best[1], best[2]
                moves.append(best[3])
            break
        current, current_outcome = best[1], best[2]
        moves.append(best[3])
    return Search(shipped, current, first, current_outcome, len(evaluator.cache), moves, complete)


def _neighbours(data: dict[str, Any], dials: list[Knob]) -> Iterator[tuple[dict[str, Any], str]]:
    for knob in dials:
        now = _get(data, knob.path)
        for value in knob.candidates:
            if value == now:
                continue
            candidate = copy.deepcopy(data)
            _set(candidate, knob.path, value)
            label = f"{knob.label}: {now if now is not None else 'default'} -> {value}"
            if knob.limits_pool is not None:
                raised = _with_gpu_limit(candidate, knob.limits_pool)
                if raised is None:
                    continue
                candidate, label = raised, f"{label} (gpuLimit {_get(raised, ('gpuPools', knob.limits_pool, 'gpuLimit'))})"
            yield candidate, label


def _with_gpu_limit(data: dict[str, Any], pool: int) -> dict[str, Any] | None:
    """The candidate with its pool's gpuLimit at the least the checks accept (never lowered); None if none does."""
    path = ("gpuPools", pool, "gpuLimit")
    limit = _get(data, path)
    for step in range(GPU_LIMIT_STEPS + 1):
        candidate = copy.deepcopy(data)
        _set(candidate, path, limit + step)
        if Evaluator.parse(candidate) is not None:
            return candidate
    return None


# -- the stack file ----------------------------------------------------------------------------------------------
def changes(before: dict[str, Any], after: dict[str, Any], dials: list[Knob]) -> list[tuple[Knob, Any, Any]]:
    return [(k, _get(before, k.path), _get(after, k.path)) for k in dials if _get(before, k.path) != _get(after, k.path)]


def edited(text: str, edits: list[tuple[Knob, Any, Any]]) -> str:
    """The stack file with the edits made, its comments and layout kept (ruamel.yaml's round trip)."""
    rt = stack_file.round_trip_yaml()
    doc = rt.load(text)
    config = doc["config"]
    for knob, _, value in edits:
        section, *rest = knob.path
        node = config[f"{PROJECT}:{section}"]
        for key in rest[:-1]:
            if isinstance(key, str) and key not in node:
                node[key] = {}
            node = node[key]
        node[rest[-1]] = value
    out = io.StringIO()
    rt.dump(doc, out)
    return out.getvalue()


def diff(path: Path, text: str, new: str) -> str:
    return "".join(difflib.unified_diff(text.splitlines(True), new.splitlines(True), f"a/{path.name}", f"b/{path.name}"))


def _cells(name: str) -> list[tuple[str, Callable[[dict[str, Any]], str]]]:
    def model(p: dict[str, Any]) -> dict[str, Any]:
        return p["models"][name]  # type: ignore[no-any-return]

    return [
        (f"{name}: minutes over the objective", lambda p: str(model(p)["minutesOverSlo"])),
        (f"{name}: SLO attainment", lambda p: f"{model(p)['sloAttainment'] * 100:.2f}%"),
        (f"{name}: P99 TTFT", lambda p: f"{model(p)['ttftSeconds']['p99']:.2f} s"),
        (f"{name}: replicas (avg)", lambda p: f"{model(p)['replicas']['avg']:.2f}"),
    ]


def side_by_side(shipped: dict[str, Any], tuned: dict[str, Any]) -> str:
    """The two plans' headline figures."""
    rows: list[tuple[str, Callable[[dict[str, Any]], str]]] = [
        ("Cost per month (autoscaled)", lambda p: f"${p['cost']['autoscaled']['perMonth']:,.2f}"),
        ("Autoscaled / SLO oracle", lambda p: f"{p['cost']['autoscaledOverSloOracle']}x"),
    ]
    for name in shipped["models"]:
        rows += _cells(name)
    lines = ["| | Shipped | Tuned |", "|---|---|---|"]
    lines += [f"| {label} | {cell(shipped)} | {cell(tuned)} |" for label, cell in rows]
    return "\n".join(lines)


def verdict(found: Search, before: float, after: float) -> str:
    """The saving, or what meeting the objective costs when the shipped settings miss it."""
    change = f"${abs(before - after):,.2f} a month ({abs(before - after) / before * 100:.1f} %)" if before else "nothing"
    if not found.best_outcome.meets:
        return "No setting within the bounds meets the objective; the tuned settings come closest."
    if not found.shipped_outcome.meets:
        over = sum(found.shipped_outcome.minutes_over.values())
        more = "more" if after >= before else "less"
        return f"The shipped settings miss the objective ({over} minutes over); the tuned ones meet it for {change} {more}."
    return f"Saving: {change}, the objective still met."


def _data(path: Path) -> tuple[str, dict[str, Any]]:
    text = path.read_text()
    raw = stack_file.read_document(text, path.name)
    data, _, problems = stack_file.split(raw, lambda key: isinstance(raw.get(key), dict) and "secure" in raw[key])
    if problems:
        raise ConfigError(problems)
    return text, data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("stack")
    parser.add_argument("--file", type=Path, help="stack file (default: Pulumi.<stack>.yaml)")
    parser.add_argument("--traffic", type=Path, help="profile (.yaml) or trace (.csv); default traffic/<stack>.yaml")
    parser.add_argument("--days", type=float, default=1.0, help="days to replay (default 1)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--spot-availability", type=float, default=0.9)
    parser.add_argument("--time-bound", type=float, default=TIME_BOUND_SECONDS, help="seconds the search may take")
    parser.add_argument("--write", action="store_true", help="apply the tuned settings to the stack file")
    args = parser.parse_args(argv)
    path = args.file or ROOT / f"Pulumi.{args.stack}.yaml"
    traffic_path = args.traffic or plan.default_traffic(args.stack)
    if not path.exists() or not traffic_path.exists():
        print(f"no stack file at {path} or no traffic at {traffic_path}: pass STACK= and TRAFFIC=", file=sys.stderr)
        return 2
    try:
        text, data = _data(path)
        evaluator = Evaluator(data, traffic_path, args.days, args.seed, args.spot_availability)
    except (ConfigError, ValueError, AssertionError) as err:
        print(f"{path.name}: {err}", file=sys.stderr)
        return 2
    bar = _bar()
    found = search(evaluator, time_bound=args.time_bound, tick=bar.update if bar else None)
    if bar:
        bar.close()
    cfg = evaluator.parse(data)
    assert cfg is not None
    edits = changes(found.shipped, found.best, knobs(cfg))
    print(
        f"{found.replays} replays{'' if found.complete else f' (stopped at the {args.time_bound:g} s bound)'}; moves: "
        + ("; ".join(found.moves) or "none")
    )
    if not found.best_outcome.meets:
        print("No setting within the bounds meets the objective; the closest is shown.", file=sys.stderr)
    if not edits:
        print("The shipped settings are the tuned ones.")
        return 0
    new = edited(text, edits)
    print(diff(path, text, new))
    tuned_cfg = evaluator.parse(found.best)
    assert tuned_cfg is not None
    shipped_plan = plan.run(cfg, traffic_path, days=args.days, seed=args.seed, spot_availability=args.spot_availability)[0]
    tuned_plan = plan.run(tuned_cfg, traffic_path, days=args.days, seed=args.seed, spot_availability=args.spot_availability)[0]
    print(side_by_side(shipped_plan, tuned_plan))
    print("\n" + verdict(found, shipped_plan["cost"]["autoscaled"]["perMonth"], tuned_plan["cost"]["autoscaled"]["perMonth"]))
    if args.write:
        path.write_text(new)
        print(f"Wrote {path.name}.")
    return 0


def _bar() -> Any:
    if not sys.stderr.isatty():
        return None
    from tqdm import tqdm  # type: ignore[import-untyped]

    return tqdm(unit="replay", desc="tune", file=sys.stderr)


if __name__ == "__main__":
    raise SystemExit(main())
