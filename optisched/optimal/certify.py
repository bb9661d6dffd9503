"""The certificate: the parts' tiers summed and bounded, the answer decoded and re-checked, the fallback.

The batch's tiers are the parts' sums, each placement level bounded by the whole batch's LP relaxation
(:func:`combine`). The answer is the solver's, decoded and re-checked by the greedy filters in the
arrival order it relies on (:mod:`.check`), unless kube-scheduler's own placement (greedy mode) is at
least as good on the tiers, or the solver's fails a check: then greedy mode's placement is returned, and
the tiers say its values (:func:`answer`). Before any model is built, greedy mode's placement is the
answer (:func:`greedy_only`).
"""
from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from ..greedy.scheduler import GreedyResult
from ..model.state import ClusterState
from ..profile import SchedulerConfig
from .bound import LevelBound
from .check import check_answer, check_budgets
from .classes import Batch, build_batch
from .clock import Clock
from .decode import decode
from .eviction.pdb_model import budget_use
from .groups import Group, order_blocks
from .options import OptimalOptions
from .result import Certificate, OptimalResult, placed_per_level
from .tier_key import TierKey
from .tiers import Tier

__all__ = ["INTERRUPTED", "NO_LP", "answer", "combine", "finish", "greedy_answer", "greedy_only"]


INTERRUPTED = "interrupted (Ctrl-C or SIGTERM): the best answer found before it, not the end of the search"
NO_LP = ("no LP bound: the time limit had passed before it was built; the bounds shown are the levels' "
         "pod counts")


def _lex_key(batch: Batch, node_of: np.ndarray, goal_first: bool = False, staged: bool = False) -> tuple:
    """The tiers the fallback is compared on; with ``goal_first`` disruption is not one (the goal, which
    the key does not see, comes before it); ``staged``: moves beyond a budget are the waves' concern."""
    per = placed_per_level(batch, node_of)
    left = sum(1 for c in batch.classes for n, pods in c.running.items() for p in pods if node_of[p] != n)
    # the pdb-violations tier comes first
    broken = 0 if staged else sum(u.violated for u in budget_use(batch, node_of))
    return (*[per[lv] for lv in batch.levels], -broken, *(() if goal_first else (-left,)))


def combine(groups: list[Group], levels: list[int], lp: LevelBound | None) -> list[Tier]:
    """The batch's tiers: sums over the groups, bounded by the LP relaxation of the whole batch."""
    keys = [TierKey.placed(lv) for lv in levels]
    keys += [k for g in groups for t in g.tiers for k in [t.key] if k not in keys]
    left_out = {k for g in groups for k in g.skipped}  # a tier some part could not build covers no batch
    keys = [k for k in dict.fromkeys(keys) if k not in left_out]
    out = []
    valid = all(g.cp_valid for g in groups)
    for key in keys:
        parts = [t for g in groups for t in g.tiers if t.key == key]
        if not parts:
            continue
        sense = parts[0].sense
        tier = Tier(key, sense, sum(t.objective for t in parts), sum(t.bound for t in parts),
                    "OPTIMAL" if all(t.status == "OPTIMAL" for t in parts) else
                    ("FEASIBLE" if any(t.status in ("OPTIMAL", "FEASIBLE") for t in parts)
                     else parts[0].status),
                    sum(t.seconds for t in parts), sum(t.greedy or 0 for t in parts),
                    "SURROGATE" if any(t.fidelity == "SURROGATE" for t in parts) else parts[0].fidelity)
        if (level := key.level) is not None:
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


def _as_greedy(tiers: list[Tier]) -> None:
    """The tiers' values at greedy mode's placement (the answer returned instead of the solver's)."""
    for t in tiers:
        if t.greedy is None or t.status == "VALUE":
            continue
        t.objective = t.greedy
        t.bound = max(t.bound, t.objective) if t.sense == "max" else min(t.bound, t.objective)
        t.status = "OPTIMAL" if t.bound == t.objective else "FEASIBLE"


def answer(state: ClusterState, config: SchedulerConfig, batch: Batch, groups: list[Group], tiers: list[Tier],
           greedy: GreedyResult, fallback: np.ndarray, raw: np.ndarray, t0: float,
           phase: Callable[[str], None], weighted: bool = False, goal_first: bool = False,
           staged: bool = False) -> OptimalResult:
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
        how = "the model takes it as one more solution, the solver's start" \
            if all(g.raw_start for g in groups) else \
            "the neighbourhood search starts from a repaired copy; kube-scheduler's own placement stays " \
            "the floor"
        notes.append(f"batch semantics refuses kube-scheduler's placement of {int((fallback != raw).sum())} "
                     f"pod(s) (rules checked only at their arrival, docs/optimal_trust.md): {how}")
    # the floor is greedy mode's own placement: kube-scheduler reaches it cycle by cycle (each pod passed
    # its filters when it arrived), so it is a valid answer even where batch semantics is stricter.
    # With weights, the solver kept the better of the hint and its search by the weighted objective.
    worse = not weighted and \
        _lex_key(batch, raw, goal_first, staged) > _lex_key(batch, node_of, goal_first, staged)
    if source == "solver" and (violations or worse):
        source = "greedy"
        notes.append("kube-scheduler's placement (greedy mode) is returned: it is at least as good as the "
                     "solver's")
    if source == "greedy":  # the violations always describe the placement returned, never the one replaced
        node_of = raw.copy()
        violations = check_answer(state, config, node_of, raw) + check_budgets(batch, node_of)
        _as_greedy(tiers)
    statuses = {t.status for t in tiers} - {"VALUE"}
    status = "OPTIMAL" if statuses <= {"OPTIMAL"} else \
        ("FEASIBLE" if all(g.solver.full is not None for g in groups) else "UNKNOWN")
    placed_tiers = [t for t in tiers if t.key.is_level or t.key == TierKey.weighted()]
    greedy_optimal = not (fallback != raw).any() and bool(placed_tiers) and \
        all(t.greedy == t.bound for t in placed_tiers)
    if len(groups) > 1:
        notes.append(f"solved as {len(groups)} independent parts")
    skipped = list(dict.fromkeys(k for g in groups for k in g.skipped))
    if skipped:
        notes.append(f"not enough time left to build the {', '.join(map(str, skipped))} tier(s): left out")
    if blocks and source == "solver":
        notes.append(f"the answer is checked in an arrival order of {len(blocks)} classes, each pod on "
                     "arrival (docs/optimal_trust.md)")
    cert = Certificate(status, tiers, time.perf_counter() - t0, source, greedy_optimal, notes)
    solver = source == "solver"
    return OptimalResult(state, batch, node_of, cert, greedy, violations, order=blocks if solver else [],
                         evicted=evicted if solver else [])


def finish(result: OptimalResult, groups: list[Group], lp: LevelBound | None, clock: Clock) -> OptimalResult:
    """The certificate's closing notes (the LP bounds', the safety net's, an interruption's) and the run's
    time, work and ledger."""
    lp_notes = lp.notes if lp is not None else [NO_LP]
    part_notes = [n for g in groups if g.lp for n in g.lp.notes]
    result.certificate.notes += list(dict.fromkeys(lp_notes + part_notes))
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


def greedy_only(state: ClusterState, config: SchedulerConfig, options: OptimalOptions, greedy: GreedyResult,
                 clock: Clock, batch: Batch | None = None) -> OptimalResult:
    """Interrupted, or past the wall-clock limit, before the model was built: greedy mode's placement (so
    far) is the answer (each of its pods passed kube-scheduler's filters on arrival); the pods an
    interrupted greedy run did not reach are not attempted."""
    if batch is None:
        batch = build_batch(state, config, movable=options.movable, preemption=options.preemption,
                            policy=options.eviction)
    note = INTERRUPTED + " (before the model was built)" if clock.interrupted else \
        "the wall-clock limit had passed before the model was built: kube-scheduler's placement is the " \
        "answer" if clock.wall_hit or not clock.deterministic else \
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
    result = greedy_only(state, config, options, greedy, Clock(options.time_limit, options.deterministic))
    result.certificate.notes = [note]
    return result
