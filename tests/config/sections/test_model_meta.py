"""Properties of the config model itself: descriptions, strictness, immutability, defaults."""

from __future__ import annotations

import typing

import pytest
from pydantic import BaseModel, ValidationError

from config.errors import ConfigError, _unwrap
from config.facts import versions
from config.sections.base import ConfigModel
from config.sections.gpu_operator import GpuOperatorConfig
from config.sections.ingress import IngressConfig
from config.sections.karpenter import KarpenterConfig
from config.sections.keda import KedaConfig
from config.sections.observability import ObservabilityConfig
from config.sections.stack import StackConfig
from tests.conftest import DEV, PROD, parse, stack_data


def _all_models(root: type[BaseModel]) -> set[type[BaseModel]]:
    found: set[type[BaseModel]] = set()

    def walk(model: type[BaseModel]) -> None:
        if model in found:
            return
        found.add(model)
        for field in model.model_fields.values():
            stack = [field.annotation]
            while stack:
                t = stack.pop()
                for u in _unwrap(t):
                    if isinstance(u, type) and issubclass(u, BaseModel):
                        walk(u)
                    stack.extend(typing.get_args(u))

    walk(root)
    return found


MODELS = sorted(_all_models(StackConfig), key=lambda m: m.__name__)


def test_the_walk_finds_the_nested_sections() -> None:
    names = {m.__name__ for m in MODELS}
    assert {"StackConfig", "NewVpc", "ExistingVpc", "GpuPool", "Sharing", "Mig", "ModelConfig", "Drain", "Budget"} <= names
    assert len(MODELS) >= 30


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_every_field_has_a_description(model: type[BaseModel]) -> None:
    missing = [name for name, field in model.model_fields.items() if not (field.description or "").strip()]
    assert missing == []


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_every_model_is_frozen_strict_and_closed(model: type[BaseModel]) -> None:
    assert issubclass(model, ConfigModel)
    config = model.model_config
    assert config.get("frozen") is True
    assert config.get("extra") == "forbid"
    assert config.get("hide_input_in_errors") is True
    assert config.get("strict") is True


def test_config_is_immutable() -> None:
    cfg = parse(stack_data(DEV))
    with pytest.raises(ValidationError):
        cfg.models[0].replicas.min = 3  # type: ignore[misc]


def test_stack_files_use_camel_case_keys() -> None:
    data = stack_data(PROD)
    assert "gpuPools" in data
    assert "tensorParallelSize" in data["models"][1]
    assert "gpu_pools" not in data


def test_chart_versions_are_not_stack_keys() -> None:
    # Versions live in config/facts/versions.py only: a stack file that still pins one is told where they went.
    for model in (KarpenterConfig, KedaConfig, ObservabilityConfig, GpuOperatorConfig, IngressConfig):
        assert not {"version", "controller_version"} & set(model.model_fields)
    data = stack_data(DEV)
    data["karpenter"] = {"version": versions.KARPENTER_VERSION}
    data["ingress"] = {"controllerVersion": versions.AWS_LOAD_BALANCER_CONTROLLER_VERSION}
    with pytest.raises(ConfigError) as err:
        parse(data)
    reason = (
        "chart versions are pinned by the program (config/facts/versions.py), not by the stack file. "
        "Fix: remove the key (a version bump is a change to config/facts/versions.py and its tests)"
    )
    assert [str(p) for p in err.value.problems] == [f"karpenter.version: {reason}", f"ingress.controllerVersion: {reason}"]


def test_prod_deletion_protection_default_and_override() -> None:
    assert parse(stack_data(PROD)).deletion_protection is True
    assert parse(stack_data(DEV)).deletion_protection is False
    data = stack_data(DEV)
    data["cluster"]["deletionProtection"] = True
    assert parse(data).deletion_protection is True
