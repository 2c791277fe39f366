"""Boundary pairs: for every rule of the registry, the smallest bad input (at the limit) and the nearest
good one (one step inside), each a mutation of a fixture stack's model input (issue 49, item 1).

A rule relaxed by one step (`<` for `<=`, a bound moved) passes a bad input far from the limit, but not
the one at it: the bad case must yield the rule's problem, with its config path and its fix, and the good
case none of that rule's problems. The pairs live by topic, one module per topic of config/checks; a rule
of the registry without a pair fails tests/config/checks/test_boundaries.py."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from config.checks.registry import RULES
from config.errors import Problem
from config.sections.stack import StackConfig
from tests.conftest import stack_data

Mutation = Callable[[dict[str, Any]], object]


@dataclass(frozen=True)
class Pair:
    rule: str
    """The registry name (`<topic>.rule_<name>`)."""
    limit: str
    """The boundary in words: what the bad case is one step past."""
    bad: Mutation
    """The smallest change past the limit."""
    good: Mutation
    """The nearest change inside it."""
    path: str
    """The start of the problem's config path."""
    fix: str
    """A fragment of the problem's text after `Fix:` (or of its message where it has no fix)."""
    stack: str = "minimal-dev"
    severity: str = "error"


_BY_NAME = {r.name: r for r in RULES}


def parsed(d: dict[str, Any]) -> StackConfig:
    """A mutated model input parsed without the registry (for limits read from the derived state)."""
    return StackConfig.model_validate(copy.deepcopy(d))


def findings(pair: Pair, mutate: Mutation) -> list[Problem]:
    """What the pair's rule alone finds on the fixture stack after `mutate` (the model parsed without the
    registry, so another rule's error cannot hide this one's)."""
    data = copy.deepcopy(stack_data(pair.stack))
    mutate(data)
    cfg = StackConfig.model_validate(data)
    return list(_BY_NAME[pair.rule].check(cfg))
