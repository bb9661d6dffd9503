"""Building blocks of score and objective terms over a :class:`~optisched.optimal.model.BatchModel`.

Units: one score point (kube's 0–100 node score of one pod, times the plugin's weight) is
:data:`SCORE_SCALE` objective units, so terms that are fractions of a point stay integers.
Utilization is integer per-mille of a node's allocatable: each (class, node) coefficient is the class's
request ``× 1000 / allocatable`` rounded to the nearest integer, the fixed pods' load likewise.

Auxiliary variables (a maximum, an absolute value, a node-used flag, a convex load penalty) are
registered on the objective with the function that gives their optimal value from the placement
(``Linear.derived``), so any placement, the greedy one included, can be evaluated without a solver.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from ortools.sat.python import cp_model

from ..framework import Code, CycleState
from .tiers import SCORE_SCALE  # objective units per score point (the certificate shows points)

if TYPE_CHECKING:
    from .classes import PodClass
    from .model import BatchModel
    from .tiers import Linear

__all__ = [
    "SCORE_SCALE",
    "Affine",
    "abs_var",
    "add_arrival_scores",
    "add_var",
    "class_nodes",
    "convex_load",
    "domain_of",
    "encode_static",
    "lower_var",
    "node_fractions",
    "node_utilization",
    "permille",
    "static_scores",
    "upper_var",
    "used_flag",
]

PERMILLE = 1000
TANGENT_STEP = 100  # per-mille between the tangents of the convex load penalty


@dataclass
class Affine:
    """``Σ coef · var + const`` over non-negative variables, each with its upper bound."""

    terms: list[tuple[cp_model.IntVar, int, int]] = field(default_factory=list)  # (var, coef, ub)
    const: int = 0

    def expr(self) -> cp_model.LinearExpr:
        return cp_model.LinearExpr.weighted_sum([v for v, _, _ in self.terms], [k for _, k, _ in self.terms]) \
            + self.const

    def value(self, values: dict[int, int]) -> int:
        return self.const + sum(k * values.get(v.Index(), 0) for v, k, _ in self.terms)

    def minus(self, other: Affine) -> Affine:
        """``self − other``, one term per variable."""
        merged: dict[int, list] = {}
        for sign, aff in ((1, self), (-1, other)):
            for v, k, u in aff.terms:
                merged.setdefault(v.Index(), [v, 0, u])[1] += sign * k
        return Affine([(v, k, u) for v, k, u in merged.values() if k], self.const - other.const)

    def bounds(self) -> tuple[int, int]:
        lo = self.const + sum(k * u for _, k, u in self.terms if k < 0)
        hi = self.const + sum(k * u for _, k, u in self.terms if k > 0)
        return lo, hi


def domain_of(v: cp_model.IntVar) -> tuple[int, int]:
    """(lowest, highest) value of a variable."""
    d = list(v.proto.domain)
    return int(d[0]), int(d[-1])


def add_var(objective: Linear, v: cp_model.IntVar, coef: int) -> None:
    """``coef · v`` in ``objective``, with the variable's own domain."""
    lo, hi = domain_of(v)
    objective.add(v, coef, hi, lo)


def permille(amount: np.ndarray | int, alloc: int) -> np.ndarray | int:
    """``amount × 1000 / alloc`` rounded half up (integers)."""
    return (2 * PERMILLE * amount + alloc) // (2 * alloc)


# ------------------------------------------------------------------ static per-(pod, node) scores
def static_scores(model: BatchModel, rule, c: PodClass) -> np.ndarray | None:  # type: ignore[no-untyped-def]
    """The greedy PreScore + Score + NormalizeScore of ``rule`` for ``c``'s representative pod against
    the fixed pods, over the nodes the class may use (``model.allowed``): a score per node (0 elsewhere),
    or None when PreScore skips (or fails: greedy mode places such a pod only where it is the sole
    feasible node, unscored)."""
    nodes = np.flatnonzero(model.allowed[c.index])
    if len(nodes) == 0:
        return None
    cycle = CycleState(c.rep, model.snapshot, model.cycle(c).profile)
    if rule.pre_score(cycle, nodes).code != Code.SUCCESS:
        return None
    raw = np.asarray(rule.score(cycle, nodes), dtype=np.int64)
    out = np.zeros(model.state.num_nodes, dtype=np.int64)
    out[nodes] = np.asarray(rule.normalize(cycle, raw), dtype=np.int64)
    return out


def add_arrival_scores(model: BatchModel, c: PodClass, per_node: np.ndarray, scale: int, objective: Linear) -> None:
    """``scale · per_node[n]`` for each pod of ``c`` the batch places on node ``n``. Pods kept where
    they run are not being scheduled and earn nothing."""
    cv = model.vars[c.index]
    for n, v, u in zip(cv.arr_nodes.tolist(), cv.arr_vars, cv.arr_ub.tolist()):
        objective.add(v, scale * int(per_node[n]), u)


def encode_static(rule, model: BatchModel, classes: list[PodClass], weight: int,  # type: ignore[no-untyped-def]
                  objective: Linear) -> None:
    """A score that depends only on the pod, the node and the fixed pods, as arrival terms."""
    for c in classes:
        scores = static_scores(model, rule, c)
        if scores is not None:
            add_arrival_scores(model, c, scores, SCORE_SCALE * weight, objective)


# ------------------------------------------------------------------ node loads
def class_nodes(model: BatchModel, classes: list[PodClass]) -> np.ndarray:
    """The nodes where one of ``classes`` has a variable (arrivals or kept pods), sorted."""
    parts = [np.concatenate([model.vars[c.index].arr_nodes, model.vars[c.index].keep_nodes]) for c in classes]
    return np.unique(np.concatenate(parts)).astype(np.int64) if parts else np.zeros(0, dtype=np.int64)


def class_request(model: BatchModel, c: PodClass, resource: str, use_requested: bool) -> int:
    """A pod of ``c``'s request of ``resource``: non-zero cpu/memory (scoring defaults) unless
    ``use_requested``."""
    state = model.state
    if not use_requested and resource in ("cpu", "memory"):
        return int(state.pod_nonzero[c.rep, 0 if resource == "cpu" else 1])
    return int(state.pod_requests[c.rep, state.resource_col(resource)])


def node_utilization(model: BatchModel, resource: str, use_requested: bool,
                     nodes: np.ndarray | None = None) -> dict[int, Affine]:
    """Per node the batch can change (among ``nodes`` when given): per-mille utilization of ``resource``
    at the end (fixed pods + every class's pods there). Nodes without the resource are left out."""
    state = model.state
    if resource not in state.resources:
        return {}
    j = state.resource_col(resource)
    alloc = state.allocatable[:, j]
    if not use_requested and resource in ("cpu", "memory"):
        fixed = model.snapshot.nonzero[:, 0 if resource == "cpu" else 1]
    else:
        fixed = model.snapshot.requested[:, j]
    req = {c.index: class_request(model, c, resource, use_requested) for c in model.classes}
    wanted = range(state.num_nodes) if nodes is None else nodes.tolist()
    out: dict[int, Affine] = {}
    node_terms = model.node_terms()
    for n in wanted:
        a = int(alloc[n])
        if a <= 0:
            continue
        terms = [(v, int(permille(req[c.index], a)), u) for c, v, u in node_terms[n] if req[c.index] > 0]
        terms = [t for t in terms if t[1] > 0]
        if terms:
            out[n] = Affine(terms, int(permille(int(fixed[n]), a)))
    return out


def node_fractions(model: BatchModel, resources: list[str], use_requested: bool,
                   nodes: np.ndarray) -> dict[int, dict[str, Affine]]:
    """Per node of ``nodes`` where the batch changes one of ``resources``: the per-mille utilization of
    every one of them the node has (a constant for those no batch pod requests)."""
    state = model.state
    utils = {r: node_utilization(model, r, use_requested, nodes) for r in resources}
    out: dict[int, dict[str, Affine]] = {}
    for n in sorted({n for u in utils.values() for n in u}):
        row: dict[str, Affine] = {}
        for r in resources:
            if r in utils and n in utils[r]:
                row[r] = utils[r][n]
            elif r in state.resources and state.allocatable[n, j := state.resource_col(r)] > 0:
                fixed = model.snapshot.requested[n, j]
                if not use_requested and r in ("cpu", "memory"):
                    fixed = model.snapshot.nonzero[n, 0 if r == "cpu" else 1]
                row[r] = Affine([], int(permille(int(fixed), int(state.allocatable[n, j]))))
        out[n] = row
    return out


# ------------------------------------------------------------------ auxiliary variables
def upper_var(model: BatchModel, objective: Linear, affs: list[Affine], name: str, floor: int = 0) -> cp_model.IntVar:
    """An integer at least every expression of ``affs`` and ``floor`` (its least value: their maximum)."""
    hi = max([floor, *(a.bounds()[1] for a in affs)])
    lo = max([floor, *(a.bounds()[0] for a in affs)])
    m = model.cp.new_int_var(lo, hi, name)
    for a in affs:
        if a.terms and a.bounds()[1] > lo:
            model.cp.add(m >= a.expr())
    objective.derived.append((m, lambda values: max([floor, *(a.value(values) for a in affs)])))
    return m


def lower_var(model: BatchModel, objective: Linear, affs: list[Affine], name: str, ceil: int) -> cp_model.IntVar:
    """An integer at most every expression of ``affs`` and ``ceil`` (its greatest value: their minimum)."""
    lo = min([ceil, *(a.bounds()[0] for a in affs)])
    hi = min([ceil, *(a.bounds()[1] for a in affs)])
    m = model.cp.new_int_var(lo, hi, name)
    for a in affs:
        if a.terms and a.bounds()[0] < hi:
            model.cp.add(m <= a.expr())
    objective.derived.append((m, lambda values: min([ceil, *(a.value(values) for a in affs)])))
    return m


def abs_var(model: BatchModel, objective: Linear, a: Affine, name: str) -> cp_model.IntVar:
    """An integer at least ``|a|``."""
    lo, hi = a.bounds()
    d = model.cp.new_int_var(0, max(abs(lo), abs(hi)), name)
    model.cp.add(d >= a.expr())
    model.cp.add(d >= -a.expr())
    objective.derived.append((d, lambda values: abs(a.value(values))))
    return d


def used_flag(model: BatchModel, objective: Linear, node: int, name: str) -> cp_model.IntVar:
    """A boolean that is true when any pod of the batch is on ``node`` at the end (arrived or kept)."""
    terms = model.node_terms()[node]
    b = model.cp.new_bool_var(name)
    model.cp.add(cp_model.LinearExpr.sum([v for _, v, _ in terms]) <= sum(u for _, _, u in terms) * b)
    objective.derived.append((b, lambda values: int(any(values.get(v.Index(), 0) > 0 for _, v, _ in terms))))
    return b


def convex_load(model: BatchModel, objective: Linear, a: Affine, name: str) -> cp_model.IntVar:
    """An integer at least ``U² / 1000`` for the per-mille utilization ``a``, through its tangents every
    :data:`TANGENT_STEP` per-mille from the lowest ``a`` can take up to a full node (piecewise linear,
    convex; beyond a full node the last tangent goes on linearly)."""
    lo, hi = a.bounds()
    lo = max(lo, 0)
    top = max(min(hi, PERMILLE), lo)
    points = [p for p in range(lo // TANGENT_STEP * TANGENT_STEP, top + TANGENT_STEP, TANGENT_STEP) if p > 0]

    def value(values: dict[int, int]) -> int:
        u = a.value(values)
        return max([0, *(-((p * p - 2 * p * u) // PERMILLE) for p in points)])

    q = model.cp.new_int_var(0, value({v.Index(): u for v, _, u in a.terms}), name)
    expr = a.expr()
    for p in points:
        model.cp.add(PERMILLE * q >= 2 * p * expr - p * p)
    objective.derived.append((q, value))
    return q
