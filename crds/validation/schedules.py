"""When a RayCronJob fires: its cron schedule and time zone, read as KubeRay reads them.

KubeRay parses `spec.schedule` with robfig/cron v3's `ParseStandard` and `spec.timeZone` with
Go's `time.LoadLocation`, and schedules nothing for a RayCronJob either refuses. These
functions accept the same schedules, quirks included (`?` in any field, `*-5` read as `*`,
empty items of a list skipped, dates that never come such as `0 0 30 2 *`), so a manifest
valid for one controller is valid for the other. A refusal names the part of the schedule
that is wrong and the rule it breaks, where robfig only quotes the part.

Two differences from robfig, both KubeRay's: a `TZ=` or `CRON_TZ=` prefix is refused (the
zone belongs in `timeZone`), and the zone is looked up in the IANA database Python carries
(`zoneinfo`), not the one the Go binary bundles. One is ours: a schedule is at most
`MAX_LENGTH` characters. Every list item is parsed, and a megabyte of `1,1,1,…` took seconds
of the read activity, on the worker's event loop, on every pass.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from crds.messages import quoted
from crds.validation import formats

MAX_LENGTH = 1024
"""Characters of a schedule: listing every value of every field one by one takes 356."""

_DESCRIPTORS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
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
            problem = _item_problem(item, spec) if item else None
            if problem is not None:
                return f"in the {spec.name} field, {quoted(item)} {problem}"
    return None


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


def _item_problem(item: str, spec: _Field) -> str | None:
    """One list item, checked as robfig's getRange does: `*`, `?`, `n` or `a-b`, then `/step`.

    Returns the rest of a sentence that starts with the item, or None.
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
    if steps:
        step = formats.parse_go_int(steps[0])
        if step is None or step <= 0:
            return f"has the step {quoted(steps[0])}, but a step must be a positive number"
        if len(ends) == 1:
            high = spec.high  # `n/step` means n to the end of the field
    bounds = f"(it allows {spec.low}-{spec.high})"
    if low < spec.low:
        return f"goes below {spec.low} {bounds}"
    if high > spec.high:
        return f"goes above {spec.high} {bounds}"
    if low > high:
        return "is a range that starts after it ends"
    return None


def _value(text: str, spec: _Field) -> int | None:
    """A number (Go's Atoi, so `+5` too) or a name of this field; None for anything else."""
    named = spec.names.get(text.lower())
    if named is not None:
        return named
    number = formats.parse_go_int(text)
    return number if number is not None and number >= 0 else None


def _what_fits(spec: _Field) -> str:
    return f"neither a number nor {spec.named}" if spec.named else "not a number"
