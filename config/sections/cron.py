"""Five-field Linux cron expressions (what KEDA's cron scaler takes), parsed and matched. Pure.

Enough of cron for validation and for the planner's replay, read as KEDA's parser (robfig/cron
v3) reads it: `*`, numbers, ranges `a-b`, lists `a,b`, steps `*/n`, `a-b/n` and `a/n` (from a to
the field's maximum); day of week 0-6, Sunday 0 (7 is rejected, as KEDA rejects it). Names
(`MON`), `?` and the `L`/`W`/`#` extensions are rejected here, so every accepted expression means
the same to both.
"""

from __future__ import annotations

import datetime as dt
import re
import zoneinfo
from dataclasses import dataclass

FIELDS = (("minute", 0, 59), ("hour", 0, 23), ("day of month", 1, 31), ("month", 1, 12), ("day of week", 0, 6))
_PART = re.compile(r"^(\*|\d+(?:-\d+)?)(?:/(\d+))?$")


class CronError(ValueError):
    pass


@dataclass(frozen=True)
class Cron:
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    """0 = Sunday (7 folded into 0)."""
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


def _field(text: str, name: str, low: int, high: int) -> frozenset[int]:
    values: set[int] = set()
    for part in text.split(","):
        match = _PART.match(part)
        if not match:
            raise CronError(f"{name} '{part}' is not a number, range, list or step")
        base, step = match.group(1), int(match.group(2) or 1)
        if step < 1:
            raise CronError(f"{name} step must be at least 1")
        if base == "*":
            start, end = low, high
        elif "-" in base:
            start, end = (int(x) for x in base.split("-"))
        else:
            start = int(base)
            end = high if match.group(2) else start  # `5/15`: from 5 to the maximum, every 15
        if not (low <= start <= high and low <= end <= high) or start > end:
            raise CronError(f"{name} '{part}' is outside {low}-{high}")
        values.update(range(start, end + 1, step))
    return frozenset(values)


def parse(expression: str) -> Cron:
    fields = expression.split()
    if len(fields) != 5:
        raise CronError(f"'{expression}' has {len(fields)} fields; cron takes five: minute hour day-of-month month day-of-week")
    parsed = [_field(text, name, low, high) for text, (name, low, high) in zip(fields, FIELDS, strict=True)]
    weekdays = parsed[4]
    return Cron(parsed[0], parsed[1], parsed[2], parsed[3], weekdays, fields[2] == "*", fields[4] == "*")


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
