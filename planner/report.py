"""The plan as a report: the seed-style table in Markdown, and one PNG per model. Pure but for
matplotlib (Agg backend, no display)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from planner.simulate import Result


def _usd(value: float) -> str:
    return f"${value:,.2f}"


def markdown(plan: dict[str, Any]) -> str:
    cost = plan["cost"]
    lines = [
        f"# Capacity plan: {plan['stack']} stack, {plan['days']:g} day(s) of {plan['traffic']}",
        "",
        "GPU node cost and latency of the same traffic on four fleets: **static** (every model at its "
        "static replica count, on-demand, no autoscaling), **autoscaled** (what the stack deploys: KEDA, the HPA, "
        f"Karpenter, spot first with {plan['spotAvailability']:.0%} spot availability), and two lower bounds, there at "
        "once, packed, spot where allowed: the **saturated oracle** (the replicas each minute needs at full "
        "load, queues unbounded: it misses the objective at its own peaks) and the **SLO oracle** (the replicas "
        "each minute needs with every replica at the rate it answers within the TTFT objective, never below "
        f"`min` or a schedule's floor). Months are {cost['hoursPerMonth']} hours.",
        "",
        *[line for w in plan.get("warnings", []) for line in (f"> **Warning:** {w}", "")],
        "| | Static | Autoscaled | SLO oracle | Saturated oracle |",
        "|---|---|---|---|---|",
        f"| Cost per hour | {_usd(cost['static']['perHour'])} | {_usd(cost['autoscaled']['perHour'])} | "
        f"{_usd(cost['sloOracle']['perHour'])} | {_usd(cost['oracle']['perHour'])} |",
        f"| Cost per month | {_usd(cost['static']['perMonth'])} | {_usd(cost['autoscaled']['perMonth'])} | "
        f"{_usd(cost['sloOracle']['perMonth'])} | {_usd(cost['oracle']['perMonth'])} |",
    ]
    for name, m in sorted(plan["models"].items()):
        st = m["static"]
        lines += [
            f"| {name}: replicas (avg) | {st['replicas']} | {m['replicas']['avg']:.2f} | {m['sloOracle']['replicasAvg']:.2f} "
            f"| {m['oracle']['replicasAvg']:.2f} |",
            f"| {name}: P99 TTFT | {st['ttftSeconds']['p99']:.2f} s | {m['ttftSeconds']['p99']:.2f} s | - | - |",
            f"| {name}: minutes over the objective | {st['minutesOverSlo']:,} | {m['minutesOverSlo']:,} | - | - |",
            f"| {name}: average queue depth | {st['avgQueueDepth']:.2f} | {m['avgQueueDepth']:.2f} | - | - |",
        ]
    for name, p in sorted(plan["pools"].items()):
        lines.append(f"| {name}: node utilization, spot ratio | - | {p['utilization']:.0%}, {p['spotRatio']:.0%} | - | - |")
    lines += ["", _verdict(cost) + ".", ""]
    for name, m in sorted(plan["models"].items()):
        worst = m["worstMinute"]
        if worst:
            lines.append(
                f"- **{name}**: {m['minutesOverSlo']:,} minute(s) with a P99 TTFT over {m['ttftSloSeconds']:g} s "
                f"(the worst at {worst['at']}: {_p99(worst['ttftP99Seconds'])}); one replica answers "
                f"{m['sloOracle']['requestsPerSecondPerReplica']:g} requests/s within the objective."
            )
        else:
            lines.append(f"- **{name}**: every minute's P99 TTFT within {m['ttftSloSeconds']:g} s.")
    lines += [
        "",
        "| Model | Requests | Served | Held (longest) | Shed 429 / 503 | vLLM 503 | TTFT p50 / p95 / p99 | Queue wait p99 "
        "| SLO attainment (TTFT) | Scale-up hit / miss |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, m in sorted(plan["models"].items()):
        t, w, b, shed = m["ttftSeconds"], m["queueWaitSeconds"], m["scaleUpSeconds"], m["shed"]
        lines.append(
            f"| {name} | {m['requests']:,} | {m['served']:,} | {m['held']:,} ({m['longestHoldSeconds']:.0f} s) | "
            f"{shed['ttlExpired']:,} / {shed['noEndpoints']:,} | {m['refusedByVllm']:,} | "
            f"{t['p50']:.2f} / {t['p95']:.2f} / {t['p99']:.2f} s | "
            f"{w['p99']:.2f} s | {m['sloAttainment']:.1%} (<= {m['ttftSloSeconds']:g} s) | {b['hit']} / {b['miss']} s |"
        )
    lines += [
        "",
        "Held: requests the gateway's flow control held while the replicas were saturated or absent (their "
        "wait and TTFT include the hold), with the longest hold; shed: held for the TTL and answered 429 "
        "(a replica was ready) or 503 (none was); vLLM 503: refused at a replica's admission bound.",
    ]
    lines += _failures(plan)
    lines += _sweep(plan.get("routingSweep"))
    lines += ["", *[f"![{name}: requests, replicas, nodes, queues and TTFT]({name}.png)" for name in sorted(plan["models"])]]
    lines += ["", "Not modelled: " + "; ".join(plan["assumptions"]["notModelled"]) + ".", ""]
    return "\n".join(line for line in lines if line is not None) + "\n"


def _failures(plan: dict[str, Any]) -> list[str]:
    """GPU node failures (--gpu-failures): how many, how many Karpenter repaired, what they cut."""
    rate = plan.get("gpuFailuresPerNodeDay") or 0.0
    if not rate:
        return ["", "GPU node failures: none replayed (`--gpu-failures` sets a rate per node-day)."]
    failed = sum(p["gpuFailures"]["failed"] for p in plan["pools"].values())
    repaired = sum(p["gpuFailures"]["repaired"] for p in plan["pools"].values())
    cut = sum(m["cutByGpuFailures"] for m in plan["models"].values())
    if plan.get("nodeRepair"):
        fate = f"{repaired:,} repaired by Karpenter after 10 minutes, their replicas back through a new node (a miss)"
    else:
        fate = "none repaired (karpenter.nodeRepair is off: a failed node keeps its replicas out until drained by hand)"
    return [
        "",
        f"GPU node failures at {rate:g} per node-day: {failed:,} failed in the autoscaled fleet, {fate}; "
        f"{cut:,} requests running or queued on them were cut (counted as unanswered, each a miss).",
    ]


def _sweep(rows: list[dict[str, Any]] | None) -> list[str]:
    """The routing sweep: per shared-prefix share, the autoscaled fleet behind an ALB straight to the
    pods (round robin) and behind the gateway (its scorers as rendered)."""
    if not rows:
        return []
    names = sorted(rows[0]["models"])
    lines = [
        "",
        "## Routing and shared prefixes",
        "",
        "The autoscaled fleet again with each share of the prompt shared (a system prompt, earlier turns), "
        "each request drawing one of the traffic's prefixes: an ALB straight to the pods (round robin) against "
        "the gateway (its queue, KV and prefix scorers as rendered). A replica that still caches a request's "
        "prefix skips that part of its prefill.",
        "",
        "| Prefix share | Routing | Cost per month | "
        + " | ".join(f"{n}: TTFT p50 / p99, minutes over, prefix hits" for n in names)
        + " |",
        "|---|---|---|" + "---|" * len(names),
    ]
    for row in rows:
        cells = [
            f"{m['ttftP50Seconds']:.3f} / {m['ttftP99Seconds']:.2f} s, {m['minutesOverSlo']:,}, {m['prefixHitRate']:.0%}"
            for m in (row["models"][n] for n in names)
        ]
        lines.append(f"| {row['prefixShare']:.0%} | {row['routing']} | {_usd(row['costPerMonth'])} | " + " | ".join(cells) + " |")
    return lines


def _p99(seconds: float | None) -> str:
    return f"{seconds:.2f} s" if seconds is not None else "requests left unanswered"


def _verdict(cost: dict[str, Any]) -> str:
    bounds = [
        f"{cost[key]:.2f}x the {label}"
        for key, label in (("autoscaledOverSloOracle", "SLO oracle"), ("autoscaledOverOracle", "saturated oracle"))
        if cost.get(key) is not None
    ]
    verdict = "Autoscaled costs " + " and ".join(bounds) if bounds else "No load: the oracles need nothing"
    if cost["autoscaledOverStatic"] is not None:
        verdict += f", {1 - cost['autoscaledOverStatic']:.0%} less than the static fleet"
    return verdict


CLIP_OVER_OBJECTIVE = 5
"""The TTFT panel shows up to this many times the objective; higher minutes are clipped and the highest named."""


def plot(model: str, result: Result, path: Path, objective: float | None = None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator, ScalarFormatter

    series = result.series[model]
    pool = result.models[model].config.pool
    hours = np.arange(1, len(series["requests"]) + 1) / 60
    days = hours[-1] / 24 if len(hours) else 0.0
    fig, axes = plt.subplots(5, 1, figsize=(10, 11), sharex=True)
    rows = [
        ("requests per minute", [("requests", series["requests"])]),
        ("replicas", [("desired", series["desired"]), ("ready", series["ready"])]),
        (f"nodes ({pool})", [("nodes", result.series[f"pool:{pool}"]["nodes"])]),
        ("queue depth", [("waiting (vLLM)", series["queue"]), ("held (gateway)", series["held"])]),
        ("TTFT p99 (s)", [("p99", series["ttftP99"])]),
    ]
    for ax, (title, lines) in zip(axes, rows, strict=True):
        for label, values in lines:
            ax.plot(hours, values, label=label, linewidth=1)
        ax.set_ylabel(title)
        ax.grid(alpha=0.3)
        # a flat series keeps plain ticks (no offset like "1e-6 + 2"), counts keep whole ones
        ax.yaxis.set_major_formatter(ScalarFormatter(useOffset=False))
        ax.yaxis.set_major_locator(MaxNLocator(nbins=5, integer=title != "TTFT p99 (s)"))
        ax.set_ylim(bottom=0, top=max(1.0, max((max(v, default=0.0) for _, v in lines), default=0.0) * 1.1))
        for day in range(1, int(np.ceil(days))):
            ax.axvline(24 * day, color="grey", linewidth=0.8, linestyle=":")
        if len(lines) > 1:
            ax.legend(loc="upper right")
    ttft = axes[-1]
    p99s = np.asarray(series["ttftP99"], dtype=float)
    if objective is not None:
        ttft.axhline(objective, color="tab:red", linewidth=1, linestyle="--", label=f"objective {objective:g} s")
        ttft.legend(loc="upper right")
        top = CLIP_OVER_OBJECTIVE * objective
        if len(p99s) and p99s.max() > top:
            ttft.set_ylim(0, top)
            worst = int(p99s.argmax())
            clipped = int((p99s > top).sum())
            ttft.annotate(
                f"{clipped} minute(s) clipped; highest {p99s[worst]:.1f} s",
                xy=(hours[worst], top),
                xytext=(0.01, 0.85),
                textcoords="axes fraction",
                arrowprops={"arrowstyle": "->", "color": "tab:red"},
                color="tab:red",
            )
    if days > 1:
        axes[-1].set_xticks([24 * d for d in range(int(np.ceil(days)) + 1)])
        axes[-1].set_xlabel("hours into the replay (dotted lines: day boundaries)")
    else:
        axes[-1].set_xlabel("hours into the replay")
    fig.suptitle(f"{model}: autoscaled replay")
    fig.tight_layout()
    fig.savefig(path, dpi=80, metadata={"Software": None})
    plt.close(fig)
