"""The benchmark client of `make measure`: a sweep of Poisson request rates against an OpenAI-compatible endpoint.

Runs as the measure Job's container (a ConfigMap-mounted script in the model's own vLLM image, which has a
Python 3), and as it is against the offline fake server (offline/fake_openai.py). Standard library only.

For each rate it sends streamed `/v1/completions` requests at Poisson arrivals for `--duration` seconds: a
prompt of `--prompt-tokens` words (most tokenizers make a common short word one token) and exactly
`--output-tokens` tokens back (`max_tokens` with vLLM's `ignore_eos`), asking for the usage chunk so the token
counts are the server's own. It measures time to first token and time per output token per request, and
prints one line per rate: `BENCH_RESULT {json}` with the counts, the request and output-token throughput over the
step, and the mean, median and P99 of both latencies, as `vllm bench serve` names them (`request_throughput`,
`output_throughput`, `median_ttft_ms`, `p99_tpot_ms`, ...). The planner reads these lines from the Job's log.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

MARKER = "BENCH_RESULT "
WORD = "hello"


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))]


def one_request(base_url: str, model: str, key: str | None, prompt_tokens: int, output_tokens: int, timeout: float) -> dict[str, Any]:
    """One streamed completion: (ok, ttft, tpot, prompt and output tokens as the server counted them)."""
    body = {
        "model": model,
        "prompt": " ".join([WORD] * prompt_tokens),
        "max_tokens": output_tokens,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
    request = urllib.request.Request(f"{base_url.rstrip('/')}/completions", json.dumps(body).encode(), headers, method="POST")
    start = time.monotonic()
    first: float | None = None
    tokens = 0
    usage: dict[str, int] = {}
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            for raw in response:
                line = raw.decode().strip()
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                chunk = json.loads(line[6:])
                if chunk.get("usage"):
                    usage = chunk["usage"]
                if any(c.get("text") for c in chunk.get("choices") or []):
                    tokens += 1
                    if first is None:
                        first = time.monotonic()
    except (OSError, ValueError) as err:
        return {"ok": False, "error": type(err).__name__}
    end = time.monotonic()
    if first is None:
        return {"ok": False, "error": "no token"}
    out = int(usage.get("completion_tokens") or tokens)
    return {
        "ok": True,
        "ttft": first - start,
        "tpot": (end - first) / (out - 1) if out > 1 else 0.0,
        "prompt_tokens": int(usage.get("prompt_tokens") or prompt_tokens),
        "output_tokens": out,
        "end": end,
    }


def step(args: argparse.Namespace, rate: float, rng: random.Random, prompt_tokens: int) -> dict[str, Any]:
    """One rate of the sweep: Poisson arrivals for the duration, at most --max-requests of them."""
    count = max(1, min(args.max_requests, round(rate * args.duration)))
    key = os.environ.get(args.api_key_env) if args.api_key_env else None
    results: list[dict[str, Any]] = []
    lock = threading.Lock()

    def send() -> None:
        result = one_request(args.base_url, args.model, key, prompt_tokens, args.output_tokens, args.timeout)
        with lock:
            results.append(result)

    begin = time.monotonic()
    at = begin
    with ThreadPoolExecutor(max_workers=args.workers) as pool:
        for _ in range(count):
            pause = at - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            pool.submit(send)
            at += rng.expovariate(rate)
    done = [r for r in results if r["ok"]]
    ends = sorted(r["end"] for r in done)
    elapsed = (max(r["end"] for r in done) - begin) if done else 0.0
    ttft = [r["ttft"] * 1000 for r in done]
    tpot = [r["tpot"] * 1000 for r in done if r["output_tokens"] > 1]
    summary: dict[str, Any] = {
        "request_rate": rate,
        "num_prompts": count,
        "completed": len(done),
        "failed": count - len(done),
        "duration": elapsed,
        "request_throughput": len(done) / elapsed if elapsed else 0.0,
        # between the first and the last completion: the rate once requests complete, without the first one's wait
        "steady_request_throughput": (len(done) - 1) / (ends[-1] - ends[0]) if len(done) > 1 and ends[-1] > ends[0] else 0.0,
        "output_throughput": sum(r["output_tokens"] for r in done) / elapsed if elapsed else 0.0,
        "mean_prompt_tokens": statistics.fmean(r["prompt_tokens"] for r in done) if done else 0.0,
        "mean_output_tokens": statistics.fmean(r["output_tokens"] for r in done) if done else 0.0,
    }
    for name, values in (("ttft", ttft), ("tpot", tpot)):
        summary[f"mean_{name}_ms"] = statistics.fmean(values) if values else float("nan")
        summary[f"median_{name}_ms"] = statistics.median(values) if values else float("nan")
        summary[f"p99_{name}_ms"] = _percentile(values, 99)
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A sweep of request rates against an OpenAI-compatible endpoint.")
    parser.add_argument("--base-url", required=True, help="the endpoint's /v1 URL")
    parser.add_argument("--model", required=True)
    parser.add_argument("--api-key-env", default="", help="the environment variable holding the bearer key (none: no key)")
    parser.add_argument("--rates", required=True, help="requests per second, comma-separated, one step each")
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of arrivals per rate")
    parser.add_argument("--max-requests", type=int, default=2000, help="requests per rate at the most")
    parser.add_argument("--prompt-tokens", type=int, default=512)
    parser.add_argument(
        "--probe-prompt-tokens", type=int, default=0, help="also the lowest rate with prompts this long (prefill per token)"
    )
    parser.add_argument("--output-tokens", type=int, default=256)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds one request may take")
    parser.add_argument("--workers", type=int, default=256, help="requests in flight at the most")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    rates = [float(r) for r in args.rates.split(",")]
    for rate in rates:
        print(MARKER + json.dumps(step(args, rate, rng, args.prompt_tokens), sort_keys=True), flush=True)
    if args.probe_prompt_tokens:
        print(MARKER + json.dumps(step(args, min(rates), rng, args.probe_prompt_tokens), sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
