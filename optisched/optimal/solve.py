"""Optimal mode: the whole batch as one CP-SAT model, solved tier by tier, with a certificate.

1. Greedy mode runs first: its placement is the hint and the fallback (the answer is never worse).
2. The batch becomes pod classes (:mod:`.classes`) and one :class:`.model.BatchModel` with every filter
   of the profile as constraints, plus the batch preemption rules (:mod:`optisched.preemption.batch`).
3. Tiers (:mod:`.tiers`): pods placed per priority level, highest first (no lower-priority pod placed
   at the expense of a higher one); then disruption of running pods; then the user's objective when one
   is asked for (:mod:`.user_objectives`); then the profile's score (:mod:`.score`).
4. The answer is decoded to a node per pod and re-checked by the greedy filters (:mod:`.check`).
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..greedy.scheduler import GreedyOptions, GreedyResult, GreedyScheduler
from ..model.state import ClusterState
from ..preemption.batch import encode_eviction_rules
from ..profile import SchedulerConfig
from .check import Violation, check_placement
from .classes import Batch, build_batch
from .decode import counts_of, decode
from .model import BatchModel
from .score import score_objective
from .tiers import Linear, Progress, Tier, TierSolver
from .user_objectives import check_objective, user_objective

__all__ = ["Certificate", "OptimalOptions", "OptimalResult", "solve_optimal"]


@dataclass(frozen=True)
class OptimalOptions:
    time_limit: float = 60.0
    workers: int = 2
    seed: int = 0
    movable: bool = False  # running pods may move (rescheduling); else only preemption victims leave
    preemption: bool = True
    objective: str | None = None  # a user objective (user_objectives.OBJECTIVES), a tier before the score


@dataclass
class Certificate:
    """How good the answer is: per tier the objective, the best bound and the gap."""

    status: str  # OPTIMAL | FEASIBLE | INFEASIBLE | UNKNOWN
    tiers: list[Tier]
    seconds: float
    source: str  # "solver" or "greedy" (the greedy placement was at least as good)
    greedy_optimal: bool
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"status": self.status, "tiers": [t.to_dict() for t in self.tiers], "seconds": round(self.seconds, 3),
                "source": self.source, "greedyOptimal": self.greedy_optimal, "notes": self.notes}


@dataclass
class OptimalResult:
    state: ClusterState
    batch: Batch
    node_of: np.ndarray  # node row per pod row after the batch, -1 = not placed
    certificate: Certificate
    greedy: GreedyResult
    violations: list[Violation]

    def placements(self) -> dict[str, str | None]:
        names = self.state.node_names
        return {p.key: (names[n] if (n := int(self.node_of[i])) >= 0 else None) for i, p in enumerate(self.state.pods)}

    @property
    def unschedulable(self) -> dict[int, str]:
        """Pending pods the answer leaves without a node, with the greedy FitError for context."""
        out = {}
        for c in self.batch.classes:
            for p in c.pending:
                if self.node_of[p] < 0:
                    out[p] = self.greedy.unschedulable.get(p, "not placed by the optimal batch")
        return out


def _level_name(priority: int) -> str:
    return f"placed[priority={priority}]"


def placed_per_level(batch: Batch, node_of: np.ndarray) -> dict[int, int]:
    """Batch pods on a node per priority level."""
    out = dict.fromkeys(batch.levels, 0)
    for c in batch.classes:
        rows = c.pending + [p for pods in c.running.values() for p in pods]
        out[c.priority] += int(np.count_nonzero(node_of[rows] >= 0))
    return out


def _objectives(model: BatchModel, objective: str | None = None) -> list[tuple[str, str, Linear | Callable[[], Linear]]]:
    """(name, sense, objective) of every tier, in order; the objectives with auxiliary variables are built
    when their tier comes (a function), so the placement tiers solve without their constraints."""
    batch = model.batch
    out = []
    for level in batch.levels:
        lin = Linear()
        for c in batch.classes:
            if c.priority == level:
                for _, v, u in model.vars[c.index].terms():
                    lin.add(v, 1, u)
        out.append((_level_name(level), "max", lin))
    if any(c.running for c in batch.classes):
        rank = {p: i + 1 for i, p in enumerate(sorted(batch.levels))}
        lin = Linear()
        for c in batch.classes:
            cv = model.vars[c.index]
            for v, u in zip(cv.keep_vars, cv.keep_ub.tolist()):
                lin.const += rank[c.priority] * u
                lin.add(v, -rank[c.priority], u)
        out.append(("disruption", "min", lin))
    if objective is not None:
        out.append((f"objective:{objective}", "min", lambda: user_objective(model, objective)))
    if any(cv.arr_vars for cv in model.vars):
        out.append(("score", "max", lambda: _score(model)))
    return out


def _score(model: BatchModel) -> Linear:
    score, fidelity = score_objective(model)
    model.fidelity.update({f"score:{k}": v for k, v in fidelity.items()})
    return score


def _values_of(model: BatchModel, node_of: np.ndarray) -> dict[int, int]:
    """Variable values of a placement (pods on nodes without a variable are left out)."""
    arrivals, kept = counts_of(model.batch, node_of)
    values: dict[int, int] = {}
    for c in model.classes:
        cv = model.vars[c.index]
        for n, v in zip(cv.arr_nodes.tolist(), cv.arr_vars):
            values[v.Index()] = arrivals[c.index].get(n, 0)
        for n, v in zip(cv.keep_nodes.tolist(), cv.keep_vars):
            values[v.Index()] = kept[c.index].get(n, 0)
    return values


def _lex_key(batch: Batch, node_of: np.ndarray) -> tuple:
    per = placed_per_level(batch, node_of)
    left = sum(1 for c in batch.classes for n, pods in c.running.items() for p in pods if node_of[p] != n)
    return (*[per[lv] for lv in batch.levels], -left)


def solve_optimal(state: ClusterState, config: SchedulerConfig, options: OptimalOptions = OptimalOptions(),
                  progress: Progress | None = None, greedy: GreedyResult | None = None) -> OptimalResult:
    """Place the batch optimally (see the module docstring); ``greedy`` reuses a greedy run."""
    check_objective(options.objective)
    t0 = time.perf_counter()
    deadline = t0 + options.time_limit
    if progress is not None:
        progress("greedy placement (the hint)", None, None, 0.0)
    if greedy is None:
        greedy = GreedyScheduler(state, config, GreedyOptions(record=False)).run()
    if progress is not None:
        progress("building the model", None, None, time.perf_counter() - t0)
    greedy_nodes = greedy.snapshot.node_of.copy()
    batch = build_batch(state, config, movable=options.movable, preemption=options.preemption)
    model = BatchModel(batch, config)
    encode_eviction_rules(model)
    all_vars = [v for cv in model.vars for v in cv.arr_vars + cv.keep_vars]
    solver = TierSolver(model.cp, all_vars, workers=options.workers, seed=options.seed, deadline=deadline,
                        progress=progress)
    greedy_values = _values_of(model, greedy_nodes)
    solver.values = greedy_values
    objectives = _objectives(model, options.objective)
    tiers: list[Tier] = []
    for i, (name, sense, lin) in enumerate(objectives):
        if callable(lin):
            lin = lin()
        tier = solver.solve(name, lin, sense, 1.0 / (len(objectives) - i))
        tier.greedy = lin.value(greedy_values)
        tier.fidelity = lin.fidelity
        tiers.append(tier)
    notes: list[str] = []
    node_of = greedy_nodes
    source = "greedy"
    if solver.values is not None and solver.values is not greedy_values:
        arrivals, kept = model.counts(lambda v: solver.values.get(v.Index(), 0))
        node_of = decode(batch, arrivals, kept)
        source = "solver"
    if progress is not None:
        progress("checking the answer with the greedy filters", None, None, time.perf_counter() - t0)
    violations = check_placement(state, config, node_of, batch.class_of)
    greedy_violations = check_placement(state, config, greedy_nodes, batch.class_of) if source == "solver" else []
    if greedy_violations:
        notes.append(f"the greedy placement breaks batch semantics for {len(greedy_violations)} pod(s) "
                     f"(e.g. {greedy_violations[0]}); it cannot be the answer")
    elif source == "solver" and _lex_key(batch, greedy_nodes) > _lex_key(batch, node_of):
        node_of, source = greedy_nodes, "greedy"
        violations = []
        notes.append("the greedy placement was better than the solver's incumbent and is returned")
    statuses = {t.status for t in tiers}
    status = "OPTIMAL" if statuses <= {"OPTIMAL"} else ("FEASIBLE" if source == "solver" or tiers else "UNKNOWN")
    placed_tiers = [t for t in tiers if t.name.startswith("placed[")]
    greedy_optimal = not greedy_violations and all(t.greedy == t.bound for t in placed_tiers)
    cert = Certificate(status, tiers, time.perf_counter() - t0, source, greedy_optimal, notes)
    return OptimalResult(state, batch, node_of, cert, greedy, violations)
