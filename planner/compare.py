"""The plan of a pull request's base and head, side by side: `python -m planner.compare BASE HEAD`.

Prints Markdown for the render comment: the monthly cost change and each model's P99 TTFT, e.g.
"+$1,230 a month, P99 TTFT 0.90 -> 1.40 s", and its minutes over the objective; and, where a change moves a
model off the point `make tune` aims at (the objective met: planner/tune.py), that it does. A missing base plan (a
base without the planner, or a new stack) prints the head alone.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

from planner import tune


def _load(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text()) if path.exists() else None


def meets(plan: dict[str, Any], model: dict[str, Any]) -> bool:
    """The objective `make tune` keeps: attainment and minutes over it (planner/tune.py Outcome.meets)."""
    minutes = math.ceil(float(plan.get("days", 1.0)) * 1440)
    over = int(model.get("minutesOverSlo", 0))
    return float(model["sloAttainment"]) >= tune.ATTAINMENT and over <= math.floor(tune.MINUTES_OVER * minutes)


def _signed(value: float) -> str:
    return f"{'+' if value >= 0 else '-'}${abs(value):,.0f}"


def markdown(base: dict[str, Any] | None, head: dict[str, Any]) -> str:
    now = head["cost"]["autoscaled"]["perMonth"]
    if base is None:
        lines = [f"Autoscaled: ${now:,.0f} a month (no plan on the base to compare with)."]
        before: dict[str, Any] = {}
    else:
        was = base["cost"]["autoscaled"]["perMonth"]
        lines = [f"**{_signed(now - was)} a month** autoscaled (${was:,.0f} -> ${now:,.0f})."]
        before = base["models"]
    lines += ["", "| Model | P99 TTFT | SLO attainment | Minutes over | Replicas (avg) |", "|---|---|---|---|---|"]
    notes: list[str] = []
    for name, m in sorted(head["models"].items()):
        old = before.get(name)
        p99 = m["ttftSeconds"]["p99"]
        if old:
            o99 = old["ttftSeconds"]["p99"]
            lines.append(
                f"| {name} | {o99:.2f} -> {p99:.2f} s | {old['sloAttainment']:.1%} -> {m['sloAttainment']:.1%} | "
                f"{old.get('minutesOverSlo', 0)} -> {m.get('minutesOverSlo', 0)} | "
                f"{old['replicas']['avg']:.2f} -> {m['replicas']['avg']:.2f} |"
            )
            if base is not None and meets(base, old) and not meets(head, m):
                notes.append(f"**{name} no longer meets its objective** (the point `make tune` keeps): run `make tune` on this change.")
        else:
            lines.append(
                f"| {name} (new) | {p99:.2f} s | {m['sloAttainment']:.1%} | {m.get('minutesOverSlo', 0)} | {m['replicas']['avg']:.2f} |"
            )
    if notes:
        lines += ["", *notes]
    skipped = sorted(head.get("notPlanned", []))
    removed = sorted(set(before) - set(head["models"]) - set(skipped))
    if removed:
        lines += ["", "Removed: " + ", ".join(removed)]
    if skipped:
        lines += ["", "Not planned (no traffic; their floors are not in the cost): " + ", ".join(skipped)]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m planner.compare BASE/plan.json HEAD/plan.json", file=sys.stderr)
        return 2
    head = _load(Path(args[1]))
    if head is None:
        print("No plan on the head.")
        return 0
    print(markdown(_load(Path(args[0])), head), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
