"""The resource-name guard: no fixture stack loses a resource identity that no alias keeps."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from offline import golden, harness, names
from tests.conftest import FIXTURES, fixture_run


@pytest.mark.parametrize("stack", FIXTURES)
def test_no_identity_is_lost_without_an_alias(stack: str) -> None:
    snapshot = names.read_snapshot(golden.NAMES / f"{stack}.txt")
    check = names.compare(snapshot, fixture_run(stack).registrations)
    assert check.errors(stack) == []


def test_identities_are_type_chains_and_names() -> None:
    registrations = fixture_run(FIXTURES[0]).registrations
    found = {r.identity for r in registrations}
    # Top-level components stand alone (the root stack is not part of a URN); children carry
    # their parents' types first, so a key and its alias may share a name.
    assert "llmplatform:index:Cluster::cluster" in found
    assert "llmplatform:index:Cluster$aws:kms/key:Key::cluster-secrets" in found
    assert "llmplatform:index:Cluster$aws:kms/alias:Alias::cluster-secrets" in found
    assert all(r.identity.endswith(f"::{r.name}") for r in registrations)
    assert len({r.identity for r in registrations}) == len(registrations)


# -- a real rename, under the same recording mocks ---------------------------------------------------

PROGRAM = """
import pulumi
import pulumi_aws as aws


class Holder(pulumi.ComponentResource):
    def __init__(self, name, opts=None):
        super().__init__("llmplatform:index:Holder", name, None, opts)
        self.register_outputs({{}})


class Other(pulumi.ComponentResource):
    def __init__(self, name, opts=None):
        super().__init__("llmplatform:index:Other", name, None, opts)
        self.register_outputs({{}})


holder = Holder("holder")
other = Other("other")
aws.kms.Key("{name}", opts=pulumi.ResourceOptions(parent={parent}{aliases}))
"""

COMPONENT = """
import pulumi
import pulumi_aws as aws


class Holder(pulumi.ComponentResource):
    def __init__(self, name, opts=None):
        super().__init__("llmplatform:index:Holder", name, None, opts)
        aws.kms.Key(f"{{name}}-secrets", opts=pulumi.ResourceOptions(parent=self))
        self.register_outputs({{}})


Holder("{name}"{opts})
"""


def _run(tmp_path: Path, name: str, parent: str = "holder", aliases: str = "") -> harness.RunResult:
    main = tmp_path / f"main-{name}-{parent}-{len(aliases)}.py"
    main.write_text(textwrap.dedent(PROGRAM.format(name=name, parent=parent, aliases=aliases)))
    return harness.run_program(main, "guard-test", harness.StackInput("guard", {"aws:region": "us-east-1"}, []))


def test_a_rename_without_an_alias_is_refused(tmp_path: Path) -> None:
    before = names.identities(_run(tmp_path, "secrets").registrations)
    check = names.compare(before, _run(tmp_path, "secrets-key").registrations)
    assert check.removed == ["llmplatform:index:Holder$aws:kms/key:Key::secrets"]
    assert check.errors("guard")[0].startswith(
        "guard: llmplatform:index:Holder$aws:kms/key:Key::secrets is no longer registered and no resource aliases it"
    )


def test_a_rename_with_an_alias_passes(tmp_path: Path) -> None:
    before = names.identities(_run(tmp_path, "secrets").registrations)
    after = _run(tmp_path, "secrets-key", aliases=', aliases=[pulumi.Alias(name="secrets")]').registrations
    check = names.compare(before, after)
    assert check.removed == []
    assert check.renamed == ["llmplatform:index:Holder$aws:kms/key:Key::secrets"]
    assert check.added == ["llmplatform:index:Holder$aws:kms/key:Key::secrets-key"]


def test_a_move_to_another_parent_needs_an_alias_to_the_old_parent(tmp_path: Path) -> None:
    before = names.identities(_run(tmp_path, "secrets").registrations)
    moved = _run(tmp_path, "secrets", parent="other").registrations
    assert names.compare(before, moved).removed == ["llmplatform:index:Holder$aws:kms/key:Key::secrets"]
    kept = _run(tmp_path, "secrets", parent="other", aliases=", aliases=[pulumi.Alias(parent=holder)]").registrations
    assert names.compare(before, kept).removed == []


def test_make_golden_refuses_an_unaliased_removal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stack = FIXTURES[0]
    result = fixture_run(stack)
    monkeypatch.setattr(golden, "NAMES", tmp_path / "names")
    monkeypatch.setattr(golden, "TREES", tmp_path / "render")
    snapshot = tmp_path / "names" / f"{stack}.txt"
    snapshot.parent.mkdir()
    snapshot.write_text(names.HEADER + "llmplatform:index:Cluster$aws:kms/key:Key::cluster-old-key\n")
    refused = golden.write(stack, result, accept_removals=False)
    assert len(refused) == 1
    assert "cluster-old-key is no longer registered" in refused[0]
    assert not (tmp_path / "render").exists()
    assert golden.write(stack, result, accept_removals=True) == []
    written = names.read_snapshot(snapshot)
    assert [line for line in written if not line.startswith(names.ALIAS)] == names.identities(result.registrations)
    assert names.compare(written, result.registrations).errors(stack) == []


def _component(tmp_path: Path, name: str, opts: str = "") -> harness.RunResult:
    main = tmp_path / f"component-{name}-{len(opts)}.py"
    main.write_text(textwrap.dedent(COMPONENT.format(name=name, opts=opts)))
    return harness.run_program(main, "guard-test", harness.StackInput("guard", {"aws:region": "us-east-1"}, []))


def test_renaming_a_component_carries_its_children_named_after_it(tmp_path: Path) -> None:
    before = names.identities(_component(tmp_path, "cluster").registrations)
    assert "llmplatform:index:Holder$aws:kms/key:Key::cluster-secrets" in before
    # renamed with an alias: the child `eks-secrets` inherits `cluster-secrets` as its old identity
    renamed = _component(tmp_path, "eks", ', opts=pulumi.ResourceOptions(aliases=[pulumi.Alias(name="cluster")])').registrations
    check = names.compare(before, renamed)
    assert check.removed == []
    assert sorted(check.renamed) == ["llmplatform:index:Holder$aws:kms/key:Key::cluster-secrets", "llmplatform:index:Holder::cluster"]
    # without the alias, both the component and its key would be replaced
    assert len(names.compare(before, _component(tmp_path, "eks").registrations).removed) == 2


def test_an_alias_stays_until_it_is_removed_on_purpose(tmp_path: Path) -> None:
    renamed = _component(tmp_path, "eks", ', opts=pulumi.ResourceOptions(aliases=[pulumi.Alias(name="cluster")])').registrations
    snapshot = tmp_path / "names.txt"
    names.write_snapshot(snapshot, renamed)
    recorded = names.read_snapshot(snapshot)
    assert "alias llmplatform:index:Holder::cluster" in recorded
    assert names.compare(recorded, renamed).errors("guard") == []
    # dropping the alias later would replace the resource in stacks not yet updated
    dropped = names.compare(recorded, _component(tmp_path, "eks").registrations)
    assert dropped.dropped_aliases == ["llmplatform:index:Holder$aws:kms/key:Key::cluster-secrets", "llmplatform:index:Holder::cluster"]
    assert "the alias for llmplatform:index:Holder::cluster was removed" in " ".join(dropped.errors("guard"))
