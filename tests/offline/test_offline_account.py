"""The offline account travels explicitly: the harness hands it to the program run, the loader
returns it, preflight takes it. No module keeps it, so nothing of one run leaks into the next."""

from __future__ import annotations

from pathlib import Path

import pytest

from components import account
from config import load as config_load
from config.errors import ConfigError
from offline import harness
from tests.conftest import PROD, fixture_input, parse, stack_data

PLACEHOLDER = "a placeholder"


def test_no_module_of_the_loader_holds_an_account() -> None:
    assert not any(isinstance(v, config_load.OfflineAccount) for v in vars(config_load).values())
    assert not hasattr(config_load, "OFFLINE_ACCOUNT")


def test_only_the_harness_key_with_an_account_makes_a_run_offline(tmp_path: Path) -> None:
    answers = config_load.OfflineAccount(tmp_path / "account.yaml", authoritative=True)
    assert config_load.offline_account({config_load.PROGRAM_GLOBAL: answers}) is answers
    # what a real `pulumi up` hands the program: its own globals, without the key
    assert config_load.offline_account({"__name__": "__main__", "__file__": "__main__.py"}) is None
    assert config_load.offline_account({config_load.PROGRAM_GLOBAL: str(answers.path)}) is None


def test_the_harness_names_the_default_file_unless_the_stack_brings_its_own(tmp_path: Path) -> None:
    inp = fixture_input(PROD)
    assert harness.offline_account(inp) == config_load.OfflineAccount(harness.DEFAULT_ACCOUNT, authoritative=False)
    inp.account = tmp_path / "mine.yaml"
    assert harness.offline_account(inp) == config_load.OfflineAccount(tmp_path / "mine.yaml", authoritative=True)


def test_an_offline_run_leaves_no_offline_state_behind() -> None:
    inp = fixture_input(PROD)
    result = harness.run(inp)  # offline: the prod fixture's placeholders are warnings, the run completes
    assert result.outputs["models"]
    assert any(PLACEHOLDER in line for line in result.logs)
    # the engine's config is still the stack's; validated without the harness's answers it is a real run
    with pytest.raises(ConfigError) as raised:
        config_load.validate()
    assert len([p for p in raised.value.errors if PLACEHOLDER in p.message]) == 10  # with the four image digests
    _, _, _, warnings = config_load.validate(harness.offline_account(inp))
    assert len([w for w in warnings if PLACEHOLDER in w.message]) == 10


def test_the_loader_returns_the_account_it_was_given() -> None:
    inp = fixture_input(PROD)
    harness.apply_config(inp)
    answers = harness.offline_account(inp)
    assert config_load.load(answers).offline is answers


def test_preflight_reads_the_account_file_it_is_given(tmp_path: Path) -> None:
    cfg = parse(stack_data(PROD))
    default = account.answers(cfg, harness.offline_account(fixture_input(PROD)))
    assert not default.authoritative
    assert default.account.region == cfg.region
    mine = tmp_path / "account.yaml"
    mine.write_text(harness.DEFAULT_ACCOUNT.read_text())
    own = account.answers(cfg, config_load.OfflineAccount(mine, authoritative=True))
    assert own.authoritative
    assert own.account.quotas == default.account.quotas
