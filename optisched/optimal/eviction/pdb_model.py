"""PodDisruptionBudgets in a batch: moves stay within them, preemption breaks as few as it can.

A *move* (a voluntary class's running pod leaving its node, :mod:`optisched.optimal.classes`, where no
pod that may preempt it arrives: there it is a preemption victim, as kube would evict it) goes through
the Eviction API, which refuses an eviction that would drop a budget's ``disruptionsAllowed`` below zero
(kubernetes v1.35.4 ``pkg/registry/core/pod/storage/eviction.go``, ``checkAndDecrement``): per budget, the
moves never exceed ``disruptionsAllowed`` — a hard constraint, re-checked by :func:`budget_use`.
A *preemption victim* is deleted by the scheduler, which may break a budget but picks the node with the
fewest violating victims first (``pkg/scheduler/framework/preemption/preemption.go``,
``pickOneNodeForPreemption``, criterion 1): per budget, ``max(0, moves + victims − disruptionsAllowed)``
summed over budgets is a tier of its own, right after the placement tiers.

Each rule is written once here: the CP-SAT encoding and the count over a placement, side by side.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from ortools.sat.python import cp_model

from ...model.state import ClusterState
from ...preemption.pdb import PDBLedger
from .preemptors import preemptor_priority, preemptors_of

if TYPE_CHECKING:
    from ..classes import Batch
    from ..model import BatchModel
    from ..tiers import Linear

__all__ = ["BudgetUse", "beyond_budgets", "budget_use", "budget_use_of", "encode_budgets", "victim_budgets", "violation_objective"]


def _covered(batch: Batch) -> tuple[PDBLedger, dict[int, list[int]]]:
    """The ledger, and per budget the classes with running pods it covers (a class shares its labels)."""
    state = batch.state
    ledger = PDBLedger(state, (state.pod_node >= 0).tolist())
    per: dict[int, list[int]] = {}
    for c in batch.classes:
        if c.running:
            for b in ledger.budgets_of(c.rep):
                per.setdefault(b, []).append(c.index)
    return ledger, per


def _departures(model: BatchModel, classes: list[int]) -> tuple[cp_model.LinearExpr, int]:
    """Running pods of ``classes`` that leave their node, and how many could."""
    keep = [v for ci in classes for v in model.vars[ci].keep_vars]
    most = sum(int(u) for ci in classes for u in model.vars[ci].keep_ub)
    return most - cp_model.LinearExpr.sum(keep), most


def _moves(model: BatchModel, ci: int) -> list[tuple[cp_model.LinearExpr, int]]:
    """Per node, a voluntary class's departures that count as moves: all of them, except on a node where
    a pod that may preempt the class arrives (there they are preemption victims, as in kube)."""
    c = model.classes[ci]
    cv = model.vars[ci]
    out = []
    for n, keep, ub in zip(cv.keep_nodes.tolist(), cv.keep_vars, cv.keep_ub.tolist()):
        preemptors = preemptors_of(model, c, n)
        if not preemptors:
            out.append((ub - keep, ub))
            continue
        flag = model.cp.new_bool_var(f"pdbvictim{ci}_{n}")
        model.cp.add(cp_model.LinearExpr.sum(preemptors) >= 1).only_enforce_if(flag)
        move = model.cp.new_int_var(0, ub, f"move{ci}_{n}")
        model.cp.add(move >= ub - keep - ub * flag)
        out.append((move, ub))
    return out


def encode_budgets(model: BatchModel) -> int:
    """Moves within every budget: Σ moves of its voluntary classes ≤ ``disruptionsAllowed``."""
    ledger, per = _covered(model.batch)
    added = 0
    for b, classes in per.items():
        terms = [t for ci in classes if model.classes[ci].voluntary for t in _moves(model, ci)]
        if sum(u for _, u in terms) > ledger.allowed[b]:
            model.cp.add(cp_model.LinearExpr.sum([x for x, _ in terms]) <= ledger.allowed[b])
            added += 1
    return added


def _breakable(batch: Batch) -> tuple[PDBLedger, dict[int, list[int]]]:
    """Budgets preemption victims could break (more covered running pods than it allows, some of them
    not voluntary or with a pod above them that may preempt), with the classes they cover."""
    ledger, per = _covered(batch)
    out = {}
    top = max((c.priority for c in batch.classes if c.preempts and c.pending), default=None)
    for b, classes in per.items():
        most = sum(batch.classes[ci].running_count for ci in classes)
        victims = any(not batch.classes[ci].voluntary or (top is not None and batch.classes[ci].priority < top)
                      for ci in classes)
        if most > ledger.allowed[b] and victims:
            out[b] = classes
    return ledger, out


def victim_budgets(batch: Batch) -> bool:
    """Whether some budget could be broken by preemption victims (the violation tier has terms)."""
    return bool(_breakable(batch)[1])


def violation_objective(model: BatchModel) -> Linear:
    """Σ over budgets of ``max(0, departures − disruptionsAllowed)``, minimized. One auxiliary variable
    per budget preemption could break, its value derived from the others'. Built when its tier comes,
    so the placement tiers solve without it."""
    from ..tiers import Linear

    ledger, per = _breakable(model.batch)
    lin = Linear()
    for b, classes in per.items():
        expr, most = _departures(model, classes)
        allowed = ledger.allowed[b]
        over = model.cp.new_int_var(0, most - allowed, f"pdb{b}")
        model.cp.add(over >= expr - allowed)
        lin.add(over, 1, most - allowed)
        keeps = [(v.Index(), int(u)) for ci in classes for v, u in zip(model.vars[ci].keep_vars,
                                                                        model.vars[ci].keep_ub.tolist())]
        lin.derived.append((over, _excess(keeps, allowed)))
    return lin


def _excess(keeps: list[tuple[int, int]], allowed: int) -> Callable[[dict[int, int]], int]:
    """The violation variable's value from the keep variables' (index, upper bound)."""
    return lambda values: max(0, sum(u - values.get(i, 0) for i, u in keeps) - allowed)


@dataclass(frozen=True)
class BudgetUse:
    """One budget after a placement: what it allowed, what moves used, what preemption broke."""

    name: str  # namespace/name
    allowed: int
    moves: int  # voluntary departures (through the Eviction API)
    victims: int  # preemption victims it covers
    violated: int  # max(0, moves + victims − allowed)

    def to_dict(self) -> dict:
        return {"budget": self.name, "disruptionsAllowed": self.allowed, "moves": self.moves,
                "victims": self.victims, "violated": self.violated}


def _left(batch: Batch, node_of: np.ndarray, ci: int) -> list[int]:
    c = batch.classes[ci]
    return [p for n, pods in sorted(c.running.items()) for p in pods if node_of[p] != n]


def _move_mask(batch: Batch, node_of: np.ndarray) -> np.ndarray:
    """bool [P]: running pods whose departure in ``node_of`` is a move (see :func:`_moves`)."""
    best = preemptor_priority(batch, node_of)
    moves = np.zeros(len(batch.state.pods), dtype=bool)
    for c in batch.classes:
        if c.voluntary:
            for n, pods in c.running.items():
                if best[n] <= c.priority:
                    moves[pods] = True
    return moves


def budget_use(batch: Batch, node_of: np.ndarray) -> list[BudgetUse]:
    """Every budget covering a running pod that leaves its node in ``node_of``, by name; departures of
    voluntary classes from nodes no preempting pod arrives at count as moves, the others as victims."""
    return budget_use_of(batch.state, node_of, _move_mask(batch, node_of))


def budget_use_of(state: ClusterState, node_of: np.ndarray, voluntary: np.ndarray) -> list[BudgetUse]:
    """:func:`budget_use` for any placement: ``voluntary`` (bool per pod row) marks the departures that
    are moves (greedy mode's are all preemption victims)."""
    gone = np.flatnonzero((state.pod_node >= 0) & (np.asarray(node_of) != state.pod_node))
    if not state.cluster.pdbs or not len(gone):
        return []
    ledger = PDBLedger(state, (state.pod_node >= 0).tolist())
    moves: dict[int, int] = {}
    victims: dict[int, int] = {}
    for p in gone.tolist():
        for b in ledger.budgets_of(p):
            tally = moves if voluntary[p] else victims
            tally[b] = tally.get(b, 0) + 1
    out = []
    for b in sorted(set(moves) | set(victims)):
        mv, vc, allowed = moves.get(b, 0), victims.get(b, 0), ledger.allowed[b]
        out.append(BudgetUse(ledger.names[b], allowed, mv, vc, max(0, mv + vc - allowed)))
    return sorted(out, key=lambda u: u.name)


def beyond_budgets(batch: Batch, node_of: np.ndarray) -> list[int]:
    """Moves past a budget's ``disruptionsAllowed`` (the last ones, in class order): the pods a placement
    must put back for its moves to stay within every budget."""
    ledger, per = _covered(batch)
    moving = _move_mask(batch, node_of)
    out: list[int] = []
    for b, classes in per.items():
        gone = [p for ci in classes for p in _left(batch, node_of, ci) if moving[p]]
        out += gone[ledger.allowed[b]:]
    return list(dict.fromkeys(out))
