"""The one place every CP-SAT solve in optisched goes through.

:func:`solve` runs ``solver.solve(model, callback)`` so that Ctrl-C and SIGTERM stop it
(:mod:`optisched.interrupt`: registered as stoppable while it runs, CP-SAT's own SIGINT handler off) and so
that it never enters a window where OR-Tools aborts the process.

That window (OR-Tools 9.14 and 9.15): with ``interleave_search``, two or more workers and presolve on, a
hint CP-SAT can take whole is its first solution (``solution_info`` ``"complete_hint"``); a stop that lands
after it and before the interleaved search starts (the wall-clock limit, ``stop_search`` from Ctrl-C's
watcher or from a solution callback) ends in ``Check failed: solution->size() == postsolve_mapping.size()``
and ``abort()``. What does not close it: leaving variables out of the hint (CP-SAT 9.15 completes a hint
through presolve, e.g. a variable an equality defines, and takes the presolved hint whole all the same),
or running without the solution callback (the wall-clock limit still aborts). What does: one worker,
presolve off, no hint, or no interleaving. Of those, one worker keeps everything a tier relies on: the
hint, presolve, the callback's live reports and the repeatable search (interleaved search with one worker
is deterministic too); the benchmarks place the same pods and reach the same scores (docs/optimal.md). So
in that configuration, with a hint, :func:`solve` runs the call with one worker and gives the caller's
``num_workers`` back after. Large models run with presolve off, out of the window, and keep their
workers. A callback must not stop the search at the hint's own solution either (:func:`is_hint_solution`).
"""
from __future__ import annotations

import os
from typing import Any

from . import interrupt

__all__ = ["abort_window", "is_hint_solution", "one_worker", "solve"]


def solve(solver: Any, model: Any, callback: Any = None) -> int:
    """``solver.solve(model, callback)``: stopped by Ctrl-C/SIGTERM, without CP-SAT's SIGINT handler, out of
    the abort window (module docstring: there, with a hint, on one worker); once a stop was requested it
    starts with no time at all."""
    params = solver.parameters
    params.catch_sigint_signal = False
    if interrupt.requested():
        params.max_time_in_seconds = 0.0
    workers = params.num_workers
    if one_worker(params, model):
        params.num_workers = 1
    try:
        with interrupt.stoppable(solver.stop_search):
            return solver.solve(model) if callback is None else solver.solve(model, callback)
    finally:
        params.num_workers = workers


def one_worker(params: Any, model: Any) -> bool:
    """Whether :func:`solve` runs ``model`` under ``params`` on one worker: in the abort window, with a
    hint."""
    return abort_window(params) and model.proto.has_solution_hint() and len(model.proto.solution_hint.vars) > 0


def is_hint_solution(callback: Any) -> bool:
    """Whether the solution a :class:`CpSolverSolutionCallback` is called on is the hint's own (CP-SAT
    names it ``complete_hint``, or a worker's ``... [hint]``): a callback must not stop the search there."""
    return "hint" in callback.response_proto.solution_info


def abort_window(params: Any) -> bool:
    """Whether CP-SAT ``params`` are the configuration where a hint and a stop abort (module docstring):
    interleaved search, two or more workers (0 is every core), presolve on."""
    workers = params.num_workers or params.num_search_workers or os.cpu_count() or 1
    return bool(params.interleave_search) and workers >= 2 and bool(params.cp_model_presolve)
