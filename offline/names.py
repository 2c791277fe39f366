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
from dataclasses import dataclass, field
from pathlib import Path

from offline.mocks import Registration

HEADER = (
    "# Resource identities (type chain::name) this fixture stack registers; checked by tests/offline/test_names.py.\n"
    "# Regenerate with `make golden`. An identity may only disappear when a resource aliases it; `alias` lines are\n"
    "# the old identities aliases keep, which must stay aliased until every stack has been updated.\n"
)
ALIAS = "alias "


@dataclass(frozen=True)
class NameCheck:
    """How a render's identities compare with the committed snapshot."""

    removed: list[str]
    """In the snapshot, gone from the render, and aliased by no resource: `pulumi up` would replace them."""
    renamed: list[str]
    """In the snapshot, gone from the render, but aliased: existing stacks keep them (state is moved)."""
    added: list[str]
    """New in the render: the snapshot must be regenerated to record them."""
    dropped_aliases: list[str] = field(default_factory=list)
    """Old identities the snapshot records as aliased that no resource aliases any more."""

    def errors(self, fixture: str) -> list[str]:
        found = [
            f"{fixture}: {identity} is no longer registered and no resource aliases it, so `pulumi up` on an existing "
            "stack would delete and recreate it. Fix: give the renamed resource "
            "`opts=pulumi.ResourceOptions(aliases=[pulumi.Alias(name=<old name>, parent=<old parent>)])`, "
            "or, for a deliberate removal, run `python -m offline.golden --write --accept-removals`"
            for identity in self.removed
        ]
        found += [
            f"{fixture}: the alias for {identity} was removed, so a stack not yet updated since that rename would have it "
            "deleted and recreated. Fix: keep the alias until every stack has run pulumi up with it, then run "
            "`python -m offline.golden --write --accept-removals`"
            for identity in self.dropped_aliases
        ]
        if self.added:
            found.append(f"{fixture}: {len(self.added)} new resource(s) are not in the snapshot. Fix: run `make golden`")
        return found


def identities(registrations: Iterable[Registration]) -> list[str]:
    return sorted(r.identity for r in registrations)


def aliased(registrations: Iterable[Registration]) -> set[str]:
    return {alias for r in registrations for alias in r.aliases}


def compare(snapshot: Iterable[str], registrations: list[Registration]) -> NameCheck:
    lines = list(snapshot)
    recorded = {line for line in lines if not line.startswith(ALIAS)}
    recorded_aliases = {line[len(ALIAS) :] for line in lines if line.startswith(ALIAS)}
    current = set(identities(registrations))
    kept = aliased(registrations)
    gone = recorded - current
    return NameCheck(
        removed=sorted(gone - kept),
        renamed=sorted(gone & kept),
        added=sorted(current - recorded),
        dropped_aliases=sorted(recorded_aliases - kept - current),
    )


def read_snapshot(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if line and not line.startswith("#")]


def write_snapshot(path: Path, registrations: list[Registration]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    current = identities(registrations)
    kept = sorted(aliased(registrations) - set(current))
    path.write_text(HEADER + "".join(f"{identity}\n" for identity in current) + "".join(f"{ALIAS}{old}\n" for old in kept))
