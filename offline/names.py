"""The resource-name guard: a renamed or re-parented resource must carry an alias.

Pulumi keys each resource's state by its identity: its type chain (its own type after those of
its parents) and its name. Change either and `pulumi up` deletes the old resource and creates a
new one; for the cluster, the VPC or a KMS key that is an outage or data loss. So every fixture
stack has a committed snapshot of the identities it registers (`tests/golden/names/<fixture>.txt`),
and an identity may leave the snapshot only when a resource of the new render names it in its
`aliases` option (`pulumi.ResourceOptions(aliases=[pulumi.Alias(name=..., parent=...)])`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from offline.mocks import Registration

HEADER = (
    "# Resource identities (type chain::name) this fixture stack registers; checked by tests/offline/test_names.py.\n"
    "# Regenerate with `make golden`. An identity may only disappear when a resource aliases it.\n"
)


@dataclass(frozen=True)
class NameCheck:
    """How a render's identities compare with the committed snapshot."""

    removed: list[str]
    """In the snapshot, gone from the render, and aliased by no resource: `pulumi up` would replace them."""
    renamed: list[str]
    """In the snapshot, gone from the render, but aliased: existing stacks keep them (state is moved)."""
    added: list[str]
    """New in the render: the snapshot must be regenerated to record them."""

    def errors(self, fixture: str) -> list[str]:
        found = [
            f"{fixture}: {identity} is no longer registered and no resource aliases it, so `pulumi up` on an existing "
            "stack would delete and recreate it. Fix: give the renamed resource "
            "`opts=pulumi.ResourceOptions(aliases=[pulumi.Alias(name=<old name>, parent=<old parent>)])`, "
            "or, for a deliberate removal, run `python -m offline.golden --write --accept-removals`"
            for identity in self.removed
        ]
        if self.added:
            found.append(f"{fixture}: {len(self.added)} new resource(s) are not in the snapshot. Fix: run `make golden`")
        return found


def identities(registrations: Iterable[Registration]) -> list[str]:
    return sorted(r.identity for r in registrations)


def compare(snapshot: Iterable[str], registrations: list[Registration]) -> NameCheck:
    recorded = set(snapshot)
    current = set(identities(registrations))
    aliased = {alias for r in registrations for alias in r.aliases}
    gone = recorded - current
    return NameCheck(
        removed=sorted(gone - aliased),
        renamed=sorted(gone & aliased),
        added=sorted(current - recorded),
    )


def read_snapshot(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if line and not line.startswith("#")]


def write_snapshot(path: Path, registrations: list[Registration]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEADER + "".join(f"{identity}\n" for identity in identities(registrations)))
