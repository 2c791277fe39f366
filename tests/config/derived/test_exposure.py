"""config/derived/exposure.py: one answer to "is this model exposed, and must it require an API key"."""

from __future__ import annotations

from typing import Any

import pytest

from config.checks import secrets
from config.derived.exposure import Exposure, exposed_models, exposure, models_needing_api_keys
from tests.conftest import DEV, PROD, parse, stack_data


def _cfg(stack: str, **ingress: Any) -> Any:
    data = stack_data(stack)
    data["models"][0]["expose"] = True
    data.setdefault("models", []).append({**data["models"][0], "name": "hidden", "expose": False})
    for pool in data["gpuPools"]:
        pool["gpuLimit"] = 64  # room for the extra model
    if ingress:
        data["ingress"] = ingress
    return parse(data)


@pytest.mark.parametrize(
    ("stack", "ingress", "key_required"),
    [
        (DEV, {}, False),  # internal ALB in dev: reachable from the VPC only, no key needed
        (PROD, {}, True),  # prod: every exposed model needs a key
        (
            DEV,
            {
                "scheme": "internet-facing",
                "allowedCidrs": ["198.51.100.0/24"],
                "certificateArn": "arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d",
            },
            True,
        ),
    ],
)
def test_exposed_models_and_their_keys(stack: str, ingress: dict[str, Any], key_required: bool) -> None:
    cfg = _cfg(stack, **ingress)
    first, hidden = cfg.models[0], cfg.models[-1]
    assert exposure(cfg, hidden) == Exposure(exposed=False, api_key_required=False)
    found = exposure(cfg, first)
    assert found.exposed
    assert found.api_key_required is key_required
    assert bool(found.reason) is key_required
    assert hidden not in exposed_models(cfg)
    assert first in exposed_models(cfg)
    assert (first in models_needing_api_keys(cfg)) is key_required


@pytest.mark.parametrize("stack", [DEV, PROD])
def test_secret_requirements_follow_the_same_policy(stack: str) -> None:
    cfg = _cfg(stack)
    need = secrets.needed(cfg)
    assert need.api_keys == [m.name for m in models_needing_api_keys(cfg)]
    problems, _ = secrets.problems(cfg, {"grafanaAdminPassword": "x", "hfToken": "x", "dockerHubAccessToken": "x"})
    assert [p.path for p in problems] == [f"apiKeys.{name}" for name in need.api_keys]
