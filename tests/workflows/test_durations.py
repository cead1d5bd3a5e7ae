"""Deadlines from CR values saturate instead of overflowing: past the year 9999 is never."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from workflows import durations

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(90, timedelta(seconds=90), id="plain"),
        pytest.param(2**31 - 1, timedelta(seconds=2**31 - 1), id="int32-max"),
        pytest.param(10**18, durations.LONGEST, id="past-timedelta"),
        pytest.param(10**5000, durations.LONGEST, id="past-the-int-digit-limit"),
        pytest.param(-(10**18), timedelta.min, id="negative"),
    ],
)
def test_seconds_clamp_to_the_longest_timedelta(value: int, expected: timedelta) -> None:
    assert durations.seconds(value) == expected


@pytest.mark.parametrize(
    ("delay", "expected"),
    [
        pytest.param(60, T0 + timedelta(minutes=1), id="seconds"),
        pytest.param(timedelta(hours=1), T0 + timedelta(hours=1), id="timedelta"),
        pytest.param(2**31 - 1, T0 + timedelta(seconds=2**31 - 1), id="int32-max"),
        pytest.param(10**12, None, id="past-year-9999"),
        pytest.param(10**18, None, id="past-timedelta"),
        pytest.param(durations.LONGEST, None, id="longest"),
        pytest.param(-(10**12), datetime.min.replace(tzinfo=UTC), id="before-year-1"),
    ],
)
def test_after_saturates(delay: timedelta | int, expected: datetime | None) -> None:
    assert durations.after(T0, delay) == expected


def test_a_deadline_before_year_1_has_passed() -> None:
    deadline = durations.after(T0, -(10**18))
    assert deadline is not None and deadline <= T0
