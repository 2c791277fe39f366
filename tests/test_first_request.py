"""The README's first request works: its curl and OpenAI-SDK snippets, run as written against a local fake of
the endpoint (offline/fake_openai.py), stream a completion with the key; their timeouts outlast the shipped dev
stack's hold, and the names they use are the shipped dev model's."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from offline import fake_openai
from tests.conftest import ROOT
from tests.test_shipped_stacks import _shipped

KEY = "a" * 64


def _section() -> str:
    text = (ROOT / "README.md").read_text()
    return text[text.index("## First request") : text.index("## Further reading")]


def _block(lang: str, needle: str) -> str:
    blocks = re.findall(rf"```{lang}\n(.*?)```", _section(), flags=re.S)
    (found,) = [b for b in blocks if needle in b]
    return found


def _env(url: str) -> dict[str, str]:
    return {**os.environ, "OPENAI_BASE_URL": url, "OPENAI_API_KEY": KEY}


def _model() -> fake_openai.FakeModel:
    return fake_openai.FakeModel(_shipped("dev").models[0].name, KEY)


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed: the README's curl snippet needs it")
def test_the_curl_snippet_streams_a_completion_with_the_key() -> None:
    model = _model()
    with fake_openai.serving(model) as url:
        done = subprocess.run(["bash", "-c", _block("sh", "curl")], env=_env(url), capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    events = [line for line in done.stdout.splitlines() if line.startswith("data: ")]
    assert events[-1] == "data: [DONE]"
    assert len(events) > 2
    (request,) = model.requests
    assert request["authorized"]
    assert request["body"]["stream"] is True


def test_the_sdk_snippet_streams_a_completion_with_the_key() -> None:
    model = _model()
    with fake_openai.serving(model) as url:
        done = subprocess.run(
            [sys.executable, "-c", _block("python", "OpenAI(")], env=_env(url), capture_output=True, text=True, timeout=60, check=False
        )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == " ".join(model.words)
    (request,) = model.requests
    assert request["authorized"]
    assert request["path"] == "/v1/chat/completions"


def test_a_wrong_key_is_refused() -> None:
    model = _model()
    with fake_openai.serving(model) as url:
        env = {**_env(url), "OPENAI_API_KEY": "b" * 64}
        done = subprocess.run(
            [sys.executable, "-c", _block("python", "OpenAI(")], env=env, capture_output=True, text=True, timeout=60, check=False
        )
    assert done.returncode != 0
    assert "401" in done.stderr


def test_the_snippets_wait_out_the_dev_stacks_hold_and_never_retry_it() -> None:
    cfg = _shipped("dev")
    from config.derived import state

    hold = state.of(cfg).model(cfg.models[0].name).hold
    idle = cfg.ingress.idle_timeout_seconds
    assert hold.ttl_seconds < idle
    curl = int(re.search(r"--max-time (\d+)", _block("sh", "curl")).group(1))  # type: ignore[union-attr]
    sdk = _block("python", "OpenAI(")
    timeout = int(re.search(r"timeout=(\d+)", sdk).group(1))  # type: ignore[union-attr]
    assert curl >= idle
    assert timeout >= idle
    assert "max_retries=0" in sdk
    assert f"up to {hold.ttl_seconds} s" in sdk
    assert cfg.models[0].name in _block("sh", "curl")


def test_a_held_request_is_still_answered_within_the_sdk_timeout() -> None:
    """The fake holds before its first byte as the gateway does; the SDK's timeout covers it."""
    model = _model()
    model.hold_seconds = 1.5
    code = _block("python", "OpenAI(").replace("timeout=900", "timeout=5")
    with fake_openai.serving(model) as url:
        done = subprocess.run([sys.executable, "-c", code], env=_env(url), capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    short = _block("python", "OpenAI(").replace("timeout=900", "timeout=0.5")
    model.requests.clear()
    with fake_openai.serving(model) as url:
        done = subprocess.run([sys.executable, "-c", short], env=_env(url), capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode != 0  # a client that gives up before the hold ends never sees the answer
    assert len(model.requests) == 1  # and, with max_retries=0, did not start a second wait
