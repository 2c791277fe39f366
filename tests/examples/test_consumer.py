"""The consumer example reads the outputs contract through a StackReference, under mocks."""

from __future__ import annotations

import json

import pytest

from offline import harness
from tests.conftest import ROOT, values

CONSUMER = ROOT / "examples" / "consumer"
REF = "acme/llm-platform/prod"


def _run(prod_run: harness.RunResult, model: str) -> harness.RunResult:
    outputs = {**prod_run.outputs, "__secret__": sorted(prod_run.secret_outputs)}
    inp = harness.StackInput(
        stack="team",
        config={"llm-platform-consumer:platformStack": REF, "llm-platform-consumer:model": model},
        secret_keys=[],
    )
    return harness.run_program(CONSUMER / "__main__.py", "llm-platform-consumer", inp, stack_outputs={REF: outputs})


def test_consumer_wires_an_app_to_a_model(prod_run: harness.RunResult) -> None:
    run = _run(prod_run, "qwen-2-5-7b")
    assert run.outputs["openaiBaseUrl"] == "http://qwen-2-5-7b.qwen-2-5-7b.svc.cluster.local:8000/v1"
    assert run.outputs["externalBaseUrl"] == "https://qwen-2-5-7b.llm.internal.example.com/v1"
    assert run.outputs["clusterName"] == "llm-prod"
    config_map = values(run.one("kubernetes:core/v1:ConfigMap"))
    assert config_map["data"] == {
        "OPENAI_BASE_URL": "http://qwen-2-5-7b.qwen-2-5-7b.svc.cluster.local:8000/v1",
        "OPENAI_MODEL": "qwen-2-5-7b",
    }
    provider = run.one("pulumi:providers:kubernetes")
    assert json.loads(values(provider)["kubeconfig"])["current-context"] == "llm-prod"
    assert config_map
    assert run.one("kubernetes:core/v1:ConfigMap").provider == "pulumi:providers:kubernetes::platform"


def test_consumer_reads_only_keys_of_the_contract() -> None:
    import re

    from config.facts.outputs import MODEL_FIELDS, keys

    text = (CONSUMER / "__main__.py").read_text()
    outputs = set(re.findall(r'(?:require_output|get_output)\("([^"]+)"\)', text))
    fields = set(re.findall(r'e\["([^"]+)"\]', text)) | set(re.findall(r'e\.get\("([^"]+)"\)', text))
    assert outputs == {"models", "kubeconfig", "clusterName"}
    assert outputs <= set(keys())
    assert fields == {"url", "servedModelName", "baseUrl"}
    assert fields <= set(MODEL_FIELDS)


def test_unknown_model_fails_the_consumer(prod_run: harness.RunResult) -> None:
    with pytest.raises(Exception, match="no-such-model"):
        _run(prod_run, "no-such-model")
