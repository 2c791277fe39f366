"""Cron as robfig/cron v3 reads it: KEDA's cron scaler (five fields, no descriptors) and Karpenter's
disruption budgets (five fields in UTC, or a descriptor). Names of months and days in any case, in
ranges, lists and as the start of a step; a table of refused expressions with their exact messages."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from config.sections import cron
from tests.conftest import new_problems_after
from tests.support.mutations import m0, p0

ACCEPTED = {
    "0 8 * * mon-fri": {"weekdays": {1, 2, 3, 4, 5}},
    "0 8 * * MON-FRI": {"weekdays": {1, 2, 3, 4, 5}},
    "0 8 * * Mon,Wed,fri": {"weekdays": {1, 3, 5}},
    "0 8 * * sun": {"weekdays": {0}},
    "0 8 * * 1-fri": {"weekdays": {1, 2, 3, 4, 5}},
    "0 8 * * mon/2": {"weekdays": {1, 3, 5}},
    "0 8 * * sun-sat/3": {"weekdays": {0, 3, 6}},
    "0 0 1 JAN *": {"months": {1}},
    "0 0 1 jan-mar,Oct *": {"months": {1, 2, 3, 10}},
    "0 0 1 feb/5 *": {"months": {2, 7, 12}},
    "*/15 9-17 * * 1-5": {"minutes": {0, 15, 30, 45}, "hours": set(range(9, 18))},
}

REFUSED = {
    "0 8 * * monday": "day of week 'monday': 'monday' is neither a number (0-6) nor a name (sun-sat, any case)",
    "0 8 * * mon-fry": "day of week 'mon-fry': 'fry' is neither a number (0-6) nor a name (sun-sat, any case)",
    "0 0 1 january *": "month 'january': 'january' is neither a number (1-12) nor a name (jan-dec, any case)",
    "0 8 * * jan": "day of week 'jan': 'jan' is neither a number (0-6) nor a name (sun-sat, any case)",
    "0 0 1 mon *": "month 'mon': 'mon' is neither a number (1-12) nor a name (jan-dec, any case)",
    "0 mon * * *": "hour 'mon' is not a number, range, list or step",
    "0 8 * * fri-mon": "day of week 'fri-mon' runs backwards (5 > 1); cron ranges do not wrap: split it into two ranges",
    "0 8 * * mon/tue": "day of week 'mon/tue' is not a number, name, range, list or step",
    "0 8 * * 7": "day of week '7' is outside 0-6",
    "0 8 * * ?": "day of week '?' is not a number, name, range, list or step",
    "0 8 * * mon#1": "day of week 'mon#1' is not a number, name, range, list or step",
    "@daily": "'@daily' has 1 fields; cron takes five: minute hour day-of-month month day-of-week",
}


@pytest.mark.parametrize("expression", sorted(ACCEPTED))
def test_accepted(expression: str) -> None:
    parsed = cron.parse(expression)
    for field, values in ACCEPTED[expression].items():
        assert getattr(parsed, field) == frozenset(values), field
    assert cron.parse_budget(expression) == parsed  # Karpenter's parser reads five fields the same


def test_names_in_their_own_fields_only_together() -> None:
    assert cron.parse("0 8 * jan mon") == cron.parse("0 8 * 1 1")


@pytest.mark.parametrize("expression", sorted(REFUSED))
def test_refused(expression: str) -> None:
    with pytest.raises(cron.CronError) as err:
        cron.parse(expression)
    assert str(err.value) == REFUSED[expression]


@pytest.mark.parametrize(("descriptor", "five"), sorted(cron.DESCRIPTORS.items()))
def test_karpenter_descriptors(descriptor: str, five: str) -> None:
    assert cron.parse_budget(descriptor) == cron.parse(five)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        (
            "@every 1h",
            "'@every 1h' is not a descriptor Karpenter takes: use one of @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly",
        ),
        (
            "@DAILY",
            "'@DAILY' is not a descriptor Karpenter takes: use one of @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly",
        ),
        (
            "@reboot",
            "'@reboot' is not a descriptor Karpenter takes: use one of @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly",
        ),
    ],
)
def test_karpenter_refuses_other_descriptors(expression: str, message: str) -> None:
    with pytest.raises(cron.CronError) as err:
        cron.parse_budget(expression)
    assert str(err.value) == message


def test_a_star_part_makes_the_day_field_unrestricted_as_robfig_star_bit() -> None:
    monday_the_5th = dt.datetime(2026, 1, 5, 8, 0)
    # `*/1` and a list with `*` carry robfig's star bit: day of week alone decides (AND), not either (OR)
    assert not cron.parse("0 8 */1 * 2").matches(monday_the_5th)
    assert not cron.parse("0 8 *,3 * 2").matches(monday_the_5th)
    # `*/2` does not: the 5th (odd day) matches day of month, so either field is enough
    assert cron.parse("0 8 */2 * 2").matches(monday_the_5th)


_DAY = st.sampled_from(list(enumerate(cron.DAYS)))
_MONTH = st.sampled_from(list(enumerate(cron.MONTHS, start=1)))
_CASE = st.sampled_from([str.lower, str.upper, str.capitalize])


@given(a=_DAY, b=_DAY, case=_CASE, step=st.integers(1, 7))
def test_a_day_name_and_its_number_parse_to_the_same_set(a: tuple[int, str], b: tuple[int, str], case, step: int) -> None:  # type: ignore[no-untyped-def]
    (i, x), (j, y) = sorted([a, b])
    assert cron.parse(f"0 8 * * {case(x)}") == cron.parse(f"0 8 * * {i}")
    assert cron.parse(f"0 8 * * {case(x)}-{case(y)}/{step}") == cron.parse(f"0 8 * * {i}-{j}/{step}")
    assert cron.parse(f"0 8 * * {case(x)},{case(y)}") == cron.parse(f"0 8 * * {i},{j}")
    assert cron.parse(f"0 8 * * {case(x)}/{step}") == cron.parse(f"0 8 * * {i}/{step}")


@given(a=_MONTH, b=_MONTH, case=_CASE, step=st.integers(1, 12))
def test_a_month_name_and_its_number_parse_to_the_same_set(a: tuple[int, str], b: tuple[int, str], case, step: int) -> None:  # type: ignore[no-untyped-def]
    (i, x), (j, y) = sorted([a, b])
    assert cron.parse(f"0 0 1 {case(x)} *") == cron.parse(f"0 0 1 {i} *")
    assert cron.parse(f"0 0 1 {case(x)}-{case(y)}/{step} *") == cron.parse(f"0 0 1 {i}-{j}/{step} *")
    assert cron.parse(f"0 0 1 {case(x)},{case(y)} *") == cron.parse(f"0 0 1 {i},{j} *")


# Through the stack file: KEDA schedules and Karpenter budget schedules, with their paths and fixes.


def _schedule(start: str, end: str):  # type: ignore[no-untyped-def]
    return lambda d: m0(d).update(replicas={"min": 1, "max": 3}, autoscaling={"schedules": [{"start": start, "end": end, "replicas": 2}]})


def test_a_keda_schedule_with_names_is_accepted_and_compared() -> None:
    assert new_problems_after(_schedule("0 8 * * mon-fri", "0 18 * * MON-FRI")) == []
    # the same window in names and in numbers: the overlap rule sees one window twice
    both = lambda d: m0(d).update(  # noqa: E731
        replicas={"min": 1, "max": 3},
        autoscaling={
            "schedules": [
                {"start": "0 8 * * mon-fri", "end": "0 18 * * mon-fri", "replicas": 2},
                {"start": "0 8 * * 1-5", "end": "0 18 * * 1-5", "replicas": 3},
            ]
        },
    )
    assert new_problems_after(both) == [
        "models[llama-3-1-8b].autoscaling.schedules[1]: opens and closes with schedules[0] all week, so one of the two floors "
        "never counts (2 and 3 replicas). Fix: remove one"
    ]


def test_a_keda_schedule_with_an_unknown_name_is_refused() -> None:
    assert new_problems_after(_schedule("0 8 * * monday", "0 18 * * fri")) == [
        "models[llama-3-1-8b].autoscaling.schedules[0].start: '0 8 * * monday' is not a cron expression KEDA takes: day of "
        "week 'monday': 'monday' is neither a number (0-6) nor a name (sun-sat, any case). Fix: write five fields, e.g. `0 8 * * mon-fri`"
    ]


def _budget(schedule: str):  # type: ignore[no-untyped-def]
    return lambda d: p0(d).update(disruption={"budgets": [{"nodes": "0", "schedule": schedule, "duration": "8h"}, {"nodes": "1"}]})


@pytest.mark.parametrize("schedule", ["0 9 * * mon-fri", "0 9 * * MON-FRI", "0 0 1 jan,jul *", "@daily", "@weekly", "@annually"])
def test_budget_schedules_karpenter_takes(schedule: str) -> None:
    assert new_problems_after(_budget(schedule)) == []


@pytest.mark.parametrize(
    ("schedule", "why"),
    [
        ("0 9 * * 7", "day of week '7' is outside 0-6"),
        ("0 9 * *", "'0 9 * *' has 4 fields; cron takes five: minute hour day-of-month month day-of-week"),
        (
            "@every 1h",
            "'@every 1h' is not a descriptor Karpenter takes: use one of @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly",
        ),
        (
            "CRON_TZ=Europe/Berlin 0 9 * * *",
            "'CRON_TZ=Europe/Berlin 0 9 * * *' has 6 fields; cron takes five: minute hour day-of-month month day-of-week",
        ),
        ("0 25 * * *", "hour '25' is outside 0-23"),
    ],
)
def test_budget_schedules_karpenter_refuses(schedule: str, why: str) -> None:
    pool = "gpuPools[gpu-l4-a10g].disruption.budgets[0].schedule"
    assert new_problems_after(_budget(schedule)) == [
        f"{pool}: '{schedule}' is not a schedule Karpenter takes: {why}. Fix: write five fields in UTC, e.g. "
        "`0 22 * * mon-fri`, or a descriptor such as @daily"
    ]


def test_the_planner_floors_read_names_as_numbers() -> None:
    from planner import simulate
    from tests.conftest import DEV, parse, stack_data

    def floors(start: str, end: str) -> list[int]:
        data = stack_data(DEV)
        _schedule(start, end)(data)
        cfg = parse(data)
        return simulate.floors(cfg.models[0], 7 * 24 * 3600)

    named = floors("30 8 * * Mon-Fri", "0 18 * * mon-fri")
    assert named == floors("30 8 * * 1-5", "0 18 * * 1-5")
    assert sum(1 for f in named if f == 2) == 5 * (9 * 60 + 30)  # five days of 08:30-18:00
