"""config/load.py: secrets stay out of the model, must be Pulumi secrets, and are checked."""

from __future__ import annotations

from typing import Any

from config import load as config_load
from config.errors import ConfigError
from offline import harness
from tests.conftest import DEV, PROD, fixture_input

P = "llm-platform"
SECRET = {"secure": "v1:AAAA"}


def problems(stack: str = DEV, overrides: dict[str, Any] | None = None, drop: tuple[str, ...] = ()) -> list[str]:
    inp = fixture_input(stack, overrides=overrides)
    for key in drop:
        inp.config.pop(key, None)
        if key in inp.secret_keys:
            inp.secret_keys.remove(key)
    harness.apply_config(inp)
    try:
        config_load.validate(harness.offline_account(inp))
    except ConfigError as err:
        return [str(p) for p in err.errors]
    return []


def test_stack_files_validate_with_their_secrets_set() -> None:
    assert problems(DEV) == []


def test_plaintext_token_is_refused_without_echoing_it() -> None:
    found = problems(overrides={f"{P}:hfToken": "hf_PlainTextToken123"})
    assert found == [
        "hfToken: is stored in plain text in the stack file; anyone with read access to the repo can read it. "
        "Fix: run `pulumi config set --secret hfToken <value>` (and remove the plain value)"
    ]
    assert not any("hf_PlainTextToken123" in p for p in found)


def test_gated_model_needs_the_token() -> None:
    assert problems(drop=(f"{P}:hfToken",)) == [
        "hfToken: is not set, but llama-3-1-8b is gated on Hugging Face; the download would fail with 401 on every "
        "pod start. Fix: run `pulumi config set --secret hfToken <value>`"
    ]


def test_grafana_password_is_required() -> None:
    assert problems(drop=(f"{P}:grafanaAdminPassword",)) == [
        "grafanaAdminPassword: is not set; Grafana needs an admin password that is not the chart's well-known "
        "default. Fix: run `pulumi config set --secret grafanaAdminPassword <value>`"
    ]


def test_api_keys_must_name_models() -> None:
    found = problems(overrides={f"{P}:apiKeys": {"llama-3-1-8b": SECRET, "gpt-5": SECRET}})
    assert found == ["apiKeys.gpt-5: names no model (have: llama-3-1-8b). Fix: remove it or correct the name"]


def test_internet_facing_needs_an_api_key_per_exposed_model() -> None:
    ingress = {
        "scheme": "internet-facing",
        "allowedCidrs": ["198.51.100.0/24"],
        "certificateArn": "arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d",
    }
    # the render fills placeholders; drop them to see what a real `pulumi up` would say
    assert problems(overrides={f"{P}:ingress": ingress}, drop=(f"{P}:apiKeys",)) == [
        "apiKeys.llama-3-1-8b: is required: the ALB is internet-facing and vLLM would otherwise serve anyone in the "
        "allow-list without a key. Fix: run `pulumi config set --secret --path 'apiKeys.llama-3-1-8b' <key>`"
    ]
    assert problems(overrides={f"{P}:ingress": ingress}) == []


def test_region_comes_from_aws_region() -> None:
    assert problems(drop=("aws:region",)) == [
        "aws:region: is not set; every AWS resource needs a region. Fix: run `pulumi config set aws:region us-east-1`"
    ]
    assert problems(overrides={f"{P}:region": "eu-west-1"}) == [
        "region: the region is read from aws:region, not llm-platform:region. Fix: move it to aws:region"
    ]


def test_a_section_that_is_not_a_mapping() -> None:
    assert problems(overrides={f"{P}:network": "10.0.0.0/16"}) == [
        "network: expected a mapping of keys to values, got '10.0.0.0/16'. Fix: write a YAML mapping"
    ]


def test_unknown_top_level_key_gets_a_suggestion() -> None:
    assert problems(overrides={f"{P}:gpuPool": []}) == [
        "gpuPool: unknown key (did you mean 'gpuPools'?); it would otherwise be ignored silently. "
        "Fix: correct or remove it (see the config reference, docs/config-reference.md)"
    ]


def test_other_namespaces_are_ignored() -> None:
    assert problems(overrides={"kubernetes:context": "x", "aws:profile": "y"}) == []


def test_secrets_never_enter_the_model() -> None:
    inp = fixture_input(DEV, overrides={f"{P}:apiKeys": {"llama-3-1-8b": SECRET}})
    harness.apply_config(inp)
    cfg, secrets, api_keys, _ = config_load.validate(harness.offline_account(inp))
    dumped = cfg.model_dump_json()
    assert harness.PLACEHOLDER not in dumped
    assert set(secrets) == {"grafanaAdminPassword", "hfToken", "apiKeys"}
    assert api_keys == {"llama-3-1-8b": harness.PLACEHOLDER}


def test_render_fills_exactly_the_required_secrets() -> None:
    assert fixture_input(DEV).placeholders == ["grafanaAdminPassword", "hfToken"]
    # prod: every exposed model needs an API key
    assert fixture_input(PROD).placeholders == ["grafanaAdminPassword", "hfToken", "dockerHubAccessToken", "apiKeys"]


def test_prod_requires_an_api_key_per_exposed_model() -> None:
    found = problems(PROD, drop=(f"{P}:apiKeys",))
    assert found[0] == (
        "apiKeys.llama-3-1-8b: is required: prod endpoints are reachable from the whole allow-list and the VPC, and vLLM "
        "would serve them without a key. Fix: run `pulumi config set --secret --path 'apiKeys.llama-3-1-8b' <key>`"
    )
    assert len(found) == 4
