"""`make render STACK=<stack>`: the real program, offline, written to build/<stack>/.

    python -m offline.render dev [--out build] [--counts] [--sources]

Writes resources.json, manifests/ (with the InferencePool each router release's chart will create),
helm/<release>.yaml, outputs.json and preflight.json, and prints a summary: the models, the compute
cost floor and ceiling, the warnings, the scale-up budgets, then the resource total (--counts lists
them by type; --sources lists the published figures behind the scale-up terms) and the preflight table.
A bad config prints every problem and exits 2 without writing anything. No cloud credentials
and no Pulumi CLI are needed; secrets appear as "[secret]".
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any

import yaml

from builders.gateway import router as gateway_router
from components import account
from config import load as config_load
from config.checks import preflight
from config.derived import cost, scaleup, state
from config.errors import ConfigError, format_report
from config.facts import catalog, versions
from config.sections.stack import StackConfig
from offline import harness
from offline.mocks import Registration, redact

EXIT_CONFIG = 2


def is_manifest(r: Registration) -> bool:
    return r.type.startswith("kubernetes:") and not r.type.startswith(("kubernetes:helm.sh/", "kubernetes:yaml"))


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def manifest(r: Registration) -> dict[str, Any]:
    """A Kubernetes object: apiVersion, kind, metadata first, then the rest, keys sorted."""
    return _ordered(redact(r.inputs))


def _ordered(doc: dict[str, Any]) -> dict[str, Any]:
    body = _sorted(doc)
    head = {k: body.pop(k) for k in ("apiVersion", "kind", "metadata") if k in body}
    return {**head, **body}


def manifest_path(doc: dict[str, Any], fallback: str) -> str:
    meta = doc.get("metadata") or {}
    namespace = meta.get("namespace") or "_cluster"
    name = meta.get("name") or fallback
    return f"{namespace}/{str(doc.get('kind', 'Object')).lower()}-{name}.yaml"


def helm_release(r: Registration) -> tuple[str, dict[str, Any]]:
    inputs = redact(r.inputs)
    name = inputs.get("name") or r.name
    repo = (inputs.get("repositoryOpts") or {}).get("repo")
    return name, {
        "chart": inputs.get("chart"),
        "repository": repo,
        "version": inputs.get("version"),
        "namespace": inputs.get("namespace"),
        "values": _sorted(inputs.get("values") or {}),
    }


def chart_objects(name: str, release: dict[str, Any]) -> list[dict[str, Any]]:
    """What a release's chart will create that a reviewer must see beside its values: a router
    release's InferencePool (the model's pods the Endpoint Picker picks from), rebuilt from the values."""
    if release["chart"] != versions.LLM_D_ROUTER.name:
        return []
    chart_values = release["values"]
    if (chart_values["router"].get("inferencePool") or {}).get("create") is False:
        return []  # the chart renders no pool then (routerlib `_inferencepool.yaml`)
    return [gateway_router.inference_pool(chart_values, name, release["namespace"])]


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (embedded configs, dashboards) as literal blocks."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def _dump(doc: Any) -> str:
    return yaml.dump(doc, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=120)


CHART_RENDERED = "# Rendered by the chart of helm/{release}.yaml, not by the program: rebuilt here from its values.\n"


def write(result: harness.RunResult, out: Path) -> None:
    """Write the four outputs into out (which must not exist yet); the objects a chart renders that
    matter for review (chart_objects) go to manifests/ too, marked as the chart's."""
    (out / "manifests").mkdir(parents=True)
    (out / "helm").mkdir()
    resources = sorted((r.redacted() for r in result.registrations), key=lambda d: (d["type"], d["name"]))
    (out / "resources.json").write_text(json.dumps(resources, indent=2, sort_keys=True) + "\n")
    for r in result.registrations:
        if is_manifest(r):
            doc = manifest(r)
            path = out / "manifests" / manifest_path(doc, r.name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(_dump(doc))
        elif r.type == "kubernetes:helm.sh/v3:Release":
            name, doc = helm_release(r)
            (out / "helm" / f"{name}.yaml").write_text(_dump(doc))
            for obj in chart_objects(name, doc):
                path = out / "manifests" / manifest_path(obj, name)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(CHART_RENDERED.format(release=name) + _dump(_ordered(obj)))
    (out / "outputs.json").write_text(json.dumps(result.redacted_outputs(), indent=2, sort_keys=True) + "\n")


def summary(
    stack: str,
    cfg: StackConfig,
    result: harness.RunResult,
    warnings: list[str],
    placeholders: list[str],
    seconds: float,
    *,
    counts: bool = False,
    sources: bool = False,
) -> str:
    """What a render says, most important first: the models, the cost, the warnings, the scale-up budgets.

    Then the resource total; `counts` lists the resources by type, `sources` the published
    figures behind the scale-up terms.
    """
    lines = [f"Rendered stack {stack} ({cfg.environment}, {cfg.region}) in {seconds:.1f} s", ""]
    costs = cost.summarize(cfg)
    endpoints = result.outputs.get("models") or {}
    lines += ["Models:"]
    header = f"  {'model':<16} {'pool':<18} {'GPU per replica':<34} {'replicas':<9} {'nodes':<7} endpoint"
    lines.append(header)
    for m in costs.models:
        endpoint = (endpoints.get(m.name) or {}).get("baseUrl") or (endpoints.get(m.name) or {}).get("url") or "-"
        replicas, nodes = f"{m.replicas_min}-{m.replicas_max}", f"{m.nodes_min}-{m.nodes_max}"
        lines.append(f"  {m.name:<16} {m.pool:<18} {m.gpu:<34} {replicas:<9} {nodes:<7} {endpoint}")
    month = catalog.HOURS_PER_MONTH
    fixed = ", ".join(f"{f.name}{f' x{f.count}' if f.count > 1 else ''} ${f.per_hour:.3f}/h" for f in costs.fixed)
    lines += [
        "",
        "Cost (on-demand us-east-1 list prices; spot is lower; data through NAT and the ALB, logs and volumes not counted):",
        f"  floor   ${costs.floor:9.2f}/h  ${costs.floor * month:11,.0f}/month  (fixed + system nodes at min + models at min replicas)",
        f"  ceiling ${costs.ceiling:9.2f}/h  ${costs.ceiling * month:11,.0f}/month  (fixed + system nodes at max + models at max replicas)",
        f"  incl. fixed ${costs.fixed_per_hour:.2f}/h (${costs.fixed_per_hour * month:,.0f}/month): {fixed}",
    ]
    if cfg.region != catalog.PRICE_REGION:
        lines.append(
            f"  Warning: the prices are {catalog.PRICE_REGION}'s and this stack deploys to {cfg.region}, whose prices differ: "
            "read these figures as estimates"
        )
    for h in costs.headroom:
        lines.append(
            f"  incl. headroom of {h.pool}: {h.gpus} GPU(s) warm on {h.nodes_min}-{h.nodes_max} node(s), ${h.floor:.2f}-{h.ceiling:.2f}/h"
        )
    for g in cost.gateway_costs(cfg):
        lines.append(
            f"  incl. the gateway of {g.name} on the system nodes: {g.cpu_millis}m CPU, {g.memory_mib} MiB, "
            f"${g.per_hour:.3f}/h (${g.per_hour * month:,.0f}/month)"
        )
    for w in cost.warmup_costs(cfg):
        lines.append(
            f"  plus, per change of {w.name}'s compile-cache key (revision, image, engine flags): its warm-up on "
            f"{', '.join(w.hosts)} for up to {w.seconds} s, ${w.dollars:.2f} on demand"
        )
    if placeholders:
        lines += ["", "Secrets not in the stack file, rendered with placeholders: " + ", ".join(placeholders)]
    if warnings:
        lines += ["", *warnings]
    lines += ["", *scale_up_table(cfg, endpoints, sources=sources)]
    lines += ["", *hold_table(cfg)]
    lines += ["", *resource_counts(result, by_type=counts)]
    return "\n".join(lines)


def resource_counts(result: harness.RunResult, *, by_type: bool) -> list[str]:
    """The number of resources the program registers; by type with `by_type`."""
    counts = Counter(r.type for r in result.registrations)
    if not by_type:
        return [f"Resources: {sum(counts.values())} (--counts lists them by type)"]
    return [f"Resources: {sum(counts.values())}", *(f"  {n:4d}  {t}" for t, n in sorted(counts.items()))]


def scale_up_table(cfg: StackConfig, outputs: dict[str, Any], *, sources: bool = False) -> list[str]:
    """Each model's scale-up budget, term by term (from the `models` output); with `sources`, the figures behind it."""
    short = {
        "signal": "signal",
        "nodeLaunch": "node",
        "imagePull": "image",
        "weights": "weights",
        "engineStart": "engine",
        "probe": "probe",
        "loadBalancer": "lb",
    }
    head = "".join(f"{short[t]:>8}" for t in scaleup.TERMS)
    lines = [
        "Scale-up budget in seconds, queue growing -> new replica serving (hit: a warm headroom node is free; miss: a node launches):",
        f"  {'model':<16} {'weights':<12} {'headroom':>8} {'hit':>5} {'miss':>5} {head}",
    ]
    for m in cfg.models:
        budget = (outputs.get(m.name) or {}).get("scaleUpSeconds")
        if not budget:
            continue
        pool = cfg.pool(m.pool)
        warm = pool.headroom if pool else 0
        terms = "".join(f"{budget['terms'][t]:>8}" for t in scaleup.TERMS)
        lines.append(f"  {m.name:<16} {m.weights.source or '-':<12} {warm:>8} {budget['hit']:>5} {budget['miss']:>5} {terms}")
        if slow := budget.get("pessimistic"):
            slow_terms = "".join(f"{slow['terms'][t]:>8}" for t in scaleup.TERMS)
            lines.append(f"  {'  pessimistic':<16} {'':<12} {'':>8} {slow['hit']:>5} {slow['miss']:>5} {slow_terms}")
    if not sources:
        return [*lines, "  The published figures behind the terms are in config/facts/speed.py (--sources lists them)."]
    lines.append("  Published figures behind the terms (config/facts/speed.py):")
    lines += [f"    {key:<18} {f.value:8.3g} {f.unit:<5} {f.what} [{f.measured_on}]" for key, f in scaleup.sources()]
    return lines


def hold_table(cfg: StackConfig) -> list[str]:
    """What each model's gateway holds, and for how long: flow control's thresholds and TTL, against the
    timeouts around it (builders/gateway/timeouts.py)."""
    derived = state.of(cfg)
    alb = cfg.ingress.idle_timeout_seconds
    lines = [
        "Gateway hold (flow control): a request waits while the replicas are saturated or none is ready, up to the TTL;",
        f"then 429 (replicas up) or 503 (none). Every hold ends inside the ALB's idle timeout ({alb} s):",
        f"  {'model':<16} {'queue/replica':>13} {'KV use':>7} {'TTL':>5} {'covers':<34} {'ext_proc':>8}",
    ]
    for m in cfg.models:
        held = derived.model(m.name).hold
        covers = f"pessimistic {'cold start' if held.cold_start else 'warm scale-up'} {held.wanted_seconds} s"
        if held.ttl_seconds < held.wanted_seconds:
            covers = f"capped by the ALB (wants {held.wanted_seconds} s)"
        ext_proc = state.of(cfg).model(m).path.chain.ext_proc_message
        lines.append(f"  {m.name:<16} {held.queue_threshold:>13} {held.kv_threshold:>7g} {held.ttl_seconds:>5} {covers:<34} {ext_proc:>8}")
    return lines


SAMPLE_ACCOUNT = "offline/account.yaml"


def preflight_table(checks: list[preflight.Check], sample_region: str | None = None) -> str:
    """One line per kind of check: how many passed, warned or were not checked. With `sample_region`, the answers
    were the sample account's, moved to that region: the table says so, as they prove nothing about a real one."""
    if sample_region is None:
        lines = ["Preflight against the account answers:"]
    else:
        lines = [
            f"Preflight against the sample account ({SAMPLE_ACCOUNT}: a healthy account, its zones moved to "
            f"{sample_region}; it says nothing of yours: `make account` captures your answers, `ACCOUNT=<file>` checks them):"
        ]
    kinds = sorted({c.name for c in checks})
    for kind in kinds:
        results = Counter(c.result for c in checks if c.name == kind)
        lines.append(f"  {kind:<14} " + ", ".join(f"{n} {r}" for r, n in sorted(results.items())))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("stack", help="stack name: reads Pulumi.<stack>.yaml")
    parser.add_argument("--out", default=str(harness.ROOT / "build"), help="output folder (default: build/)")
    parser.add_argument("--file", help="stack file to read instead of Pulumi.<stack>.yaml")
    parser.add_argument("--account", help="account answers to check the stack against (default: offline/account.yaml)")
    parser.add_argument("--counts", action="store_true", help="list the registered resources by type")
    parser.add_argument("--sources", action="store_true", help="list the published figures behind the scale-up budget")
    args = parser.parse_args(argv)
    stack_file = Path(args.file) if args.file else harness.ROOT / f"Pulumi.{args.stack}.yaml"
    if not stack_file.exists():
        print(
            f"No stack file {stack_file.name}. Fix: use one of "
            + ", ".join(p.name.split(".")[1] for p in sorted(harness.ROOT.glob("Pulumi.*.yaml"))),
            file=sys.stderr,
        )
        return EXIT_CONFIG
    started = time.perf_counter()
    try:
        inp = harness.stack_input(args.stack, stack_file)
        inp.account = Path(args.account) if args.account else None
        harness.apply_config(inp)
        offline = harness.offline_account(inp)
        cfg, _, _, warnings = config_load.validate(offline)
    except ConfigError as err:
        print(f"{stack_file.name}: " + err.report(), file=sys.stderr)
        return EXIT_CONFIG
    answers = Path(args.account).name if args.account else SAMPLE_ACCOUNT
    try:
        checks = account.check(cfg, offline)
    except ConfigError as err:  # the account file's own problems: named by it, not by the stack file
        print(f"{answers}: " + err.report(), file=sys.stderr)
        return EXIT_CONFIG
    found = preflight.problems(checks)
    if any(p.severity == "error" for p in found):
        print(f"{stack_file.name}: preflight against the account answers failed.\n" + format_report(found), file=sys.stderr)
        return EXIT_CONFIG
    warnings = [*warnings, *found]
    result = harness.run(inp)
    target = Path(args.out) / args.stack
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        staging = Path(tmp) / args.stack
        write(result, staging)
        (staging / "preflight.json").write_text(json.dumps([asdict(c) for c in checks], indent=2, sort_keys=True) + "\n")
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    elapsed = time.perf_counter() - started
    report = [format_report(warnings)] if warnings else []
    print(summary(args.stack, cfg, result, report, inp.placeholders, elapsed, counts=args.counts, sources=args.sources))
    print("\n" + preflight_table(checks, None if args.account else cfg.region))
    shown = target.resolve().relative_to(Path.cwd()) if target.resolve().is_relative_to(Path.cwd()) else target
    print(f"\nWrote {shown}/: resources.json, manifests/, helm/, outputs.json, preflight.json")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # the reader stopped early (`| head`): build/<stack>/ is written, so not a failure
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
