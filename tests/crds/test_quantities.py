from __future__ import annotations

from fractions import Fraction

import pytest

from crds.quantities import (
    MAX_AMOUNT,
    MAX_LENGTH,
    InvalidQuantityError,
    QuantityFormat,
    parse_quantity,
    quantity_problem,
    try_parse_quantity,
)


@pytest.mark.parametrize(
    ("text", "amount", "fmt"),
    [
        pytest.param("500m", Fraction(1, 2), QuantityFormat.DECIMAL_SI, id="milli"),
        pytest.param("2Gi", Fraction(2 * 1024**3), QuantityFormat.BINARY_SI, id="gibi"),
        pytest.param("1.5", Fraction(3, 2), QuantityFormat.DECIMAL_SI, id="decimal"),
        pytest.param("1e3", Fraction(1000), QuantityFormat.DECIMAL_EXPONENT, id="exponent"),
        pytest.param("1E", Fraction(10**18), QuantityFormat.DECIMAL_SI, id="exa-not-exponent"),
        pytest.param("100M", Fraction(10**8), QuantityFormat.DECIMAL_SI, id="mega"),
        pytest.param(".5Ki", Fraction(512), QuantityFormat.BINARY_SI, id="leading-dot"),
        pytest.param("+3", Fraction(3), QuantityFormat.DECIMAL_SI, id="plus-sign"),
        pytest.param(2, Fraction(2), QuantityFormat.DECIMAL_SI, id="yaml-int"),
        pytest.param(0.25, Fraction(1, 4), QuantityFormat.DECIMAL_SI, id="yaml-float"),
        pytest.param(
            "0.1n", Fraction(1, 10**9), QuantityFormat.DECIMAL_SI, id="rounded-up-to-nano"
        ),
    ],
)
def test_parse(text: str | int | float, amount: Fraction, fmt: QuantityFormat) -> None:
    quantity = parse_quantity(text)
    assert quantity.amount == amount
    assert quantity.format is fmt


@pytest.mark.parametrize("text", ["", "abc", "1.2.3", "1Ki5", "--1", "1 Gi", True])
def test_invalid(text: object) -> None:
    with pytest.raises(InvalidQuantityError):
        parse_quantity(text)  # type: ignore[arg-type]
    assert try_parse_quantity(text) is None


@pytest.mark.parametrize(
    ("text", "value"),
    [
        pytest.param("500m", 1, id="cpu-rounds-up"),
        pytest.param("1500m", 2, id="cpu-1.5-rounds-up"),
        pytest.param("2", 2, id="whole"),
        pytest.param("1Gi", 1073741824, id="memory-bytes"),
        pytest.param("4Gi", 4294967296, id="memory-4gi"),
        pytest.param("1.5Gi", 1610612736, id="fractional-gibi"),
        pytest.param("500M", 500000000, id="mega"),
    ],
)
def test_value_is_go_value(text: str, value: int) -> None:
    assert parse_quantity(text).value() == value


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        pytest.param("1500m", "1500m", id="milli"),
        pytest.param("2000m", "2", id="milli-to-units"),
        pytest.param("2048Mi", "2Gi", id="binary-up"),
        pytest.param("1.5Gi", "1536Mi", id="binary-fraction"),
        pytest.param("1000", "1k", id="decimal-kilo"),
        pytest.param("1500", "1500", id="decimal-1500"),
        pytest.param("1e3", "1e3", id="exponent-kept"),
        pytest.param("0.5Ki", "512", id="small-binary-as-decimal"),
        pytest.param("0", "0", id="zero"),
    ],
)
def test_canonical_string(text: str, canonical: str) -> None:
    assert str(parse_quantity(text)) == canonical


@pytest.mark.parametrize(
    ("parts", "factor", "expected"),
    [
        pytest.param(["1", "2", "2", "2", "2"], 1, "9", id="cpu-sum"),
        pytest.param(["100Mi", "200Mi"], 2, "600Mi", id="memory-times"),
        pytest.param(["0", "1Gi"], 1, "1Gi", id="zero-takes-other-format"),
        pytest.param(["500m", "500m"], 1, "1", id="milli-sum"),
    ],
)
def test_arithmetic(parts: list[str], factor: int, expected: str) -> None:
    total = parse_quantity(parts[0])
    for part in parts[1:]:
        total = total + parse_quantity(part)
    assert str(total.times(factor)) == expected


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("1e400000", id="huge-exponent"),
        pytest.param("1e10000000", id="huger-exponent"),
        pytest.param("1e20000", id="exponent-past-the-int-digit-limit"),
        pytest.param("9223372036854775808", id="int64-max-plus-one"),
        pytest.param("8Ei", id="two-to-the-63"),
        pytest.param("10E", id="ten-exa"),
        pytest.param("9223372036854775.808k", id="just-over-with-a-suffix"),
        pytest.param("-1e30", id="negative"),
        pytest.param(10**30, id="yaml-int"),
        pytest.param(10**5000, id="yaml-int-past-the-digit-limit"),
        pytest.param(1e300, id="yaml-float"),
    ],
)
def test_quantities_past_the_largest_are_refused(text: str | int | float) -> None:
    with pytest.raises(InvalidQuantityError, match=f"larger than {MAX_AMOUNT}"):
        parse_quantity(text)


@pytest.mark.parametrize(
    ("text", "amount"),
    [
        pytest.param("9223372036854775807", Fraction(MAX_AMOUNT), id="int64-max"),
        pytest.param("7Ei", Fraction(7 * 2**60), id="seven-exbi"),
        pytest.param("9.223372036854775807E", Fraction(MAX_AMOUNT), id="exa-fraction"),
        pytest.param("1e-400000", Fraction(1, 10**9), id="tiny-exponent-rounds-up"),
        pytest.param("-1e-400000", Fraction(-1, 10**9), id="tiny-negative-rounds-away"),
        pytest.param("0e999999999", Fraction(0), id="zero-with-any-exponent"),
        pytest.param(1e-300, Fraction(1, 10**9), id="tiny-yaml-float"),
        pytest.param("0." + "0" * 60 + "1", Fraction(1, 10**9), id="long-but-within-length"),
    ],
)
def test_quantities_at_the_bounds(text: str | float, amount: Fraction) -> None:
    assert parse_quantity(text).amount == amount


def test_a_quantity_longer_than_the_limit_is_refused() -> None:
    with pytest.raises(InvalidQuantityError, match=f"longer than {MAX_LENGTH}"):
        parse_quantity("1" + "0" * MAX_LENGTH)
    assert try_parse_quantity("1" * 1_000_000) is None


@pytest.mark.parametrize("text", ["١", "1e٣", "1 e3", "1e", ".", "+-1", "1Ki1"])
def test_only_go_digits_and_suffixes(text: str) -> None:
    assert try_parse_quantity(text) is None


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        pytest.param(None, None, id="null-reads-as-zero"),
        pytest.param("500m", None, id="valid"),
        pytest.param(["1"], "is not a quantity such as 500m, 2Gi or 1.5", id="a-list"),
        pytest.param(True, "is not a quantity such as 500m, 2Gi or 1.5", id="a-boolean"),
        pytest.param("1e400000", f"is larger than {MAX_AMOUNT}", id="too-large"),
    ],
)
def test_quantity_problem(value: object, problem: str | None) -> None:
    found = quantity_problem(value)
    assert found == problem if problem is None else (found or "").startswith(problem)


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        pytest.param("-1500m", "-1500m", id="negative-milli"),
        pytest.param("-2e3", "-2e3", id="negative-exponent"),
        pytest.param("-3Gi", "-3Gi", id="negative-binary"),
        pytest.param("9223372036854775807", "9223372036854775807", id="int64-max"),
        pytest.param("1e18", "1e18", id="exponent-18"),
    ],
)
def test_canonical_string_of_the_extremes(text: str, canonical: str) -> None:
    assert str(parse_quantity(text)) == canonical


def test_the_largest_sum_a_cluster_can_make_is_rendered() -> None:
    # int64-max per pod, 2^31 - 1 replicas of 2^31 - 1 hosts, in a few groups.
    per_pod = parse_quantity("9223372036854775807")
    total = per_pod.times((2**31 - 1) ** 2) + per_pod.times((2**31 - 1) ** 2)
    assert str(total) == str(2 * MAX_AMOUNT * (2**31 - 1) ** 2)
    assert str(parse_quantity("1E").times(10**30)) == "1" + "0" * 30 + "E"
