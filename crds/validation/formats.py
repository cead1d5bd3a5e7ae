"""Parsers for the values KubeRay accepts inside strings: durations, YAML and JSON payloads.

Several ray.io fields are strings that carry another format (`runtimeEnvYAML`,
`entrypointResources`, `serveConfigV2`, the `ray.io/initializing-timeout` annotation). KubeRay
parses them with Go's `time.ParseDuration`, `strconv.Atoi`, sigs.k8s.io/yaml and
encoding/json; these functions accept the same inputs, so a manifest valid for one is valid for
the other, except that YAML and JSON go through `crds.payloads` and its bounds. The
`*_problem` functions return an explanation on failure instead of raising; the activities
load the same payloads with `yaml_mapping` and `json_number_map`, which raise it.
"""

from __future__ import annotations

import json
import math
import re
from fractions import Fraction
from typing import Any

import yaml

from crds.payloads import PayloadError, load_json, load_yaml

# Nanoseconds per unit, as Go's time.ParseDuration knows them.
_DURATION_UNITS = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,  # U+00B5 micro sign
    "μs": 1_000,  # U+03BC Greek mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3600 * 1_000_000_000,
}
_DURATION_PART = re.compile(r"([0-9]*)(?:\.([0-9]*))?([^0-9.]*)")
_MAX_INT64 = 2**63 - 1
_MAX_INT64_DIGITS = len(str(_MAX_INT64))
_GO_INT = re.compile(r"[+-]?[0-9]+")

_NANOS_PER_SECOND = 1_000_000_000
MAX_DURATION_SECONDS = _MAX_INT64 // _NANOS_PER_SECOND
"""The longest Go Duration in whole seconds (about 292 years)."""

MAX_GO_NUMBER_LENGTH = 64
"""Characters of a Go duration or integer read here. Go reads any length, but every value it
accepts fits in far fewer ("-2562047h47m16.854775808s", the longest duration, has 25), and a
CR's string may be a megabyte long."""


def parse_go_duration(text: str) -> int | None:
    """Nanoseconds of a Go duration such as "1h30m" or "-5m"; None if Go would reject it.

    Also None past `MAX_GO_NUMBER_LENGTH` characters. Each part is matched where the last one
    ended, so the text is read once.
    """
    if len(text) > MAX_GO_NUMBER_LENGTH:
        return None
    negative = text[:1] == "-"
    pos = 1 if text[:1] in ("+", "-") else 0
    if text[pos:] == "0":
        return 0
    if pos == len(text):
        return None
    total = Fraction(0)
    while pos < len(text):
        part = _duration_part(text, pos)
        if part is None:
            return None
        part_nanos, pos = part
        total += part_nanos
    nanos = math.floor(total)
    if nanos > _MAX_INT64 + negative:  # -2^63 ns is a duration, 2^63 ns is not
        return None
    return -nanos if negative else nanos


def _duration_part(text: str, pos: int) -> tuple[Fraction, int] | None:
    """The nanoseconds of one `<number><unit>` at `pos` and where it ends; None if invalid."""
    match = _DURATION_PART.match(text, pos)
    if match is None or match.end() == pos:
        return None
    whole, fraction, unit = match.groups()
    if (not whole and not fraction) or unit not in _DURATION_UNITS:
        return None
    if _overflows_int64(whole):
        return None  # Go's leadingInt overflows
    value = Fraction(int(whole or "0"))
    if fraction:
        value += Fraction(int(fraction), 10 ** len(fraction))
    return value * _DURATION_UNITS[unit], match.end()


def parse_go_int(text: str) -> int | None:
    """The value of `strconv.Atoi(text)` (64-bit), or None if it fails.

    Also None past `MAX_GO_NUMBER_LENGTH` characters.
    """
    if len(text) > MAX_GO_NUMBER_LENGTH or not _GO_INT.fullmatch(text):
        return None
    if _overflows_int64(text.lstrip("+-")):
        return None
    if len(text.lstrip("+-").lstrip("0")) > _MAX_INT64_DIGITS:  # before int(): any length
        return None
    value = int(text)
    return value if -(2**63) <= value <= _MAX_INT64 else None


def parse_go_seconds(text: str) -> int | None:
    """Whole seconds as `strconv.Atoi` reads them, or None; also None past a Go Duration.

    KubeRay turns them into `time.Duration(seconds) * time.Second`, which wraps around past
    `MAX_DURATION_SECONDS`; such a value is refused here instead.
    """
    seconds = parse_go_int(text)
    if seconds is None or abs(seconds) > MAX_DURATION_SECONDS:
        return None
    return seconds


def parse_duration_or_seconds(text: str) -> int | None:
    """Nanoseconds of a Go duration ("30m") or of whole seconds ("1800"); None if neither.

    Annotations such as `ray.io/initializing-timeout` take either, and KubeRay tries the
    duration first; both forms stay within a Go Duration here.
    """
    nanos = parse_go_duration(text)
    if nanos is not None:
        return nanos
    seconds = parse_go_seconds(text)
    return None if seconds is None else seconds * _NANOS_PER_SECOND


def _overflows_int64(digits: str) -> bool:
    """Whether a run of digits has more significant digits than any int64: read no further."""
    return len(digits.lstrip("0")) > _MAX_INT64_DIGITS


def yaml_mapping(text: str) -> dict[str, Any] | None:
    """`text` as a YAML mapping, or None for an empty or null document.

    Raises:
        PayloadError: It is not valid YAML, not a mapping, or beyond `crds.payloads` bounds.
    """
    try:
        loaded: Any = load_yaml(text)
    except yaml.YAMLError as err:
        raise PayloadError(f"is not valid YAML: {_first_line(err)}") from None
    if loaded is None or isinstance(loaded, dict):
        return loaded
    raise PayloadError(f"must be a YAML mapping (key: value pairs), got {_yaml_kind(loaded)}")


def yaml_mapping_problem(text: str) -> str | None:
    """Why `text` cannot be read as a YAML mapping (empty and null are fine), or None."""
    try:
        yaml_mapping(text)
    except PayloadError as err:
        return str(err)
    return None


def json_number_map(text: str) -> dict[str, float]:
    """`text` as a JSON object of numbers such as {"custom": 1.5}.

    Raises:
        PayloadError: It is not such an object, or beyond `crds.payloads` bounds.
    """
    try:
        loaded: Any = load_json(text)
    except PayloadError:
        raise
    except ValueError as err:
        raise PayloadError(f"is not valid JSON: {err}") from None
    if not isinstance(loaded, dict):
        message = f'must be a JSON object such as {{"my_resource": 1}}, got {_yaml_kind(loaded)}'
        raise PayloadError(message)
    numbers: dict[str, float] = {}
    for key, value in loaded.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            shown = json.dumps(value)
            shown = shown if len(shown) <= 40 else shown[:39] + "…"
            raise PayloadError(f"resource {key!r} must be a number, got {shown}")
        # 1e400 reads as infinity, and a 400-digit integer does not fit a float at all.
        try:
            number = float(value)
        except OverflowError:
            number = math.inf
        if not math.isfinite(number):
            raise PayloadError(f"resource {key!r} is too large for a number")
        numbers[str(key)] = number
    return numbers


def json_number_map_problem(text: str) -> str | None:
    """Why `text` is not a JSON object of numbers such as {"custom": 1.5}, or None."""
    try:
        json_number_map(text)
    except PayloadError as err:
        return str(err)
    return None


def _yaml_kind(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"the string {value!r}"
    return f"the value {value!r}"


def _first_line(err: yaml.YAMLError) -> str:
    """What is wrong and where, without quoting the text: it may hold a secret (env_vars)."""
    if not isinstance(err, yaml.MarkedYAMLError):
        return type(err).__name__
    parts = [part for part in (err.context, err.problem) if part]
    mark = err.problem_mark or err.context_mark
    where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
    return (": ".join(parts) or "invalid YAML") + where
