"""rule_gpu_limits' narrowing of a family pool (config/checks/fit.py `_narrowing`, `_holds`) at its limit: the
narrower gpuCounts are offered when they hold the peak exactly, and not one GPU short of it."""

from __future__ import annotations

import copy

from config.checks.fit import rule_gpu_limits
from config.sections.stack import StackConfig
from tests.conftest import DEV, stack_data


def _fixes(limit: int) -> list[str]:
    d = copy.deepcopy(stack_data(DEV))
    pool = d["gpuPools"][0]
    pool.pop("instanceTypes")
    pool |= {"instanceFamilies": ["g6"], "gpuLimit": limit}
    return [p.message[p.message.index("Fix:") :] for p in rule_gpu_limits(StackConfig.model_validate(d))]


def test_the_narrowing_is_offered_exactly_at_the_limit_it_holds() -> None:
    # minimal-dev's model at max 3 plus a surge of 1, one GPU each on g6's 1-GPU sizes: 4 GPUs exactly
    (at_limit,) = _fixes(4)
    assert at_limit.startswith("Fix: set gpuCounts: [1, 4]")
    (short,) = _fixes(3)
    assert short.startswith("Fix: raise gpuLimit to at least 8")
    assert _fixes(8) == []
