"""No credential is printed back, whatever field it was pasted into, and one in plain config is refused.

Every message goes through config.errors.scrub; a value of a published credential format anywhere in
the plain config (a value or a key, at any depth of an escape hatch) is refused at its path, naming
the secret it belongs in. The credentials here are fakes, assembled from pieces so that no scanner
takes this file for a leak.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from config import load as config_load
from config.errors import CREDENTIAL_SHAPES, HIDDEN, ConfigError, is_credential_shaped, scrub, shown
from offline import harness
from tests.conftest import DEV, fixture_input, new_problems_after, stack_data
from tests.support.mutations import m0, p0

P = "llm-platform"
RANDOM = "Q7vLw2XkP9mZr4TbN8cY"  # 20 random-looking characters: the part a leak would give away
WHY = (
    "the stack file is plain text that anyone who can read the repository can read, and the value would reach the cluster in plain objects"
)
REVOKE = "(revoke it if the file was ever committed)"

# kind -> a fake of that format. The marker a message shows instead is `[<kind>, not shown]`.
NAMED: dict[str, str] = {
    "a Hugging Face token": "hf" + "_" + RANDOM + "aBcDeFgHiJkLmN",
    "a Hugging Face token (lowercase)": "hf" + "_" + "abcdefghijklmnopqrstuvwxyzabcdefgh",
    "a Docker Hub access token": "dckr" + "_pat_" + RANDOM + "-x_y1234",
    "an API key": "sk" + "-proj-" + RANDOM + "AbCd0123",
    "an AWS access key id": "AKIA" + "Q7VLW2XKP9MZR4TB",
    "an AWS temporary access key id": "ASIA" + "Q7VLW2XKP9MZR4TB",
    "a GitHub token": "ghp" + "_" + RANDOM + "0123456789abcdef",
    "a GitHub fine-grained token": "github" + "_pat_" + "11ABCDEFG0" + RANDOM + "_" + RANDOM,
    "a GitLab token": "glpat" + "-" + RANDOM + "xy",
    "a Slack token": "xoxb" + "-1234567890-" + RANDOM,
    "a Pulumi access token": "pul" + "-" + "0123456789abcdef0123456789abcdef01234567",
    "a JSON Web Token": "eyJ" + "hbGciOiJIUzI1NiJ9" + ".eyJ" + "zdWIiOiIxMjM0NTY3ODkwIn0" + "." + RANDOM,
    "a private key": "-----BEGIN " + "RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA" + RANDOM + "\n-----END RSA PRIVATE KEY-----",
    "an AWS secret access key": "wJalr" + "XUtnFEMI/K7MDENG/bPxRfi" + RANDOM[:12],
    "an AWS secret access key (no slash)": "wJalr" + "XUtnFEMIK7MDENGbPxRfi" + RANDOM[:14],
}
# Random-looking values of no published format: hidden in every message, not refused.
UNNAMED: dict[str, str] = {
    "a token_urlsafe key": "Lu-qA79f6" + "tlzishlt1dNNlep9XJIwTgE3zglImHaV5U",
    "an openssl rand -hex 32 key": "3f9a" * 16,
}

# field -> (where the value goes, the path a message names)
FIELDS: dict[str, tuple[Callable[[dict[str, Any], str], object], str]] = {
    "huggingFaceId": (lambda d, v: m0(d).update(huggingFaceId=v), "models[llama-3-1-8b].huggingFaceId"),
    "huggingFaceId-as-a-name": (lambda d, v: m0(d).update(huggingFaceId=f"meta-llama/{v}"), "models[llama-3-1-8b].huggingFaceId"),
    "revision": (lambda d, v: m0(d).update(revision=v), "models[llama-3-1-8b].revision"),
    "image.repository": (lambda d, v: m0(d).update(image={"repository": v}), "models[llama-3-1-8b].image.repository"),
    "image.tag": (lambda d, v: m0(d).update(image={"tag": v}), "models[llama-3-1-8b].image.tag"),
    "ingress.domain": (lambda d, v: d.update(ingress={"domain": v}), "ingress.domain"),
    "extraArgs": (lambda d, v: m0(d).update(extraArgs=[f"--hf-token={v}"]), "models[llama-3-1-8b].extraArgs[0]"),
    "cluster.name": (lambda d, v: d["cluster"].update(name=v), "cluster.name"),
    "pool name": (lambda d, v: p0(d).update(name=v), "gpuPools[0].name"),
    "maxModelLen (an integer)": (lambda d, v: m0(d).update(maxModelLen=v), "models[llama-3-1-8b].maxModelLen"),
    "gpuOperator.extraValues nested": (
        lambda d, v: d.update(gpuOperator={"extraValues": {"toolkit": {"env": [{"name": "TOKEN", "value": v}]}}}),
        "gpuOperator.extraValues.toolkit.env[0].value",
    ),
    "observability.extraValues": (
        lambda d, v: d.update(observability={"extraValues": {"grafana": {"env": {"GF_TOKEN": v}}}}),
        "observability.extraValues.grafana.env.GF_TOKEN",
    ),
    "observability.extraValues key": (
        lambda d, v: d.update(observability={"extraValues": {"grafana": {v: "x"}}}),
        "observability.extraValues.grafana",
    ),
}


def _kind(name: str) -> str:
    return name.split(" (")[0].replace(" temporary", "").replace(" fine-grained", "")


def _through_load(mutate: Callable[[dict[str, Any]], object]) -> str:
    """The whole report of config/load.py's validate, as `pulumi up` prints it."""
    data = copy.deepcopy(stack_data(DEV))
    mutate(data)
    inp = fixture_input(DEV, overrides={f"{P}:{k}": v for k, v in data.items() if k != "region"})
    harness.apply_config(inp)
    try:
        config_load.validate(harness.offline_account(inp))
    except ConfigError as err:
        return err.report() + "\n" + str(err)
    return ""


@pytest.mark.parametrize("field", sorted(FIELDS))
@pytest.mark.parametrize("shape", sorted(NAMED))
def test_a_credential_in_any_plain_field_is_refused_and_never_printed(field: str, shape: str) -> None:
    put, path = FIELDS[field]
    secret = NAMED[shape]
    found = new_problems_after(lambda d: put(d, secret))
    holds = "has a key that looks like" if field.endswith(" key") else "holds what looks like"
    assert any(p.startswith(f"{path}: {holds} {_kind(shape)}; {WHY}. Fix: ") for p in found), found
    text = "\n".join(found)
    assert secret not in text
    assert RANDOM not in text
    assert RANDOM[:12] not in text


@pytest.mark.parametrize("field", ["huggingFaceId", "extraArgs", "pool name", "observability.extraValues key"])
@pytest.mark.parametrize("shape", ["a Hugging Face token", "an AWS access key id", "a private key", "a JSON Web Token"])
def test_the_whole_load_path_never_prints_one(field: str, shape: str) -> None:
    put, path = FIELDS[field]
    report = _through_load(lambda d: put(d, NAMED[shape]))
    assert path in report
    assert _kind(shape) in report
    assert NAMED[shape] not in report
    assert RANDOM not in report


# Shorter or odder than any published format, but starting like one: never printed (a part still gives a token away).
PREFIXED: dict[str, str] = {
    "a short Hugging Face token": "hf" + "_" + "Ab12cdEf",
    "a short API key": "sk" + "-" + "x9Y8z7w6",
    "a cut AWS access key id": "AKIA" + "Q7VLW2",
    "a short GitHub token": "ghp" + "_" + "Ab12Cd34",
    "a short Pulumi token": "pul" + "-" + "0a1b2c3d",
}


def _never_printed(field: str, secret: str) -> str:
    """The problems the secret in this field brings, as one text: the secret is not in it."""
    put, _ = FIELDS[field]
    text = "\n".join(new_problems_after(lambda d: put(d, secret)))
    assert secret not in text
    return text


@pytest.mark.parametrize("field", sorted(FIELDS))
@pytest.mark.parametrize("shape", sorted(PREFIXED))
def test_a_value_that_starts_like_a_credential_is_never_printed(field: str, shape: str) -> None:
    secret = PREFIXED[shape]
    assert secret[-6:] not in _never_printed(field, secret)
    assert shown(secret) == HIDDEN


@pytest.mark.parametrize("name", ["hf_transfer", "sk-llama-3-8b", "pul-request", "ghs_cache", "AKIA"])
def test_a_name_that_starts_like_a_prefix_is_still_printed(name: str) -> None:
    assert shown(name) == f"'{name}'"


@pytest.mark.parametrize("field", sorted(FIELDS))
@pytest.mark.parametrize("shape", sorted(UNNAMED))
def test_a_random_looking_value_is_never_printed(field: str, shape: str) -> None:
    secret = UNNAMED[shape]
    text = _never_printed(field, secret)
    assert RANDOM[:12] not in text
    for part in secret.split("/"):
        assert len(part) < 16 or part not in text


def test_the_whole_load_path_never_prints_a_random_one() -> None:
    secret = UNNAMED["a token_urlsafe key"]
    report = _through_load(lambda d: d.update(ingress={"domain": secret}))
    assert "ingress.domain: '[a value shaped like a credential, not shown]' is not a DNS domain" in report
    assert secret not in report


EXACT: dict[str, tuple[Callable[[dict[str, Any]], object], list[str]]] = {
    "hf-token-as-repository-id": (
        lambda d: m0(d).update(huggingFaceId=NAMED["a Hugging Face token"]),
        [
            f"models[llama-3-1-8b].huggingFaceId: holds what looks like a Hugging Face token; {WHY}. Fix: move it to the "
            f"hfToken secret: run `pulumi config set --secret hfToken <value>`, and delete it here {REVOKE}"
        ],
    ),
    "docker-hub-token-as-image-repository": (
        lambda d: m0(d).update(image={"repository": NAMED["a Docker Hub access token"]}),
        [
            f"models[llama-3-1-8b].image.repository: holds what looks like a Docker Hub access token; {WHY}. Fix: move it "
            f"to the dockerHubAccessToken secret: run `pulumi config set --secret dockerHubAccessToken <value>`, and "
            f"delete it here {REVOKE}"
        ],
    ),
    "api-key-in-extra-args": (
        lambda d: m0(d).update(extraArgs=["--enable-prefix-caching", f"--hf-token={NAMED['an API key']}"]),
        [
            f"models[llama-3-1-8b].extraArgs[1]: holds what looks like an API key; {WHY}. Fix: if it is a model "
            "endpoint's key, move it to the apiKeys secret: run `pulumi config set --secret --path 'apiKeys.<model>' "
            f"<key>`, and delete it here {REVOKE}",
            "models[llama-3-1-8b].extraArgs: --hf-token may not be in extraArgs: the Hugging Face token comes from the "
            "hfToken Pulumi secret, mounted as a file. Fix: remove --hf-token",
        ],
    ),
    "aws-key-as-pool-name": (
        lambda d: p0(d).update(name=NAMED["an AWS access key id"]),
        [
            f"gpuPools[0].name: holds what looks like an AWS access key id; {WHY}. Fix: delete it here; `pulumi up` uses "
            f"the AWS credentials of the shell or CI runner it runs in, from a profile or an assumed role {REVOKE}",
        ],
    ),
    "github-token-as-a-values-key": (
        lambda d: d.update(observability={"extraValues": {NAMED["a GitHub token"]: 1}}),
        [
            f"observability.extraValues: has a key that looks like a GitHub token; {WHY}. Fix: delete it here; the "
            f"platform takes no such credential in its config {REVOKE}"
        ],
    ),
    "random-password-in-chart-values": (
        lambda d: d.update(observability={"extraValues": {"grafana": {"adminPassword": UNNAMED["a token_urlsafe key"]}}}),
        [
            f"observability.extraValues.grafana.adminPassword: holds what looks like a secret value; {WHY}. Fix: delete "
            "it here; chart values take a credential from a Kubernetes Secret by reference (the chart's existingSecret "
            f"or secretKeyRef) {REVOKE}"
        ],
    ),
}


@pytest.mark.parametrize("case", sorted(EXACT))
def test_exact_messages(case: str) -> None:
    mutate, expected = EXACT[case]
    assert new_problems_after(mutate) == expected


def test_a_value_that_only_names_a_secret_is_not_refused() -> None:
    """A reference to a Kubernetes Secret under a key called secret or password is plain config."""
    values = {
        "grafana": {"smtp": {"existingSecret": "grafana-smtp", "passwordKey": "smtp-password"}},
        "prometheus": {"prometheusSpec": {"remoteWrite": [{"basicAuth": {"password": {"name": "remote-write", "key": "password"}}}]}},
    }
    assert new_problems_after(lambda d: d.update(observability={"extraValues": values})) == []


@pytest.mark.parametrize(
    "value",
    [
        "meta-llama/Llama-3.1-8B-Instruct",
        "hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4",
        "neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8-dynamic",
        "sk-llama-3-1-8b-instruct-awq-int4",
        "task-abcdefghijklmnopqrstuvwxyz",
        "KarpenterNodeRoleLlmPlatformProd1",
        "0123456789abcdef0123456789abcdef01234567",
        "sha256:" + "0123456789abcdef" * 4,
        "arn:aws:iam::123456789012:role/Q7vLw2XkP9mZr4TbN8cYaBcDeF",
        "public.ecr.aws/nvidia/k8s-device-plugin:v0.17.1",
        "-----BEGIN CERTIFICATE-----",
    ],
)
def test_names_digests_and_arns_are_not_credentials(value: str) -> None:
    assert not is_credential_shaped(value)
    assert scrub(f"x '{value}' y") == f"x '{value}' y"


def test_every_shape_names_its_source_and_is_redacted_by_name() -> None:
    for shape in CREDENTIAL_SHAPES:
        assert len(shape.source) > 20, shape.kind
    for name, secret in NAMED.items():
        assert scrub(f"got '{secret}' here") == f"got '[{_kind(name)}, not shown]' here"
        assert shown(secret) == f"[{_kind(name)}, not shown]"
    for secret in UNNAMED.values():
        assert scrub(f"got '{secret}' here") == f"got '{HIDDEN}' here"
        assert shown(secret) == HIDDEN
