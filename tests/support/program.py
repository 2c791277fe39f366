"""The real program run offline with one builder changed: a row's breaking test breaks code, not captured data."""

from __future__ import annotations

import contextlib
import functools
import importlib
from collections.abc import Callable, Iterator
from typing import Any

from offline import harness
from offline.mocks import Registration
from tests.conftest import fixture_input


@contextlib.contextmanager
def patched(target: str, edit: Callable[..., Any]) -> Iterator[None]:
    """`module.function` (e.g. `builders.serving.populate.job`) returns what `edit(result, *args,
    **kwargs)` makes of its result (the result itself, edited in place, when edit returns None).
    The program calls builders through their modules, so the running program sees the change."""
    module_name, attr = target.rsplit(".", 1)
    module = importlib.import_module(module_name)
    original = getattr(module, attr)
    calls: list[int] = []

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        result = original(*args, **kwargs)
        changed = edit(result, *args, **kwargs)
        return result if changed is None else changed

    setattr(module, attr, wrapper)
    try:
        yield
    finally:
        setattr(module, attr, original)
    assert calls, f"the program never called {target}: the break changed nothing"


def run_patched(stack: str, target: str, edit: Callable[..., Any]) -> list[Registration]:
    """A fresh offline run of a fixture stack through the real program with `target` changed."""
    with patched(target, edit):
        result = harness.run(fixture_input(stack))
    return list(result.registrations)
