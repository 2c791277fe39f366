"""Traffic to replay: a daily profile per model (YAML) or a recorded trace (CSV). Pure.

Profile (`traffic/*.yaml`):

    description: what the day looks like and where the numbers come from
    timezone: America/New_York           # the clock the hours are on (IANA name; default UTC)
    models:
      <model name>:                      # one entry for a stack with one model may use any name
        ratePerMinute: [[0, 4], [8, 180], [18, 180], [22, 4], [24, 4]]   # hour of day -> requests/min, linear between
        promptTokens: {mean: 512, sigma: 0.6}    # lognormal with this mean; sigma of the log
        outputTokens: {mean: 256, sigma: 0.6}

The hours are on the profile's clock, as a stack's `schedules` name theirs: a New York business day
and a New York schedule line up in the replay whatever the season (the replay starts on
REPLAY_START, a Monday at 00:00 UTC). Arrivals are Poisson at the curve's rate, drawn per second from one seeded generator, so the same
profile and seed give the same requests. Trace (`.csv`): timestamp (seconds from the start, or
ISO 8601), model, prompt tokens, output tokens.
"""

from __future__ import annotations

import csv
import datetime as dt
import math
import zlib
import zoneinfo
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml
from pydantic import Field, model_validator

from config.sections.base import ConfigModel
from config.sections.types import config_error

DAY_SECONDS = 86_400
REPLAY_START = dt.datetime(2026, 1, 5)
"""Replays start on a Monday at 00:00 UTC; profiles and schedules are read on their own clocks from there."""


class TokenLengths(ConfigModel):
    """A token-length distribution: lognormal with this mean."""

    mean: float = Field(gt=0, le=1_000_000, description="Mean tokens.")
    sigma: float = Field(default=0.6, ge=0, le=3, description="Standard deviation of log(tokens); 0 makes every request the mean.")


class SharedPrefix(ConfigModel):
    """The part of each prompt that other requests share (a system prompt, earlier turns of a chat)."""

    share: float = Field(default=0.0, ge=0, lt=1, description="Share of the mean prompt that is a shared prefix (0: none).")
    groups: int = Field(
        default=256,
        ge=1,
        le=100_000,
        description="Distinct prefixes requests draw from, uniformly (default: a chat service's conversations in flight, assumed).",
    )


class ModelTraffic(ConfigModel):
    """One model's day."""

    rate_per_minute: list[list[float]] = Field(min_length=2, description="[hour of day, requests per minute] points.")
    prompt_tokens: TokenLengths
    output_tokens: TokenLengths
    shared_prefix: SharedPrefix = Field(default_factory=SharedPrefix, description="Shared prompt prefixes (none by default).")

    @model_validator(mode="after")
    def _curve(self) -> ModelTraffic:
        if any(len(point) != 2 for point in self.rate_per_minute):
            raise config_error("each ratePerMinute point is [hour, requests per minute]", "write points as [8, 180]")
        hours = [h for h, _ in self.rate_per_minute]
        if hours[0] != 0 or hours[-1] != 24 or hours != sorted(hours):
            raise config_error("ratePerMinute must run from hour 0 to hour 24 in order", "start at [0, r] and end at [24, r]")
        if any(r < 0 for _, r in self.rate_per_minute):
            raise config_error("ratePerMinute has a negative rate", "use 0 or more requests per minute")
        return self

    def rate_per_second(self, seconds: np.ndarray, timezone: str = "UTC") -> np.ndarray:
        """Requests per second at these seconds of the replay, the curve read on the `timezone` clock."""
        hours, rates = zip(*self.rate_per_minute, strict=True)
        hour_of_day = (local_seconds(seconds, timezone) % DAY_SECONDS) / 3600.0
        rate: np.ndarray = np.interp(hour_of_day, hours, rates) / 60.0
        return rate


def _zone(name: str) -> zoneinfo.ZoneInfo:
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as err:
        raise ValueError(f"unknown time zone {name!r}: use an IANA name such as UTC or America/New_York") from err


def local_seconds(seconds: np.ndarray, timezone: str) -> np.ndarray:
    """Seconds of the replay shifted by the `timezone` clock's UTC offset at each (the offset read
    once per hour of the replay, so a DST change lands within its hour): their remainder by a day is
    the time of day on that clock, since the replay starts at 00:00 UTC."""
    if timezone == "UTC" or not len(seconds):
        return seconds
    zone = _zone(timezone)
    start = REPLAY_START.replace(tzinfo=dt.UTC)
    hours = int(np.max(seconds) // 3600) + 1
    offsets = np.array([(start + dt.timedelta(hours=h)).astimezone(zone).utcoffset().total_seconds() for h in range(hours)])  # type: ignore[union-attr]
    local: np.ndarray = seconds + offsets[(seconds // 3600).astype(np.int64)]
    return local


class Profile(ConfigModel):
    """A traffic profile file."""

    description: str = Field(default="", description="What the day is and where its numbers come from.")
    timezone: str = Field(default="UTC", description="The clock the profile's hours are on (an IANA name, as in a schedule).")
    models: dict[str, ModelTraffic] = Field(min_length=1, description="Traffic per model name.")

    @model_validator(mode="after")
    def _known_zone(self) -> Profile:
        try:
            _zone(self.timezone)
        except ValueError as err:
            raise config_error(str(err), "name the zone your traffic's hours are on, e.g. Europe/Berlin") from err
        return self


@dataclass(frozen=True)
class Requests:
    """Every request of one model, in arrival order."""

    arrival: np.ndarray
    """Seconds from the start of the replay."""
    prompt: np.ndarray
    output: np.ndarray
    prefix_group: np.ndarray | None = None
    """By request, which shared prefix its prompt starts with (-1: none); None: no request shares one."""
    prefix_tokens: np.ndarray | None = None
    """By request, the tokens of that prefix (never the whole prompt)."""

    def __len__(self) -> int:
        return len(self.arrival)

    def shared(self) -> bool:
        return self.prefix_group is not None and self.prefix_tokens is not None


def with_prefix(requests: Requests, prefix: SharedPrefix, rng: np.random.Generator) -> Requests:
    """The requests with `prefix.share` of the mean prompt drawn from `prefix.groups` shared prefixes
    (each prompt keeps at least one token of its own)."""
    if prefix.share <= 0 or not len(requests):
        return Requests(requests.arrival, requests.prompt, requests.output)
    length = max(1, round(prefix.share * float(requests.prompt.mean())))
    groups = rng.integers(0, prefix.groups, len(requests))
    tokens = np.minimum(length, requests.prompt - 1)
    return Requests(requests.arrival, requests.prompt, requests.output, np.where(tokens > 0, groups, -1), np.maximum(tokens, 0))


def load_profile(path: Path) -> Profile:
    return Profile.model_validate(yaml.safe_load(path.read_text()))


def for_models(profile: Profile, names: list[str]) -> dict[str, ModelTraffic]:
    """The profile's entry for each model; one entry serves a stack's single model whatever its name."""
    if len(profile.models) == 1 and len(names) == 1:
        return {names[0]: next(iter(profile.models.values()))}
    unknown = sorted(set(profile.models) - set(names))
    if unknown:
        raise ValueError(f"traffic for {', '.join(unknown)}, which the stack does not serve (it serves {', '.join(names)})")
    return {n: profile.models[n] for n in names if n in profile.models}


def stream(seed: int, name: str) -> np.random.Generator:
    """A random stream of its own for one model (or pool), from the seed and a stable hash of its name."""
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def trace_days(path: Path) -> float:
    """The span of a CSV trace in days (at least one second)."""
    spans = [float(r.arrival.max()) for r in load_trace(path, ["*"]).values() if len(r)]
    return max(1.0, math.ceil(max(spans, default=0.0)) + 1) / DAY_SECONDS


def _lengths(rng: np.random.Generator, spec: TokenLengths, n: int) -> np.ndarray:
    if spec.sigma == 0:
        return np.full(n, max(1, round(spec.mean)), dtype=np.int64)
    mu = np.log(spec.mean) - spec.sigma**2 / 2  # the lognormal's mean is then spec.mean
    return np.maximum(1, np.rint(rng.lognormal(mu, spec.sigma, n))).astype(np.int64)


def generate(traffic: ModelTraffic, seconds: int, rng: np.random.Generator, timezone: str = "UTC") -> Requests:
    """Poisson arrivals per second at the profile's rate (its hours on `timezone`), spread uniformly inside each second."""
    t = np.arange(seconds, dtype=np.float64)
    counts = rng.poisson(traffic.rate_per_second(t, timezone))
    starts = np.repeat(t, counts)
    arrival = np.sort(starts + rng.random(len(starts)))  # in arrival order within each second too
    plain = Requests(arrival, _lengths(rng, traffic.prompt_tokens, len(starts)), _lengths(rng, traffic.output_tokens, len(starts)))
    # drawn last, so a profile without shared prefixes gives the requests it always gave
    return with_prefix(plain, traffic.shared_prefix, rng)


def load_trace(path: Path, names: list[str]) -> dict[str, Requests]:
    """A CSV trace: timestamp, model, prompt tokens, output tokens (a header row is skipped)."""
    rows: dict[str, list[tuple[float, int, int]]] = {n: [] for n in names}
    first: float | None = None
    with path.open(newline="") as handle:
        for record in csv.reader(handle):
            if not record or record[0].strip().lower() in ("timestamp", "time"):
                continue
            stamp_text, model, prompt, output = (c.strip() for c in record[:4])
            try:
                stamp = float(stamp_text)
            except ValueError:
                stamp = dt.datetime.fromisoformat(stamp_text).timestamp()
            if model not in rows:
                if len(names) == 1:
                    model = names[0]
                else:
                    raise ValueError(f"trace row for model {model!r}, which the stack does not serve")
            first = stamp if first is None else min(first, stamp)
            rows[model].append((stamp, int(prompt), int(output)))
    out = {}
    for name, items in rows.items():
        items.sort()
        arrival = np.array([s - (first or 0.0) for s, _, _ in items], dtype=np.float64)
        out[name] = Requests(
            arrival, np.array([p for _, p, _ in items], dtype=np.int64), np.array([o for _, _, o in items], dtype=np.int64)
        )
    return out
