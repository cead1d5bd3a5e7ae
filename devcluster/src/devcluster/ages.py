"""How long ago a timestamp was, as kubectl's tables print it (`5m`, `3h12m`, `2d`)."""

from __future__ import annotations

from datetime import UTC, datetime


def human_age(timestamp: str, now: datetime | None = None) -> str:
    """Return how long ago a timestamp was, in kubectl's `5m`/`3h12m`/`2d` style."""
    try:
        then = datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return timestamp
    seconds = int(((now or datetime.now(UTC)) - then).total_seconds())
    if seconds < -1:
        return "<invalid>"
    seconds = max(seconds, 0)
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    steps = (
        (seconds < 120, f"{seconds}s"),
        (minutes < 10, _pair(minutes, "m", seconds % 60, "s")),
        (minutes < 180, f"{minutes}m"),
        (hours < 8, _pair(hours, "h", minutes % 60, "m")),
        (hours < 48, f"{hours}h"),
        (hours < 192, _pair(days, "d", hours % 24, "h")),
        (hours < 24 * 730, f"{days}d"),
        (hours < 24 * 2920, _pair(days // 365, "y", days % 365, "d")),
    )
    return next((text for fits, text in steps if fits), f"{days // 365}y")


def _pair(big: int, big_unit: str, small: int, small_unit: str) -> str:
    return f"{big}{big_unit}" + (f"{small}{small_unit}" if small else "")
