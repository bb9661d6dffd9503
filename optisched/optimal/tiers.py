"""Lexicographic tiers: each objective solved to optimality or its time share, then fixed for the next.

A tier's objective is a :class:`Linear` expression kept as plain lists, so the same objective can be
evaluated on any placement (the greedy one, for the certificate) without a solver.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from ortools.sat.python import cp_model

from .. import cpsat
from .clock import Clock
from .tier_key import TierKey, TierKind

__all__ = ["SCORE_SCALE", "Linear", "Tier", "TierSolver", "relative_gap", "tier_unit"]

STATUS: dict[Any, str] = {cp_model.OPTIMAL: "OPTIMAL", cp_model.FEASIBLE: "FEASIBLE", cp_model.INFEASIBLE: "INFEASIBLE",
          cp_model.UNKNOWN: "UNKNOWN", cp_model.MODEL_INVALID: "MODEL_INVALID"}

SCORE_SCALE = 100  # the score tier's objective units per score point (:mod:`.score_terms` solves in them)

Progress = Callable[[str, float | None, float | None, float], None]  # tier, incumbent, bound, elapsed


@dataclass
class Linear:
    """``Σ coef · var + const`` over CP-SAT variables, each with its domain ``[lo, hi]``.

    ``derived``: auxiliary variables (a maximum, an absolute value, a node-used flag) with the function
    giving their value from the others' at an optimum, so :meth:`value` evaluates any placement;
    ``fidelity``: whether the objective is the rule's own value (``EXACT``) or a ``SURROGATE``."""

    vars: list[cp_model.IntVar] = field(default_factory=list)
    coefs: list[int] = field(default_factory=list)
    const: int = 0
    domains: list[tuple[int, int]] = field(default_factory=list)
    derived: list[tuple[cp_model.IntVar, Callable[[dict[int, int]], int]]] = field(default_factory=list)
    fidelity: str = "EXACT"

    def add(self, var: cp_model.IntVar, coef: int, hi: int, lo: int = 0) -> None:
        if coef:
            self.vars.append(var)
            self.coefs.append(int(coef))
            self.domains.append((int(lo), int(hi)))

    def scaled(self, sign: int) -> Linear:
        """The terms times ``sign`` (1 or -1), without the constant: ``-1`` turns a minimized objective
        into one to maximize, e.g. to break ties or compare answers by it."""
        out = Linear()
        for v, c, (lo, hi) in zip(self.vars, self.coefs, self.domains):
            out.add(v, sign * c, hi, lo)
        return out

    def expr(self) -> cp_model.LinearExpr:
        return cp_model.LinearExpr.weighted_sum(self.vars, self.coefs) + self.const

    def value(self, values: dict[int, int]) -> int:
        """The expression for ``values`` (variable index -> value; absent = 0, derived ones computed)."""
        values = self.completed(values)
        return self.const + sum(c * values.get(v.Index(), 0) for v, c in zip(self.vars, self.coefs))

    def completed(self, values: dict[int, int]) -> dict[int, int]:
        """``values`` with the derived variables' values added."""
        if self.derived:
            values = dict(values)
            for var, fn in self.derived:
                values[var.Index()] = fn(values)
        return values

    def bounds(self) -> tuple[int, int]:
        """(lowest, highest) value over the variables' domains."""
        lo = hi = self.const
        for c, (dlo, dhi) in zip(self.coefs, self.domains):
            a, b = c * dlo, c * dhi
            lo, hi = lo + min(a, b), hi + max(a, b)
        return lo, hi


def relative_gap(objective: float, bound: float) -> float:
    """``|bound − objective| / max(1, |objective|, |bound|)``: the share of the larger of the two not
    reached. A maximized tier's bound is the larger (the share of the bound missed); a minimized tier's is
    the smaller, so a bound of 0 gives 100 %, not the objective times 100 %."""
    return abs(bound - objective) / max(1.0, abs(objective), abs(bound))


@dataclass
class Tier:
    """One tier's outcome: objective of the answer, best bound, and how it was reached."""

    key: TierKey
    sense: str  # "max" | "min"
    objective: int
    bound: int
    status: str
    seconds: float
    greedy: int | None = None  # the greedy placement's value on this tier
    fidelity: str = "EXACT"

    @property
    def name(self) -> str:
        """The tier's name, as JSON and the progress lines give it (:meth:`.tier_key.TierKey.__str__`)."""
        return str(self.key)

    @property
    def gap(self) -> float:
        """:func:`relative_gap` of the objective and the bound."""
        return relative_gap(self.objective, self.bound)

    @property
    def useful_bound(self) -> bool:
        """Whether the bound says how far the answer may be from the best: always for a placement tier
        (a count of pods), else when optimal or the gap is below 100 % (a bound of the other sign, or
        0 against a nonzero objective, e.g. a surrogate score's range end, proves nothing)."""
        if self.status == "VALUE":
            return False
        return self.key.is_level or self.status == "OPTIMAL" or self.gap < 1.0

    def to_dict(self) -> dict:
        """In the tier's unit (:func:`tier_unit`); ``gap`` is None where there is no useful bound."""
        unit, scale = tier_unit(self.key)

        def shown(v: int | None) -> float | int | None:
            return v if v is None or scale == 1 else round(v / scale, 2)

        return {"name": self.name, "unit": unit, "sense": self.sense, "objective": shown(self.objective),
                "bound": shown(self.bound), "gap": round(self.gap, 6) if self.useful_bound else None,
                "status": self.status, "seconds": round(self.seconds, 3), "greedy": shown(self.greedy),
                "fidelity": self.fidelity}


def tier_unit(key: TierKey) -> tuple[str, int]:
    """(unit, model units per shown unit) of a tier, the same in the terminal, the report and JSON.
    The score tier is solved in hundredths of a point (:data:`SCORE_SCALE`) and shown in points."""
    kind = key.base.kind
    if kind.startswith(TierKind.PLACED):  # (minimal preemption's "placed" too)
        return "pods of this priority on a node after the batch (pending placed + running batch pods kept)", 1
    if kind == TierKind.DISRUPTION:
        return "running pods evicted or moved, each counted by its priority's rank (1 = lowest)", 1
    if kind == TierKind.SCORE:
        return "score points", SCORE_SCALE
    if kind == TierKind.WEIGHTED:
        return "weighted sum of the tiers", 1
    return "the objective's own units", 1


class _Watch(cp_model.CpSolverSolutionCallback):
    """Reports the tier's own objective and bound (the solver's combined objective scaled back)."""

    def __init__(self, name: str, t0: float, progress: Progress | None, scale: int = 1, offset: int = 0,
                 target: int | None = None) -> None:
        super().__init__()
        self.name, self.t0, self.progress, self.scale, self.offset = name, t0, progress, scale, offset
        self.target = target  # a known bound on the tier (maximized): reaching it ends the search

    def on_solution_callback(self) -> None:
        value = (self.objective_value - self.offset) // self.scale
        if self.progress is not None:
            self.progress(self.name, value, (self.best_objective_bound - self.offset) // self.scale,
                          time.perf_counter() - self.t0)
        # (never at the hint's own solution: a stop there is OR-Tools' abort window, :mod:`optisched.cpsat`)
        if self.target is not None and value >= self.target and not cpsat.is_hint_solution(self):
            self.stop_search()


class TierSolver:
    """Solves tiers in order on one model, carrying each answer (every variable's value) as the next
    tier's hint: a complete hint is what lets CP-SAT start from it instead of repairing it. In OR-Tools'
    abort window (presolve on with interleaved workers) :func:`optisched.cpsat.solve` runs such a call on
    one worker."""

    def __init__(self, cp: cp_model.CpModel, *, workers: int, seed: int, deadline: float,
                 progress: Progress | None = None, presolve: bool = True, clock: Clock | None = None) -> None:
        self.cp = cp
        self.clock = clock if clock is not None else Clock.wall()
        self.presolve = presolve  # off for large models: presolve would eat the budget before the hint is used
        self.workers = workers
        self.seed = seed
        self.deadline = deadline
        self.progress = progress
        self.full: list[int] | None = None  # the incumbent: a value per model variable (proto order)
        self.improved = False  # the solver found a solution (not only the hint)
        self.t0 = time.perf_counter()
        self.params: dict[str, object] = {}  # further CP-SAT parameters for every tier
        self._pinned: dict[int, list[int]] = {}  # variable index -> its domain before :meth:`pin`

    def pin(self, variables: list[cp_model.IntVar]) -> None:
        """Fix ``variables`` at the incumbent's values until :meth:`unpin` (their domains are edited in
        place, so no constraint is left behind)."""
        if self.full is None:
            return
        for var in variables:
            i = var.Index()
            if i in self._pinned:
                continue
            domain = self.cp.proto.variables[i].domain
            self._pinned[i] = list(domain)
            domain.clear()
            domain.extend([self.full[i], self.full[i]])

    def unpin(self) -> None:
        """Give every pinned variable its domain back."""
        for i, saved in self._pinned.items():
            domain = self.cp.proto.variables[i].domain
            domain.clear()
            domain.extend(saved)
        self._pinned.clear()

    def _announce(self, name: str) -> None:
        """The live line names the tier being solved before its first solution comes."""
        if self.progress is not None:
            self.progress(f"solving {name}", None, None, time.perf_counter() - self.t0)

    def value(self, var: cp_model.IntVar) -> int:
        return 0 if self.full is None else self.full[var.Index()]

    def _hint(self) -> None:
        self.cp.clear_hints()
        if self.full is not None:
            hint = self.cp.proto.solution_hint
            hint.vars.extend(range(len(self.full)))
            hint.values.extend(self.full)

    def _complete(self, objective: Linear) -> None:
        """Extend the incumbent to variables created since (a tier built when its turn comes), with
        the values its derived variables take at the incumbent."""
        if self.full is None:
            return
        n = len(self.cp.proto.variables)
        if len(self.full) < n:
            self.full.extend([0] * (n - len(self.full)))
        if objective.derived:
            done = objective.completed(dict(enumerate(self.full)))
            for var, _ in objective.derived:
                self.full[var.Index()] = done[var.Index()]

    def _key(self, objective: Linear, later: tuple[Linear, ...], sense: str) -> tuple[int, ...]:
        """(objective, later objectives...) of the incumbent; larger is better."""
        sign = 1 if sense == "max" else -1
        return (sign * self.evaluate(objective), *(self.evaluate(x) for x in later))

    def offer(self, full: list[int], objective: Linear, sense: str) -> bool:
        """Take ``full`` (a solution of the model as it stands, found outside the solver: a start) as the
        incumbent when ``objective`` is strictly better there; returns whether it was taken. The derived
        variables take the values their functions give at ``full``, as the incumbent's do."""
        self._complete(objective)
        candidate = list(full) + [0] * (len(self.cp.proto.variables) - len(full))
        if objective.derived:
            done = objective.completed(dict(enumerate(candidate)))
            for var, _ in objective.derived:
                candidate[var.Index()] = done[var.Index()]
        value = objective.const + sum(c * candidate[v.Index()] for v, c in zip(objective.vars, objective.coefs))
        if self.full is not None:
            current = self.evaluate(objective)
            if (value >= current) if sense == "min" else (value <= current):
                return False
        self.full = candidate
        return True

    def evaluate(self, objective: Linear) -> int:
        return objective.const + sum(c * self.value(v) for v, c in zip(objective.vars, objective.coefs))

    def _budget(self, share: float) -> float:
        """``share`` of the time left until the deadline; none when the clock no longer affords a call
        (:meth:`.clock.Clock.affords`: interrupted, or a large model past the wall-clock limit)."""
        if not self.clock.affords(len(self.cp.proto.variables)):
            return 0.0
        return (self.deadline - self.clock.now()) * share

    def search(self, key: TierKey, objective: Linear, share: float, cap: int | None, run) -> Tier:  # type: ignore[no-untyped-def]
        """A maximized tier searched by ``run(values, budget) -> values`` (a local search from the
        incumbent that never makes ``objective`` worse, e.g. :class:`.neighbourhood.NodeSearch`) instead
        of CP-SAT. It proves no bound: the tier's bound is ``cap`` (the level's LP bound or its size) or
        the objective's own range. Then the tier is fixed as in :meth:`solve`."""
        if self.full is None:
            return self.solve(key, objective, "max", share, cap)
        start = time.perf_counter()
        budget = self._budget(share)
        self._announce(str(key))
        self._complete(objective)
        best = objective.bounds()[1] if cap is None else min(objective.bounds()[1], cap)
        before = self.evaluate(objective)
        if before < best and budget >= 0.05:
            self.full = run(np.asarray(self.full, dtype=np.int64), budget).tolist()
        value = self.evaluate(objective)
        self.improved = self.improved or value > before
        self.cp.add(objective.expr() >= value)
        return Tier(key, "max", value, best, "OPTIMAL" if value == best else "FEASIBLE", time.perf_counter() - start)

    def solve(self, key: TierKey, objective: Linear, sense: str, share: float, cap: int | None = None,
              secondary: Linear | None = None, later: tuple[Linear, ...] = ()) -> Tier:
        """Optimize ``objective`` within ``share`` of the time left, then fix it at the value found.
        ``cap`` is a known bound on the objective (e.g. how many pods the tier counts). ``secondary``
        (same sense) breaks ties: the solver optimizes ``M·objective + secondary`` with M above the
        secondary's range, so an answer that is as good on this tier keeps the later tiers good.
        ``later`` (maximized objectives of the tiers after) decides whether a solution that ties this
        tier replaces the incumbent: only when it is lexicographically no worse on them."""
        start = time.perf_counter()
        budget = self._budget(share)
        self._announce(str(key))
        self._complete(objective)
        lo, hi = objective.bounds()
        if cap is not None:
            hi, lo = (min(hi, cap), lo) if sense == "max" else (hi, max(lo, cap))
        current = self.evaluate(objective) if self.full is not None else None
        best = hi if sense == "max" else lo
        if current is not None and (current == best or budget < 0.05):
            self.cp.add(objective.expr() >= current if sense == "max" else objective.expr() <= current)
            return Tier(key, sense, current, best, "OPTIMAL" if current == best else "UNKNOWN", 0.0)
        if lo == hi or budget < 0.05:
            return Tier(key, sense, best if lo == hi else 0, best, "OPTIMAL" if lo == hi else "UNKNOWN", 0.0)
        slo, shi = secondary.bounds() if secondary is not None and secondary.vars else (0, 0)
        scale = shi - slo + 1
        combined = objective.expr() * scale + (secondary.expr() if secondary is not None and secondary.vars else 0)
        self._hint()
        (self.cp.maximize if sense == "max" else self.cp.minimize)(combined)
        solver = cp_model.CpSolver()
        size = len(self.cp.proto.variables)
        self.clock.set_limits(solver.parameters, budget, self.workers, size)
        solver.parameters.num_workers = self.workers
        solver.parameters.random_seed = self.seed
        solver.parameters.cp_model_presolve = self.presolve
        for k, v in self.params.items():
            if isinstance(v, list | tuple):
                getattr(solver.parameters, k).extend(v)
            else:
                setattr(solver.parameters, k, v)
        watch = _Watch(str(key), self.t0, self.progress, scale, slo if sense == "max" else shi,
                       best if sense == "max" and cap is not None else None)
        status = cpsat.solve(solver, self.cp, watch)
        self.clock.settle(solver.response_proto, budget, size)
        seconds = time.perf_counter() - start
        value = current
        # (a solution covers every variable; a search stopped before its first one reports none)
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) and len(solver.response_proto.solution) == size:
            old = self.full
            before = self._key(objective, later, sense) if old is not None else None
            self.full = list(solver.response_proto.solution)
            after = self._key(objective, later, sense)
            if before is not None and after < before:
                self.full = old  # the hint is better (on this tier, then the next) than what the search kept
            else:
                value = after[0] if sense == "max" else -after[0]
                self.improved = True if before is None else (self.improved or after > before)
        if value is None:
            return Tier(key, sense, 0 if sense == "max" else hi, best, STATUS.get(status, "UNKNOWN"), seconds)
        if status == cp_model.OPTIMAL and value == self.evaluate(objective):
            bound = value
        elif status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            b = solver.best_objective_bound
            bound = math.floor((b - slo) / scale + 1e-9) if sense == "max" else math.ceil((b - shi) / scale - 1e-9)
            bound = min(bound, best) if sense == "max" else max(bound, best)
        else:
            bound = best
        self.cp.add(objective.expr() >= value if sense == "max" else objective.expr() <= value)
        return Tier(key, sense, value, bound, STATUS.get(status, "UNKNOWN") if status != cp_model.OPTIMAL or
                    value == bound else "FEASIBLE", seconds)
