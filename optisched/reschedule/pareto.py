"""``reschedule --pareto``: the goal against the number of moves, and where more moves stop paying.

The target solve (:func:`optisched.reschedule.solve.solve_target`, the plan's own solve with
``--max-moves`` a constraint of the model) runs again at move budgets 0, 1, 2, 4, ... below the plan's
move count; the plan itself is the last point. Each point carries its solve's certificate for the goal's
tier: the value, the best bound the solver proved at that budget, and the gap between them.

Time: the plan's solve has half of ``--time-limit``, the sweep the rest (at least the other half),
shared equally among its budgets. The shares are fixed in advance, not what the wall clock leaves: each
solve ends by its deterministic budget (docs/optimal_trust.md), so the same input, options and seed give
the same curve on any machine; a budget solved to optimality early ends early and leaves its time unused.

A solve stopped by its time limit may find less at a larger budget than a smaller budget did. The
smaller budget's placement is within the larger budget too, so the point keeps the better placement
(``fromBudget`` names it) and its own solve's bound: the curve is monotone by construction, and says so.

The knee (:func:`knee`) is the point farthest above the chord from the first point to the last, both
axes scaled to [0, 1] (the "Kneedle" rule of Satopää et al., *Finding a "Kneedle" in a Haystack*, ICDCS
workshops 2011): the budget after which each further move buys less of the goal than the curve's
average rate.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from ..model.state import ClusterState
from ..optimal.result import Certificate, OptimalResult
from ..optimal.tiers import relative_gap
from .goals import Goal, goal_objectives

__all__ = ["ParetoCurve", "ParetoPoint", "budgets_below", "goal_value", "knee", "sweep"]

Solve = Callable[[int, float], tuple[np.ndarray, OptimalResult]]  # (budget, seconds) -> (target, answer)
MIN_SECONDS = 0.2  # per budget, whatever is left


@dataclass(frozen=True)
class ParetoPoint:
    budget: int | None  # None: the plan's own solve (no budget, or the --max-moves given)
    moves: int  # running pods the point's target moves
    value: float  # the goal tier's objective at the target, in the tier's unit
    bound: float  # the best bound proved at this budget
    gap: float | None  # relative gap of value and bound; None where the bound says nothing
    gain: float  # how much better than the point without moves, in the tier's unit (>= 0)
    status: str  # the goal tier's solver status
    seconds: float
    from_budget: int | None = None  # the smaller budget whose better placement this point keeps


@dataclass
class ParetoCurve:
    goal: str  # the tier the points measure: objective:pack, objective:spread, objective:repair or placed
    sense: str  # "min" or "max"
    unit: str
    points: list[ParetoPoint]
    knee: int | None  # index into points; None when no point lies above the chord
    notes: list[str] = field(default_factory=list)

    def frame(self) -> pd.DataFrame:
        """One row per point: budget, moves, value, bound, gap, gain, status, seconds, fromBudget, knee."""
        rows = [{**asdict(p), "knee": i == self.knee} for i, p in enumerate(self.points)]
        cols = [*ParetoPoint.__dataclass_fields__, "knee"]
        frame = pd.DataFrame(rows, columns=cols).astype({"budget": "Int64", "from_budget": "Int64"})
        return frame.rename(columns={"from_budget": "fromBudget"})

    def to_dict(self) -> dict:
        return {"goal": self.goal, "sense": self.sense, "unit": self.unit, "knee": self.knee, "notes": self.notes,
                "points": [{"budget": p.budget, "moves": p.moves, "value": p.value, "bound": p.bound, "gap": p.gap,
                            "gain": p.gain, "status": p.status, "seconds": round(p.seconds, 3),
                            "fromBudget": p.from_budget} for p in self.points]}

    def lines(self) -> list[str]:
        """The terminal table: one line per point, the knee marked."""
        head = f"pareto ({self.goal}, {self.sense}imized; {self.unit}):"
        rows = [("budget", "moves", "value", "bound", "gap", "status", "")]
        for i, p in enumerate(self.points):
            gap = "-" if p.gap is None else f"{p.gap:.1%}"
            mark = ("knee" if i == self.knee else "") + (f" (budget {p.from_budget}'s placement)"
                                                         if p.from_budget is not None else "")
            rows.append(("plan" if p.budget is None else str(p.budget), str(p.moves), _num(p.value),
                         _num(p.bound), gap, p.status, mark.strip()))
        widths = [max(len(r[c]) for r in rows) for c in range(6)]
        table = ["  " + "  ".join(x.rjust(w) for x, w in zip(r[:6], widths)) + (f"  {r[6]}" if r[6] else "")
                 for r in rows]
        return [head, *table, *self.notes]


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.3f}"


def budgets_below(moves: int) -> list[int]:
    """0, 1, 2, 4, ... below ``moves`` (the plan's own count is the last point, solved already)."""
    out, k = [], 0
    while k < moves:
        out.append(k)
        k = 1 if k == 0 else 2 * k
    return out


def goal_value(certificate: Certificate, goals: list[Goal]) -> tuple[str, str, str, float, float, float | None, str] | None:
    """(tier, sense, unit, value, bound, gap, status) of the goal the curve measures: the first goal
    named. ``fit-pending`` is the placement tiers (pods on a node, summed over priorities, maximized);
    the others their objective tier (minimized). None when that tier was not solved (no time)."""
    named = goal_objectives(goals)
    if goals[0] == Goal.FIT_PENDING or not named:
        placed = [t for t in certificate.tiers if t.key.is_level]
        if not placed:
            return None
        value, bound = sum(t.objective for t in placed), sum(t.bound for t in placed)
        worst = "OPTIMAL" if all(t.status == "OPTIMAL" for t in placed) else "FEASIBLE"
        return "placed", "max", "pods on a node", value, bound, relative_gap(value, bound), worst
    # the first goal's tier is the first objective tier (balance's is named after its thresholds)
    tier = next((t for t in certificate.tiers if t.key.objective is not None), None)
    if tier is None:
        return None
    d = tier.to_dict()
    return tier.name, tier.sense, d["unit"], d["objective"], d["bound"], d["gap"], tier.status


def knee(moves: Sequence[float], gains: Sequence[float]) -> int | None:
    """The index of the point farthest above the chord from the first point to the last, both axes
    scaled to [0, 1] (see the module docstring); ties go to the fewer moves. None when fewer than three
    points, when the curve does not rise, or when no point lies strictly above the chord."""
    x, y = np.asarray(moves, dtype=float), np.asarray(gains, dtype=float)
    if len(x) < 3 or x[-1] <= x[0] or y[-1] <= y[0]:
        return None
    xs, ys = (x - x[0]) / (x[-1] - x[0]), (y - y[0]) / (y[-1] - y[0])
    above = ys - xs  # the chord is y = x after scaling; distance to it is this over sqrt(2)
    best = int(np.argmax(above))
    return best if above[best] > 1e-9 else None


def _moves(state: ClusterState, target: np.ndarray) -> int:
    return int(np.count_nonzero((state.pod_node >= 0) & (target != state.pod_node)))


def _solve_points(state: ClusterState, goals: list[Goal], solve: Solve, budgets: list[int],
                  seconds: float) -> list[tuple[int | None, int, tuple, float]]:
    """(budget, moves, goal value, seconds) per budget, each solved with an equal share of ``seconds``."""
    out: list[tuple[int | None, int, tuple, float]] = []
    share = max(MIN_SECONDS, seconds / max(1, len(budgets)))  # fixed: the wall clock decides nothing
    for k in budgets:
        t0 = time.perf_counter()
        target, result = solve(k, share)
        value = goal_value(result.certificate, goals)
        if value is not None:
            out.append((k, _moves(state, target), value, time.perf_counter() - t0))
    return out


def sweep(state: ClusterState, goals: list[Goal], target: np.ndarray, certificate: Certificate, solve: Solve,
          seconds: float) -> ParetoCurve | None:
    """The curve up to the plan (``target``, ``certificate``): ``solve`` at budgets 0, 1, 2, 4, ... below
    the plan's move count within ``seconds`` (see the module docstring). None when the plan's goal tier
    was not solved."""
    own = goal_value(certificate, goals)
    if own is None:
        return None
    raw = _solve_points(state, goals, solve, budgets_below(_moves(state, target)), seconds)
    raw.append((None, _moves(state, target), own, certificate.seconds))
    name, sense, unit = own[:3]
    sign = 1.0 if sense == "max" else -1.0
    points: list[ParetoPoint] = []
    notes: list[str] = []
    for k, moves, (_, _, _, value, bound, gap, status), secs in raw:
        kept = None
        best = max(points, key=lambda p: sign * p.value, default=None)
        if best is not None and sign * best.value > sign * value:
            kept, moves, value = (best.from_budget if best.from_budget is not None else best.budget), best.moves, best.value
            gap = None if gap is None else relative_gap(value, bound)
        base = points[0].value if points else value
        points.append(ParetoPoint(k, moves, value, bound, gap, sign * (value - base) + 0.0, status, secs, kept))
    if any(p.from_budget is not None for p in points):
        notes.append("a solve stopped by its time limit found less than a smaller budget: the point keeps "
                     "the smaller budget's placement (within its budget too); a longer --time-limit may do better")
    if points[-1].from_budget is not None:
        notes.append(f"the plan's own solve found less than budget {points[-1].from_budget}: "
                     f"--max-moves {points[-1].from_budget} gives the better plan")
    at = knee([p.moves for p in points], [p.gain for p in points])
    return ParetoCurve(name, sense, unit, points, at, notes)
