"""Prometheus' text exposition read back as series, for tests of what `/metrics` serves."""

from __future__ import annotations


def series(text: str) -> dict[str, float]:
    """`name{labels}` -> value for every sample line."""
    found = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, value = line.rsplit(" ", 1)
            found[key] = float(value)
    return found
