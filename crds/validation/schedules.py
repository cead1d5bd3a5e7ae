"""When a RayCronJob fires: its cron schedule and time zone, read as KubeRay reads them.

KubeRay parses `spec.schedule` with robfig/cron v3's `ParseStandard` and `spec.timeZone` with
Go's `time.LoadLocation`, and schedules nothing for a RayCronJob either refuses. These
functions accept the same schedules, quirks included (`?` in any field, `*-5` read as `*`,
empty items of a list skipped, dates that never come such as `0 0 30 2 *`), so a manifest
valid for one controller is valid for the other. A refusal names the part of the schedule
that is wrong and the rule it breaks, where robfig only quotes the part.

Two differences from robfig, both KubeRay's: a `TZ=` or `CRON_TZ=` prefix is refused (the
zone belongs in `timeZone`), and the zone is looked up in the IANA database Python carries
(`zoneinfo`), not the one the Go binary bundles. Two rules are ours, not KubeRay's: a schedule
must not fire more often than once a minute (`MIN_INTERVAL`, `interval_problem`), and it is
at most `MAX_LENGTH` characters (every list item is parsed, and a megabyte of `1,1,1,…` took
seconds of the read activity, on the worker's event loop, on every pass).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from crds.messages import quoted
from crds.validation import formats

MAX_LENGTH = 1024
"""Characters of a schedule: listing every value of every field one by one takes 356."""

# The descriptors robfig knows, as the five fields they stand for.
_DESCRIPTORS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_EVERY = "@every "

# Go's unicode.IsSpace, which strings.Fields splits on (Python's own split() also splits on
# the separators \x1c-\x1f, which Go keeps inside a field).
_GO_SPACE = re.compile("[\t\n\v\f\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+")


@dataclass(frozen=True)
class _Field:
    """One of the five fields: its name, its bounds and the names it accepts for numbers."""

    name: str
    low: int
    high: int
    names: Mapping[str, int] = field(default_factory=dict)
    named: str = ""
    """How the names read in a message, e.g. "a month name (JAN-DEC)"."""


_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_FIELDS = (
    _Field("minute", 0, 59),
    _Field("hour", 0, 23),
    _Field("day-of-month", 1, 31),
    _Field("month", 1, 12, {n: i + 1 for i, n in enumerate(_MONTHS)}, "a month name (JAN-DEC)"),
    # 0 is Sunday; robfig has no 7 for Sunday, unlike some crons.
    _Field("day-of-week", 0, 6, {n: i for i, n in enumerate(_DAYS)}, "a day name (SUN-SAT)"),
)
_LAYOUT = " ".join(f.name for f in _FIELDS)

_DST_SHIFT = timedelta(hours=1)
"""How much closer a change of daylight saving time can bring two ticks than their hours say."""

MIN_INTERVAL = timedelta(minutes=1)
"""The shortest time between two ticks we accept; KubeRay has no floor (`@every 1s` passes).

Five cron fields cannot tick more often than once a minute, and KubeRay names each tick's
RayJob for its minute (`<name>-<minutes since the epoch>`): of ticks closer than that, the
second in a minute finds the first one's RayJob, so all they add is a firing workflow each,
a load on the Temporal server and the worker that one RayCronJob could multiply sixty times
over. Only `@every` can go below it.
"""


def schedule_problem(schedule: str) -> str | None:
    """Why KubeRay refuses a `spec.schedule`; None if it accepts it.

    Args:
        schedule: Five cron fields (`30 2 * * MON-FRI`), a descriptor (`@daily`) or
            `@every <Go duration>` (`@every 1h30m`).

    Returns:
        A sentence about the schedule, e.g. "in the minute field, '61' goes above 59
        (it allows 0-59)", or None.
    """
    if len(schedule) > MAX_LENGTH:
        return f"it is longer than {MAX_LENGTH} characters"
    if "TZ" in schedule:
        return "it contains 'TZ', and a time zone (TZ=, CRON_TZ=) belongs in timeZone instead"
    if not schedule:
        return "it is empty"
    if schedule.startswith("@"):
        return _descriptor_problem(schedule)
    fields = [part for part in _GO_SPACE.split(schedule) if part]
    if len(fields) != len(_FIELDS):
        return f"it has {len(fields)} fields, expected 5 ({_LAYOUT})"
    for spec, text in zip(_FIELDS, fields, strict=True):
        for item in text.split(","):
            found = _item_range(item, spec) if item else None
            if isinstance(found, str):
                return f"in the {spec.name} field, {quoted(item)} {found}"
    return None


def interval_problem(schedule: str) -> str | None:
    """Why a schedule KubeRay accepts fires too often for us (`MIN_INTERVAL`); None if not.

    Returns:
        A sentence about the schedule, e.g. "it fires every 1s, ...", or None.
    """
    interval = every_interval(schedule)
    if interval is None or interval >= MIN_INTERVAL:
        return None
    return (
        f"it fires every {int(interval.total_seconds())}s, more often than once a minute "
        "(the shortest interval is 1m: each tick's RayJob is named for its minute)"
    )


def every_interval(schedule: str) -> timedelta | None:
    """The time between the ticks of an `@every` schedule, as robfig/cron keeps it.

    robfig drops the fraction of a second and raises anything under a second (zero and
    negative durations too) to one second. None for any other schedule, or no duration.
    """
    if not schedule.startswith(_EVERY):
        return None
    nanos = formats.parse_go_duration(schedule.removeprefix(_EVERY))
    if nanos is None:
        return None
    return timedelta(seconds=max(1, nanos // 1_000_000_000))


def shortest_gap(schedule: str) -> timedelta:
    """A time no two ticks of a valid schedule are closer than: a lower bound, for a limit.

    Exact for `@every` and for several minutes in an hour; with one minute, it is read from
    the hours alone, and with one hour too it is a day (the days it runs on are not looked
    at). A change of daylight saving time can bring two ticks an hour closer than their
    hours say, so hours and days count one less.
    """
    every = every_interval(schedule)
    if every is not None:
        return every
    fields = [part for part in _GO_SPACE.split(_DESCRIPTORS.get(schedule, schedule)) if part]
    if len(fields) != len(_FIELDS):
        return MIN_INTERVAL  # not a valid schedule: no better bound than the floor
    minutes = _field_values(fields[0], _FIELDS[0])
    hours = _field_values(fields[1], _FIELDS[1])
    if len(minutes) > 1:
        return timedelta(minutes=_circular_gap(minutes, 60))
    if len(hours) > 1:
        return max(timedelta(hours=_circular_gap(hours, 24)) - _DST_SHIFT, timedelta(hours=1))
    return timedelta(days=1) - _DST_SHIFT


def _field_values(text: str, spec: _Field) -> list[int]:
    """The values a valid field stands for, in order."""
    found: set[int] = set()
    for item in text.split(","):
        values = _item_range(item, spec) if item else range(0)
        found.update(values if isinstance(values, range) else ())
    return sorted(found)


def _circular_gap(values: list[int], period: int) -> int:
    """The least distance between two of `values` (in order) on a clock of `period`."""
    if not values:
        return period
    return min(b - a for a, b in zip(values, [*values[1:], values[0] + period], strict=True))


def time_zone_problem(name: str) -> str | None:
    """Why KubeRay refuses a `spec.timeZone`; None if it names a known zone.

    Returns:
        What the value must be, e.g. "must not be empty: …", or None.
    """
    if not name:
        return "must not be empty: leave it out to use the controller's local time zone"
    try:
        ZoneInfo(name)
    except (ValueError, ZoneInfoNotFoundError, OSError):
        # ValueError: not a relative path, or not a zone file; OSError: a directory (`Asia`).
        return (
            "must name a zone of the IANA database, such as Asia/Taipei or UTC "
            f"(names are case-sensitive), got {quoted(name)}"
        )
    return None


def _descriptor_problem(schedule: str) -> str | None:
    if schedule in _DESCRIPTORS:
        return None
    if schedule.startswith(_EVERY):
        if formats.parse_go_duration(schedule.removeprefix(_EVERY)) is None:
            return "'@every' needs a Go duration after one space, such as 90s, 15m or 1h30m"
        return None
    known = ", ".join(_DESCRIPTORS)
    return f"it is not a known descriptor ({known} or '@every <duration>')"


def _item_range(item: str, spec: _Field) -> range | str:
    """One list item, read as robfig's getRange does: `*`, `?`, `n` or `a-b`, then `/step`.

    Returns the values it stands for, or the rest of a sentence about what is wrong with it
    that starts with the item.
    """
    range_part, *steps = item.split("/")
    if len(steps) > 1:
        return "has more than one '/'"
    ends = range_part.split("-")
    if ends[0] in ("*", "?"):
        low, high = spec.low, spec.high  # robfig ignores whatever follows a '*-'
    elif len(ends) > 2:
        return "has more than one '-'"
    else:
        numbers: list[int] = []
        for end in ends:
            value = _value(end, spec)
            if value is None:
                shown = "" if end == item else f"has {quoted(end)}, which "
                return f"{shown}is {_what_fits(spec)}"
            numbers.append(value)
        low, high = numbers[0], numbers[-1]
    step = 1
    if steps:
        parsed = formats.parse_go_int(steps[0])
        if parsed is None or parsed <= 0:
            return f"has the step {quoted(steps[0])}, but a step must be a positive number"
        step = parsed
        if len(ends) == 1:
            high = spec.high  # `n/step` means n to the end of the field
    bounds = f"(it allows {spec.low}-{spec.high})"
    if low < spec.low:
        return f"goes below {spec.low} {bounds}"
    if high > spec.high:
        return f"goes above {spec.high} {bounds}"
    if low > high:
        return "is a range that starts after it ends"
    return range(low, high + 1, step)


def _value(text: str, spec: _Field) -> int | None:
    """A number (Go's Atoi, so `+5` too) or a name of this field; None for anything else."""
    named = spec.names.get(text.lower())
    if named is not None:
        return named
    number = formats.parse_go_int(text)
    return number if number is not None and number >= 0 else None


def _what_fits(spec: _Field) -> str:
    return f"neither a number nor {spec.named}" if spec.named else "not a number"
