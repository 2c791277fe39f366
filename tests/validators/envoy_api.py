"""Envoy's own API as the schema of the rendered bootstraps: each is parsed into
`envoy.config.bootstrap.v3.Bootstrap` with protobuf's strict JSON parser (an unknown field anywhere, typed
configs included, is an error), from the xds-protos package (requirements-dev.txt).

xds-protos 1.71.0 is grpc 1.71's build of Envoy's API (spring 2025), from about the time of the pinned
Envoy 1.33 (January 2025; config/facts/versions.py). The package does not record which data-plane-api
commit it was built from: a field it lacks, 1.33 lacks too (the API only adds fields between minors), but
a field added after 1.33 would pass here and fail at Envoy's start. Checked: 1.70.0 parses the render as
1.71.0 does; 1.60.0 (late 2023) refuses its ext_proc body mode FULL_DUPLEX_STREAMED, which came later."""

from __future__ import annotations

import functools
import importlib
import pkgutil
from typing import Any

import pytest


@functools.cache
def _bootstrap() -> Any:
    """Every message type of the API registered (typed configs resolve by their @type), and the Bootstrap type."""
    try:
        import envoy
        from envoy.config.bootstrap.v3 import bootstrap_pb2
    except ImportError:
        pytest.skip("xds-protos is not installed: `make venv` (requirements-dev.txt)")
    for module in pkgutil.walk_packages(envoy.__path__, "envoy."):
        if module.name.endswith("_pb2"):
            importlib.import_module(module.name)
    return bootstrap_pb2.Bootstrap


def problems(bootstrap: dict[str, Any]) -> list[str]:
    """What Envoy's API refuses in one bootstrap (empty: it parses strictly)."""
    from google.protobuf import json_format

    try:
        json_format.ParseDict(bootstrap, _bootstrap()())
    except json_format.ParseError as err:
        return [str(err).split("\n")[0]]
    return []
