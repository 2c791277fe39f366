"""Every rule of the registry has a boundary pair, and each pair holds: the bad case at the limit yields
the rule's problem (its path, its fix, its severity), the good case one step inside yields none."""

from __future__ import annotations

import pytest

from config.checks.registry import RULES
from tests.config.checks.boundaries import Pair, findings, load_pairs

PAIRS = load_pairs()


def test_every_rule_of_the_registry_has_a_boundary_pair() -> None:
    missing = sorted({r.name for r in RULES} - {p.rule for p in PAIRS})
    assert missing == [], "add a boundary pair for each (tests/config/checks/boundaries/<topic>.yaml)"
    assert {p.rule for p in PAIRS} <= {r.name for r in RULES}, "a pair names a rule the registry does not have"


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: f"{p.rule}:{p.limit}")
def test_the_bad_case_at_the_limit_is_found_and_the_good_one_next_to_it_is_not(pair: Pair) -> None:
    bad = [p for p in findings(pair, pair.bad) if p.path.startswith(pair.path)]
    assert bad, f"{pair.rule}: nothing at {pair.path} for the bad case ({pair.limit})"
    assert any(pair.fix in p.message for p in bad), f"{pair.rule}: no '{pair.fix}' in {[p.message for p in bad]}"
    assert all(p.severity == pair.severity for p in bad), [p.severity for p in bad]
    good = [str(p) for p in findings(pair, pair.good) if p.path.startswith(pair.path)]
    assert good == [], f"{pair.rule}: the good case next to the limit ({pair.limit}) is refused"
