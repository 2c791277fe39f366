"""Every fixture stack renders exactly its committed golden tree (regenerate with `make golden`)."""

from __future__ import annotations

import pytest

from offline import golden
from tests.conftest import FIXTURES, fixture_run


def test_every_fixture_has_a_golden_tree_and_nothing_else_does() -> None:
    assert sorted(p.name for p in golden.TREES.iterdir()) == FIXTURES
    assert sorted(p.stem for p in golden.NAMES.glob("*.txt")) == FIXTURES


def test_fixture_stacks_are_single_files_directly_under_the_folder() -> None:
    assert all(p.is_file() for p in golden.FIXTURES.iterdir())
    assert len(FIXTURES) >= 4


@pytest.mark.parametrize("stack", FIXTURES)
def test_render_matches_the_golden_tree(stack: str) -> None:
    stale = golden.stale(stack, fixture_run(stack))
    assert stale == [], f"{stack}: {', '.join(stale)} differ from tests/golden/render/{stack}/. Review the change, then run `make golden`"


def test_a_changed_manifest_is_caught(tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    # The comparison is byte for byte: a copy of a golden tree with one edited file is stale.
    import shutil
    from pathlib import Path

    assert isinstance(tmp_path, Path)
    copy = tmp_path / "render"
    shutil.copytree(golden.TREES, copy)
    target = next((copy / FIXTURES[0] / "manifests").rglob("*.yaml"))
    target.write_text(target.read_text() + "# edited\n")
    monkeypatch.setattr(golden, "TREES", copy)
    assert golden.stale(FIXTURES[0], fixture_run(FIXTURES[0])) == [target.relative_to(copy / FIXTURES[0]).as_posix()]
