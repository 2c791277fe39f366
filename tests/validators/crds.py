"""Validate custom resources against the upstream CRDs' openAPIV3Schema with jsonschema.

jsonschema does not run `x-kubernetes-validations` (CEL); config/facts/karpenter_cel.py covers those.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import yaml


def schema_for(crd_path: Path, version: str) -> dict[str, Any]:
    crd = yaml.safe_load(crd_path.read_text())
    for v in crd["spec"]["versions"]:
        if v["name"] == version:
            schema = v["schema"]["openAPIV3Schema"]
            assert isinstance(schema, dict)
            return schema
    raise AssertionError(f"{crd_path.name} has no version {version}")


def errors(manifest: dict[str, Any], crd_path: Path) -> list[str]:
    """Schema violations of a manifest, as `path: message` strings (empty when valid)."""
    version = manifest["apiVersion"].split("/")[-1]
    validator = jsonschema.Draft7Validator(schema_for(crd_path, version))
    return sorted(f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(manifest))
