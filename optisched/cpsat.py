"""The one place every CP-SAT solve in optisched goes through.

:func:`solve` runs ``solver.solve(model, callback)`` so that Ctrl-C and SIGTERM stop it
(:mod:`optisched.interrupt`: registered as stoppable while it runs, CP-SAT's own SIGINT handler off) and so
that it never enters a window where OR-Tools aborts the process.

That window (OR-Tools 9.14 and 9.15, ``cp_model_solver.cc``): with ``interleave_search``, two or more
workers and presolve on, a *complete* feasible hint (every variable that is not fixed has a hinted value)
is taken as the first solution (``solution_info`` ``"complete_hint"``) before presolve; a stop that lands
after that and before the interleaved search starts (a time limit, ``stop_search`` from Ctrl-C or from a
solution callback) ends in ``Check failed: solution->size() == postsolve_mapping.size()`` and ``abort()``.
So in that configuration :func:`solve` leaves one variable out of a complete hint for the call: the last
variable in proto order that is not fixed. CP-SAT then follows the hint by its hint search (``[hint]``)
instead. The model's hint is given back whole after the call. A solution callback must not stop the search
at the hint's own solution either (:func:`is_hint_solution`).
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ortools.sat.python import cp_model_helper

from . import interrupt

__all__ = ["abort_window", "is_hint_solution", "left_out", "solve"]


def solve(solver: Any, model: Any, callback: Any = None) -> int:
    """``solver.solve(model, callback)``: stopped by Ctrl-C/SIGTERM, without CP-SAT's SIGINT handler, out of
    the abort window (module docstring); once a stop was requested it starts with no time at all."""
    params = solver.parameters
    params.catch_sigint_signal = False
    if interrupt.requested():
        params.max_time_in_seconds = 0.0
    with _incomplete_hint(model.proto if hasattr(model, "proto") else model, params), \
            interrupt.stoppable(solver.stop_search):
        return solver.solve(model) if callback is None else solver.solve(model, callback)


def is_hint_solution(callback: Any) -> bool:
    """Whether the solution a :class:`CpSolverSolutionCallback` is called on is the hint's own (CP-SAT
    names it ``complete_hint``, or a worker's ``... [hint]``): a callback must not stop the search there."""
    return "hint" in callback.response_proto.solution_info


def abort_window(params: Any) -> bool:
    """Whether CP-SAT ``params`` are the configuration where a complete hint and a stop abort (module
    docstring): interleaved search, two or more workers (0 is every core), presolve on."""
    workers = params.num_workers or params.num_search_workers or os.cpu_count() or 1
    return bool(params.interleave_search) and workers >= 2 and bool(params.cp_model_presolve)


def _fixed(variable: Any) -> bool:
    domain = variable.domain
    return len(domain) == 2 and domain[0] == domain[1]


def left_out(proto: Any) -> int | None:
    """The position in ``proto``'s hint of the variable :func:`solve` leaves out, when the hint is complete
    (every variable not fixed hinted): the last such variable in proto order; None when the hint is not
    complete. All variables fixed: position -1 (the whole hint is left out)."""
    if not proto.has_solution_hint():
        return None
    variables, hint = proto.variables, proto.solution_hint
    n, hinted = len(variables), len(hint.vars)
    last = next((i for i in range(n - 1, -1, -1) if not _fixed(variables[i])), None)
    if last is None:
        return -1
    # (a valid model hints a variable once: as many entries as variables is every variable)
    if hinted > last and hint.vars[last] == last and hinted == n:
        return last
    refs = [r if r >= 0 else -r - 1 for r in hint.vars]
    if last not in refs:
        return None
    if hinted < n:
        covered = set(refs)
        if any(i not in covered and not _fixed(variables[i]) for i in range(n)):
            return None
    return refs.index(last)


@contextmanager
def _incomplete_hint(proto: Any, params: Any) -> Iterator[None]:
    """In the abort window, the model's complete hint without the variable :func:`left_out` names while the
    block runs; the hint as it was afterwards."""
    at = left_out(proto) if abort_window(params) else None
    if at is None:
        yield
        return
    hint = proto.solution_hint
    saved = cp_model_helper.PartialVariableAssignment()
    saved.copy_from(hint)
    if at < 0:
        proto.clear_solution_hint()
    else:
        refs, values = list(hint.vars), list(hint.values)
        hint.vars.clear()
        hint.values.clear()
        hint.vars.extend(refs[:at] + refs[at + 1:])
        hint.values.extend(values[:at] + values[at + 1:])
    try:
        yield
    finally:
        proto.solution_hint.copy_from(saved)
