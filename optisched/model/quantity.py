"""Kubernetes resource quantities, parsed exactly.

Follows ``k8s.io/apimachinery/pkg/api/resource`` (``ParseQuantity``): a sign, a
decimal number and one suffix, either binary SI (``Ki`` … ``Ei``), decimal SI
(``n u m k M G T P E``) or a decimal exponent (``e3``, ``E-2``). Quantities are
held as integer *nano units* (the finest precision Kubernetes keeps; finer
values round up, as ``ParseQuantity`` does), so sums are exact and the two
conversions the scheduler uses are plain ceiling divisions:
``MilliValue()`` (CPU in millicores) and ``Value()`` (bytes, counts).
"""
from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["INT64_MAX", "MAX_DIGITS", "NANO", "format_quantity", "human_quantity", "milli_value", "parse_quantity",
           "to_scheduler_units", "value"]

NANO = 10**9
INT64_MAX = 2**63 - 1
MAX_DIGITS = 100  # digits of a quantity's number; int64 needs 19, nano precision 9 more
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL_EXP = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_RE = re.compile(r"^([+-]?)(\d+(?:\.\d*)?|\.\d+)(.*)$")
_EXP = re.compile(r"^[eE]([+-]?\d+)$")


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def _ceil_div(a: int, b: int) -> int:
    return -((-a) // b)


@lru_cache(maxsize=65536)
def parse_quantity(text: str | float) -> int:
    """Parse a quantity into integer nano units, rounding up below 1n like ``ParseQuantity``.

    >>> parse_quantity("250m") // 10**6
    250
    """
    if isinstance(text, bool):
        raise QuantityError(f"{text!r} is not a quantity")
    if isinstance(text, (int, float)):
        text = repr(text) if isinstance(text, float) else str(text)
    s = text.strip() if isinstance(text, str) else text
    m = _RE.match(s) if isinstance(s, str) else None
    if m is None or s != text:
        raise QuantityError(f"{text!r} is not a quantity")
    sign, number, suffix = m.groups()
    if len(number) > MAX_DIGITS or len(suffix) > MAX_DIGITS:
        raise QuantityError(f"{text[:20]!r}… is not a quantity (more than {MAX_DIGITS} digits)")
    whole, _, frac = number.partition(".")
    mantissa = int((whole or "0") + frac)
    exp10 = -len(frac)
    mult = 1
    if suffix in _BINARY:
        mult = _BINARY[suffix]
    elif suffix in _DECIMAL_EXP:
        exp10 += _DECIMAL_EXP[suffix]
    elif (e := _EXP.match(suffix)) is not None:
        exp10 += int(e.group(1))
    else:
        raise QuantityError(f"{text!r} is not a quantity (unknown suffix {suffix!r})")
    # value in nano units = mantissa * mult * 10**(exp10 + 9), rounded up (away from zero, as Kubernetes does)
    exp10 += 9
    if mantissa and exp10 + len(str(mantissa)) > 40:  # beyond 2**63 * NANO: do not build a huge integer
        raise QuantityError(f"{text!r} is too large")
    if exp10 < -2 * MAX_DIGITS - 40:  # a tiny positive amount: rounds up to one nano unit
        nanos = 1 if mantissa else 0
    elif exp10 >= 0:
        nanos = mantissa * mult * 10**exp10
    else:
        nanos = _ceil_div(mantissa * mult, 10**-exp10)
    if nanos > 2**63 * NANO:
        raise QuantityError(f"{text!r} is too large")
    return -nanos if sign == "-" else nanos


def milli_value(nanos: int) -> int:
    """``Quantity.MilliValue()``: milli units, rounded up."""
    return _ceil_div(nanos, 10**6)


def value(nanos: int) -> int:
    """``Quantity.Value()``: whole units, rounded up."""
    return _ceil_div(nanos, NANO)


def to_scheduler_units(resource: str, nanos: int) -> int:
    """The integer the scheduler keeps for a resource: millicores for CPU, ``Value()`` otherwise."""
    return milli_value(nanos) if resource == "cpu" else value(nanos)


def format_quantity(resource: str, amount: int) -> str:
    """Render scheduler units back as a readable quantity (``1500m``, ``2Gi``, ``3``)."""
    if resource == "cpu":
        return f"{amount // 1000}" if amount % 1000 == 0 else f"{amount}m"
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        for suf, mult in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if amount and amount % mult == 0:
                return f"{amount // mult}{suf}"
    return str(amount)


_HUMAN_UNITS = (("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


def human_quantity(resource: str, amount: int) -> str:
    """Scheduler units for a person reading a summary: cpu in cores (``2.5 cores``), memory and storage in
    the largest binary unit reached, one decimal (``3.0 Gi``), other resources as counts. Rounded: use
    :func:`format_quantity` where the exact quantity matters."""
    if resource == "cpu":
        cores = f"{amount / 1000:,.2f}".rstrip("0").rstrip(".")
        return f"{cores} core" if amount == 1000 else f"{cores} cores"
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        for suf, mult in _HUMAN_UNITS:
            if abs(amount) >= mult:
                return f"{amount / mult:,.1f} {suf}"
        return f"{amount} B"
    return f"{amount:,}"
