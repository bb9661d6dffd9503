"""Checks of numeric command-line values, run where an option is parsed (typer callbacks).

A value out of range is an :class:`InputError` naming the option (exit status 2, one line), never a
pydantic or pybind traceback minutes later:

- ``--time-limit``: a finite number of seconds, at least 0.1 (``0``, ``nan``, ``inf`` and negatives are
  refused);
- ``--workers``: an integer from 1 to :data:`MAX_WORKERS`;
- ``--seed``: an integer within int32, the type of CP-SAT's ``random_seed`` (sat_parameters.proto);
- ``--weights``: each weight within int32: a weight multiplies the objective's coefficients, and the
  products must stay within CP-SAT's 64-bit arithmetic (:func:`optisched.optimal.solve.parse_weights`
  checks the rest).
"""
from __future__ import annotations

import math

import typer

from .errors import InputError

__all__ = ["INT32", "MAX_WORKERS", "MIN_SECONDS", "check_int32", "check_seconds", "check_weight", "check_workers"]

MIN_SECONDS = 0.1
MAX_WORKERS = 1024
INT32 = (-(2**31), 2**31 - 1)


def _name(param: typer.CallbackParam, default: str) -> str:
    opts = getattr(param, "opts", None)
    return opts[0] if opts else default


def check_seconds(param: typer.CallbackParam, value: float | None) -> float | None:
    """``--time-limit``: finite and at least :data:`MIN_SECONDS`."""
    if value is not None and (not math.isfinite(value) or value < MIN_SECONDS):
        raise InputError(f"{value!r} is not a number of seconds of at least {MIN_SECONDS}",
                         source=_name(param, "--time-limit"))
    return value


def _check_range(value: int, bounds: tuple[int, int], what: str, option: str) -> int:
    if not bounds[0] <= value <= bounds[1]:
        raise InputError(f"{value} is beyond the {what} range [{bounds[0]}, {bounds[1]}]", source=option)
    return value


def check_int32(param: typer.CallbackParam, value: int | None) -> int | None:
    """An option stored in an int32 field (``--seed``)."""
    return None if value is None else _check_range(value, INT32, "int32", _name(param, "--seed"))


def check_weight(value: int, option: str) -> int:
    """A ``--weights`` weight: within int32."""
    return _check_range(value, INT32, "int32", option)


def check_workers(param: typer.CallbackParam, value: int | None) -> int | None:
    """``--workers``: CP-SAT's ``num_workers``, from 1 to :data:`MAX_WORKERS`."""
    if value is not None and not 1 <= value <= MAX_WORKERS:
        raise InputError(f"{value} is not a number of workers from 1 to {MAX_WORKERS}",
                         source=_name(param, "--workers"))
    return value
