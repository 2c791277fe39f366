"""Validator branches that no other bad input reaches first (mutation audit 2026-12-01, M13 and O5):
each case sets everything else right, so only the branch under test can refuse it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import new_problems_after
from tests.support.mutations import m0

PUBLIC = ["198.51.100.0/24"]


def test_an_internet_facing_alb_with_an_allow_list_but_no_certificate_is_refused() -> None:
    # the allow-list is set (the other internet-facing check passes), so only the certificate branch can refuse it
    assert new_problems_after(lambda d: d.update(ingress={"scheme": "internet-facing", "allowedCidrs": PUBLIC})) == [
        "ingress: scheme is internet-facing without certificateArn; prompts and API keys would cross the internet in "
        "clear text. Fix: set ingress.certificateArn to an ACM certificate for the domain"
    ]


def test_the_same_alb_with_its_certificate_passes_that_branch() -> None:
    arn = "arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
    found = new_problems_after(lambda d: d.update(ingress={"scheme": "internet-facing", "allowedCidrs": PUBLIC, "certificateArn": arn}))
    assert not any("without certificateArn" in p for p in found)


@pytest.mark.parametrize(("grace", "refused"), [(59, True), (60, True), (61, False)])
def test_the_grace_period_must_exceed_the_drain_exactly(grace: int, refused: bool) -> None:
    """preStop 15 + shutdown 45 = 60: a grace period of exactly 60 SIGKILLs the last streams (the edge the
    audit's off-by-one mutation moved), 61 is the first that holds."""

    def mutate(d: dict[str, Any]) -> None:
        m0(d)["drain"] = {"preStopSleepSeconds": 15, "shutdownTimeoutSeconds": 45, "terminationGracePeriodSeconds": grace}

    found = new_problems_after(mutate)
    if not refused:
        assert found == []
        return
    assert found == [
        f"models[llama-3-1-8b].drain: terminationGracePeriodSeconds ({grace}) must exceed preStopSleepSeconds + "
        "shutdownTimeoutSeconds (15 + 45 = 60), or streams are SIGKILLed mid-response. Fix: raise "
        "terminationGracePeriodSeconds to at least 65"
    ]
