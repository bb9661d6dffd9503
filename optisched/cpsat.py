"""The one place every CP-SAT solve in optisched goes through.

:func:`solve` runs ``solver.solve(model, callback)`` so that Ctrl-C and SIGTERM stop it
(:mod:`optisched.interrupt`: registered as stoppable while it runs, CP-SAT's own SIGINT handler off) and so
that it never enters a window where OR-Tools aborts the process.

That window (OR-Tools 9.14 and 9.15): with ``interleave_search``, two or more workers and presolve on, a
hint that is complete and feasible is taken as the first solution (``solution_info`` ``"complete_hint"``);
a stop that lands after that and before the interleaved search starts (the wall-clock limit, or
``stop_search`` from Ctrl-C or from a solution callback, while a solution callback is registered) ends in
``Check failed: solution->size() == postsolve_mapping.size()`` and ``abort()``. Leaving variables out of
the hint does not close it: CP-SAT 9.15 completes a hint through presolve (a variable an equality
defines, an objective's auxiliary variable) and takes the presolved hint as ``complete_hint`` again. So
in that configuration :func:`solve` hands the model over without its hint, and gives the hint back after
the call. The callers keep their own incumbent (:class:`optisched.optimal.tiers.TierSolver` compares what
the solver returns with it), so the hint's answer is never lost. Large models run with presolve off, out
of the window, and keep their hint. A solution callback must not stop the search at the hint's own
solution either (:func:`is_hint_solution`).
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ortools.sat.python import cp_model_helper

from . import interrupt

__all__ = ["abort_window", "is_hint_solution", "solve"]


def solve(solver: Any, model: Any, callback: Any = None) -> int:
    """``solver.solve(model, callback)``: stopped by Ctrl-C/SIGTERM, without CP-SAT's SIGINT handler, out of
    the abort window (module docstring); once a stop was requested it starts with no time at all."""
    params = solver.parameters
    params.catch_sigint_signal = False
    if interrupt.requested():
        params.max_time_in_seconds = 0.0
    with _without_hint(model.proto, abort_window(params)), interrupt.stoppable(solver.stop_search):
        return solver.solve(model) if callback is None else solver.solve(model, callback)


def is_hint_solution(callback: Any) -> bool:
    """Whether the solution a :class:`CpSolverSolutionCallback` is called on is the hint's own (CP-SAT
    names it ``complete_hint``, or a worker's ``... [hint]``): a callback must not stop the search there."""
    return "hint" in callback.response_proto.solution_info


def abort_window(params: Any) -> bool:
    """Whether CP-SAT ``params`` are the configuration where a hint and a stop abort (module docstring):
    interleaved search, two or more workers (0 is every core), presolve on."""
    workers = params.num_workers or params.num_search_workers or os.cpu_count() or 1
    return bool(params.interleave_search) and workers >= 2 and bool(params.cp_model_presolve)


@contextmanager
def _without_hint(proto: Any, window: bool) -> Iterator[None]:
    """In the abort window, ``proto`` without its hint while the block runs; the hint as it was after."""
    if not window or not proto.has_solution_hint():
        yield
        return
    saved = cp_model_helper.PartialVariableAssignment()
    saved.copy_from(proto.solution_hint)
    proto.clear_solution_hint()
    try:
        yield
    finally:
        proto.solution_hint.copy_from(saved)
