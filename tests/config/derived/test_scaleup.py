"""The scale-up budget's arithmetic, the published figures behind it, and where it is used."""

from __future__ import annotations

import math

import pytest

from builders.serving import scaling
from config.checks import secrets
from config.derived import capacity, engine, scaleup
from config.facts import speed
from config.sections.models import ModelConfig
from tests.conftest import DEV, PROD, parse, stack_data


def _model(stack: str, name: str | None = None) -> ModelConfig:
    cfg = parse(stack_data(stack))
    return next(m for m in cfg.models if name is None or m.name == name)


POOL = parse(stack_data(DEV)).gpu_pools[0]
"""The dev fixture's pool (what a ScaledObject's wake trigger sizes its target from)."""


def test_every_figure_names_its_source_and_setup() -> None:
    assert speed.CATALOG
    for key, figure in speed.CATALOG.items():
        assert figure.value > 0, key
        assert figure.source.strip(), key
        assert figure.measured_on.strip(), key
        assert figure.unit in ("s", "GB", "GB/s", "share"), key


GRAPHS_UP_TO_64 = 11 * 17 / 51
"""engine.cudaGraphCaptureMax 64: sizes 1, 2, 4, 8, 16, ..., 64, at vllm#20264's 17 s for 51 sizes."""


def _prod_8b() -> scaleup.ScaleUpBudget:
    """The budget of prod's 8B model (weights from S3) on its pool, at a 5 s scrape interval."""
    cfg = parse(stack_data(PROD))
    model = _model(PROD, "llama-3-1-8b")
    return scaleup.budget(model, cfg.pool(model.pool), scrape_interval="5s")


CHECKPOINT_8B_GB = 8.03e9 * 2 / 1e9
"""The 8B checkpoint in bf16."""


def test_the_8b_model_from_s3_term_by_term() -> None:
    budget = _prod_8b()
    assert budget.engine == {
        "cacheCopy": 1,  # the warm-up's archive fetched and unpacked before vLLM starts (est.)
        "boot": 10.0 + 16.1 + 3.8 + 0.2,  # Python, config/spawn, EngineCore, warm-up (Qwen3-8B on B200)
        "tensorParallel": 0.0,  # one GPU
        "kvProfiling": 0.0,  # skipped: --kv-cache-memory-bytes (engine.explicitKvCache)
        "compile": 6,  # torch.compile from the compile cache the warm-up Job leaves (the slow end of EKS's 4-6 s)
        "cudaGraphs": pytest.approx(GRAPHS_UP_TO_64),
    }
    assert budget.terms == {
        "signal": 5 + 15 + 0,  # scrape, HPA sync, scale-up stabilization window
        "nodeLaunch": 1 + 60,  # Karpenter's batch wait, a g-family GPU node (the low end of 60-90 s)
        # the pool's cheapest host, g6.xlarge: ~10 GB at SOCI's rate measured on 16 vCPUs, times its 4/16 (CPU-bound unpack)
        "imagePull": math.ceil(10 / (8.8 / 48.4 * 4 / 16)),
        # its "up to 10 Gbps" at the streamer's 0.75 of a host's line rate
        "weights": math.ceil(CHECKPOINT_8B_GB / (10 / 8 * 0.75)),
        "engineStart": math.ceil(1 + 30.1 + 6 + GRAPHS_UP_TO_64),
        "probe": 1 + 1,  # one startup-probe period, then one readiness-probe period
        "loadBalancer": 1,  # the gateway finds the new replica among its pool's pods (speed.GATEWAY_ENDPOINT_DISCOVERY)
    }
    assert budget.hit == budget.miss - budget.terms["nodeLaunch"] - budget.terms["imagePull"]
    slow = budget.pessimistic_budget
    assert budget.as_output() == {
        "hit": budget.hit,
        "miss": budget.miss,
        "terms": budget.terms,
        "engine": {k: round(v, 1) for k, v in budget.engine.items()},
        "pessimistic": {
            "hit": slow.hit,
            "miss": slow.miss,
            "terms": slow.terms,
            "engine": {k: round(v, 1) for k, v in (slow.engine or {}).items()},
        },
    }


def test_the_8b_model_pessimistic_term_by_term() -> None:
    """The slow end of each term's sources (../shared/reference/wave3-facts.md Part B)."""
    budget = _prod_8b()
    assert budget.pessimistic == {
        "signal": 5 + 15 + 0,  # a full scrape interval is already the slow end
        "nodeLaunch": 10 + 180,  # Karpenter's longest batching wait, the high end of 2-3 minutes
        "imagePull": 240,  # containerd's sequential pull: the high end of 2-4 minutes
        "weights": math.ceil(CHECKPOINT_8B_GB / (2.5 / 8 * 0.75)),  # an xlarge host's 2.5 Gbps baseline
        # the g5 figure's 48 s (its boot, with profiling) and a cold compile, counted apart: the slow reading
        "engineStart": math.ceil(48 + 34 + GRAPHS_UP_TO_64),
        "probe": 1 + 1,
        "loadBalancer": 1,
    }
    slow = budget.pessimistic_budget
    assert (slow.hit, slow.miss) == (slow.miss - 190 - 240, sum(budget.pessimistic.values()))


@pytest.mark.parametrize("stack", [DEV, PROD])
def test_no_pessimistic_term_is_shorter_than_the_expected_one(stack: str) -> None:
    for model in parse(stack_data(stack)).models:
        budget = scaleup.budget(model, scrape_interval="10s")
        assert budget.pessimistic is not None
        assert all(budget.pessimistic[t] >= budget.terms[t] for t in scaleup.TERMS), model.name
        assert budget.pessimistic_budget.miss > budget.miss


def test_each_config_knob_moves_its_own_term() -> None:
    model = _model(PROD, "llama-3-1-8b")
    base = scaleup.budget(model, scrape_interval="10s")
    # the gateway's discovery of the new replica, exposed or not, at zero too (its gateway holds the request)
    assert base.terms["loadBalancer"] == speed.GATEWAY_ENDPOINT_DISCOVERY.value
    at_zero = model.model_copy(update={"replicas": model.replicas.model_copy(update={"min": 0})})
    assert scaleup.budget(at_zero, scrape_interval="10s").terms["loadBalancer"] == speed.GATEWAY_ENDPOINT_DISCOVERY.value
    assert scaleup.budget(model, scrape_interval="30s").terms["signal"] == base.terms["signal"] + 20
    eager = model.model_copy(update={"extra_args": ["--enforce-eager"]})
    assert scaleup.budget(eager, scrape_interval="10s").terms["engineStart"] == math.ceil(30.1)  # no compile, no graphs
    profiled = model.model_copy(update={"engine": model.engine.model_copy(update={"explicit_kv_cache": False})})
    assert scaleup.budget(profiled, scrape_interval="10s").engine == {**(base.engine or {}), "kvProfiling": 1.8}
    every_graph = model.model_copy(update={"engine": model.engine.model_copy(update={"cuda_graph_capture_max": None})})
    assert scaleup.budget(every_graph, scrape_interval="10s").engine == {**(base.engine or {}), "cudaGraphs": pytest.approx(17)}
    downloaded = model.model_copy(update={"weights": model.weights.model_copy(update={"source": "huggingface"})})
    assert scaleup.budget(downloaded, scrape_interval="10s").terms["weights"] == math.ceil(16.06 / (16.1 / 250))
    slow = model.model_copy(
        update={
            "autoscaling": model.autoscaling.model_copy(
                update={"scale_up": model.autoscaling.scale_up.model_copy(update={"stabilization_window_seconds": 60})}
            )
        }
    )
    assert scaleup.budget(slow, scrape_interval="10s").terms["signal"] == base.terms["signal"] + 60


def test_the_startup_probe_allows_the_pessimistic_load_with_margin() -> None:
    for stack in (DEV, PROD):
        cfg = parse(stack_data(stack))
        for model in cfg.models:
            pool = cfg.pool(model.pool)
            host = capacity.weights_host(model, pool, pessimistic=True)
            slowest = math.ceil(
                capacity.weights_seconds(model, host, pessimistic=True) + engine.start(model, pool, pessimistic=True).seconds
            )
            assert engine.load_seconds(model, pool, pessimistic=True) == slowest
            assert engine.startup_budget_seconds(model, pool) >= 1.5 * slowest - 1


def test_the_default_scale_down_window_covers_the_budget() -> None:
    model = _model(DEV)
    so = scaling.scaled_object(model, "http://prometheus:9090", POOL, scale_up_miss_seconds=457, scales_to_zero=False)
    assert so["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] == 457
    so = scaling.scaled_object(model, "http://prometheus:9090", POOL, scale_up_miss_seconds=100, scales_to_zero=False)
    assert so["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] == 300


def test_an_explicit_scale_down_window_is_kept() -> None:
    data = stack_data(DEV)
    data["models"][0]["autoscaling"] = {"scaleDown": {"stabilizationWindowSeconds": 600, "pods": 1, "periodSeconds": 60}}
    model = parse(data).models[0]
    so = scaling.scaled_object(model, "http://prometheus:9090", POOL, scale_up_miss_seconds=900, scales_to_zero=False)
    assert so["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] == 600


@pytest.mark.parametrize("given", [{}, {"hfToken": "x"}])
def test_a_cache_without_its_docker_hub_token_is_rejected(given: dict[str, str]) -> None:
    cfg = parse(stack_data(PROD))
    found, _ = secrets.problems(cfg, {"grafanaAdminPassword": "x", "apiKeys": "{}", **given})
    problem = next(p for p in found if p.path == "dockerHubAccessToken")
    assert "imageCache is on" in problem.message
    assert "pulumi config set --secret dockerHubAccessToken" in problem.message
    assert "imageCache.enabled: false" in problem.message


def test_no_docker_hub_token_needed_with_the_cache_off() -> None:
    data = stack_data(PROD)
    data["imageCache"] = {"enabled": False}
    assert secrets.needed(parse(data)).docker_hub == []
