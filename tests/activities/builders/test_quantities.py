from __future__ import annotations

from fractions import Fraction

import pytest

from activities.builders.quantities import (
    InvalidQuantityError,
    QuantityFormat,
    parse_quantity,
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
