"""Bad-input mutations' handles on a fixture stack's model input (its first model, its first pool), and the
existing-VPC network the bad inputs of that mode start from."""

from __future__ import annotations

from typing import Any


def m0(d: dict[str, Any]) -> dict[str, Any]:
    return d["models"][0]  # type: ignore[no-any-return]


def p0(d: dict[str, Any]) -> dict[str, Any]:
    return d["gpuPools"][0]  # type: ignore[no-any-return]


def model_named(d: dict[str, Any], name: str) -> dict[str, Any]:
    return next(m for m in d["models"] if m["name"] == name)  # type: ignore[no-any-return]


def pool_named(d: dict[str, Any], name: str) -> dict[str, Any]:
    return next(p for p in d["gpuPools"] if p["name"] == name)  # type: ignore[no-any-return]


EXISTING_VPC: dict[str, Any] = {
    "mode": "existing",
    "vpcId": "vpc-0a1b2c3d4e5f60718",
    "vpcCidr": "10.60.0.0/16",
    "privateSubnetIds": ["subnet-0a1b2c3d4e5f60711", "subnet-0a1b2c3d4e5f60712"],
    "loadBalancerSubnetCidrs": ["10.60.0.0/18", "10.60.64.0/18"],
}
"""A valid `network` of mode existing: each bad input changes one thing of it."""


def dev_with(**model: Any) -> Any:
    """minimal-dev parsed with its first model's fields updated (camelCase keys)."""
    import copy

    from tests.conftest import DEV, parse, stack_data

    data = copy.deepcopy(stack_data(DEV))
    data["models"][0].update(model)
    return parse(data)
