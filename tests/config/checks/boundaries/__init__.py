"""Boundary pairs: for every rule of the registry, the smallest bad input (at the limit) and the nearest
good one (one step inside), each a mutation of a fixture stack's model input (issue 49, item 1).

A rule relaxed by one step (`<` for `<=`, a bound moved) passes a bad input far from the limit, but not
the one at it: the bad case must yield the rule's problem, with its config path and its fix, and the good
case none of that rule's problems. The pairs live by topic, one table per topic of config/checks
(`<topic>.yaml` beside this file); the mutations they name live in `<topic>.py` (and the generic ones in
edits.py). A rule of the registry without a pair fails tests/config/checks/test_boundaries.py.

A table entry:

    - rule: fit.rule_fit                       # the registry name
      limit: "resources.cpu 1m above ..."      # the boundary in words
      bad: {resource_request: [cpu, 1]}        # the mutation past the limit
      good: {resource_request: [cpu, 0]}       # the nearest one inside it
      path: "models[llama-3-1-8b].resources"
      fix: "lower resources or add larger instance types to the pool"
      stack: full-prod                         # optional, minimal-dev by default
      severity: warning                        # optional, error by default

`bad` and `good` map registered mutation names to their arguments (a list: positional, a mapping: keyword),
applied in the order written. `${name}` in any string stands for a value a topic module registers with
`values(...)` (a figure of the code under test, so the pair follows it; `$$` for a dollar sign). An unknown key, mutation, argument or
value fails the load, and so does a registered mutation or value that no entry uses."""

from __future__ import annotations

import copy
import importlib
import inspect
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Any, TypeVar

import yaml

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


# -- what the tables may name ------------------------------------------------------------------------------

Step = TypeVar("Step", bound=Callable[..., None])

MUTATIONS: dict[str, Callable[..., None]] = {}
"""A mutation by name: called with the model input, then the table's arguments."""
VALUES: dict[str, object] = {}
"""What `${name}` stands for in a table's strings."""


def mutation(step: Step) -> Step:
    """Register `step(d, *args, **kwargs)` under its function name, for the tables to name."""
    if step.__name__ in MUTATIONS:
        raise ValueError(f"two boundary mutations are named {step.__name__}")
    MUTATIONS[step.__name__] = step
    return step


def values(**named: object) -> None:
    """Register what `${name}` stands for in the tables."""
    if clash := sorted(named.keys() & VALUES.keys()):
        raise ValueError(f"boundary values registered twice: {clash}")
    VALUES.update(named)


# -- the tables ------------------------------------------------------------------------------------------

_REQUIRED = ("rule", "limit", "bad", "good", "path", "fix")
_OPTIONAL = ("stack", "severity")


class _UniqueKeys(yaml.SafeLoader):
    """yaml.safe_load, but a key written twice in one mapping fails (PyYAML keeps the last silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        keys = [self.construct_object(k, deep=deep) for k, _ in node.value]
        if repeated := sorted({str(k) for k in keys if keys.count(k) > 1}):
            raise yaml.constructor.ConstructorError(None, None, f"repeated keys {repeated}", node.start_mark)
        return super().construct_mapping(node, deep=deep)


@dataclass
class _Used:
    mutations: set[str]
    values: set[str]


def _filled(value: Any, where: str, used: _Used) -> Any:
    """`value` with `${name}` in its strings (keys included) replaced by the registered values."""
    if isinstance(value, str):
        template = Template(value)
        try:
            filled = template.substitute(VALUES)
        except KeyError as e:
            raise ValueError(f"{where}: no value for {e} in {value!r} (registered: {sorted(VALUES)})") from e
        except ValueError as e:
            raise ValueError(f"{where}: {e} in {value!r} (write $$ for a dollar sign)") from e
        used.values.update(template.get_identifiers())
        return filled
    if isinstance(value, list):
        return [_filled(v, where, used) for v in value]
    if isinstance(value, dict):
        return {_filled(k, where, used): _filled(v, where, used) for k, v in value.items()}
    return value


def _mutation(spec: Any, where: str, used: _Used) -> Mutation:
    """The mutation a table's `bad` or `good` describes: its steps, each checked against its signature."""
    if not isinstance(spec, dict) or not spec:
        raise ValueError(f"{where}: a mapping of mutation names to arguments, not {spec!r}")
    steps: list[tuple[Callable[..., None], list[Any], dict[str, Any]]] = []
    for name, arguments in spec.items():
        if name not in MUTATIONS:
            raise ValueError(f"{where}: no mutation named {name!r} (registered: {sorted(MUTATIONS)})")
        if not isinstance(arguments, list | dict):
            raise ValueError(f"{where}: {name}'s arguments are a list or a mapping, not {arguments!r}")
        args, kwargs = (arguments, {}) if isinstance(arguments, list) else ([], arguments)
        step = MUTATIONS[name]
        try:
            inspect.signature(step).bind({}, *args, **kwargs)
        except TypeError as e:
            raise ValueError(f"{where}: {name}{inspect.signature(step)} does not take {arguments!r}: {e}") from e
        used.mutations.add(name)
        steps.append((step, args, kwargs))

    def mutate(d: dict[str, Any]) -> None:
        for step, args, kwargs in steps:
            step(d, *copy.deepcopy(args), **copy.deepcopy(kwargs))  # the table's objects never enter the input

    return mutate


def _pair(entry: Any, where: str, used: _Used) -> Pair:
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: a mapping, not {entry!r}")
    unknown = sorted(entry.keys() - {*_REQUIRED, *_OPTIONAL})
    missing = [k for k in _REQUIRED if k not in entry]
    if unknown or missing:
        raise ValueError(f"{where}: unknown keys {unknown}, missing keys {missing}")
    entry = _filled(entry, where, used)
    texts = {k: entry[k] for k in (*_REQUIRED, *_OPTIONAL) if k in entry and k not in ("bad", "good")}
    if not_text := sorted(k for k, v in texts.items() if not isinstance(v, str)):
        raise ValueError(f"{where}: {not_text} must be strings")
    where = f"{where} ({entry['rule']}: {entry['limit']})"
    return Pair(bad=_mutation(entry["bad"], f"{where} bad", used), good=_mutation(entry["good"], f"{where} good", used), **texts)


def load_pairs() -> list[Pair]:
    """Every table's pairs, in the order of the tables' names and then as written."""
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")
    used = _Used(set(), set())
    pairs: list[Pair] = []
    for table in sorted(Path(__file__).parent.glob("*.yaml")):
        entries = yaml.load(table.read_text(), Loader=_UniqueKeys)  # a SafeLoader
        if not isinstance(entries, list):
            raise ValueError(f"{table.name}: a list of pairs")
        pairs += [_pair(entry, f"{table.name} entry {i}", used) for i, entry in enumerate(entries, 1)]
    if unused := sorted(MUTATIONS.keys() - used.mutations) + [f"${{{v}}}" for v in sorted(VALUES.keys() - used.values)]:
        raise ValueError(f"boundary mutations or values no table names: {unused}")
    return pairs
