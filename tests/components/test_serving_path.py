"""The serving path's second deploy review (issue 25): key rotation, admission, quantization, shared
GPUs, the count at creation. Each property is read from the real program's render."""

from __future__ import annotations

import copy
import dataclasses
import json
import typing
from typing import Any

import pytest

from builders.serving import workload as builders
from config.derived import capacity
from config.facts.conventions import API_KEY_FINGERPRINT_ANNOTATION
from config.sections.models import ModelConfig
from offline import harness, render
from offline.mocks import Registration, is_secret
from tests.conftest import DEV, FIXTURES, PROD, fixture_input, fixture_run, new_problems_after, parse, stack_data, values

DEPLOYMENT = "kubernetes:apps/v1:Deployment"
TLS = "internet-facing-tls"
"""The fixture with an API key (llama-3-1-8b)."""


def _deployment(run: harness.RunResult, model: str) -> Registration:
    return run.one(DEPLOYMENT, f"model-{model}-deployment")


def _args(run: harness.RunResult, model: str) -> dict[str, str]:
    args = values(_deployment(run, model))["spec"]["template"]["spec"]["containers"][0]["args"]
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
        _with_api_key("first-key-0123456789abcdef"),
        _with_api_key("first-key-0123456789abcdef"),
        _with_api_key("second-key-fedcba9876543210"),
    )


def _fingerprint(run: harness.RunResult) -> str:
    template = values(_deployment(run, "llama-3-1-8b"))["spec"]["template"]
    return str(template["metadata"]["annotations"][API_KEY_FINGERPRINT_ANNOTATION])


def test_a_rotated_key_changes_the_pod_template(rotated: tuple[harness.RunResult, ...]) -> None:
    first, again, second = rotated
    # the same key renders the same template (no roll on every `pulumi up`); a new key rolls the pods
    assert _fingerprint(first) == _fingerprint(again)
    assert _fingerprint(first) != _fingerprint(second)
    assert _fingerprint(first) == builders.api_key_fingerprint("llama-3-1-8b", "first-key-0123456789abcdef")


def test_the_template_carries_a_fingerprint_never_the_key(rotated: tuple[harness.RunResult, ...]) -> None:
    first, _, second = rotated
    for run, key in ((first, "first-key-0123456789abcdef"), (second, "second-key-fedcba9876543210")):
        registration = _deployment(run, "llama-3-1-8b")
        assert key not in json.dumps(values(registration))
        # the fingerprint left the secret: the pod spec stays readable in the preview's diff
        assert not is_secret(registration.inputs["spec"])
    # the key itself stays in the Secret, as a secret
    secret = first.one("kubernetes:core/v1:Secret", "model-llama-3-1-8b-api-key")
    assert is_secret(secret.inputs["stringData"])


def test_the_fingerprint_is_salted_per_model() -> None:
    key = "same-key-for-two-models"
    assert builders.api_key_fingerprint("a", key) != builders.api_key_fingerprint("b", key)
    assert len(builders.api_key_fingerprint("a", key)) == 2 * builders.FINGERPRINT_BYTES


def test_a_model_without_a_key_carries_no_fingerprint(dev_run: harness.RunResult) -> None:
    template = values(_deployment(dev_run, "llama-3-1-8b"))["spec"]["template"]
    assert API_KEY_FINGERPRINT_ANNOTATION not in template["metadata"].get("annotations", {})


# -- 3. admission at the top -------------------------------------------------------------------------


@pytest.mark.parametrize("stack", FIXTURES)
def test_every_replica_bounds_its_queue_above_the_scale_out_trigger(stack: str) -> None:
    run, cfg = fixture_run(stack), parse(stack_data(stack))
    pools = {p.name: p for p in cfg.gpu_pools}
    for model in cfg.models:
        bound = int(_args(run, model.name)["--max-num-queued-reqs"])
        assert bound == capacity.max_queued_requests(model, pools[model.pool])
        # KEDA adds replicas at queueDepthPerReplica waiting per replica: well before any 503
        assert bound >= capacity.ADMISSION_TRIGGER_MULTIPLE * model.autoscaling.queue_depth_per_replica
        # and a replica holds at most one batch waiting (vLLM's max-num-seqs on the smallest GPU)
        assert bound == max(capacity.max_num_seqs(model, pools[model.pool]), 4 * model.autoscaling.queue_depth_per_replica)


def test_the_bound_follows_the_gpu_default_and_the_configured_value(prod_run: harness.RunResult) -> None:
    # vLLM's max-num-seqs default: 1024 on H100, 256 on L4/A10G and on any A100
    assert _args(prod_run, "llama-3-3-70b")["--max-num-queued-reqs"] == "1024"
    assert _args(prod_run, "llama-3-1-8b")["--max-num-queued-reqs"] == "256"
    assert _args(prod_run, "qwen-2-5-7b")["--max-num-queued-reqs"] == "256"
    data = stack_data(PROD)
    data["models"][0]["maxQueuedRequests"] = 64
    cfg = parse(data)
    assert capacity.max_queued_requests(cfg.models[0], cfg.gpu_pools[0]) == 64


def test_a_bound_at_or_below_the_trigger_is_refused() -> None:
    def mutate(d: dict[str, Any]) -> None:
        d["models"][0]["maxQueuedRequests"] = 5

    assert new_problems_after(mutate) == [
        "models[llama-3-1-8b].maxQueuedRequests: 5 is not above autoscaling.queueDepthPerReplica (5): a replica would answer 503 "
        "before its queue ever reached the depth at which KEDA adds a replica, so the queue trigger could never scale the "
        "model out. Fix: raise maxQueuedRequests to at least 20, or remove it (the platform derives one batch's worth)"
    ]


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
def test_an_explicit_kv_cache_exactly_on_time_sliced_pools(stack: str) -> None:
    run, cfg = fixture_run(stack), parse(stack_data(stack))
    pools = {p.name: p for p in cfg.gpu_pools}
    for model in cfg.models:
        pool = pools[model.pool]
        args = _args(run, model.name)
        if not pool.sharing.time_slicing:
            assert "--kv-cache-memory-bytes" not in args
            continue
        kv = int(args["--kv-cache-memory-bytes"])
        device = capacity.smallest_device(model, pool)
        assert device is not None
        # the fit check's budget: this replica's share of the GPU less weights and overhead, on the smallest GPU,
        # and at least one sequence of maxModelLen (else the fit check would have refused the config)
        assert kv == int(capacity.kv_cache_gib(model, device) * capacity.GIB)
        weights = capacity.weights_gib(model) * capacity.GIB
        overhead = capacity.OVERHEAD_GIB_PER_GPU * capacity.GIB
        assert kv + weights + overhead <= device.gib * model.gpu_memory_utilization * capacity.GIB + 1
        assert kv >= capacity.kv_gib_per_sequence(model) * capacity.GIB


def test_prod_shares_its_l40s_with_a_fixed_kv_cache(prod_run: harness.RunResult) -> None:
    # two llama-3-2-3b replicas on one time-sliced L40S (gpuMemoryUtilization 0.45 each)
    assert "--kv-cache-memory-bytes" in _args(prod_run, "llama-3-2-3b")
    assert "--kv-cache-memory-bytes" not in _args(prod_run, "llama-3-1-8b")


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
        if r.parent and r.parent.startswith("llmplatform:index:VllmModel::") and r.type != DEPLOYMENT:
            assert r.ignore_changes == [], r.name


def test_the_render_shows_the_option(prod_run: harness.RunResult) -> None:
    shown = _deployment(prod_run, "llama-3-1-8b").redacted()
    assert shown["ignoreChanges"] == ["spec.replicas"]
    assert "ignoreChanges" not in copy.deepcopy(prod_run.one("kubernetes:core/v1:Service", "model-llama-3-1-8b-service").redacted())
