"""One vLLM replica, step by step, as the pinned engine schedules it. Pure.

vLLM 0.33 (the V1 engine) runs one scheduler step at a time. Each step has a token budget
(`--max-num-batched-tokens`): the running requests go first (a decoding request takes one token,
one still in its prefill its next chunk), then waiting requests are admitted first come, first
served, while the budget, `--max-num-seqs` and the KV cache allow, each with as much of its prompt
as the budget leaves (chunked prefill is always on in V1). A request whose next tokens find no KV
block preempts the newest running request, which goes back to the front of the queue and
recomputes its prefill later (preemption by recompute). The step that computes a prompt's last
token samples its first output token; every later step samples one more.

A step's time is the replica's roofline (planner/serving.py `ReplicaPerformance.step_time`): its
fixed overhead, the dense layers at the slower of reading the weights and computing every scheduled
token, and attention reading the KV cache of every scheduled request.

Too slow for a day of a fleet (a replica runs tens of steps a second); it is the reference the
replay's per-request arithmetic is checked against (tests/planner/test_engine.py) and what the
published measurements are predicted with (planner/calibration.py).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from planner.serving import ReplicaPerformance

BLOCK_TOKENS = 16
"""vLLM's KV block size on CUDA (--block-size default): a request holds whole blocks."""


@dataclass(eq=False)
class _Request:
    index: int
    arrival: float
    prompt: int
    output: int
    computed: int = 0
    """Prompt and output tokens whose KV the cache holds."""
    generated: int = 0
    first_token: float = math.nan
    done: float = math.nan

    @property
    def total(self) -> int:
        return self.prompt + self.generated

    def next_tokens(self) -> int:
        """Tokens this request needs computed in its next step: the rest of its prompt (and, after a
        preemption, of what it had generated), else one (the token it sampled last)."""
        return max(1, self.total - self.computed)


@dataclass
class EngineResult:
    """Per request: time to first token and end, from arrival (NaN if never reached); and the steps."""

    ttft: np.ndarray
    end: np.ndarray
    arrival: np.ndarray
    """When each request arrived (in a closed loop: when its client sent it)."""
    tpot: np.ndarray
    """Mean seconds per output token after the first (NaN for one-token answers)."""
    steps: int
    preemptions: int
    batch_sizes: list[int] = field(default_factory=list)

    def throughput(self, skip: float = 0.25) -> float:
        """Requests completed per second in the run's steady part: between the completion a `skip`
        share in and the last one."""
        done = np.sort((self.arrival + self.end)[~np.isnan(self.end)])
        first = int(len(done) * skip)
        if len(done) - first < 2:
            return 0.0
        return float((len(done) - 1 - first) / (done[-1] - done[first]))


def run(
    perf: ReplicaPerformance,
    arrival: np.ndarray,
    prompt: np.ndarray,
    output: np.ndarray,
    *,
    clients: int | None = None,
    scheduler_steps: int = 1,
) -> EngineResult:
    """Serve these requests (arrival order) on one replica; return what each saw. With `clients`, the
    arrivals are ignored: that many requests start at 0 and each later one when an earlier one ends
    (a closed loop), its arrival set then. `scheduler_steps` > 1 replays vLLM 0.6's multi-step
    scheduling (--num-scheduler-steps, gone in the V1 engine): waiting requests join only every that
    many steps, as the published 0.6 benchmarks ran."""
    blocks_total = perf.kv_capacity_tokens // BLOCK_TOKENS
    pending = deque(_Request(i, float(a), int(p), int(o)) for i, (a, p, o) in enumerate(zip(arrival, prompt, output, strict=True)))
    held: deque[_Request] = deque()
    refused: list[_Request] = []
    if clients is not None:
        while len(pending) > clients:
            held.appendleft(pending.pop())  # sent as earlier requests end
    waiting: deque[_Request] = deque()
    running: list[_Request] = []
    finished: list[_Request] = []
    now = 0.0
    steps = preemptions = 0
    sizes: list[int] = []
    used_blocks = 0

    def blocks(tokens: int) -> int:
        return -(-tokens // BLOCK_TOKENS)

    while pending or waiting or running:
        while pending and pending[0].arrival <= now:
            waiting.append(pending.popleft())
        if not waiting and not running:
            now = pending[0].arrival
            continue
        budget = perf.max_num_batched_tokens
        scheduled: list[tuple[_Request, int]] = []
        preempted_now = False
        # 1. the running requests, oldest first; one that cannot grow preempts the newest
        i = 0
        while i < len(running) and budget > 0:
            r = running[i]
            want = min(r.next_tokens(), budget)
            need = blocks(r.computed + want) - blocks(r.computed)
            while need > blocks_total - used_blocks and len(running) > i + 1:
                victim = running.pop()
                used_blocks -= blocks(victim.computed)
                victim.computed = 0
                preemptions += 1
                preempted_now = True
                waiting.appendleft(victim)
            if need > blocks_total - used_blocks:
                break  # alone and out of cache: it waits (cannot happen with a cache of one max-length sequence)
            used_blocks += need
            scheduled.append((r, want))
            budget -= want
            i += 1
        # 2. waiting requests, first come first served, unless this step preempted
        joining = not running or steps % scheduler_steps == 0  # an idle engine takes new work at once
        while joining and waiting and not preempted_now and budget > 0 and len(running) < perf.max_num_seqs:
            r = waiting[0]
            want = min(r.next_tokens(), budget)
            need = blocks(r.computed + want)
            if blocks(r.prompt + 1) > blocks_total:
                waiting.popleft()  # more than the whole cache holds: vLLM refuses it, it is never served
                refused.append(r)
                if held:  # its client sends its next request
                    following = held.popleft()
                    following.arrival = now
                    pending.append(following)
                continue
            if need > blocks_total - used_blocks:
                break
            waiting.popleft()
            used_blocks += need
            running.append(r)
            scheduled.append((r, want))
            budget -= want
        if not scheduled:
            now = pending[0].arrival if pending else now + perf.step_time(0, 0, 0)
            continue
        tokens = sum(w for _, w in scheduled)
        context = sum(r.computed + w for r, w in scheduled)
        step = perf.step_time(tokens, context, len(scheduled))
        now += step
        steps += 1
        sizes.append(len(scheduled))
        for r, w in scheduled:
            r.computed += w
            if r.computed >= r.total:  # its prompt (and any recomputed output) is in: it samples a token
                r.generated += 1
                if math.isnan(r.first_token):
                    r.first_token = now + perf.request_overhead
                if r.generated >= r.output:
                    r.done = now + perf.request_overhead
        for r in [r for r, _ in scheduled if not math.isnan(r.done)]:
            running.remove(r)
            used_blocks -= blocks(r.computed)
            finished.append(r)
            if held:
                following = held.popleft()
                following.arrival = r.done
                pending.append(following)
    everyone = sorted(finished + refused + running + list(waiting) + list(pending) + list(held), key=lambda r: r.index)
    ttft = np.array([r.first_token - r.arrival for r in everyone])
    end = np.array([r.done - r.arrival for r in everyone])
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.array([(r.done - r.first_token) / (r.output - 1) if r.output > 1 else math.nan for r in everyone])
    return EngineResult(ttft, end, np.array([r.arrival for r in everyone]), tpot, steps, preemptions, sizes)


def closed_loop(
    perf: ReplicaPerformance, concurrency: int, prompt: int, output: int, requests: int, scheduler_steps: int = 1
) -> EngineResult:
    """A benchmark at fixed concurrency (`vllm bench serve --max-concurrency`, llmperf's concurrent
    clients): `concurrency` clients send at once, and each sends its next request when its last one
    ends, all with these lengths."""
    return run(
        perf, np.zeros(requests), np.full(requests, prompt), np.full(requests, output), clients=concurrency, scheduler_steps=scheduler_steps
    )
