"""Optimal mode: the whole batch as one CP-SAT model, solved tier by tier, with a certificate.

1. Greedy mode runs first: its placement is the hint and the fallback (the answer is never worse).
2. The batch becomes pod classes (:mod:`.classes`) and one :class:`.model.BatchModel` with every filter
   of the profile as constraints, plus the batch preemption rules (:mod:`optisched.optimal.eviction.batch`).
3. Tiers (:mod:`.tiers`): pods placed per priority level, highest first (no lower-priority pod placed
   at the expense of a higher one); then disruption of running pods; then the user's objective when one
   is asked for (:mod:`.user_objectives`); then the profile's score (:mod:`.score`).
4. The answer is decoded to a node per pod and re-checked by the greedy filters (:mod:`.check`).
"""
from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from .. import collector
from ..greedy.scheduler import GreedyOptions, GreedyResult, GreedyScheduler
from ..model.state import ClusterState
from ..policy.eviction import kept_notes
from ..profile import SchedulerConfig
from .bound import LevelBound
from .check import check_answer, check_budgets
from .classes import Batch, build_batch
from .clock import Clock
from .decode import decode
from .eviction.pdb_model import budget_use
from .explain import explain_unplaced
from .groups import Group, build_groups, order_blocks
from .hint import repair_placement
from .model import BuildTimeout, stopper
from .options import WEIGHT_KEYS, OptimalOptions, parse_weights
from .result import NOT_ATTEMPTED, Certificate, OptimalResult, placed_per_level
from .tier_loop import solve_tiers
from .tiers import Progress, Tier
from .user_objectives import check_objective

__all__ = ["NOT_ATTEMPTED", "WEIGHT_KEYS", "Certificate", "OptimalOptions", "OptimalResult", "greedy_answer",
           "parse_weights", "placed_per_level", "solve_optimal"]


STOP_AFTER = ("placed",)
# CPU seconds per pending pod of decoding and re-checking an answer, the most a loaded machine was seen to
# take (docs/optimal_trust.md, "The time limit is a promise")
RECHECK_CPU = 7e-4
INTERRUPTED = "interrupted (Ctrl-C or SIGTERM): the best answer found before it, not the end of the search"
NO_LP = "no LP bound: the time limit had passed before it was built; the bounds shown are the levels' pod counts"


def _lex_key(batch: Batch, node_of: np.ndarray, goal_first: bool = False, staged: bool = False) -> tuple:
    """The tiers the fallback is compared on; with ``goal_first`` disruption is not one (the goal, which
    the key does not see, comes before it); ``staged``: moves beyond a budget are the waves' concern."""
    per = placed_per_level(batch, node_of)
    left = sum(1 for c in batch.classes for n, pods in c.running.items() for p in pods if node_of[p] != n)
    broken = 0 if staged else sum(u.violated for u in budget_use(batch, node_of))  # the pdb-violations tier comes first
    return (*[per[lv] for lv in batch.levels], -broken, *(() if goal_first else (-left,)))


def _combine(groups: list[Group], levels: list[int], lp: LevelBound | None) -> list[Tier]:
    """The batch's tiers: sums over the groups, bounded by the LP relaxation of the whole batch."""
    names = [f"placed[priority={lv}]" for lv in levels]
    names += [n for g in groups for t in g.tiers for n in [t.name] if n not in names]
    left_out = {n for g in groups for n in g.skipped}  # a tier some part could not build covers no batch
    names = [n for n in dict.fromkeys(names) if n not in left_out]
    out = []
    valid = all(g.cp_valid for g in groups)
    for name in names:
        parts = [t for g in groups for t in g.tiers if t.name == name]
        if not parts:
            continue
        sense = parts[0].sense
        tier = Tier(name, sense, sum(t.objective for t in parts), sum(t.bound for t in parts),
                    "OPTIMAL" if all(t.status == "OPTIMAL" for t in parts) else
                    ("FEASIBLE" if any(t.status in ("OPTIMAL", "FEASIBLE") for t in parts) else parts[0].status),
                    sum(t.seconds for t in parts), sum(t.greedy or 0 for t in parts),
                    "SURROGATE" if any(t.fidelity == "SURROGATE" for t in parts) else parts[0].fidelity)
        if name.startswith("placed["):
            level = int(name[len("placed[priority="):-1])
            relaxed = lp.bound(level) if lp is not None else None
            if relaxed is not None:
                tier.bound = max(tier.objective, min(tier.bound, relaxed) if valid else relaxed)
            if lp is not None:
                lp.fix(level, tier.objective)
            if tier.objective == tier.bound:
                tier.status = "OPTIMAL"
            elif tier.status == "OPTIMAL":  # optimal for a model restricted to candidate nodes only
                tier.status = "FEASIBLE"
            valid = valid and tier.status == "OPTIMAL"
        out.append(tier)
    return out


def _plain_first(state: ClusterState, config: SchedulerConfig, options: OptimalOptions, progress: Progress | None,
                 greedy: GreedyResult, clock: Clock) -> np.ndarray | None:
    """With ``movable``, the answer without moves first: every placement it may return is allowed with
    moves too, so it is the movable run's hint, and the placement tiers, which never go below their hint,
    keep the movable answer at least as good on every level.

    It runs the placement tiers of a plain run with the same limit, so with the same budgets: their answer
    is a separate plain run's (deterministic time), and the movable answer is never below it. It ends as
    soon as its tiers are proven (small batches take a fraction of the limit); the movable model gets what
    is left, charged to ``clock`` as the plain pass used it."""
    if not options.movable or options.weights or clock.interrupted or not state.pending:
        return None  # nothing pending: the answer without moves is the cluster as it is, the hint already
    plain = solve_optimal(state, config, replace(options, movable=False, stop_after="placed"), progress, greedy,
                          explain=False)
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
        return _greedy_only(state, config, options, greedy, clock)
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
            return _greedy_only(state, config, options, greedy, clock, batch)
    if not clock.wall_allows(0.0):  # the greedy hint (or the plain pass) took the whole limit, or Ctrl-C
        return _greedy_only(state, config, options, greedy, clock, batch)
    phase("building the model")
    try:
        with clock.phase("repair"):  # stops part-way once the limit has passed
            fallback = repair_placement(batch, config, raw, clock=clock, deadline=deadline)
    except BuildTimeout:
        return _greedy_only(state, config, options, greedy, clock, batch)
    if clock.past(deadline):  # the repair took what was left: no model would be solved
        return _greedy_only(state, config, options, greedy, clock, batch)
    # the plain answer, when the solver's, passed batch semantics: the hint, so no tier goes below it
    hint = start if start is not None and not np.array_equal(start, raw) else fallback
    try:
        groups, lp = build_groups(batch, config, options, raw, hint, deadline, progress, clock,
                                   refused=hint is fallback and bool((fallback != raw).any()))
    except BuildTimeout:  # the limit passed while the placement model was built: nothing to solve
        return _greedy_only(state, config, options, greedy, clock, batch)
    # the safety net keeps the wall time the re-check will take at the CPU share the run has had so far
    # (on a loaded machine a CPU second takes several wall seconds); never beyond half the limit. The deterministic budgets are unchanged: only a run the net stops may differ.
    after = clock.wall_for(RECHECK_CPU * len(state.pending))
    reserve = min(0.5 * end, max(end - deadline, after))
    clock.limit = end - reserve
    with clock.phase("tiers"):
        solve_tiers(groups, raw, options, deadline, clock)
    clock.limit += max(0.0, reserve - after) / 2  # the whole batch's LP: half of what the re-check leaves
    with clock.phase("lp solves"):
        tiers = _combine(groups, batch.levels, lp)
    with clock.phase("check"):
        result = _answer(state, config, batch, groups, tiers, greedy, fallback, raw, clock.t0, phase,
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
    lp_notes = lp.notes if lp is not None else [NO_LP]
    result.certificate.notes += list(dict.fromkeys(lp_notes + [n for g in groups if g.lp for n in g.lp.notes]))
    if clock.wall_hit:
        result.certificate.notes.append("the wall-clock limit stopped the search before its deterministic "
                                        "budget: this answer may differ from another run's")
    if clock.interrupted:
        result.certificate.interrupted = True
        result.certificate.notes.append(INTERRUPTED)
    result.certificate.seconds = time.perf_counter() - clock.t0
    result.used = clock.now()
    result.ledger = clock.ledger
    return result


def _greedy_only(state: ClusterState, config: SchedulerConfig, options: OptimalOptions, greedy: GreedyResult,
                 clock: Clock, batch: Batch | None = None) -> OptimalResult:
    """Interrupted, or past the wall-clock limit, before the model was built: greedy mode's placement (so
    far) is the answer (each of its pods passed kube-scheduler's filters on arrival); the pods an
    interrupted greedy run did not reach are not attempted."""
    if batch is None:
        batch = build_batch(state, config, movable=options.movable, preemption=options.preemption,
                            policy=options.eviction)
    note = INTERRUPTED + " (before the model was built)" if clock.interrupted else \
        "the wall-clock limit had passed before the model was built: kube-scheduler's placement is the answer" \
        if clock.wall_hit or not clock.deterministic else \
        "the time limit was used up before the model was built (its work counted, docs/optimal_trust.md): " \
        "kube-scheduler's placement is the answer"
    cert = Certificate("UNKNOWN", [], time.perf_counter() - clock.t0, "greedy", False, [note],
                       interrupted=clock.interrupted)
    return OptimalResult(state, batch, greedy.snapshot.node_of.copy(), cert, greedy, [], used=clock.now(),
                         ledger=clock.ledger)


def greedy_answer(state: ClusterState, config: SchedulerConfig, options: OptimalOptions, greedy: GreedyResult,
                  note: str) -> OptimalResult:
    """kube-scheduler's placement (``greedy``) as optimal mode's answer, no tier solved, ``note`` saying why
    (the solver's process crashed: :mod:`optisched.worker`)."""
    result = _greedy_only(state, config, options, greedy, Clock(options.time_limit, options.deterministic))
    result.certificate.notes = [note]
    return result


def _as_greedy(tiers: list[Tier]) -> None:
    """The tiers' values at greedy mode's placement (the answer returned instead of the solver's)."""
    for t in tiers:
        if t.greedy is None or t.status == "VALUE":
            continue
        t.objective = t.greedy
        t.bound = max(t.bound, t.objective) if t.sense == "max" else min(t.bound, t.objective)
        t.status = "OPTIMAL" if t.bound == t.objective else "FEASIBLE"


def _answer(state: ClusterState, config: SchedulerConfig, batch: Batch, groups: list[Group], tiers: list[Tier],
            greedy: GreedyResult, fallback: np.ndarray, raw: np.ndarray, t0: float,
            phase, weighted: bool = False, goal_first: bool = False, staged: bool = False) -> OptimalResult:  # type: ignore[no-untyped-def]
    """Decode the incumbents, re-check them, keep the repaired greedy placement when it is better."""
    notes: list[str] = []
    node_of, source = fallback, "greedy"
    witnessed = np.zeros(len(node_of), dtype=bool)  # parts left at kube-scheduler's own placement
    blocks: list[np.ndarray] = []  # pod rows per class, in the arrival order the answer relies on
    evicted: list[np.ndarray] = []  # parallel: victims still in place until that block lands
    if all(g.solver.full is not None for g in groups):
        node_of = state.pod_node.copy()
        node_of[batch.class_of >= 0] = -1
        for g in groups:
            rows = g.batch.class_of >= 0
            if g.reached is not None and g.solver.value(g.reached):
                node_of[rows], witnessed[rows] = raw[rows], True
                continue
            arrivals, kept = g.model.counts(g.solver.value)
            node_of[rows] = decode(g.batch, arrivals, kept)[rows]
            arrive, leave = order_blocks(g)
            blocks, evicted = blocks + arrive, evicted + leave
        source = "solver"
    phase("checking the answer with the greedy filters")
    notes += [g.model.order.note for g in groups if g.model.order.note]
    violations = check_answer(state, config, node_of, raw, batch.class_of, witnessed, blocks, evicted) + \
        ([] if staged else check_budgets(batch, node_of))
    if (fallback != raw).any():
        how = "the model takes it as one more solution, the solver's start" if all(g.raw_start for g in groups) else \
            "the neighbourhood search starts from a repaired copy; kube-scheduler's own placement stays the floor"
        notes.append(f"batch semantics refuses kube-scheduler's placement of {int((fallback != raw).sum())} pod(s) "
                     f"(rules checked only at their arrival, docs/optimal_trust.md): {how}")
    # the floor is greedy mode's own placement: kube-scheduler reaches it cycle by cycle (each pod passed
    # its filters when it arrived), so it is a valid answer even where batch semantics is stricter.
    # With weights, the solver kept the better of the hint and its search by the weighted objective.
    worse = not weighted and _lex_key(batch, raw, goal_first, staged) > _lex_key(batch, node_of, goal_first, staged)
    if source == "solver" and (violations or worse):
        source = "greedy"
        notes.append("kube-scheduler's placement (greedy mode) is returned: it is at least as good as the solver's")
    if source == "greedy":  # the violations always describe the placement returned, never the one replaced
        node_of = raw.copy()
        violations = check_answer(state, config, node_of, raw) + check_budgets(batch, node_of)
        _as_greedy(tiers)
    statuses = {t.status for t in tiers} - {"VALUE"}
    status = "OPTIMAL" if statuses <= {"OPTIMAL"} else \
        ("FEASIBLE" if all(g.solver.full is not None for g in groups) else "UNKNOWN")
    placed_tiers = [t for t in tiers if t.name.startswith("placed[") or t.name == "weighted"]
    greedy_optimal = not (fallback != raw).any() and bool(placed_tiers) and \
        all(t.greedy == t.bound for t in placed_tiers)
    if len(groups) > 1:
        notes.append(f"solved as {len(groups)} independent parts")
    skipped = list(dict.fromkeys(n for g in groups for n in g.skipped))
    if skipped:
        notes.append(f"not enough time left to build the {', '.join(skipped)} tier(s): left out")
    if blocks and source == "solver":
        notes.append(f"the answer is checked in an arrival order of {len(blocks)} classes, each pod on arrival "
                     "(docs/optimal_trust.md)")
    cert = Certificate(status, tiers, time.perf_counter() - t0, source, greedy_optimal, notes)
    return OptimalResult(state, batch, node_of, cert, greedy, violations, order=blocks if source == "solver" else [],
                         evicted=evicted if source == "solver" else [])
