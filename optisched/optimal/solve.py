"""Optimal mode: the whole batch as one CP-SAT model, solved tier by tier, with a certificate.

1. Greedy mode runs first: its placement is the hint and the fallback (the answer is never worse).
2. The batch becomes pod classes (:mod:`.classes`) and its independent parts (:mod:`.groups`), each one
   :class:`.model.BatchModel` with every filter of the profile as constraints, plus the batch preemption
   rules (:mod:`optisched.optimal.eviction.batch`).
3. Tiers (:mod:`.tier_loop`, solved by :mod:`.tiers`): pods placed per priority level, highest first (no
   lower-priority pod placed at the expense of a higher one); then disruption of running pods; then the
   user's objective when one is asked for (:mod:`.user_objectives`); then the profile's score
   (:mod:`.score`).
4. The answer is decoded to a node per pod and re-checked by the greedy filters (:mod:`.certify`,
   :mod:`.check`).

This module runs those phases against the clock; the options and the result are :mod:`.options`' and
:mod:`.result`'s, re-exported here for the importers of :func:`solve_optimal`.
"""
from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from .. import collector
from ..greedy.scheduler import GreedyOptions, GreedyResult, GreedyScheduler
from ..model.state import ClusterState, for_release
from ..policy.eviction import kept_notes
from ..profile import SchedulerConfig
from .certify import answer, combine, finish, greedy_answer, greedy_only
from .classes import build_batch
from .clock import Clock
from .explain import explain_unplaced
from .groups import build_groups
from .hint import repair_placement
from .model import BuildTimeout, stopper
from .options import WEIGHT_KEYS, OptimalOptions, parse_weights
from .result import NOT_ATTEMPTED, Certificate, OptimalResult, placed_per_level
from .tier_loop import solve_tiers
from .tiers import Progress
from .user_objectives import check_objective

__all__ = ["NOT_ATTEMPTED", "STOP_AFTER", "WEIGHT_KEYS", "Certificate", "OptimalOptions", "OptimalResult",
           "greedy_answer", "parse_weights", "placed_per_level", "solve_optimal", "solver_deadline"]


STOP_AFTER = ("placed",)
# CPU seconds per pending pod of decoding and re-checking an answer, the most a loaded machine was seen to
# take (docs/optimal_trust.md, "The time limit is a promise")
RECHECK_CPU = 7e-4


def _plain_first(state: ClusterState, config: SchedulerConfig, options: OptimalOptions,
                 progress: Progress | None, greedy: GreedyResult, clock: Clock) -> np.ndarray | None:
    """With ``movable``, the answer without moves first: every placement it may return is allowed with
    moves too, so it is the movable run's hint, and the placement tiers, which never go below their hint,
    keep the movable answer at least as good on every level.

    It runs the placement tiers of a plain run with the same limit, so with the same budgets: their answer
    is a separate plain run's (deterministic time), and the movable answer is never below it. It ends as
    soon as its tiers are proven (small batches take a fraction of the limit); the movable model gets what
    is left, charged to ``clock`` as the plain pass used it."""
    if not options.movable or options.weights or clock.interrupted or not state.pending:
        return None  # nothing pending: the answer without moves is the cluster as it is, the hint already
    plain = solve_optimal(state, config, replace(options, movable=False, stop_after="placed"), progress,
                          greedy, explain=False)
    clock.charge(plain.used)
    return plain.node_of


def solver_deadline(time_limit: float, pending: int) -> float:
    """When the solver phases end: the rest of ``time_limit`` decodes, re-checks and explains."""
    return time_limit - min(0.5 * time_limit, max(0.3, 0.1 * time_limit, RECHECK_CPU * pending))


DEFAULT_OPTIONS = OptimalOptions()


def solve_optimal(state: ClusterState, config: SchedulerConfig, options: OptimalOptions = DEFAULT_OPTIONS,
                  progress: Progress | None = None, greedy: GreedyResult | None = None,
                  explain: bool = True) -> OptimalResult:
    """Place the batch optimally (see the module docstring); ``greedy`` reuses a greedy run; ``explain``:
    say why pods stay pending (probes in the time left)."""
    state = for_release(state, config.requests_key)
    with collector.paused():  # (millions of variables and terms: docs/optimal_trust.md)
        return _solve_optimal(state, config, options, progress, greedy, explain)


def _solve_optimal(state: ClusterState, config: SchedulerConfig, options: OptimalOptions,
                   progress: Progress | None, greedy: GreedyResult | None, explain: bool) -> OptimalResult:
    check_objective(options.objective)
    end = options.time_limit
    deadline = solver_deadline(end, len(state.pending))
    clock = Clock(deadline, options.deterministic)  # the wall-clock safety net: the solver phases end here

    def phase(name: str) -> None:
        if progress is not None:
            progress(name, None, None, time.perf_counter() - clock.t0)

    phase("greedy placement (the hint)")
    if greedy is None:
        with clock.phase("greedy"):
            greedy = GreedyScheduler(state, config, GreedyOptions(record=False, interruptible=True)).run()
            clock.work("check", len(state.pending))
    if clock.interrupted:
        return greedy_only(state, config, options, greedy, clock)
    raw = greedy.snapshot.node_of.copy()
    start = _plain_first(state, config, options, progress, greedy, clock)
    with clock.phase("batch"):
        clock.work("pod", len(state.pods))  # (charged first: a stop it decides comes at the first pod)
        try:
            batch = build_batch(state, config, movable=options.movable, preemption=options.preemption,
                                policy=options.eviction, tick=stopper(clock, deadline))
        except BuildTimeout:  # a class per pod: the greedy answer's accounting needs no signatures
            batch = build_batch(state, config, movable=options.movable, preemption=options.preemption,
                                policy=options.eviction, grouped=False)
            return greedy_only(state, config, options, greedy, clock, batch)
    if not clock.wall_allows(0.0):  # the greedy hint (or the plain pass) took the whole limit, or Ctrl-C
        return greedy_only(state, config, options, greedy, clock, batch)
    phase("building the model")
    try:
        with clock.phase("repair"):  # stops part-way once the limit has passed
            fallback = repair_placement(batch, config, raw, clock=clock, deadline=deadline)
    except BuildTimeout:
        return greedy_only(state, config, options, greedy, clock, batch)
    if clock.past(deadline):  # the repair took what was left: no model would be solved
        return greedy_only(state, config, options, greedy, clock, batch)
    # the plain answer, when the solver's, passed batch semantics: the hint, so no tier goes below it
    hint = start if start is not None and not np.array_equal(start, raw) else fallback
    try:
        groups, lp = build_groups(batch, config, options, raw, hint, deadline, progress, clock,
                                  refused=hint is fallback and bool((fallback != raw).any()))
    except BuildTimeout:  # the limit passed while the placement model was built: nothing to solve
        return greedy_only(state, config, options, greedy, clock, batch)
    # the safety net keeps the wall time the re-check will take at the CPU share the run has had so far
    # (on a loaded machine a CPU second takes several wall seconds); never beyond half the limit. The
    # deterministic budgets are unchanged: only a run the net stops may differ.
    after = clock.wall_for(RECHECK_CPU * len(state.pending))
    reserve = min(0.5 * end, max(end - deadline, after))
    clock.limit = end - reserve
    with clock.phase("tiers"):
        solve_tiers(groups, raw, options, deadline, clock)
    clock.limit += max(0.0, reserve - after) / 2  # the whole batch's LP: half of what the re-check leaves
    with clock.phase("lp solves"):
        tiers = combine(groups, batch.levels, lp)
    with clock.phase("check"):
        result = answer(state, config, batch, groups, tiers, greedy, fallback, raw, clock.t0, phase,
                        bool(options.weights), options.goal_first, options.staged)
    result.certificate.notes += kept_notes(state, batch.kept, batch.class_of >= 0)
    phase("explaining pods left pending")
    clock.limit = end - max(0.1, 0.02 * options.time_limit)
    with clock.phase("explain"):
        for g in groups if explain and not clock.interrupted else []:
            # the probes stop short of the limit: handing a large model to CP-SAT takes time its own
            # limit does not count
            result.explanations += explain_unplaced(g.model, result.node_of, tiers, g.base,
                                                    end - max(0.1, 0.02 * options.time_limit), clock)
    return finish(result, groups, lp, clock)

