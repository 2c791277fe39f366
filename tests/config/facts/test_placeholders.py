"""Placeholders: the offline render warns about them, a real preview or up stops on them."""

from __future__ import annotations

import subprocess
import sys

from config import load as config_load
from config.errors import ConfigError
from config.facts import placeholders
from offline import harness
from tests.conftest import DEV, PROD, ROOT, fixture_input, parse, stack_data

ACCOUNT = "is in AWS's documentation account 123456789012, a placeholder; a real deploy would point at something that is not yours"


def test_every_kind_of_placeholder_is_found_with_what_belongs_there() -> None:
    found = {p.path: p.message for p in placeholders.find(parse(stack_data(PROD)))}
    assert sorted(found) == [
        "cluster.access[0].principalArn",
        "cluster.adminRoleArns[0]",
        "cluster.deployRoleArn",
        "cluster.endpoint.privateAccessCidrs[0]",
        "ingress.certificateArn",
        "ingress.domain",
        "models[llama-3-1-8b].image.digest",
        "models[llama-3-2-3b].image.digest",
        "models[llama-3-3-70b].image.digest",
        "models[qwen-2-5-7b].image.digest",
    ]
    assert found["models[llama-3-1-8b].image.digest"] == (
        "'sha256:00000000...' is a placeholder; no image has it, so every pull would fail. Fix: read the digest with "
        "`docker buildx imagetools inspect vllm/vllm-openai:v0.33.0` (the `Digest:` line) and set it: "
        "`pulumi config set --path 'models[0].image.digest' sha256:<64 hex>`"
    )
    assert found["cluster.deployRoleArn"] == (
        f"'arn:aws:iam::123456789012:role/llm-platform-deploy' {ACCOUNT}. "
        "Fix: put the ARN of the role the deploy workflow assumes (vars.AWS_ROLE_ARN) in your account"
    )
    assert found["ingress.domain"] == (
        "'llm.internal.example.com' is a reserved example domain (RFC 2606), a placeholder; no client could resolve "
        "the model endpoints under it. Fix: use a domain you own, with a wildcard record for the ALB"
    )
    dev = {p.path: p.message for p in placeholders.find(parse(stack_data(DEV)))}
    assert dev["cluster.endpoint.publicCidrs[0]"] == (
        "'203.0.113.0/24' is a documentation range (RFC 5737), a placeholder; nobody could connect from it. "
        "Fix: list the egress CIDRs of your offices, VPN or CI runners"
    )


def test_real_values_are_not_placeholders() -> None:
    data = stack_data(DEV)
    data["cluster"]["adminRoleArns"] = ["arn:aws:iam::210987654321:role/platform-admin"]
    data["cluster"]["endpoint"]["publicCidrs"] = ["198.18.0.0/24"]
    data["models"][0]["image"] = {"digest": "sha256:" + "0" * 63 + "1"}
    assert placeholders.find(parse(data)) == []


def _validate(stack: str, offline: bool) -> list[str]:
    inp = fixture_input(stack)
    harness.apply_config(inp)
    try:
        _, _, _, warnings = config_load.validate(harness.offline_account(inp) if offline else None)
    except ConfigError as err:
        return [f"error {p}" for p in err.errors]
    return [f"warning {p}" for p in warnings]


def test_a_real_run_stops_on_every_placeholder() -> None:
    errors = _validate(PROD, offline=False)
    assert len(errors) == 10
    assert all(e.startswith("error ") for e in errors)
    assert errors[0].startswith("error cluster.adminRoleArns[0]: 'arn:aws:iam::123456789012:role/platform-admin'")


def test_the_offline_render_only_warns() -> None:
    found = _validate(PROD, offline=True)
    assert len([w for w in found if "a placeholder" in w]) == 10
    assert all(w.startswith("warning ") for w in found)


def test_only_the_harness_says_offline() -> None:
    # A fresh interpreter that runs the program's entry line is a real run, whatever the environment says.
    code = "import config.load as c; print(c.offline_account(globals()) is not None)"
    env = {"PATH": "/usr/bin:/bin", "CI": "true", "PULUMI_TEST_MODE": "true", "OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
