"""The registry is the checks: every rule of the topic modules runs once, in one place, and says what it guards."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import config.checks
from config.checks import registry

# every module of the package is a topic (a new topic's rules are found without listing it here)
TOPICS = tuple(importlib.import_module(f"config.checks.{m.name}") for m in pkgutil.iter_modules(config.checks.__path__) if not m.ispkg)


def test_every_rule_of_every_topic_is_registered_once() -> None:
    written = {
        f"{m.__name__.rsplit('.', 1)[-1]}.{n}"
        for m in TOPICS
        for n, f in inspect.getmembers(m, inspect.isfunction)
        if n.startswith("rule_")
    }
    registered = [r.name for r in registry.RULES]
    assert len(registered) == len(set(registered)), "a rule registered twice reports its problems twice"
    assert set(registered) == written, "a rule missing from the registry never runs"


def test_every_rule_says_what_it_guards_and_what_it_reads() -> None:
    for rule in registry.RULES:
        assert len(rule.guards) > 20, rule.name
        assert inspect.getdoc(rule.check), f"{rule.name} has no docstring naming the fields it checks"
