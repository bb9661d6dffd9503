"""Node neighbourhoods: the large-neighbourhood search of the placement tiers on large models.

Placing one more pod of a level on a packed cluster takes moves across a few nodes: a large pod
leaves a node, two small ones take its room, the large one fills another node's hole. CP-SAT's own
LNS frees random variables or constraints of the whole model, which rarely gathers such a move, and
every step pays for the whole model. Here each step frees every arrival and kept-pod variable of the
level's classes and the levels below (or of every level: :meth:`NodeSearch.run` says when) on a few
nodes (half drawn by the room left on them, half uniformly), with the auxiliary variables next to them
(a node's preemption flags, a domain's presence, a spread constraint's minimum), and fixes every other
variable at the incumbent.

The step's model is built from the model's constraints kept as numpy arrays (:class:`LinearView`):
a fixed variable is substituted into each constraint's bounds, a constraint over fixed variables only
is left out (the incumbent satisfies it), and a constraint with a fixed false enforcement literal is
inactive. So a step solves a model of a few thousand variables whatever the cluster's size. The sub
model is correct by construction: any of its solutions, with the fixed variables at the incumbent,
satisfies every constraint of the whole model (the tests hold it against CP-SAT's own verdict, and the
answer of optimal mode is re-checked by the greedy filters as always).

Measured on generated clusters (docs/performance.md), the default level within the benchmark's share of
the limit: 200 nodes / load 0.8 1,221-1,234 pods against 1,197-1,210 by CP-SAT's own LNS, 200 / 1.2
859-864 against 802, 1,000 / 0.8 7,709 against 7,694.
"""
from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
from ortools.sat import cp_model_pb2
from ortools.sat.python import cp_model

from .. import cpsat
from .clock import Clock
from .model import BatchModel
from .tiers import Linear

# deterministic charges (nominal seconds) for the steps' Python work: building a step's model (a few
# thousand free variables) and one change tried by :meth:`NodeSearch.restore`
STEP_COST = 0.002
SUB_COST = 1e-6
RESTORE_COST = 2e-5

__all__ = ["LinearView", "NodeSearch", "StepStats"]

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _is_linear(ct) -> bool:  # type: ignore[no-untyped-def]
    """Whether a constraint (of a model read from file, or of the live model) is a linear one."""
    return ct.WhichOneof("constraint") == "linear" if hasattr(ct, "WhichOneof") else ct.has_linear()


class LinearView:
    """A CP-SAT model whose constraints are all linear (with enforcement literals), as arrays.

    Entries of the linear parts: ``row``, ``var``, ``coef``; enforcement literals: ``erow``, ``lit``
    (a variable index, or ``-index - 1`` for its negation). :meth:`extend` reads the constraints added
    since (a tier fixing its objective adds one)."""

    def __init__(self, cp: cp_model.CpModel, clock: Clock | None = None) -> None:
        self.cp = cp
        self.clock = clock  # charged for each reading of the model
        self.rows = 0
        self._cols: list[int] = []
        self._coefs: list[int] = []
        self._nnz: list[int] = []
        self._lits: list[int] = []
        self._nlits: list[int] = []
        self.domains: list[list[int]] = []
        self.var_domains: list[list[int]] = []
        self.linear = True  # every constraint read so far is linear
        self.extend()

    def _read(self) -> cp_model_pb2.CpModelProto:
        return self.read(self.cp)

    @staticmethod
    def read(cp: cp_model.CpModel) -> cp_model_pb2.CpModelProto:
        """The model as a Python protobuf (reading the solver's own proto field by field is several
        times slower: 0.4 s against 0.1 s for 14,000 constraints)."""
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "model.pb")
            cp.export_to_file(path)
            with open(path, "rb") as f:
                return cp_model_pb2.CpModelProto.FromString(f.read())

    def extend(self, force: bool = False) -> None:
        """Read the constraints and variables added since; when none was added, nothing is read unless
        ``force`` (a domain edited in place since: then the whole model is read again).

        Only the first reading (and a forced one) reads the whole model; afterwards the rows added (a
        tier fixing its objective adds one) are read from the live model itself, which is cheap for a
        few rows (15 ms for one of 15,000 terms) where reading the whole model again took 0.1-0.3 s at
        200 nodes, once per placement tier."""
        live = self.cp.proto
        total, nvars = len(live.constraints), len(live.variables)
        if not force and self.rows and total == self.rows and nvars == len(self.var_domains):
            return
        if force or not self.rows:
            proto = self._read()
            self.var_domains = [list(v.domain) for v in proto.variables]
            added = list(proto.constraints[self.rows:])
            work = 0
            if self.clock is not None:  # the whole model read again, the rows added parsed
                self.clock.work("copy", nvars + len(self._cols) + total)
            whole = True
        else:
            work = nvars - len(self.var_domains)  # the variables added, then the rows added
            self.var_domains += [list(live.variables[i].domain) for i in range(len(self.var_domains), nvars)]
            added = [live.constraints[i] for i in range(self.rows, total)]
            whole = False
        if total == self.rows:
            if self.clock is not None and work:
                self.clock.work("copy", work)
            return
        for ct in added:
            if not _is_linear(ct):
                self.linear = False
                return
            lin = ct.linear
            vs = list(lin.vars)
            self._cols += vs
            self._coefs += list(lin.coeffs)
            self._nnz.append(len(vs))
            lits = list(ct.enforcement_literal)
            self._lits += lits
            self._nlits.append(len(lits))
            self.domains.append(list(lin.domain))
            work += 1 + len(vs) + len(lits)
        if self.clock is not None and not whole:  # the rows read, the arrays below rebuilt (numpy passes)
            self.clock.work("copy", work)
            self.clock.work("step", len(self._cols) + nvars)
        self.rows = total
        nnz = np.asarray(self._nnz, dtype=np.int64)
        self.var = np.asarray(self._cols, dtype=np.int64)
        self.coef = np.asarray(self._coefs, dtype=np.int64)
        self.start = np.concatenate([[0], np.cumsum(nnz)])
        self.row = np.repeat(np.arange(total, dtype=np.int64), nnz)
        nlits = np.asarray(self._nlits, dtype=np.int64)
        self.lit = np.asarray(self._lits, dtype=np.int64)
        self.lit_var = np.where(self.lit >= 0, self.lit, -self.lit - 1)
        self.estart = np.concatenate([[0], np.cumsum(nlits)])
        self.erow = np.repeat(np.arange(total, dtype=np.int64), nlits)
        simple = np.array([len(d) == 2 for d in self.domains], dtype=bool)
        self.lo = np.array([d[0] if s else INT64_MIN for d, s in zip(self.domains, simple)], dtype=np.int64)
        self.hi = np.array([d[1] if s else INT64_MAX for d, s in zip(self.domains, simple)], dtype=np.int64)
        self._complex = set(np.flatnonzero(~simple).tolist())  # rows whose domain is not one interval
        nvars = len(self.var_domains)
        order = np.argsort(self.var, kind="stable")  # variable -> the rows it is in (linear part)
        self.var_rows = self.row[order]
        self.var_start = np.searchsorted(self.var[order], np.arange(nvars + 1))
        order = np.argsort(self.lit_var, kind="stable")  # variable -> the rows it enforces
        self.lit_rows = self.erow[order]
        self.lit_start = np.searchsorted(self.lit_var[order], np.arange(nvars + 1))

    @staticmethod
    def _literal_true(lits: np.ndarray, values: np.ndarray) -> np.ndarray:
        """Per literal: true when its variable has ``values`` (1 for a variable, 0 for its negation)."""
        return np.where(lits >= 0, values == 1, values == 0)

    def _true(self, x: np.ndarray) -> np.ndarray:
        """Per enforcement literal: true under ``x``."""
        return self._literal_true(self.lit, x[self.lit_var])

    def satisfied(self, x: np.ndarray, changed: Iterable[int] | None = None) -> bool:
        """The constraints hold for ``x`` (a value per variable): every one, or with ``changed`` (variable
        indices) only those over one of them (the others are taken to hold: the rest of ``x`` is an
        incumbent). Rows are read one by one, for a change of a few variables. Constraints added to the
        model since :meth:`extend` are not seen."""
        if changed is None:
            rows: Iterable[int] = range(self.rows)
        else:
            found: set[int] = set()
            for v in changed:
                found.update(self.var_rows[self.var_start[v]:self.var_start[v + 1]].tolist())
                found.update(self.lit_rows[self.lit_start[v]:self.lit_start[v + 1]].tolist())
            rows = found
        for r in rows:
            ea, eb = self.estart[r], self.estart[r + 1]
            if eb > ea and not np.all(self._literal_true(self.lit[ea:eb], x[self.lit_var[ea:eb]])):
                continue  # not enforced
            a, b = self.start[r], self.start[r + 1]
            act = int(self.coef[a:b] @ x[self.var[a:b]])
            if r in self._complex:
                d = self.domains[r]
                if not any(d[i] <= act <= d[i + 1] for i in range(0, len(d), 2)):
                    return False
            elif not self.lo[r] <= act <= self.hi[r]:
                return False
        return True

    def sub(self, free: np.ndarray, x: np.ndarray) -> tuple[cp_model.CpModel, np.ndarray]:
        """The model over the variables where ``free`` holds, every other one fixed at ``x``; returns it
        and the free variables' indices (its variable ``k`` is the model's ``fv[k]``), hinted at ``x``."""
        fe = free[self.var]
        touch = np.zeros(self.rows, dtype=bool)
        touch[self.row[fe]] = True
        lf = free[self.lit_var]
        touch[self.erow[lf]] = True
        inactive = np.zeros(self.rows, dtype=bool)
        inactive[self.erow[~lf & ~self._true(x)]] = True
        chosen = touch & ~inactive
        rows = np.flatnonzero(chosen)
        in_rows = chosen[self.row]
        held = in_rows & ~fe  # the fixed entries of the chosen rows, summed into their bounds
        fixed = np.zeros(self.rows, dtype=np.int64)
        np.add.at(fixed, self.row[held], self.coef[held] * x[self.var[held]])
        fv = np.flatnonzero(free)
        local = np.full(len(free), -1, dtype=np.int64)
        local[fv] = np.arange(len(fv))
        out = cp_model.CpModel()
        proto = out.proto
        domains = self.var_domains
        for i in fv.tolist():
            proto.variables.add().domain.extend(domains[i])
        # the kept entries and literals of the chosen rows, as flat lists cut per row
        ent = in_rows & fe
        ent_vars = local[self.var[ent]].tolist()
        ent_coefs = self.coef[ent].tolist()
        ends = np.cumsum(np.bincount(self.row[ent], minlength=self.rows)[rows]).tolist()
        lent = chosen[self.erow] & lf
        lits = np.where(self.lit[lent] >= 0, local[self.lit_var[lent]], -local[self.lit_var[lent]] - 1).tolist()
        lends = np.cumsum(np.bincount(self.erow[lent], minlength=self.rows)[rows]).tolist()
        shift = fixed[rows]
        lo, hi = self.lo[rows], self.hi[rows]
        lo = np.where(lo == INT64_MIN, lo, lo - shift).tolist()
        hi = np.where(hi == INT64_MAX, hi, hi - shift).tolist()
        shifts = shift.tolist()
        p = lp = 0
        for k, r in enumerate(rows.tolist()):
            ct = proto.constraints.add()
            q, lq = ends[k], lends[k]
            if lq > lp:
                ct.enforcement_literal.extend(lits[lp:lq])
            lin = ct.linear
            lin.vars.extend(ent_vars[p:q])
            lin.coeffs.extend(ent_coefs[p:q])
            if r in self._complex:
                sh = shifts[k]
                lin.domain.extend([d if d in (INT64_MIN, INT64_MAX) else d - sh for d in self.domains[r]])
            else:
                lin.domain.extend((lo[k], hi[k]))
            p, lp = q, lq
        proto.solution_hint.vars.extend(range(len(fv)))
        proto.solution_hint.values.extend(x[fv].tolist())
        return out, fv


@dataclass
class StepStats:
    steps: int = 0
    improving: int = 0  # steps that made the incumbent better (on the tier or a later one)
    optimal: int = 0  # steps whose sub-model was solved to optimality
    rejected: int = 0  # steps whose answer was worse on a later tier


class NodeSearch:
    """Node-neighbourhood LNS over one :class:`BatchModel` whose constraints are all linear
    (:attr:`LinearView.linear`; the placement tiers add nothing else)."""

    STEP_SECONDS = 0.1  # a step's CP-SAT limit: steps of 10-20 nodes end optimal in about that
    START_NODES = 10

    def __init__(self, model: BatchModel, seed: int, clock: Clock | None = None) -> None:
        self.model = model
        self.clock = clock if clock is not None else Clock.wall()
        self.view = LinearView(model.cp, self.clock)
        self.rng = np.random.default_rng(seed)
        idx, node, rep, prio = [], [], [], []
        for c in model.classes:
            cv = model.vars[c.index]
            vs = cv.arr_vars + cv.keep_vars
            idx += [v.Index() for v in vs]
            node += cv.arr_nodes.tolist() + cv.keep_nodes.tolist()
            rep += [c.rep] * len(vs)
            prio += [c.priority] * len(vs)
        self._idx = np.array(idx, dtype=np.int64)
        self._node = np.array(node, dtype=np.int64)
        self._prio = np.array(prio, dtype=np.int64)
        self._req = model.state.pod_requests[np.array(rep, dtype=np.int64)].astype(np.float64)
        self._pod_var = np.zeros(len(model.cp.proto.variables), dtype=bool)
        self._pod_var[self._idx] = True
        self._alloc = np.maximum(model.state.allocatable.astype(np.float64), 1.0)
        self._fixed = model.snapshot.requested.astype(np.float64)
        self._cols = [model.state.resources.index(r) for r in ("cpu", "memory") if r in model.state.resources]
        # per objective (by identity, the object kept alive beside it): its negation, its dense weights
        self._negated: dict[int, tuple[Linear, Linear]] = {}
        self._weighed: dict[int, tuple[Linear, np.ndarray]] = {}

    def maximized(self, lin: Linear, sense: str) -> Linear:
        """``lin`` as an objective to maximize (its terms negated when ``sense`` is ``min``), the same
        object on every tier that asks (so :meth:`run` weighs each objective once per search)."""
        if sense == "max":
            return lin
        hit = self._negated.get(id(lin))
        if hit is None or hit[0] is not lin:
            hit = self._negated[id(lin)] = (lin, lin.scaled(-1))
            self.clock.work("tier term", len(lin.vars))
        return hit[1]

    def ready(self) -> bool:
        """Read the constraints added since; False when one is not linear (then the search cannot
        build its steps and the caller searches otherwise)."""
        self.view.extend()
        return self.view.linear

    def room(self, x: np.ndarray) -> np.ndarray:
        """Per node: the smaller free fraction of cpu and memory under ``x``, fixed pods included."""
        used = self._fixed.copy()
        v = x[self._idx].astype(np.float64)
        on = v > 0
        np.add.at(used, self._node[on], self._req[on] * v[on, None])
        free = ((self.model.state.allocatable - used) / self._alloc).clip(0.0, 1.0)
        return free[:, self._cols].min(axis=1) if self._cols else free.min(axis=1)

    def draw(self, level: int | None, x: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        """The free variables of one step: the pod variables of ``level`` and below (of every level:
        None) on ``size`` nodes (half drawn by room left, half uniformly), and the auxiliary variables
        sharing a constraint with them."""
        nn = self.model.state.num_nodes
        k = min(size, nn)
        weight = self.room(x) + 0.02
        chosen = np.zeros(nn, dtype=bool)
        chosen[rng.choice(nn, size=k // 2, replace=False, p=weight / weight.sum())] = True
        chosen[rng.permutation(np.flatnonzero(~chosen))[:k - k // 2]] = True
        free = np.zeros(len(x), dtype=bool)
        free[self._idx[chosen[self._node] if level is None else (self._prio <= level) & chosen[self._node]]] = True
        view = self.view
        rows = np.zeros(view.rows, dtype=bool)
        rows[view.row[free[view.var]]] = True
        aux = ~self._pod_var
        free[view.var[rows[view.row] & aux[view.var]]] = True
        free[view.lit_var[rows[view.erow] & aux[view.lit_var]]] = True
        return free

    def run(self, x: np.ndarray, level: int, objective: Linear, later: tuple[Linear, ...], budget: float,
            cap: int | None = None, report: Callable[[int], None] | None = None) -> tuple[np.ndarray, StepStats]:
        """Improve ``x`` on ``objective`` (maximized) for ``budget`` seconds or until it reaches ``cap``,
        moving the pods of ``level`` and below, or of every level (the tiers before keep their
        counts by their constraints). A step that ties is kept when no worse on ``later`` (maximized
        objectives, in order). Returns the best values and the step counts; ``report`` hears each
        better value of the objective.

        Which of the two kinds a step is: 80 % of steps the kind that has improved the objective more
        often per step so far, the rest either at random. Own levels only did best on the generated
        200-node benchmark (1,221-1,234 default-level pods, every level 1,206-1,216; at load 1.2 859-864
        against 817-820), every level on the batch-preemption benchmark, where the default level's pods
        run on nodes the level above preempts (5,250 against 5,216): the choice gives 1,221-1,225,
        860-863 and 5,251.

        One step at a time, each sub-model on one CP-SAT worker: two walkers stepping at once from the same
        incumbent (the better taken every 0.5 s), two steps at once on disjoint nodes (merged when the
        second still fits), or two workers per step all did no better on the 200-node benchmark."""
        clock = self.clock
        end = clock.now() + budget - 0.01
        view = self.view
        view.extend()
        n, nn = len(x), self.model.state.num_nodes
        weights = [self._dense(lin, n) for lin in (objective, *later)]
        target = None if cap is None else cap - objective.const
        key = self._key(x, weights)
        size, stats = self.START_NODES, StepStats()
        wins, tries = [0, 0], [0, 0]  # per kind of step: own levels, every level
        while not clock.past(end - 0.02) and (target is None or key[0] < target):
            rate = [(wins[k] + 1) / (tries[k] + 2) for k in (0, 1)]
            kind = int(self.rng.integers(2)) if self.rng.random() < 0.2 else int(rate[1] > rate[0])
            tries[kind] += 1
            free = self.draw(None if kind else level, x, size, self.rng)
            sub, fv = view.sub(free, x)
            on = np.flatnonzero(weights[0][fv])
            obj = sub.proto.objective
            obj.vars.extend(on.tolist())
            obj.coeffs.extend((-weights[0][fv][on]).tolist())
            obj.scaling_factor = -1.0
            solver = cp_model.CpSolver()
            seconds = max(0.01, min(self.STEP_SECONDS, end - clock.now()))
            clock.set_limits(solver.parameters, seconds, variables=len(fv))
            solver.parameters.num_workers = 1
            solver.parameters.random_seed = int(self.rng.integers(1 << 30))
            clock.charge(STEP_COST + SUB_COST * len(fv))  # building the step's model
            clock.work("step", n + len(view.var))  # drawing it: passes over every variable and term
            status = cpsat.solve(solver, sub)
            clock.settle(solver.response_proto, seconds, len(fv))
            stats.steps += 1
            stats.optimal += status == cp_model.OPTIMAL
            # grown while steps end optimal, shrunk while they run out of time
            size = min(nn, size + 1) if status == cp_model.OPTIMAL else max(4, size - 1)
            if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
                continue
            y = x.copy()
            y[fv] = np.asarray(solver.response_proto.solution, dtype=np.int64)
            new = self._key(y, weights)
            if new < key:
                stats.rejected += 1
                continue
            if new > key:
                wins[kind] += new[0] > key[0]
                stats.improving += 1
                if report is not None and new[0] > key[0]:
                    report(new[0] + objective.const)
            x, key = y, new
        return x, stats

    def restore(self, x: np.ndarray, deadline: float) -> tuple[np.ndarray, int]:
        """Keep running pods the placement tiers let go where a pod count does not change: a pod that left
        its node comes back instead of one arrival of its class elsewhere (a move undone, or a pending pod
        of the class left out instead), or instead of an arrival of its priority on that node requesting
        at least as much. Each change is kept when every constraint over it holds (the placement tiers'
        counts among them), until ``deadline``; returns the values and how many pods came back.

        A neighbourhood's step counts only its tier, so at equal count it lets running pods go for
        pending ones: on 200 nodes / 0.8, 118 of 390 evicted pods had an arrival of their level on their
        node requesting at least as much."""
        x = x.copy()
        model, view = self.model, self.view
        req = model.state.pod_requests
        arrivals: dict[tuple[int, int], list[tuple[int, int]]] = {}  # (node, priority) -> (var, rep)
        for c in model.classes:
            cv = model.vars[c.index]
            for n, v in zip(cv.arr_nodes.tolist(), cv.arr_vars):
                arrivals.setdefault((n, c.priority), []).append((v.Index(), c.rep))
        back = 0
        for c in model.classes:
            cv = model.vars[c.index]
            own = [v.Index() for v in cv.arr_vars]
            for n, kv, ub in zip(cv.keep_nodes.tolist(), cv.keep_vars, cv.keep_ub.tolist()):
                k = kv.Index()
                if x[k] >= ub:
                    continue
                if self.clock.past(deadline):
                    return x, back
                others = [a for a in own if x[a] > 0] + \
                    [a for a, rep in arrivals.get((n, c.priority), []) if np.all(req[rep] >= req[c.rep])]
                while x[k] < ub and not self.clock.past(deadline):
                    for a in others:
                        if x[a] <= 0 or a == k:
                            continue
                        self.clock.charge(RESTORE_COST)
                        x[k] += 1
                        x[a] -= 1
                        if view.satisfied(x, [k, a]):
                            back += 1
                            break
                        x[k] -= 1
                        x[a] += 1
                    else:
                        break
        return x, back

    @staticmethod
    def _key(x: np.ndarray, weights: list[np.ndarray]) -> tuple[int, ...]:
        return tuple(int(w @ x) for w in weights)

    def _dense(self, lin: Linear, n: int) -> np.ndarray:
        """:meth:`_weights`, computed once per objective (and model size) over the whole search."""
        hit = self._weighed.get(id(lin))
        if hit is None or hit[0] is not lin or len(hit[1]) != n:
            hit = self._weighed[id(lin)] = (lin, self._weights(lin, n))
            self.clock.work("tier term", len(lin.vars))
        return hit[1]

    @staticmethod
    def _weights(lin: Linear, n: int) -> np.ndarray:
        """``lin``'s coefficients as a dense vector over the model's variables (its constant left out)."""
        w = np.zeros(n, dtype=np.int64)
        if lin.vars:
            np.add.at(w, np.array([v.Index() for v in lin.vars], dtype=np.int64), np.asarray(lin.coefs, dtype=np.int64))
        return w
