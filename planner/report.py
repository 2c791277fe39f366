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
        "GPU node cost and latency of the same traffic on three fleets: **static** (every model at its "
        "static replica count, on-demand, no autoscaling), **autoscaled** (what the stack deploys: KEDA, the HPA, "
        f"Karpenter, spot first with {plan['spotAvailability']:.0%} spot availability), and the **oracle** lower bound "
        "(exactly the replicas each minute needs, there at once, packed, spot where allowed). "
        f"Months are {cost['hoursPerMonth']} hours.",
        "",
        "| | Static | Autoscaled | Oracle |",
        "|---|---|---|---|",
        f"| Cost per hour | {_usd(cost['static']['perHour'])} | {_usd(cost['autoscaled']['perHour'])} | "
        f"{_usd(cost['oracle']['perHour'])} |",
        f"| Cost per month | {_usd(cost['static']['perMonth'])} | {_usd(cost['autoscaled']['perMonth'])} | "
        f"{_usd(cost['oracle']['perMonth'])} |",
    ]
    for name, m in sorted(plan["models"].items()):
        st = m["static"]
        lines += [
            f"| {name}: replicas (avg) | {st['replicas']} | {m['replicas']['avg']:.2f} | {m['oracle']['replicasAvg']:.2f} |",
            f"| {name}: P99 TTFT | {st['ttftSeconds']['p99']:.2f} s | {m['ttftSeconds']['p99']:.2f} s | - |",
            f"| {name}: average queue depth | {st['avgQueueDepth']:.2f} | {m['avgQueueDepth']:.2f} | - |",
        ]
    for name, p in sorted(plan["pools"].items()):
        lines.append(f"| {name}: node utilization, spot ratio | - | {p['utilization']:.0%}, {p['spotRatio']:.0%} | - |")
    ratio = cost["autoscaledOverOracle"]
    saving = 1 - cost["autoscaledOverStatic"] if cost["autoscaledOverStatic"] is not None else None
    verdict = f"Autoscaled costs {ratio:.2f}x the oracle lower bound" if ratio is not None else "No load: the oracle needs nothing"
    if saving is not None:
        verdict += f" and {saving:.0%} less than the static fleet"
    lines += [
        "",
        verdict + ".",
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
    lines += ["", "Not modelled: " + "; ".join(plan["assumptions"]["notModelled"]) + ".", ""]
    return "\n".join(line for line in lines if line is not None) + "\n"


def plot(model: str, result: Result, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = result.series[model]
    pool = result.models[model].config.pool
    hours = np.arange(1, len(series["requests"]) + 1) / 60
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
        if len(lines) > 1:
            ax.legend(loc="upper right")
    axes[-1].set_xlabel("hours into the replay")
    fig.suptitle(f"{model}: autoscaled replay")
    fig.tight_layout()
    fig.savefig(path, dpi=80, metadata={"Software": None})
    plt.close(fig)
