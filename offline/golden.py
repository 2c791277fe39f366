"""`make golden`: render every fixture stack into its golden tree and record its resource names.

    python -m offline.golden --write [--accept-removals]   regenerate tests/golden/
    python -m offline.golden                                exit 1 if anything is stale

Fixture stacks are the files directly under tests/fixtures/stacks/. Each renders, as
`make render` would, into tests/golden/render/<fixture>/ (resources.json, manifests/, helm/,
outputs.json), which the tests compare byte for byte, and records its resource identities in
tests/golden/names/<fixture>.txt. Writing refuses to drop an identity that no resource aliases
(see offline/names.py) unless --accept-removals says the removal is deliberate.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from offline import harness, names, render

FIXTURES = harness.ROOT / "tests" / "fixtures" / "stacks"
GOLDEN = harness.ROOT / "tests" / "golden"
TREES = GOLDEN / "render"
NAMES = GOLDEN / "names"


def fixtures() -> dict[str, Path]:
    """Fixture stack files by name (the file name without .yaml)."""
    return {p.stem: p for p in sorted(FIXTURES.glob("*.yaml"))}


def run(name: str) -> harness.RunResult:
    return harness.run(harness.stack_input(name, fixtures()[name]))


def tree(folder: Path) -> dict[str, bytes]:
    """Every file under folder, by relative path."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def rendered_tree(result: harness.RunResult) -> dict[str, bytes]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "tree"
        render.write(result, out)
        return tree(out)


def stale(name: str, result: harness.RunResult) -> list[str]:
    """What differs between the committed golden tree of a fixture and its render now."""
    golden = tree(TREES / name) if (TREES / name).exists() else {}
    now = rendered_tree(result)
    return sorted(path for path in golden.keys() | now.keys() if golden.get(path) != now.get(path))


def write(name: str, result: harness.RunResult, accept_removals: bool) -> list[str]:
    """Regenerate one fixture's golden tree and name snapshot; the name guard's errors if refused."""
    snapshot = NAMES / f"{name}.txt"
    if snapshot.exists():
        check = names.compare(names.read_snapshot(snapshot), result.registrations)
        if (check.removed or check.dropped_aliases) and not accept_removals:
            return [e for e in check.errors(name) if "Fix: run `make golden`" not in e]
    target = TREES / name
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        staging = Path(tmp) / name
        render.write(result, staging)
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    names.write_snapshot(snapshot, result.registrations)
    return []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="regenerate the golden trees and name snapshots")
    parser.add_argument("--accept-removals", action="store_true", help="with --write: allow identities to disappear without an alias")
    args = parser.parse_args(argv)
    problems: list[str] = []
    known = fixtures()
    for name in known:
        result = run(name)
        if args.write:
            problems += write(name, result, args.accept_removals)
        else:
            problems += [f"{name}: {path} differs from the render" for path in stale(name, result)]
            snapshot = NAMES / f"{name}.txt"
            problems += names.compare(names.read_snapshot(snapshot) if snapshot.exists() else [], result.registrations).errors(name)
    if args.write:
        for folder in [*TREES.glob("*"), *NAMES.glob("*.txt")]:
            if folder.stem not in known:  # a fixture that was removed
                shutil.rmtree(folder) if folder.is_dir() else folder.unlink()
    for problem in problems:
        print(problem, file=sys.stderr)
    if not problems:
        print(f"{'Wrote' if args.write else 'Checked'} {len(known)} fixture stacks: {', '.join(known)}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
