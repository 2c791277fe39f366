"""Five-field Linux cron expressions (what KEDA's cron scaler and Karpenter's budgets take), parsed and matched. Pure.

Enough of cron for validation and for the planner's replay, read as robfig/cron v3 reads it (KEDA's
cron scaler parses with `cron.NewParser(Minute | Hour | Dom | Month | Dow)`, Karpenter's disruption
budgets with `cron.ParseStandard`): `*`, numbers, month names `jan`-`dec` and day names `sun`-`sat`
in any case (robfig lower-cases a name before its lookup), ranges `a-b`, lists `a,b`, steps `*/n`,
`a-b/n` and `a/n` (from a to the field's maximum; a name may start a step, the step is a number); day
of week 0-6, Sunday 0 (7 is rejected, as robfig rejects it). A field with a `*` part (`*` or `*/1`)
counts as unrestricted when day of month and day of week are combined, as robfig's star bit does.
`?`, `L`/`W`/`#` and time zone prefixes are rejected here, so every accepted expression means the
same to both. `parse_budget` also takes the descriptors Karpenter's NodePool schema admits
(`@yearly` ... `@hourly`, not `@every`).
"""

from __future__ import annotations

import datetime as dt
import re
import zoneinfo
from dataclasses import dataclass

MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
FIELDS: tuple[tuple[str, int, int, dict[str, int]], ...] = (
    ("minute", 0, 59, {}),
    ("hour", 0, 23, {}),
    ("day of month", 1, 31, {}),
    ("month", 1, 12, {n: i for i, n in enumerate(MONTHS, start=1)}),
    ("day of week", 0, 6, {n: i for i, n in enumerate(DAYS)}),
)
_ATOM = r"(?:\d+|[A-Za-z]+)"
_PART = re.compile(rf"^(\*|{_ATOM}(?:-{_ATOM})?)(?:/(\d+))?$")
DESCRIPTORS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
"""robfig/cron v3's parseDescriptor, restricted to the names Karpenter's NodePool schema pattern admits."""


class CronError(ValueError):
    pass


@dataclass(frozen=True)
class Cron:
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    """0 = Sunday."""
    any_day: bool
    any_weekday: bool

    def matches(self, when: dt.datetime) -> bool:
        if when.minute not in self.minutes or when.hour not in self.hours or when.month not in self.months:
            return False
        weekday = (when.weekday() + 1) % 7
        day_ok, weekday_ok = when.day in self.days, weekday in self.weekdays
        if self.any_day or self.any_weekday:  # cron: with one of them restricted, only that one counts
            return day_ok and weekday_ok
        return day_ok or weekday_ok


def _value(atom: str, part: str, name: str, low: int, high: int, names: dict[str, int]) -> int:
    if atom.isdigit():
        return int(atom)
    if not names:
        raise CronError(f"{name} '{part}' is not a number, range, list or step")
    found = names.get(atom.lower())
    if found is None:
        first, last = min(names, key=names.__getitem__), max(names, key=names.__getitem__)
        raise CronError(f"{name} '{part}': '{atom}' is neither a number ({low}-{high}) nor a name ({first}-{last}, any case)")
    return found


def _field(text: str, name: str, low: int, high: int, names: dict[str, int]) -> tuple[frozenset[int], bool]:
    """The field's values, and whether it has robfig's star bit (a `*` part without a step above 1)."""
    values: set[int] = set()
    star = False
    for part in text.split(","):
        match = _PART.match(part)
        if not match:
            kinds = "number, name, range, list or step" if names else "number, range, list or step"
            raise CronError(f"{name} '{part}' is not a {kinds}")
        base, step = match.group(1), int(match.group(2) or 1)
        if step < 1:
            raise CronError(f"{name} step must be at least 1")
        if base == "*":
            start, end = low, high
            star = star or step == 1
        elif "-" in base:
            start, end = (_value(a, part, name, low, high, names) for a in base.split("-"))
        else:
            start = _value(base, part, name, low, high, names)
            end = high if match.group(2) else start  # `5/15`: from 5 to the maximum, every 15
        if not (low <= start <= high and low <= end <= high):
            raise CronError(f"{name} '{part}' is outside {low}-{high}")
        if start > end:
            raise CronError(f"{name} '{part}' runs backwards ({start} > {end}); cron ranges do not wrap: split it into two ranges")
        values.update(range(start, end + 1, step))
    return frozenset(values), star


def parse(expression: str) -> Cron:
    """Five fields, as KEDA's cron scaler reads them (no descriptors)."""
    fields = expression.split()
    if len(fields) != 5:
        raise CronError(f"'{expression}' has {len(fields)} fields; cron takes five: minute hour day-of-month month day-of-week")
    parsed = [_field(text, name, low, high, names) for text, (name, low, high, names) in zip(fields, FIELDS, strict=True)]
    (minutes, _), (hours, _), (days, any_day), (months, _), (weekdays, any_weekday) = parsed
    return Cron(minutes, hours, days, months, weekdays, any_day, any_weekday)


def parse_budget(expression: str) -> Cron:
    """A Karpenter disruption budget's schedule (in UTC): five fields, or one of `DESCRIPTORS`
    (robfig/cron v3's `ParseStandard`, behind the NodePool schema's pattern)."""
    if expression.startswith("@"):
        five = DESCRIPTORS.get(expression.rstrip())
        if five is None:
            raise CronError(f"'{expression}' is not a descriptor Karpenter takes: use one of {', '.join(DESCRIPTORS)}")
        return parse(five)
    return parse(expression)


WEEK_MINUTES = 7 * 24 * 60


def active_minutes(start: Cron, end: Cron, begin: dt.datetime, minutes: int, timezone: str = "UTC") -> list[bool]:
    """Per minute from `begin` (UTC): inside the window that opens when `start` matches and closes
    when `end` matches, in the schedule's time zone (KEDA's cron scaler), carried over from the
    week before `begin`."""
    zone = zoneinfo.ZoneInfo(timezone)
    utc = begin.replace(tzinfo=dt.UTC)
    state = False
    out: list[bool] = []
    for i in range(-WEEK_MINUTES, minutes):
        when = (utc + dt.timedelta(minutes=i)).astimezone(zone)
        if end.matches(when):
            state = False
        if start.matches(when):
            state = True
        if i >= 0:
            out.append(state)
    return out
