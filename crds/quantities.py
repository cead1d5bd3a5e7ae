"""Kubernetes resource quantities ("500m", "2Gi", "1.5", "1e3"), parsed the way the API server does.

Ray start flags and status counters are computed from container resources, and KubeRay does
that arithmetic with Go's `resource.Quantity`. The same inputs must give the same numbers here
(a CPU request of "1500m" is `--num-cpus=2`, "1Gi" is `--memory=1073741824`), so this module
keeps quantities exact (fractions, never binary floats) and reproduces Go's rounding and its
canonical rendering.

Quantities inside pod templates reach the controller unparsed (the CRDs keep pod templates as
preserved objects), so this parser bounds what it accepts before doing any arithmetic: at
most `MAX_LENGTH` characters, and a magnitude of at most `MAX_AMOUNT`. Kubernetes bounds
neither (it keeps a decimal exponent beside the digits, so "1e400000" costs it nothing),
but here an exact amount that large would take minutes to render, and KubeRay passes these
amounts to `ray start` as int64s anyway. The order of magnitude is read from the text first,
so no amount beyond the bound is ever computed.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from fractions import Fraction

MAX_LENGTH = 64
"""Characters of a quantity's text; the longest exact int64 with nine decimals has 29."""
MAX_AMOUNT = 2**63 - 1
"""The largest magnitude: where Kubernetes caps a binary quantity, and the largest value of
Go's `Quantity.Value()`, which KubeRay passes to `ray start`."""

_NANO = Fraction(1, 10**9)
_NANO_DIGITS = 9
# Digits only (Go's parser knows no other), no whitespace inside.
_PATTERN = re.compile(
    r"(?P<sign>[+-]?)(?P<whole>[0-9]*)(?:\.(?P<fraction>[0-9]*))?"
    r"(?P<suffix>[eE][+-]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?"
)
_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12}
_DECIMAL_SUFFIXES |= {"P": 15, "E": 18}
_BINARY_SUFFIXES = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL_NAMES = {exponent: name for name, exponent in _DECIMAL_SUFFIXES.items()}
_BINARY_NAMES = {power: name for name, power in _BINARY_SUFFIXES.items()} | {0: ""}


class QuantityFormat(StrEnum):
    """How a quantity is written back: the format of the suffix it was parsed with."""

    DECIMAL_SI = "DecimalSI"
    BINARY_SI = "BinarySI"
    DECIMAL_EXPONENT = "DecimalExponent"


class InvalidQuantityError(ValueError):
    """The value is not a quantity this controller reads.

    The message completes a sentence that starts with the value: "'1e400000' is larger …".
    """


@dataclass(frozen=True)
class Quantity:
    """An exact quantity plus the format it is rendered in."""

    amount: Fraction
    format: QuantityFormat = QuantityFormat.DECIMAL_SI

    @property
    def is_zero(self) -> bool:
        """Whether the quantity is zero."""
        return self.amount == 0

    def value(self) -> int:
        """The integer value, rounded away from zero like Go's `Quantity.Value()`."""
        if self.amount >= 0:
            return math.ceil(self.amount)
        return -math.ceil(-self.amount)

    def as_float(self) -> float:
        """The nearest float, like Go's `AsApproximateFloat64()`."""
        return float(self.amount)

    def __add__(self, other: Quantity) -> Quantity:
        # Go keeps the receiver's format unless the receiver is zero.
        fmt = other.format if self.is_zero else self.format
        return Quantity(self.amount + other.amount, fmt)

    def times(self, factor: int) -> Quantity:
        """The quantity multiplied by an integer, keeping its format."""
        return Quantity(self.amount * factor, self.format)

    def __str__(self) -> str:
        return _canonical(self)


ZERO = Quantity(Fraction(0))


def parse_quantity(text: str | int | float) -> Quantity:
    """Parse a quantity; raise `InvalidQuantityError` for what the API server or the bounds refuse.

    Non-zero amounts are rounded up (away from zero) to the nearest nano, as the API server does,
    so that a tiny request never becomes zero.

    Raises:
        InvalidQuantityError: Not a quantity, longer than `MAX_LENGTH` or beyond `MAX_AMOUNT`.
    """
    raw = text.strip() if isinstance(text, str) else _number_text(text)
    if len(raw) > MAX_LENGTH:
        raise InvalidQuantityError(f"is longer than {MAX_LENGTH} characters")
    match = _PATTERN.fullmatch(raw)
    if match is None or not (match["whole"] or match["fraction"]):
        raise InvalidQuantityError(_NOT_A_QUANTITY)
    fraction = match["fraction"] or ""
    digits = int(match["whole"] + fraction)  # at most MAX_LENGTH digits
    exponent, power, fmt = _scale(match["suffix"] or "")
    exponent -= len(fraction)
    sign = -1 if match["sign"] == "-" else 1
    if digits == 0:
        return Quantity(Fraction(0), fmt)
    # `digits` × 10^exponent × 1024^power lies below 10^order (1024 < 10^3.01), and at or
    # above 10^(order - 2): past `_MAX_ORDER` it is too large without being computed.
    order = len(str(digits)) + exponent + (power * 3 + 1 if power else 0)
    if order > _MAX_ORDER:
        raise InvalidQuantityError(_TOO_LARGE)
    if order < -_NANO_DIGITS:
        return Quantity(sign * _NANO, fmt)  # below one nano: rounded up to one
    amount = _round_up_to_nano(sign * digits * Fraction(10) ** exponent * 1024**power)
    if abs(amount) > MAX_AMOUNT:
        raise InvalidQuantityError(_TOO_LARGE)
    return Quantity(amount, fmt)


_MAX_ORDER = len(str(MAX_AMOUNT)) + 1
_NOT_A_QUANTITY = "is not a quantity such as 500m, 2Gi or 1.5"
_TOO_LARGE = f"is larger than {MAX_AMOUNT}, the largest quantity accepted"


def _scale(suffix: str) -> tuple[int, int, QuantityFormat]:
    """The power of ten, the power of 1024 and the format a suffix stands for."""
    if suffix in _BINARY_SUFFIXES:
        return 0, _BINARY_SUFFIXES[suffix], QuantityFormat.BINARY_SI
    if suffix[:1] in ("e", "E") and len(suffix) > 1:
        return int(suffix[1:]), 0, QuantityFormat.DECIMAL_EXPONENT
    return _DECIMAL_SUFFIXES[suffix], 0, QuantityFormat.DECIMAL_SI


def try_parse_quantity(text: object) -> Quantity | None:
    """`parse_quantity`, or None when the value is missing or not a quantity."""
    if not isinstance(text, str | int | float):
        return None
    try:
        return parse_quantity(text)
    except InvalidQuantityError:
        return None


def quantity_problem(value: object) -> str | None:
    """Why `value` is not a quantity this controller reads, or None; null reads as zero, as in Go.

    Returns:
        The rest of a sentence that starts with the value, e.g. "is not a quantity such as …".
    """
    if value is None:
        return None
    if not isinstance(value, str | int | float):
        return _NOT_A_QUANTITY
    try:
        parse_quantity(value)
    except InvalidQuantityError as err:
        return str(err)
    return None


def _number_text(number: int | float) -> str:
    """The JSON text of a number, which is what the API server parses.

    YAML turns `cpu: 1` and `cpu: 0.5` into numbers.
    """
    if isinstance(number, bool):
        raise InvalidQuantityError(_NOT_A_QUANTITY)
    if isinstance(number, int):
        if abs(number) > MAX_AMOUNT:  # before str(): a huge integer takes long to print
            raise InvalidQuantityError(_TOO_LARGE)
        return str(number)
    if not math.isfinite(number):
        raise InvalidQuantityError(_NOT_A_QUANTITY)
    if number.is_integer() and abs(number) < _GO_FLOAT_EXPONENT_AT:
        return str(int(number))
    if number != 0 and not _GO_FLOAT_PLAIN_FROM <= abs(number) < _GO_FLOAT_EXPONENT_AT:
        return repr(number)  # Go writes these with an exponent too; "1e-07" parses the same
    return format(Decimal(repr(number)), "f")


# Go's encoding/json writes a float64 in plain digits between these, else with an exponent.
_GO_FLOAT_PLAIN_FROM = 1e-6
_GO_FLOAT_EXPONENT_AT = 1e21


def _round_up_to_nano(amount: Fraction) -> Fraction:
    scaled = amount / _NANO
    if scaled.denominator == 1:
        return amount
    magnitude = math.ceil(abs(scaled))
    return Fraction(magnitude if scaled > 0 else -magnitude) * _NANO


def _canonical(quantity: Quantity) -> str:
    amount = quantity.amount
    if amount == 0:
        return "0"
    if quantity.format is QuantityFormat.BINARY_SI:
        if abs(amount) >= 1024 and amount.denominator == 1:
            return _binary(int(amount))
        return _decimal(amount, QuantityFormat.DECIMAL_SI)
    return _decimal(amount, quantity.format)


def _binary(amount: int) -> str:
    power = 0
    while power < 6 and amount % 1024 == 0:
        amount //= 1024
        power += 1
    return f"{amount}{_BINARY_NAMES[power]}"


def _decimal(amount: Fraction, fmt: QuantityFormat) -> str:
    nanos = int(amount / _NANO)
    sign, digits = ("-" if nanos < 0 else ""), str(abs(nanos))
    # Trailing zeros move into the exponent: counted on the text, in one pass.
    mantissa = digits.rstrip("0")
    exponent = len(digits) - len(mantissa) - _NANO_DIGITS
    # Exponents are kept at multiples of three so that an SI suffix exists for them.
    shift = exponent % 3
    mantissa, exponent = mantissa + "0" * shift, exponent - shift
    if fmt is QuantityFormat.DECIMAL_EXPONENT:
        return f"{sign}{mantissa}e{exponent}" if exponent else sign + mantissa
    if exponent > 18:
        mantissa, exponent = mantissa + "0" * (exponent - 18), 18
    return f"{sign}{mantissa}{_DECIMAL_NAMES[exponent]}"
