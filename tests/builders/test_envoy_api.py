"""Every Envoy bootstrap the render holds parses strictly against Envoy's own API (issue 49, item 5):
a misspelled key in the bootstrap, or in any filter's typed config, fails here, not at the proxy's start."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from tests.conftest import FIXTURES, fixture_run, values
from tests.validators import envoy_api


def _bootstraps(stack: str) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for r in fixture_run(stack).of_type("kubernetes:core/v1:ConfigMap"):
        for key, text in (values(r).get("data") or {}).items():
            if key == "envoy.yaml":
                found.append((f"{values(r)['metadata']['name']}/{key}", yaml.safe_load(text)))
    return found


@pytest.mark.parametrize("stack", FIXTURES)
def test_every_rendered_bootstrap_parses_against_envoys_api(stack: str) -> None:
    found = _bootstraps(stack)
    assert found, f"{stack} renders no Envoy bootstrap"
    for name, bootstrap in found:
        assert envoy_api.problems(bootstrap) == [], name


def test_a_misspelled_key_deep_in_a_typed_config_is_refused() -> None:
    (_, bootstrap), *_ = _bootstraps("minimal-dev")
    broken = copy.deepcopy(bootstrap)
    manager = broken["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    manager["stat_prefx"] = manager.pop("stat_prefix")
    (problem,) = envoy_api.problems(broken)
    assert 'no field named "stat_prefx"' in problem
    unknown = copy.deepcopy(bootstrap)
    unknown["static_resources"]["clusters"][0]["connect_timeout"] = "five seconds"
    assert envoy_api.problems(unknown) != []
