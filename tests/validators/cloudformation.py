"""Read the upstream Karpenter CloudFormation template: its IAM documents, with names substituted."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml


class _Loader(yaml.SafeLoader):
    pass


def _tag(tag: str) -> Any:
    def construct(loader: yaml.SafeLoader, node: yaml.Node) -> dict[str, Any]:
        if isinstance(node, yaml.ScalarNode):
            return {tag: loader.construct_scalar(node)}
        if isinstance(node, yaml.SequenceNode):
            return {tag: loader.construct_sequence(node)}
        return {tag: loader.construct_mapping(node)}  # type: ignore[arg-type]

    return construct


for _name in ("Sub", "GetAtt", "Ref"):
    _Loader.add_constructor(f"!{_name}", _tag(_name))


def load(path: Path) -> dict[str, Any]:
    data = yaml.load(path.read_text(), Loader=_Loader)
    assert isinstance(data, dict)
    return data


def substitute(text: str, names: dict[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in names:
            raise KeyError(f"template placeholder ${{{key}}} has no substitution")
        return names[key]

    return re.sub(r"\$\{([^}]+)\}", replace, text)


def policy_documents(template: dict[str, Any], names: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Every AWS::IAM::ManagedPolicy document of the template, by logical id, substituted."""
    docs = {}
    for logical_id, resource in template["Resources"].items():
        if resource["Type"] == "AWS::IAM::ManagedPolicy":
            docs[logical_id] = json.loads(substitute(resource["Properties"]["PolicyDocument"]["Sub"], names))
    return docs


def normalize(value: Any) -> Any:
    """Compare policies structurally: single strings vs one-item lists, order, booleans as strings."""
    if isinstance(value, dict):
        return {k: normalize(v) for k, v in value.items()}
    if isinstance(value, list):
        items = [normalize(v) for v in value]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True)) if len(items) != 1 else items[0]
    if isinstance(value, bool):
        return str(value).lower()
    return value
