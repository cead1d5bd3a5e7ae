"""Cron schedules and time zones, accepted and refused as KubeRay (robfig/cron v3) does."""

from __future__ import annotations

from datetime import timedelta

import pytest

from crds.validation.schedules import (
    every_interval,
    interval_problem,
    schedule_problem,
    shortest_gap,
    time_zone_problem,
)

# Each field's lowest and highest value.
_FIELDS = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 6))


@pytest.mark.parametrize(
    "schedule",
    [
        pytest.param("* * * * *", id="every-minute"),
        pytest.param("45 21 * * *", id="daily"),
        pytest.param("*/15 9-17 * * MON-FRI", id="step-range-day-names"),
        pytest.param("0 0 1 jan,Jul ?", id="month-names-any-case-question-mark"),
        pytest.param("0-59/5 0,12 1-31 1-12 0-6", id="every-bound"),
        pytest.param("5/10 * * * *", id="n-slash-step-runs-to-the-end"),
        pytest.param("0 0 * * sun", id="sunday-by-name"),
        pytest.param("  0\t0  * *   *  ", id="any-whitespace"),
        pytest.param("+5 * * * *", id="go-atoi-plus-sign"),
        pytest.param("? ? ? ? ?", id="question-mark-anywhere"),
        pytest.param("*-5 * * * *", id="star-ignores-a-range-end"),
        pytest.param("1,,2 * * * *", id="empty-list-items-skipped"),
        pytest.param("0 0 30 2 *", id="a-date-that-never-comes"),
        pytest.param("\u30000 0 * * *", id="unicode-space"),
        *(
            pytest.param(d, id=d)
            for d in ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight")
        ),
        pytest.param("@hourly", id="@hourly"),
        pytest.param("@every 1h30m", id="every-go-duration"),
        pytest.param("@every 500ms", id="every-below-a-second"),
        pytest.param(
            " ".join(",".join(str(n) for n in range(low, high + 1)) for low, high in _FIELDS),
            id="every-value-listed",
        ),
    ],
)
def test_kuberay_accepts(schedule: str) -> None:
    assert schedule_problem(schedule) is None


@pytest.mark.parametrize(
    ("schedule", "problem"),
    [
        pytest.param("", "it is empty", id="empty"),
        pytest.param(
            "0 0 * * " + "1," * 500_000 + "1", "it is longer than 1024 characters", id="a-megabyte"
        ),
        pytest.param(
            "TZ=UTC 0 * * * *",
            "it contains 'TZ', and a time zone (TZ=, CRON_TZ=) belongs in timeZone instead",
            id="tz-prefix",
        ),
        pytest.param("CRON_TZ=Asia/Taipei 0 * * * *", "it contains 'TZ'", id="cron-tz-prefix"),
        pytest.param(
            "* * * *",
            "it has 4 fields, expected 5 (minute hour day-of-month month day-of-week)",
            id="four-fields",
        ),
        pytest.param("0 * * * * *", "it has 6 fields, expected 5", id="seconds-field"),
        pytest.param(" @daily", "it has 1 fields", id="descriptor-after-a-space"),
        pytest.param(
            "61 * * * *", "in the minute field, '61' goes above 59 (it allows 0-59)", id="minute"
        ),
        pytest.param("0 24 * * *", "in the hour field, '24' goes above 23", id="hour"),
        pytest.param(
            "0 0 0 * *",
            "in the day-of-month field, '0' goes below 1 (it allows 1-31)",
            id="day-of-month-zero",
        ),
        pytest.param("0 0 * 13 *", "in the month field, '13' goes above 12", id="month"),
        pytest.param(
            "0 0 * * 7",
            "in the day-of-week field, '7' goes above 6 (it allows 0-6)",
            id="sunday-as-seven",
        ),
        pytest.param("1,61 * * * *", "in the minute field, '61' goes above 59", id="list-item"),
        pytest.param("50-61 * * * *", "'50-61' goes above 59", id="range-end"),
        pytest.param(
            "5-3 * * * *", "'5-3' is a range that starts after it ends", id="backwards-range"
        ),
        pytest.param(
            "*/0 * * * *",
            "'*/0' has the step '0', but a step must be a positive number",
            id="step-zero",
        ),
        pytest.param("*/-1 * * * *", "has the step '-1'", id="negative-step"),
        pytest.param("*/x * * * *", "has the step 'x'", id="step-not-a-number"),
        pytest.param("1-2-3 * * * *", "'1-2-3' has more than one '-'", id="two-hyphens"),
        pytest.param("1/2/3 * * * *", "'1/2/3' has more than one '/'", id="two-slashes"),
        pytest.param("-5 * * * *", "'-5' has '', which is not a number", id="negative-number"),
        pytest.param("x * * * *", "in the minute field, 'x' is not a number", id="not-a-number"),
        pytest.param("MON * * * *", "'MON' is not a number", id="name-in-a-numeric-field"),
        pytest.param(
            "0 0 * FOO *",
            "in the month field, 'FOO' is neither a number nor a month name (JAN-DEC)",
            id="unknown-month",
        ),
        pytest.param(
            "0 0 * * MON-FUN",
            "'MON-FUN' has 'FUN', which is neither a number nor a day name (SUN-SAT)",
            id="unknown-day-in-a-range",
        ),
        pytest.param("0 0 * * JAN", "'JAN' is neither a number nor a day name", id="month-as-day"),
        pytest.param("* * * * *\x1c", "'*\\x1c' is neither", id="go-keeps-x1c-in-a-field"),
        pytest.param(
            "@dayly",
            "it is not a known descriptor (@yearly, @annually, @monthly, @weekly, @daily, "
            "@midnight, @hourly or '@every <duration>')",
            id="unknown-descriptor",
        ),
        pytest.param("@daily ", "it is not a known descriptor", id="descriptor-with-a-space"),
        pytest.param("@DAILY", "it is not a known descriptor", id="descriptor-in-upper-case"),
        pytest.param("@every", "it is not a known descriptor", id="every-without-duration"),
        pytest.param(
            "@every 5",
            "'@every' needs a Go duration after one space, such as 90s, 15m or 1h30m",
            id="every-without-unit",
        ),
        pytest.param("@every  1h", "'@every' needs a Go duration", id="every-two-spaces"),
    ],
)
def test_kuberay_refuses(schedule: str, problem: str) -> None:
    found = schedule_problem(schedule)
    assert found is not None and problem in found, found


@pytest.mark.parametrize(
    ("schedule", "seconds"),
    [
        pytest.param("@every 1s", 1, id="a-second"),
        pytest.param("@every 59.9s", 59, id="the-fraction-dropped"),
        pytest.param("@every 500ms", 1, id="under-a-second-is-one"),
        pytest.param("@every 0s", 1, id="zero-is-one"),
        pytest.param("@every -1h", 1, id="negative-is-one"),
    ],
)
def test_ours_refuses_what_fires_more_than_once_a_minute(schedule: str, seconds: int) -> None:
    # KubeRay (robfig/cron) takes them all, each as a tick every `seconds` seconds.
    assert schedule_problem(schedule) is None
    assert every_interval(schedule) == timedelta(seconds=seconds)
    assert interval_problem(schedule) == (
        f"it fires every {seconds}s, more often than once a minute "
        "(the shortest interval is 1m: each tick's RayJob is named for its minute)"
    )


@pytest.mark.parametrize(
    "schedule", ["@every 1m", "@every 60.5s", "@every 90s", "* * * * *", "@hourly", "@every 5"]
)
def test_ours_accepts_a_minute_or_more(schedule: str) -> None:
    assert interval_problem(schedule) is None


@pytest.mark.parametrize(
    ("schedule", "gap"),
    [
        pytest.param("* * * * *", timedelta(minutes=1), id="every-minute"),
        pytest.param("*/15 9-17 * * MON-FRI", timedelta(minutes=15), id="quarter-hours"),
        pytest.param("5,50 * * * *", timedelta(minutes=15), id="across-the-hour"),
        pytest.param("10-12/2,59 3 * * *", timedelta(minutes=2), id="list-of-ranges"),
        pytest.param("0 9,10 * * *", timedelta(hours=1), id="hours-an-hour-apart"),
        pytest.param("30 0,12 * * *", timedelta(hours=11), id="twice-a-day-less-an-hour"),
        pytest.param("0 0 1 1 *", timedelta(hours=23), id="one-time-a-day-at-most"),
        pytest.param("@hourly", timedelta(hours=1), id="hourly"),
        pytest.param("@yearly", timedelta(hours=23), id="yearly-read-as-daily"),
        pytest.param("@every 1h30m", timedelta(minutes=90), id="every"),
    ],
)
def test_the_shortest_gap_between_ticks_is_never_overstated(schedule: str, gap: timedelta) -> None:
    assert shortest_gap(schedule) == gap


@pytest.mark.parametrize(
    "zone", ["Asia/Taipei", "UTC", "Etc/GMT+5", "America/Argentina/Buenos_Aires", "EST5EDT"]
)
def test_known_time_zones(zone: str) -> None:
    assert time_zone_problem(zone) is None


@pytest.mark.parametrize(
    ("zone", "problem"),
    [
        pytest.param("", "must not be empty: leave it out", id="empty"),
        pytest.param("asia/taipei", "case-sensitive), got 'asia/taipei'", id="wrong-case"),
        pytest.param("Mars/Olympus_Mons", "got 'Mars/Olympus_Mons'", id="unknown"),
        pytest.param("America", "got 'America'", id="a-directory"),
        pytest.param("../etc/passwd", "got '../etc/passwd'", id="a-path-outside"),
        pytest.param("/etc/localtime", "got '/etc/localtime'", id="an-absolute-path"),
        pytest.param("zone.tab", "got 'zone.tab'", id="not-a-zone-file"),
    ],
)
def test_unknown_time_zones(zone: str, problem: str) -> None:
    found = time_zone_problem(zone)
    assert found is not None and problem in found, found
    assert found.startswith("must")
