"""A cheap upper bound on the placement tiers: the LP relaxation of an aggregated model (GLOP).

CP-SAT's own bound is only valid for the model it solved; on large batches that model keeps few
candidate nodes per class, and even unrestricted its bound is weak. This LP relaxes, keeping every
upper bound valid:

* on large batches, nodes that every rule treats alike (same labels but the hostname, same taints,
  same cordon) form one *node type* whose free capacity is the sum of its nodes' (free = allocatable
  − fixed pods); smaller ones keep a row per node;
* classes with the same priority, request vector and allowed node types form one *LP class*;
* per LP class and node type at most the pods that fit there node by node (the model's per-node caps);
* integrality, topology spread, inter-pod affinity, host ports and the preemption rule are dropped;
  integrality is partly kept by rounding cuts (:meth:`LevelBound._rounding_cuts`).

Any placement the batch model allows maps to a feasible point of this LP, so its optimum bounds the
pods placed at each priority level given the levels above at the answer's values.
"""
from __future__ import annotations

import bisect
from collections import defaultdict

import numpy as np
from ortools.linear_solver import pywraplp

from .model import BatchModel

__all__ = ["LevelBound", "node_types"]


def node_types(model: BatchModel) -> np.ndarray:
    """A type id per node: equal for nodes alike in labels (but the hostname), taints and cordon."""
    state = model.state
    ids: dict[tuple, int] = {}
    out = np.empty(state.num_nodes, dtype=np.int64)
    for i, node in enumerate(state.nodes):
        labels = tuple(sorted((k, v) for k, v in node.metadata.labels.items() if k != "kubernetes.io/hostname"))
        taints = tuple(sorted((t.key, t.value or "", str(t.effect)) for t in node.spec.taints))
        out[i] = ids.setdefault((labels, taints, node.spec.unschedulable), len(ids))
    return out


# Above this many LP columns per node type (5,000 nodes) the relaxation takes seconds to build: it is
# built once, without rounding cuts (they doubled its time there and moved no bound).
LARGE_COLUMNS = 50_000


class LevelBound:
    """The aggregated LP, solved level by level (highest priority first) with GLOP."""

    def __init__(self, model: BatchModel, max_columns: int = 120_000, cuts: bool = True) -> None:
        state = model.state
        types = np.arange(state.num_nodes, dtype=np.int64)  # per node when small enough: a tighter bound
        shapes = {(c.priority, state.pod_requests[c.rep].tobytes()) for c in model.classes}
        if len(shapes) * state.num_nodes > max_columns:
            types = node_types(model)
        self.per_node = len(types) == 0 or int(types.max()) + 1 == state.num_nodes
        n_types = int(types.max()) + 1 if len(types) else 0
        cols = np.flatnonzero(state.pod_requests.any(axis=0))
        free = np.zeros((n_types, len(cols)), dtype=np.float64)
        np.add.at(free, types, (state.allocatable - model.snapshot.requested)[:, cols].clip(min=0))
        groups: dict[tuple, dict] = {}
        for c in model.classes:
            allowed = model.allowed[c.index].copy()
            for n in c.running:
                allowed[n] = True
            caps = np.zeros(n_types, dtype=np.int64)
            np.add.at(caps, types[allowed], model.cap[c.index, allowed])
            for n, pods in c.running.items():
                caps[types[n]] += len(pods)
            key = (c.priority, state.pod_requests[c.rep, cols].tobytes(), (caps > 0).tobytes())
            g = groups.setdefault(key, {"level": c.priority, "req": state.pod_requests[c.rep, cols],
                                        "count": 0, "caps": np.zeros(n_types, dtype=np.int64)})
            g["count"] += c.size
            g["caps"] += np.minimum(caps, c.size)
        self.solver = pywraplp.Solver.CreateSolver("GLOP")
        self.by_level: dict[int, list] = defaultdict(list)
        usage: list[list] = [[[] for _ in cols] for _ in range(n_types)]
        for g in groups.values():
            vs = []
            for t in np.flatnonzero(g["caps"]).tolist():
                v = self.solver.NumVar(0.0, float(g["caps"][t]), "")
                vs.append(v)
                for j, r in enumerate(g["req"].tolist()):
                    if r:
                        usage[t][j].append((v, float(r)))
            if vs:
                self.solver.Add(self.solver.Sum(vs) <= g["count"])
                self.by_level[g["level"]] += vs
        for t in range(n_types):
            for j in range(len(cols)):
                if usage[t][j]:
                    self.solver.Add(self.solver.Sum([r * v for v, r in usage[t][j]]) <= free[t, j])
        # per node, the cuts multiply the rows by the request sizes for a fraction of a percent
        if cuts and not self.per_node and not self.large:
            node_free = (state.allocatable - model.snapshot.requested)[:, cols].clip(min=0)
            self._rounding_cuts(types, n_types, node_free, usage)

    @property
    def large(self) -> bool:
        """Per node type with more than :data:`LARGE_COLUMNS` columns."""
        return not self.per_node and self.solver.NumVariables() > LARGE_COLUMNS

    def _rounding_cuts(self, types: np.ndarray, n_types: int, node_free: np.ndarray, usage: list) -> None:
        """Chvátal–Gomory cuts per node and request size ``s`` of each resource: pods are whole, so a
        node holds at most ⌊free/s⌋ "units" of s, a pod of request r counting ⌊r/s⌋ of them (summed over
        a type's nodes). They cut the fractional pods the relaxation adds to every node's remainder."""
        for j in range(node_free.shape[1]):
            sizes = sorted({int(r) for t in range(n_types) for _, r in usage[t][j]})
            if not sizes:
                continue
            units = node_free[:, j][:, None] // np.array(sizes, dtype=np.int64)[None, :]
            rhs = np.zeros((n_types, len(sizes)), dtype=np.int64)
            np.add.at(rhs, types, units)
            for t in range(n_types):
                terms = sorted(usage[t][j], key=lambda vr: vr[1])
                rs = [r for _, r in terms]
                for k, size in enumerate(sizes):
                    first = bisect.bisect_left(rs, size)
                    if len(terms) - first > 1:  # one pod size alone: its per-node caps already say it
                        self.solver.Add(self.solver.Sum([(r // size) * v for v, r in terms[first:]]) <= float(rhs[t, k]))

    def bound(self, level: int) -> int | None:
        """The most pods of ``level`` the relaxation places (rounded down); None if GLOP fails."""
        vs = self.by_level.get(level, [])
        if not vs:
            return 0
        self.solver.Maximize(self.solver.Sum(vs))
        if self.solver.Solve() != pywraplp.Solver.OPTIMAL:
            return None
        return int(np.floor(self.solver.Objective().Value() + 1e-6))

    def fix(self, level: int, value: int) -> None:
        """The levels below are bounded given this level placing at least ``value`` pods."""
        vs = self.by_level.get(level, [])
        if vs:
            self.solver.Add(self.solver.Sum(vs) >= float(value))
