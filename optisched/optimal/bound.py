"""A cheap upper bound on the placement tiers: the LP relaxation of an aggregated model (GLOP).

CP-SAT's own bound is only valid for the model it solved; on large batches that model keeps few
candidate nodes per class, and even unrestricted its bound is weak. This LP relaxes, keeping every
upper bound valid:

* nodes that every rule treats alike (same labels but the hostname, same taints, same cordon) form
  one *node type* whose free capacity is the sum of its nodes' (free = allocatable − fixed pods); a row
  per node is an option (``max_columns``), no tighter in practice once the rounding cuts are in;
* classes with the same priority, request vector and allowed node types form one *LP class*;
* per LP class and node type at most the pods that fit there node by node (the model's per-node caps);
* integrality, topology spread, inter-pod affinity, host ports and the preemption rule are dropped;
  integrality is partly kept by rounding cuts (:meth:`LevelBound._rounding_cuts`).

Any placement the batch model allows maps to a feasible point of this LP, so its optimum bounds the
pods placed at each priority level given the levels above at the answer's values.
"""
from __future__ import annotations

import numpy as np
from ortools.linear_solver import linear_solver_pb2, pywraplp

from .. import interrupt
from .clock import WORK_COST, Clock
from .model import BatchModel
from .tier_key import TierKey

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
    """The aggregated LP, solved level by level (highest priority first) with GLOP.

    Built as one ``MPModelProto`` from numpy arrays (columns per (LP class, node type), rows per node
    type and resource); each level's pods sum into a variable of their own, so solving a level is one
    objective coefficient and fixing it one lower bound."""

    def __init__(self, model: BatchModel, max_columns: int = 0, cuts: bool = True, clock: Clock | None = None,
                 seconds: float = float("inf")) -> None:
        state = model.state
        self.clock = clock if clock is not None else Clock.wall()
        self.seconds = seconds  # the LP's share of the limit, over all its solves
        self.notes: list[str] = []  # levels whose LP ran out of its share (the cheaper bound stands)
        # per node (up to ``max_columns`` columns) only on request: on generated clusters of 200 and 1,000
        # nodes the node types with rounding cuts bound as tightly (per node with the cuts too), and
        # solve 6x faster (0.2 s against 1.1 s for four levels at 200 nodes)
        types = np.arange(state.num_nodes, dtype=np.int64)
        shapes = {(c.priority, state.pod_requests[c.rep].tobytes()) for c in model.classes}
        if len(shapes) * state.num_nodes > max_columns:
            types = node_types(model)
        self.per_node = len(types) == 0 or int(types.max()) + 1 == state.num_nodes
        n_types = int(types.max()) + 1 if len(types) else 0
        cols = np.flatnonzero(state.pod_requests.any(axis=0))
        node_free = (state.allocatable - model.snapshot.requested)[:, cols].clip(min=0)
        free = np.zeros((n_types, len(cols)), dtype=np.float64)
        np.add.at(free, types, node_free)
        groups: dict[tuple, dict] = {}
        for c in model.classes:
            allowed = model.allowed[c.index].copy()
            for n in c.running:
                allowed[n] = True
            # (bincount: np.add.at per class took 6 of a 5,000-node run's CPU seconds; exact in float64)
            caps = np.bincount(types[allowed], weights=model.cap[c.index, allowed], minlength=n_types).astype(np.int64)
            for n, pods in c.running.items():
                caps[types[n]] += len(pods)
            key = (c.priority, state.pod_requests[c.rep, cols].tobytes(), (caps > 0).tobytes())
            g = groups.setdefault(key, {"level": c.priority, "req": state.pod_requests[c.rep, cols],
                                        "count": 0, "caps": np.zeros(n_types, dtype=np.int64)})
            g["count"] += c.size
            g["caps"] += np.minimum(caps, c.size)
        # columns: one per (group, node type) the group may use
        gl = list(groups.values())
        caps = np.array([g["caps"] for g in gl], dtype=np.int64).reshape(len(gl), n_types)
        gi, ti = np.nonzero(caps > 0)
        self.columns = len(gi)
        req = np.array([g["req"] for g in gl], dtype=np.int64).reshape(len(gl), len(cols))[gi]  # per column
        self.levels = sorted({g["level"] for g in gl}, reverse=True)
        level_of = np.array([self.levels.index(g["level"]) for g in gl], dtype=np.int64)[gi]
        proto = linear_solver_pb2.MPModelProto()
        ncol = len(gi)
        for ub in caps[gi, ti].tolist():
            proto.variable.add(lower_bound=0.0, upper_bound=float(ub))
        for _ in self.levels:  # the level's sum
            proto.variable.add(lower_bound=0.0, upper_bound=float(caps.sum()))

        def row(index: np.ndarray, coef: np.ndarray, lo: float, hi: float) -> None:
            ct = proto.constraint.add(lower_bound=lo, upper_bound=hi)
            ct.var_index.extend(index.tolist())
            ct.coefficient.extend(coef.tolist())

        inf = float("inf")
        order = np.argsort(gi, kind="stable")
        starts = np.searchsorted(gi[order], np.arange(len(gl) + 1))
        for k, g in enumerate(gl):  # a group places at most its pods
            if starts[k + 1] > starts[k]:
                row(order[starts[k]:starts[k + 1]], np.ones(starts[k + 1] - starts[k]), -inf, float(g["count"]))
        for lv in range(len(self.levels)):  # Σ columns of the level − sum = 0
            mine = np.flatnonzero(level_of == lv)
            row(np.append(mine, ncol + lv), np.append(np.ones(len(mine)), -1.0), 0.0, 0.0)
        by_type = np.argsort(ti, kind="stable")
        tstarts = np.searchsorted(ti[by_type], np.arange(n_types + 1))
        for t in range(n_types):
            mine = by_type[tstarts[t]:tstarts[t + 1]]
            for j in range(len(cols)):
                use = mine[req[mine, j] > 0]
                if len(use):
                    row(use, req[use, j].astype(np.float64), -inf, float(free[t, j]))
        # per node, the cuts multiply the rows by the request sizes for a fraction of a percent
        if cuts and not self.per_node and ncol <= LARGE_COLUMNS:
            self._rounding_cuts(row, types, n_types, node_free, req, ti, by_type, tstarts)
        self.solver = pywraplp.Solver.CreateSolver("GLOP")
        self.solver.LoadModelFromProto(proto)
        self.nonzeros = sum(len(ct.var_index) for ct in proto.constraint)
        self._asked: set[int] = set()
        self._known: dict[int, int | None] = {}  # level -> its bound, until the next fix
        self.sums = {lv: self.solver.variable(ncol + k) for k, lv in enumerate(self.levels)}

    @property
    def large(self) -> bool:
        """Per node type with more than :data:`LARGE_COLUMNS` columns."""
        return not self.per_node and self.columns > LARGE_COLUMNS

    @staticmethod
    def _rounding_cuts(row, types: np.ndarray, n_types: int, node_free: np.ndarray, req: np.ndarray,
                       ti: np.ndarray, by_type: np.ndarray, tstarts: np.ndarray) -> None:  # type: ignore[no-untyped-def]
        """Chvátal–Gomory cuts per node and request size ``s`` of each resource: pods are whole, so a
        node holds at most ⌊free/s⌋ "units" of s, a pod of request r counting ⌊r/s⌋ of them (summed over
        a type's nodes). They cut the fractional pods the relaxation adds to every node's remainder."""
        inf = float("inf")
        for j in range(node_free.shape[1]):
            sizes = np.unique(req[:, j][req[:, j] > 0])
            if not len(sizes):
                continue
            units = node_free[:, j][:, None] // sizes[None, :]
            rhs = np.zeros((n_types, len(sizes)), dtype=np.int64)
            np.add.at(rhs, types, units)
            for t in range(n_types):
                mine = by_type[tstarts[t]:tstarts[t + 1]]
                r = req[mine, j]
                for k, size in enumerate(sizes.tolist()):
                    use = r >= size
                    if np.count_nonzero(use) > 1:  # one pod size alone: its per-node caps already say it
                        row(mine[use], (r[use] // size).astype(np.float64), -inf, float(rhs[t, k]))

    def bound(self, level: int) -> int | None:
        """The most pods of ``level`` the relaxation places (rounded down); None if GLOP fails or runs
        out of its part of the LP's share (then a note says the cheaper bound, the level's size or
        CP-SAT's own, stands).

        A level may use twice an equal part of what is left for the levels not asked yet (the last one
        all of it); the part is counted in simplex iterations, the unit the solve is charged in, so a
        level never takes more than its part and the levels after it always get theirs. GLOP starts from
        the previous level's basis (no preprocessing, which would change the problem and start over):
        fixing a level changes one bound and the objective, and the next level needs a few hundred
        iterations instead of a solve from scratch (200 nodes: 797 iterations for four levels against
        1,875). Asked again before the next :meth:`fix`, the level's answer is given again unsolved."""
        var = self.sums.get(level)
        if var is None:
            return 0
        if level in self._known:  # asked again with no level fixed since: the same answer, no solve
            return self._known[level]
        self._known[level] = found = self._solve(level, var)
        return found

    def _solve(self, level: int, var: pywraplp.Variable) -> int | None:
        """One GLOP solve of ``level``'s sum within its part of the share (see :meth:`bound`)."""
        unasked = [lv for lv in self.levels if lv not in self._asked]
        self._asked.add(level)
        allot = min(self.seconds, 2 * self.seconds / max(1, len(unasked)))
        iterations = allot / WORK_COST["lp iteration"]
        if iterations < 1 or self.clock.interrupted:
            self._ran_out(level)
            return None
        objective = self.solver.Objective()
        objective.Clear()
        objective.SetCoefficient(var, 1.0)
        objective.SetMaximization()
        cap = f" max_number_of_iterations: {int(iterations)}" if iterations < 2**62 else ""
        self.solver.SetSolverSpecificParametersAsString(
            f"{self.clock.glop_parameters(allot)}{cap} use_preprocessing: false")
        with interrupt.stoppable(self.solver.InterruptSolve):
            status = self.solver.Solve()
        # charged by its simplex iterations (each a pass over the rows; as many on every run, also when
        # the limit stops it)
        used = WORK_COST["lp iteration"] * self.solver.iterations()
        self.clock.work("lp iteration", self.solver.iterations())
        self.seconds -= used
        if status == pywraplp.Solver.INFEASIBLE:
            self._refused(level)
            return None
        if status != pywraplp.Solver.OPTIMAL:
            self._ran_out(level)
            return None
        return int(np.floor(objective.Value() + 1e-6))

    def _refused(self, level: int) -> None:
        """The levels fixed above are beyond the relaxation: a value passed to :meth:`fix` that no
        placement the relaxation admits reaches (a bug; the certificate says so instead of a bound)."""
        note = (f"{TierKey.placed(level)}: no LP bound (the relaxation admits no placement with the levels "
                "above at the answer's values); the bound shown is the level's pod count or CP-SAT's own")
        if note not in self.notes:
            self.notes.append(note)

    def _ran_out(self, level: int) -> None:
        if self.clock.interrupted:  # the certificate says the run was interrupted, once
            return
        why = "the wall-clock limit had passed" if self.clock.wall_left() <= 0.01 else \
            "it did not finish in its share of the time limit"
        note = (f"{TierKey.placed(level)}: no LP bound ({why}); the bound shown is the level's pod count "
                "or CP-SAT's own")
        if note not in self.notes:
            self.notes.append(note)

    def fix(self, level: int, value: int) -> None:
        """The levels below are bounded given this level placing at least ``value`` pods."""
        var = self.sums.get(level)
        if var is not None:
            var.SetLb(float(value))
            self._known.clear()
