"""Kubernetes resource quantities ("500m", "2Gi", "1.5", "1e3"), parsed the way the API server does.

Ray start flags and status counters are computed from container resources, and KubeRay does
that arithmetic with Go's `resource.Quantity`. The same inputs must give the same numbers here
(a CPU request of "1500m" is `--num-cpus=2`, "1Gi" is `--memory=1073741824`), so this module
keeps quantities exact (fractions, never binary floats) and reproduces Go's rounding and its
canonical rendering.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from fractions import Fraction

_NANO = Fraction(1, 10**9)
_PATTERN = re.compile(
    r"^(?P<number>[+-]?(?:\d+\.?\d*|\.\d+))"
    r"(?P<suffix>[eE][+-]?\d+|Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$"
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
    """The text is not a Kubernetes quantity."""


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
    """Parse a quantity; raise `InvalidQuantityError` for anything the API server would reject.

    Non-zero amounts are rounded up (away from zero) to the nearest nano, as the API server does,
    so that a tiny request never becomes zero.
    """
    if isinstance(text, bool):
        raise InvalidQuantityError(f"not a quantity: {text!r}")
    raw = str(text).strip() if isinstance(text, str) else _number_text(text)
    match = _PATTERN.match(raw)
    if match is None:
        raise InvalidQuantityError(f"not a quantity: {text!r}")
    amount = Fraction(Decimal(match["number"]))
    suffix = match["suffix"] or ""
    if suffix in _BINARY_SUFFIXES:
        amount *= 1024 ** _BINARY_SUFFIXES[suffix]
        fmt = QuantityFormat.BINARY_SI
    elif suffix[:1] in ("e", "E") and len(suffix) > 1:
        amount *= Fraction(10) ** int(suffix[1:])
        fmt = QuantityFormat.DECIMAL_EXPONENT
    else:
        amount *= Fraction(10) ** _DECIMAL_SUFFIXES[suffix]
        fmt = QuantityFormat.DECIMAL_SI
    return Quantity(_round_up_to_nano(amount), fmt)


def try_parse_quantity(text: object) -> Quantity | None:
    """`parse_quantity`, or None when the value is missing or not a quantity."""
    if not isinstance(text, str | int | float):
        return None
    try:
        return parse_quantity(text)
    except InvalidQuantityError:
        return None


def _number_text(number: int | float) -> str:
    # YAML turns `cpu: 1` and `cpu: 0.5` into numbers; the API server reads them as text.
    if isinstance(number, float) and number.is_integer():
        return str(int(number))
    return format(Decimal(repr(number)), "f") if isinstance(number, float) else str(number)


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
    mantissa, exponent = int(amount / _NANO), -9
    while mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    # Exponents are kept at multiples of three so that an SI suffix exists for them.
    shift = exponent % 3
    mantissa, exponent = mantissa * 10**shift, exponent - shift
    if fmt is QuantityFormat.DECIMAL_EXPONENT:
        return f"{mantissa}e{exponent}" if exponent else str(mantissa)
    if exponent > 18:
        mantissa, exponent = mantissa * 10 ** (exponent - 18), 18
    return f"{mantissa}{_DECIMAL_NAMES[exponent]}"
