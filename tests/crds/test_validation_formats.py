"""The string formats KubeRay parses: Go durations and integers, Ray versions."""

from __future__ import annotations

import pytest

from crds.validation import formats, versions


@pytest.mark.parametrize(
    ("text", "nanos"),
    [
        pytest.param("0", 0, id="zero"),
        pytest.param("1h30m", 5400 * 10**9, id="compound"),
        pytest.param("1.5s", 1_500_000_000, id="fraction"),
        pytest.param(".5m", 30 * 10**9, id="leading-dot"),
        pytest.param("-2ms", -2_000_000, id="negative"),
        pytest.param("300µs", 300_000, id="micro-sign"),
        pytest.param("300", None, id="missing-unit"),
        pytest.param("5d", None, id="unknown-unit"),
        pytest.param("", None, id="empty"),
        pytest.param(".s", None, id="no-digits"),
        pytest.param("3000000h", None, id="overflow"),
        pytest.param("2562047h47m16.854775807s", 2**63 - 1, id="longest"),
        pytest.param("9223372036854775808ns", None, id="one-past-the-longest"),
        pytest.param("-9223372036854775808ns", -(2**63), id="most-negative"),
        pytest.param("0" * 30 + "1s", 10**9, id="leading-zeros"),
        pytest.param("99999999999999999999ns", None, id="go-leading-int-overflows"),
        pytest.param("1s" * 32, 32 * 10**9, id="many-parts-within-the-limit"),
        pytest.param("1s" * 33, None, id="past-the-length-limit"),
        pytest.param("1s" * 131_072, None, id="a-quarter-megabyte"),
        pytest.param("9" * 5000 + "s", None, id="past-the-int-digit-limit"),
        pytest.param("1." + "5" * 5000 + "s", None, id="long-fraction"),
    ],
)
def test_parse_go_duration(text: str, nanos: int | None) -> None:
    assert formats.parse_go_duration(text) == nanos


@pytest.mark.parametrize(
    ("text", "value"),
    [
        pytest.param("300", 300, id="plain"),
        pytest.param("+7", 7, id="plus"),
        pytest.param("1_000", None, id="underscore"),
        pytest.param(" 1", None, id="space"),
        pytest.param("9223372036854775807", 2**63 - 1, id="int64-max"),
        pytest.param("-9223372036854775808", -(2**63), id="int64-min"),
        pytest.param("9223372036854775808", None, id="int64-overflow"),
        pytest.param("0" * 40 + "7", 7, id="leading-zeros"),
        pytest.param("9" * 5000, None, id="past-the-int-digit-limit"),
        pytest.param("٣", None, id="ascii-digits-only"),
    ],
)
def test_parse_go_int(text: str, value: int | None) -> None:
    assert formats.parse_go_int(text) == value


@pytest.mark.parametrize(
    ("text", "nanos"),
    [
        pytest.param("30m", 1800 * 10**9, id="duration"),
        pytest.param("1800", 1800 * 10**9, id="seconds"),
        pytest.param("+5", 5 * 10**9, id="seconds-as-atoi-reads-them"),
        pytest.param("0", 0, id="zero"),
        pytest.param(str(formats.MAX_DURATION_SECONDS), formats.MAX_DURATION_SECONDS * 10**9),
        pytest.param(str(formats.MAX_DURATION_SECONDS + 1), None, id="seconds-past-a-duration"),
        pytest.param("1000000000000000000", None, id="seconds-that-go-would-wrap"),
        pytest.param("²", None, id="superscript-digit"),
        pytest.param("1e3", None, id="neither"),
    ],
)
def test_parse_duration_or_seconds(text: str, nanos: int | None) -> None:
    assert formats.parse_duration_or_seconds(text) == nanos


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        pytest.param("2.52.0", (2, 52, 0), id="semver"),
        pytest.param("v2.52", (2, 52), id="v-prefix"),
        pytest.param("2.53.0rc1", (2, 53, 0), id="suffix-ignored"),
        pytest.param("2", "needs at least", id="major-only"),
        pytest.param("02.52", "leading zero", id="leading-zero"),
        pytest.param("nightly", "not a version", id="word"),
        pytest.param(" \t\nv2.52", (2, 52), id="go-leading-space"),
        pytest.param("\v2.52", "not a version", id="vertical-tab-is-not-go-space"),
        pytest.param("2.52.0\r", (2, 52, 0), id="carriage-return-ignored"),
        pytest.param("2.52.0\n", "not a version", id="line-break"),
        pytest.param("2.52\nrc1", "not a version", id="line-break-in-suffix"),
        pytest.param("2.٥٢", "needs at least", id="ascii-digits-only"),
        pytest.param("2.18446744073709551615", (2, 2**64 - 1), id="uint64-max"),
        pytest.param("2.18446744073709551616", "larger than", id="past-uint64"),
        pytest.param("2." + "5" * 63, "longer than 64", id="long"),
        pytest.param("1" * 40_000 + "\n", "longer than 64", id="long-digits-line-break"),
        pytest.param("9" * 5000 + ".1", "longer than 64", id="past-the-int-digit-limit"),
    ],
)
def test_parse_generic_version(text: str, parsed: tuple[int, ...] | str) -> None:
    result = versions.parse_generic(text)
    if isinstance(parsed, tuple):
        assert result == parsed
    else:
        assert isinstance(result, str) and parsed in result


@pytest.mark.parametrize(
    ("version", "minimum", "less"),
    [
        pytest.param((2, 52), (2, 52, 0), False, id="missing-zero"),
        pytest.param((2, 51, 9), (2, 52, 0), True, id="older"),
        pytest.param((3, 0), (2, 55, 0), False, id="newer-major"),
    ],
)
def test_version_less_than(version: tuple[int, ...], minimum: tuple[int, ...], less: bool) -> None:
    assert versions.less_than(version, minimum) is less


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("env_vars:\n  HF_TOKEN: hf_s3cr3t: extra\n", id="mapping-in-value"),
        pytest.param('env_vars: {HF_TOKEN: "hf_s3cr3t', id="unterminated-quote"),
        pytest.param("env_vars:\n  HF_TOKEN: hf_s3cr3t\n\tpip: []\n", id="tab"),
    ],
)
def test_a_yaml_error_says_where_but_never_quotes_the_text(text: str) -> None:
    # runtimeEnvYAML often carries env_vars secrets; its errors go to status, Events, history.
    problem = formats.yaml_mapping_problem(text)
    assert problem is not None
    assert "line" in problem
    assert "s3cr3t" not in problem


def test_a_resource_value_is_shown_short() -> None:
    problem = formats.json_number_map_problem('{"gpu": "' + "x" * 1000 + '"}')
    assert problem is not None
    assert len(problem) < 100


def test_a_long_version_is_quoted_short() -> None:
    problem = versions.parse_generic("1" * 1_000_000)
    assert isinstance(problem, str) and len(problem) < 200
