"""Lexicographic tiers: each objective solved to optimality or its time share, then fixed for the next.

A tier's objective is a :class:`Linear` expression kept as plain lists, so the same objective can be
evaluated on any placement (the greedy one, for the certificate) without a solver.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ortools.sat.python import cp_model

__all__ = ["Linear", "Tier", "TierSolver"]

STATUS = {cp_model.OPTIMAL: "OPTIMAL", cp_model.FEASIBLE: "FEASIBLE", cp_model.INFEASIBLE: "INFEASIBLE",
          cp_model.UNKNOWN: "UNKNOWN", cp_model.MODEL_INVALID: "MODEL_INVALID"}

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


@dataclass
class Tier:
    """One tier's outcome: objective of the answer, best bound, and how it was reached."""

    name: str
    sense: str  # "max" | "min"
    objective: int
    bound: int
    status: str
    seconds: float
    greedy: int | None = None  # the greedy placement's value on this tier
    fidelity: str = "EXACT"

    @property
    def gap(self) -> float:
        """Relative gap ``|bound − objective| / max(1, |bound|)``."""
        return abs(self.bound - self.objective) / max(1.0, abs(self.bound))

    def to_dict(self) -> dict:
        return {"name": self.name, "sense": self.sense, "objective": self.objective, "bound": self.bound,
                "gap": round(self.gap, 6), "status": self.status, "seconds": round(self.seconds, 3),
                "greedy": self.greedy, "fidelity": self.fidelity}


class _Watch(cp_model.CpSolverSolutionCallback):
    def __init__(self, name: str, t0: float, progress: Progress | None) -> None:
        super().__init__()
        self.name, self.t0, self.progress = name, t0, progress

    def on_solution_callback(self) -> None:
        if self.progress is not None:
            self.progress(self.name, self.objective_value, self.best_objective_bound, time.perf_counter() - self.t0)


class TierSolver:
    """Solves tiers in order on one model, carrying each answer as the next tier's hint."""

    def __init__(self, cp: cp_model.CpModel, all_vars: list[cp_model.IntVar], *, workers: int, seed: int,
                 deadline: float, progress: Progress | None = None) -> None:
        self.cp = cp
        self.all_vars = all_vars
        self.workers = workers
        self.seed = seed
        self.deadline = deadline
        self.progress = progress
        self.values: dict[int, int] | None = None  # the incumbent: variable index -> value
        self.t0 = time.perf_counter()

    def hint(self, values: dict[int, int]) -> None:
        self.cp.clear_hints()
        for v in self.all_vars:
            self.cp.add_hint(v, values.get(v.Index(), 0))

    def solve(self, name: str, objective: Linear, sense: str, share: float) -> Tier:
        """Optimize ``objective`` within ``share`` of the time left, then fix it at the value found."""
        start = time.perf_counter()
        budget = max(0.05, (self.deadline - start) * share)
        lo, hi = objective.bounds()
        if lo == hi:  # nothing to decide
            return Tier(name, sense, lo, lo, "OPTIMAL", 0.0)
        if self.values is not None:
            self.hint(self.values)
            done = objective.completed(self.values)
            for var, _ in objective.derived:
                self.cp.add_hint(var, done[var.Index()])
        expr = objective.expr()
        (self.cp.maximize if sense == "max" else self.cp.minimize)(expr)
        solver = cp_model.CpSolver()
        solver.parameters.max_time_in_seconds = budget
        solver.parameters.num_workers = self.workers
        solver.parameters.random_seed = self.seed
        status = solver.solve(self.cp, _Watch(name, self.t0, self.progress))
        seconds = time.perf_counter() - start
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            bound = hi if sense == "max" else lo
            return Tier(name, sense, objective.value(self.values or {}), bound, STATUS.get(status, "UNKNOWN"),
                        seconds)
        self.values = {v.Index(): int(solver.value(v)) for v in self.all_vars}
        value = round(solver.objective_value)
        if status == cp_model.OPTIMAL:
            bound = value
        elif sense == "max":  # integer objective: the bound rounds toward the incumbent
            bound = math.floor(solver.best_objective_bound + 1e-9)
        else:
            bound = math.ceil(solver.best_objective_bound - 1e-9)
        self.cp.add(expr >= value if sense == "max" else expr <= value)
        return Tier(name, sense, value, bound, STATUS[status], seconds)
