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
_FRACTION_DIGITS = 30
_GO_INT = re.compile(r"[+-]?[0-9]+")


def parse_go_duration(text: str) -> int | None:
    """Nanoseconds of a Go duration such as "1h30m" or "-5m"; None if Go would reject it.

    In time linear in the text, whatever its length (an annotation may hold 256 KiB): whole
    parts are integers, and fractions are added up as integers over a common 10³⁰, which is
    finer than Go (it goes through float64) and than any unit needs.
    """
    rest = text
    negative = False
    if rest[:1] in ("+", "-"):
        negative = rest[0] == "-"
        rest = rest[1:]
    if rest == "0":
        return 0
    if not rest:
        return None
    whole_nanos = 0
    fraction_nanos = 0  # in units of 10**-_FRACTION_DIGITS ns
    position = 0
    while position < len(rest):
        match = _DURATION_PART.match(rest, position)
        if match is None or match.end() == position:
            return None
        whole, fraction, unit = match.groups()
        if (not whole and not fraction) or unit not in _DURATION_UNITS:
            return None
        whole = whole.lstrip("0")
        if len(whole) > _MAX_INT64_DIGITS:  # Go: "invalid duration" (overflow)
            return None
        nanos_per_unit = _DURATION_UNITS[unit]
        whole_nanos += int(whole or "0") * nanos_per_unit
        if fraction:
            digits = fraction[:_FRACTION_DIGITS].ljust(_FRACTION_DIGITS, "0")
            fraction_nanos += int(digits) * nanos_per_unit
        if whole_nanos > _MAX_INT64:
            return None
        position = match.end()
    nanos: int = whole_nanos + fraction_nanos // 10**_FRACTION_DIGITS
    if nanos > _MAX_INT64:
        return None
    return -nanos if negative else nanos


def parse_go_int(text: str) -> int | None:
    """The value of `strconv.Atoi(text)` (64-bit), or None if it fails."""
    if not _GO_INT.fullmatch(text):
        return None
    if len(text.lstrip("+-").lstrip("0")) > _MAX_INT64_DIGITS:  # before int(): any length
        return None
    value = int(text)
    return value if -(2**63) <= value <= _MAX_INT64 else None


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
