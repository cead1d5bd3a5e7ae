"""Durations a CR sets and the instants they lead to, computed without ever overflowing.

A deadline is an instant plus a number of seconds the CR holds (`activeDeadlineSeconds`,
`ttlSeconds`, a deletion delay, an annotation). Validation bounds those numbers, but workflow
code computes deadlines from whatever the CR holds before, and while, validation refuses it:
a RayJob that failed validation still has its deletion rules. Python's `timedelta` raises past
about 2.7 million years and `datetime` past the year 9999, and an exception there fails the
workflow task on every retry, which also keeps the CR's finalizer, and its deletion, waiting.
So every deadline is computed here, saturating: a deadline past the year 9999 is None, never,
and one before the year 1 is the earliest instant, passed.
"""

from __future__ import annotations

from datetime import datetime, timedelta

LONGEST = timedelta.max
"""What a number of seconds too large for a timedelta becomes (and `timedelta.min` what a
number too far below zero does)."""


def seconds(value: float) -> timedelta:
    """`value` seconds as a timedelta, clamped to the range a timedelta holds."""
    if value >= LONGEST.total_seconds():
        return LONGEST
    if value <= timedelta.min.total_seconds():
        return timedelta.min
    return timedelta(seconds=value)


def after(start: datetime, delay: timedelta | float) -> datetime | None:
    """`start` plus `delay` (a timedelta or seconds); None, never, past the year 9999.

    Before the year 1 it is the earliest instant (in `start`'s zone): a deadline already passed.
    """
    step = delay if isinstance(delay, timedelta) else seconds(delay)
    try:
        return start + step
    except OverflowError:
        if step > timedelta(0):
            return None
        return datetime.min.replace(tzinfo=start.tzinfo)
