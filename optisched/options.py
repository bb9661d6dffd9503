"""The ranges of numeric option values, the engine's side: what CP-SAT and the clock accept.

The command line checks its values where an option is parsed (:mod:`optisched.cli.options`, typer
callbacks) against these ranges; the engine itself checks ``--weights`` (its parsing is
:func:`optisched.optimal.options.parse_weights`'):

- ``--time-limit``: a finite number of seconds, at least :data:`MIN_SECONDS`;
- ``--workers``: an integer from 1 to :data:`MAX_WORKERS`;
- ``--seed`` and each ``--weights`` weight: within :data:`INT32`, the type of CP-SAT's ``random_seed``
  (sat_parameters.proto); a weight multiplies the objective's coefficients, and the products must stay
  within CP-SAT's 64-bit arithmetic.

A value out of range is an :class:`InputError` naming the option (exit status 2, one line).
"""
from __future__ import annotations

from .errors import InputError

__all__ = ["INT32", "MAX_WORKERS", "MIN_SECONDS", "check_range", "check_weight"]

MIN_SECONDS = 0.1
MAX_WORKERS = 1024
INT32 = (-(2**31), 2**31 - 1)


def check_range(value: int, bounds: tuple[int, int], what: str, option: str) -> int:
    """``value`` when within ``bounds`` (inclusive), else an :class:`InputError` naming ``option``."""
    if not bounds[0] <= value <= bounds[1]:
        raise InputError(f"{value} is beyond the {what} range [{bounds[0]}, {bounds[1]}]", source=option)
    return value


def check_weight(value: int, option: str) -> int:
    """A ``--weights`` weight: within int32."""
    return check_range(value, INT32, "int32", option)
