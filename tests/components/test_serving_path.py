"""The serving path's second deploy review (issue 25): key rotation, admission, quantization, shared
GPUs, the count at creation. Each property is read from the real program's render."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import math
import typing
from typing import Any

import pytest

from builders.serving import workload as builders
from config import load as config_load
from config.derived import capacity, engine
from config.errors import ConfigError
from config.facts.conventions import API_KEY_FINGERPRINT_ANNOTATION
from config.sections.models import ModelConfig
from offline import harness, render
from offline.mocks import Registration, is_secret
from policy.checks import LEADER_WORKER_SET, pod_templates
from tests.conftest import DEV, FIXTURES, PROD, fixture_input, fixture_run, new_problems_after, parse, stack_data, values

DEPLOYMENT = "kubernetes:apps/v1:Deployment"
TLS = "internet-facing-tls"
"""The fixture with an API key (llama-3-1-8b)."""


def _deployment(run: harness.RunResult, model: str) -> Registration:
    """The model's Deployment, or its LeaderWorkerSet where its replicas span nodes."""
    found = [
        r
        for r in [*run.of_type(DEPLOYMENT), *run.of_type(LEADER_WORKER_SET)]
        if r.name in (f"model-{model}-deployment", f"model-{model}-leaderworkerset")
    ]
    assert len(found) == 1, [r.name for r in found]
    return found[0]


def _args(run: harness.RunResult, model: str) -> dict[str, str]:
    args = pod_templates(values(_deployment(run, model)))[0]["spec"]["containers"][0]["args"]
    return dict(zip(args[1::2], args[2::2], strict=False))


def _with_api_key(key: str) -> harness.RunResult:
    inp = fixture_input(TLS)
    config = dict(inp.config)
    config["llm-platform:apiKeys"] = json.dumps({"llama-3-1-8b": key})
    return harness.run(dataclasses.replace(inp, config=config))


# -- 2. a rotated API key rolls the replicas ---------------------------------------------------------


@pytest.fixture(scope="module")
def rotated() -> tuple[harness.RunResult, harness.RunResult, harness.RunResult]:
    return (
        _with_api_key("first-key-0123456789abcdef-0123456789abcdef"),
        _with_api_key("first-key-0123456789abcdef-0123456789abcdef"),
        _with_api_key("second-key-fedcba9876543210-fedcba9876543210"),
    )


def _fingerprint(run: harness.RunResult) -> str:
    template = values(_deployment(run, "llama-3-1-8b"))["spec"]["template"]
    return str(template["metadata"]["annotations"][API_KEY_FINGERPRINT_ANNOTATION])


def test_a_rotated_key_changes_the_pod_template(rotated: tuple[harness.RunResult, ...]) -> None:
    first, again, second = rotated
    # the same key renders the same template (no roll on every `pulumi up`); a new key rolls the pods
    assert _fingerprint(first) == _fingerprint(again)
    assert _fingerprint(first) != _fingerprint(second)
    assert _fingerprint(first) == builders.api_key_fingerprint(TLS, "llama-3-1-8b", "first-key-0123456789abcdef-0123456789abcdef")


def test_guessing_the_key_from_its_fingerprint_costs_100000_pbkdf2_rounds_a_guess(rotated: tuple[harness.RunResult, ...]) -> None:
    """An independent oracle, not the builder: the rendered fingerprint is PBKDF2-HMAC-SHA256 at 100,000
    rounds, salted per stack and model, 8 bytes; fewer rounds or no salt render another value."""
    first = rotated[0]
    key = "first-key-0123456789abcdef-0123456789abcdef"
    salt = f"llm-platform/{TLS}/llama-3-1-8b/api-key".encode()
    assert _fingerprint(first) == hashlib.pbkdf2_hmac("sha256", key.encode(), salt, 100_000, dklen=8).hex()
    assert _fingerprint(first) != hashlib.pbkdf2_hmac("sha256", key.encode(), salt, 99_999, dklen=8).hex()


def test_the_template_carries_a_fingerprint_never_the_key(rotated: tuple[harness.RunResult, ...]) -> None:
    first, _, second = rotated
    for run, key in ((first, "first-key-0123456789abcdef-0123456789abcdef"), (second, "second-key-fedcba9876543210-fedcba9876543210")):
        registration = _deployment(run, "llama-3-1-8b")
        assert key not in json.dumps(values(registration))
        # the fingerprint left the secret: the pod spec stays readable in the preview's diff
        assert not is_secret(registration.inputs["spec"])
    # the key itself stays in the Secret, as a secret
    secret = first.one("kubernetes:core/v1:Secret", "model-llama-3-1-8b-api-key")
    assert is_secret(secret.inputs["stringData"])


def test_the_fingerprint_is_salted_per_stack_and_model() -> None:
    key = "same-key-for-two-models-and-two-stacks"
    assert builders.api_key_fingerprint("dev", "a", key) != builders.api_key_fingerprint("dev", "b", key)
    assert builders.api_key_fingerprint("dev", "a", key) != builders.api_key_fingerprint("prod", "a", key)
    assert len(builders.api_key_fingerprint("dev", "a", key)) == 2 * builders.FINGERPRINT_BYTES


def test_a_short_key_is_refused_without_echoing_it() -> None:
    inp = fixture_input(TLS)
    config = dict(inp.config)
    config["llm-platform:apiKeys"] = json.dumps({"llama-3-1-8b": "hunter2-but-longer"})
    inp = dataclasses.replace(inp, config=config)
    harness.apply_config(inp)
    with pytest.raises(ConfigError) as raised:
        config_load.validate(harness.offline_account(inp))
    found = [str(p) for p in raised.value.errors]
    assert found == [
        "apiKeys.llama-3-1-8b: is shorter than 32 characters: it is the endpoint's only credential, and the pod template "
        "carries a one-way fingerprint of it that a short key could be guessed from offline. Fix: generate one with "
        "`openssl rand -hex 32` and run `pulumi config set --secret --path 'apiKeys.llama-3-1-8b' <key>`"
    ]
    assert not any("hunter2" in p for p in found)


def test_a_model_without_a_key_carries_no_fingerprint(dev_run: harness.RunResult) -> None:
    template = values(_deployment(dev_run, "llama-3-1-8b"))["spec"]["template"]
    assert API_KEY_FINGERPRINT_ANNOTATION not in template["metadata"].get("annotations", {})


# -- 3. admission at the top -------------------------------------------------------------------------


@pytest.mark.parametrize("stack", FIXTURES)
def test_every_replica_bounds_its_queue_above_the_scale_out_trigger(stack: str) -> None:
    run, cfg = fixture_run(stack), parse(stack_data(stack))
    for model in cfg.models:
        pool = cfg.pool(model.pool)
        assert pool is not None
        bound = int(_args(run, model.name)["--max-num-queued-reqs"])
        batch = int(_args(run, model.name).get("--max-num-seqs", capacity.max_num_seqs(model, pool)))
        # vLLM counts running and waiting requests against the flag: what is left for the queue is the
        # bound less a full batch, and KEDA adds replicas at queueDepthPerReplica waiting: well before any 503
        waiting = bound - batch
        assert waiting >= capacity.ADMISSION_TRIGGER_MULTIPLE * model.autoscaling.queue_depth_per_replica
        # and a replica holds at most one batch waiting beside its running one
        assert waiting == max(batch, math.ceil(capacity.ADMISSION_TRIGGER_MULTIPLE * model.autoscaling.queue_depth_per_replica))


def test_the_bound_follows_the_gpu_default_and_the_configured_value(prod_run: harness.RunResult) -> None:
    # vLLM's max-num-seqs default: 1024 on an H100, 256 on L4/A10G, on any A100 and on a MIG slice; a batch waits beside it
    assert _args(prod_run, "llama-3-3-70b")["--max-num-queued-reqs"] == "2048"
    assert _args(prod_run, "llama-3-1-8b")["--max-num-queued-reqs"] == "512"
    assert _args(prod_run, "qwen-2-5-7b")["--max-num-queued-reqs"] == "512"
    data = stack_data(PROD)
    data["models"][0]["maxWaitingRequests"] = 64
    cfg = parse(data)
    assert capacity.max_in_flight_requests(cfg.models[0], cfg.gpu_pools[0]) == 256 + 64
    data["models"][0]["maxNumSeqs"] = 32
    cfg = parse(data)
    assert capacity.max_in_flight_requests(cfg.models[0], cfg.gpu_pools[0]) == 32 + 64


def test_a_mig_slice_of_an_h100_gets_the_small_default() -> None:
    # vLLM reads the memory the device shows: a 1g.10gb slice of an 80 GB H100 is a small GPU to it
    data = stack_data(PROD)
    cfg = parse(data)
    h100 = next(p for p in cfg.gpu_pools if p.name == "gpu-h100")
    h100_type = h100.resolved_instance_types()[0]
    assert h100_type.gpu is not None
    assert capacity.default_max_num_seqs(h100_type.gpu, 80) == 1024
    assert capacity.default_max_num_seqs(h100_type.gpu, 10) == 256


def test_a_waiting_bound_at_or_below_the_trigger_is_refused() -> None:
    def mutate(d: dict[str, Any]) -> None:
        d["models"][0]["maxWaitingRequests"] = 5

    # every model has a gateway, those at zero too: the bound must exceed its queue threshold, twice the target
    # (which is above KEDA's queue target, so a bound above it never stops the queue trigger either)
    for stack in ("scale-to-zero-dev", DEV):
        assert new_problems_after(mutate, stack) == [
            "models[llama-3-1-8b].maxWaitingRequests: 5 is not above the gateway's queue threshold (10, twice "
            "autoscaling.queueDepthPerReplica): a replica would answer 503 to requests the gateway still sends it instead "
            "of the gateway holding them. Fix: raise maxWaitingRequests above 10, or remove it"
        ], stack


@pytest.mark.parametrize("flag", ["--max-num-queued-reqs=10", "--max_num_queued_reqs", "--kv-cache-memory-bytes"])
def test_the_derived_flags_are_not_extra_args(flag: str) -> None:
    problems = new_problems_after(lambda d: d["models"][0].update(extraArgs=[flag]))
    assert len(problems) == 1, problems
    assert "may not be in extraArgs" in problems[0]


# -- 4. online fp8 ---------------------------------------------------------------------------------


def test_online_fp8_uses_the_per_tensor_scheme_and_prequantized_checkpoints_name_their_own(prod_run: harness.RunResult) -> None:
    assert _args(prod_run, "llama-3-3-70b")["--quantization"] == "fp8_per_tensor"
    data = stack_data(DEV)
    for scheme in ("awq", "gptq"):
        model = parse({**data, "models": [{**data["models"][0], "quantization": scheme}]}).models[0]
        pool = parse(data).gpu_pools[0]
        # vLLM reads the scheme from the checkpoint and picks the Marlin kernel; a flag would force the slow one
        assert "--quantization" not in builders.vllm_args(model, pool, 600)
    # every scheme the config accepts has its flag (or its deliberate absence)
    assert set(builders.QUANTIZATION_FLAGS) == set(typing.get_args(ModelConfig.model_fields["quantization"].annotation))


# -- 5. time-sliced replicas do not profile each other ------------------------------------------------


@pytest.mark.parametrize("stack", FIXTURES)
def test_an_explicit_kv_cache_on_time_sliced_pools_and_by_default(stack: str) -> None:
    """Time-sliced replicas always get a fixed KV size (they must not profile each other); elsewhere it follows
    engine.explicitKvCache (on by default: it skips vLLM's profiling pass at start)."""
    run, cfg = fixture_run(stack), parse(stack_data(stack))
    for model in cfg.models:
        pool = cfg.pool(model.pool)
        assert pool is not None
        args = _args(run, model.name)
        if not pool.sharing.time_slicing and not model.engine.explicit_kv_cache:
            assert "--kv-cache-memory-bytes" not in args
            continue
        kv = int(args["--kv-cache-memory-bytes"])  # per GPU (vLLM's CacheConfig), so per tensor-parallel rank
        tp = model.tensor_parallel_size * model.pipeline_parallel_size  # every rank, of every pipeline stage
        device = capacity.smallest_device(model, pool)
        assert device is not None
        # the fit check's budget (this replica's share of the smallest GPU on every rank less weights and overhead)
        # less a margin per rank for an overhead above the estimate, and at least one sequence of maxModelLen
        budget = capacity.kv_cache_gib(model, device) - capacity.EXPLICIT_KV_MARGIN_GIB * tp
        assert kv == int(max(capacity.kv_gib_per_sequence(model), budget) / tp * capacity.GIB)
        weights = capacity.weights_gib(model) / tp * capacity.GIB
        overhead = capacity.OVERHEAD_GIB_PER_GPU * capacity.GIB
        share = device.gib * model.gpu_memory_utilization * capacity.GIB
        assert kv + weights + overhead <= share + 1
        if kv * tp > int(capacity.kv_gib_per_sequence(model) * capacity.GIB):  # above the floor: the margin is left free
            assert kv + weights + overhead + capacity.EXPLICIT_KV_MARGIN_GIB * capacity.GIB <= share + 1
        assert kv * tp >= capacity.kv_gib_per_sequence(model) * capacity.GIB - tp


def test_prod_shares_its_l40s_with_a_fixed_kv_cache(prod_run: harness.RunResult) -> None:
    # two llama-3-2-3b replicas on one time-sliced L40S (gpuMemoryUtilization 0.45 each)
    assert "--kv-cache-memory-bytes" in _args(prod_run, "llama-3-2-3b")


def test_explicit_kv_cache_off_leaves_the_size_to_profiling() -> None:
    cfg = parse(stack_data(PROD))
    model = next(m for m in cfg.models if m.name == "llama-3-1-8b")
    pool = cfg.pool(model.pool)
    assert pool is not None
    assert not pool.sharing.time_slicing
    sources = builders.Sources(image="vllm", bucket="weights")
    assert "--kv-cache-memory-bytes" in builders.vllm_args(model, pool, 900, sources)
    profiled = model.model_copy(update={"engine": model.engine.model_copy(update={"explicit_kv_cache": False})})
    assert "--kv-cache-memory-bytes" not in builders.vllm_args(profiled, pool, 900, sources)


# -- 8. the count at creation only ------------------------------------------------------------------


@pytest.mark.parametrize("stack", FIXTURES)
def test_a_deployment_starts_at_its_floor_and_then_belongs_to_the_hpa(stack: str) -> None:
    run, cfg = fixture_run(stack), parse(stack_data(stack))
    for model in cfg.models:
        registration = _deployment(run, model.name)
        assert values(registration)["spec"]["replicas"] == model.replicas.min
        # a later `pulumi up` keeps the live count: the engine holds spec.replicas at its old value and
        # pulumi-kubernetes leaves a field another manager (the HPA) owns to that manager
        assert registration.ignore_changes == ["spec.replicas"]


def test_a_model_at_zero_boots_no_replica_on_its_first_deploy() -> None:
    run = fixture_run("scale-to-zero-dev")
    cfg = parse(stack_data("scale-to-zero-dev"))
    at_zero = [m.name for m in cfg.models if m.replicas.min == 0]
    assert at_zero
    for name in at_zero:
        manifest = render.manifest(_deployment(run, name))
        assert manifest["spec"]["replicas"] == 0


def test_nothing_else_carries_ignore_changes_on_a_model(prod_run: harness.RunResult) -> None:
    # the option hides drift: only the HPA-owned count may carry it
    for r in prod_run.registrations:
        if r.parent and r.parent.startswith("llmplatform:index:VllmModel::") and r.type not in (DEPLOYMENT, LEADER_WORKER_SET):
            assert r.ignore_changes == [], r.name


def test_the_render_shows_the_option(prod_run: harness.RunResult) -> None:
    shown = _deployment(prod_run, "llama-3-1-8b").redacted()
    assert shown["ignoreChanges"] == ["spec.replicas"]
    assert "ignoreChanges" not in copy.deepcopy(prod_run.one("kubernetes:core/v1:Service", "model-llama-3-1-8b-service").redacted())


@pytest.mark.parametrize("stack", FIXTURES)
def test_pulumi_waits_for_a_whole_rollout(stack: str) -> None:
    """A key rotation or an image bump rolls every replica one at a time: the update timeout covers
    `replicas.max` steps of a drain and a load after the first replica's node, not only the create's one."""
    run, cfg = fixture_run(stack), parse(stack_data(stack))
    for model in cfg.models:
        timeouts = _deployment(run, model.name).custom_timeouts
        create, update = (int(timeouts[op].removesuffix("m")) for op in ("create", "update"))
        step = engine.startup_budget_seconds(model, cfg.pool(model.pool)) + model.drain.termination_grace_period_seconds
        assert update * 60 >= create * 60 - 60 + (model.replicas.max - 1) * step
        assert update >= create
