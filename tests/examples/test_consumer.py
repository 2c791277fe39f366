"""The consumer example reads the outputs contract through a StackReference, under mocks."""

from __future__ import annotations

import json

import pytest

from config.derived.exposure import models_needing_api_keys
from offline import harness
from offline.mocks import is_secret
from tests.conftest import PROD, ROOT, parse, stack_data, values

CONSUMER = ROOT / "examples" / "consumer"
REF = "acme/llm-platform/prod"


KEY = "a-key-the-platform-team-handed-over-0123456789"
C = "llm-platform-consumer"


def _run(prod_run: harness.RunResult, model: str, key: str | None = KEY) -> harness.RunResult:
    outputs = {**prod_run.outputs, "__secret__": sorted(prod_run.secret_outputs)}
    config = {f"{C}:platformStack": REF, f"{C}:model": model, **({f"{C}:apiKey": key} if key else {})}
    inp = harness.StackInput(stack="team", config=config, secret_keys=[f"{C}:apiKey"] if key else [])
    return harness.run_program(CONSUMER / "__main__.py", "llm-platform-consumer", inp, stack_outputs={REF: outputs})


def test_consumer_wires_an_app_to_a_model(prod_run: harness.RunResult) -> None:
    run = _run(prod_run, "qwen-2-5-7b")
    assert run.outputs["openaiBaseUrl"] == "http://qwen-2-5-7b-proxy.qwen-2-5-7b.svc.cluster.local:8081/v1"
    assert run.outputs["externalBaseUrl"] == "https://qwen-2-5-7b.llm.internal.example.com/v1"
    assert run.outputs["clusterName"] == "llm-prod"
    config_map = values(run.one("kubernetes:core/v1:ConfigMap"))
    assert config_map["data"] == {
        "OPENAI_BASE_URL": "http://qwen-2-5-7b-proxy.qwen-2-5-7b.svc.cluster.local:8081/v1",
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


def test_the_app_gets_the_key_as_a_secret_never_in_the_config_map(prod_run: harness.RunResult) -> None:
    run = _run(prod_run, "qwen-2-5-7b")
    secret = run.one("kubernetes:core/v1:Secret")
    assert values(secret)["metadata"] == {"name": "llm-api-key", "namespace": "team-chat"}
    assert values(secret)["stringData"] == {"OPENAI_API_KEY": KEY}
    assert is_secret(secret.inputs["stringData"])
    assert KEY not in json.dumps(values(run.one("kubernetes:core/v1:ConfigMap")))
    assert KEY not in json.dumps(run.outputs)


def test_the_model_it_calls_requires_a_key_and_admits_its_namespace(prod_run: harness.RunResult) -> None:
    """Against prod, as the example's README says: the model has a key (every exposed prod model does),
    and its gateway's NetworkPolicy admits the example's namespace on the gateway's port (the fixture lists
    it); vLLM's own port admits no client namespace."""
    cfg = parse(stack_data(PROD))
    model = next(m for m in cfg.models if m.name == "qwen-2-5-7b")
    assert model in models_needing_api_keys(cfg)
    assert "team-chat" in model.client_namespaces
    policies = [values(r) for r in prod_run.of_type("kubernetes:networking.k8s.io/v1:NetworkPolicy")]
    team = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "team-chat"}}}

    def peers(name: str, port: int) -> list[dict[str, object]]:
        policy = next(p for p in policies if (p["metadata"]["name"], p["metadata"]["namespace"]) == (name, "qwen-2-5-7b"))
        return [peer for rule in policy["spec"]["ingress"] if {"protocol": "TCP", "port": port} in rule["ports"] for peer in rule["from"]]

    assert team in peers("qwen-2-5-7b-proxy", 8081)
    assert team not in peers("qwen-2-5-7b", 8000)


def test_the_example_documents_what_it_needs() -> None:
    readme = (CONSUMER / "README.md").read_text()
    for needed in ("clientNamespaces", "apiKey", "pulumi config set --secret apiKey", "platformStack", "OPENAI_API_KEY"):
        assert needed in readme, needed
