"""A certified upper bound on the GPU allocation any placement of the arrived pods can reach.

The linear relaxation of placing the pods that have arrived (at 100 % of GPU capacity, say) over the
cluster: pods are grouped into kinds (same CPU, memory, GPU count, share and spec) and nodes into shapes
(same CPU, memory, GPU count and model); ``y[k, s]`` pods of kind ``k`` go to shape ``s``. Per shape, the
CPU, memory, pod slots and GPU milli of its nodes bound what it holds.

Devices are counted by *patterns* (the configuration LP of bin packing, Gilmore and Gomory 1961): in any
placement each device either serves whole-GPU pods (one device per GPU they ask for) or holds a multiset of
shares summing to at most 1000 milli, its pattern. ``z[p, s]`` devices of shape ``s`` hold pattern ``p``;
a shape's whole-GPU devices plus its pattern devices are at most its devices, and the patterns cover the
shares of each size placed there. This is what binds on the openb traces: a device with an 810-milli share
has 190 milli left that only the few shares of at most 190 can use. The patterns are generated as needed
(a knapsack over share sizes priced by the LP's duals); when the time runs out before no pattern improves,
Farley's bound (the LP value plus, per shape, its devices times the best pattern's reduced cost) still
holds. Every placement (greedy or optimal) is a solution of this LP, so its optimum bounds the allocatable
GPU milli; it is an upper bound, not a placement.
"""
from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from ortools.linear_solver import pywraplp

from ..datasets.openb import PodTable
from ..plugins.gpu.share import MAX_PODS, MILLI, GpuNodes, GpuPod, model_access

__all__ = ["allocation_bound", "best_pattern", "bound_and_plan"]

Kind = tuple[int, int, int, int, str]  # cpu, mem, num_gpu, gpu_milli, spec
Shape = tuple[int, int, int, int]  # cpu, mem, gpu_count, model code
TOLERANCE = 1e-7


def _shapes(nodes: GpuNodes) -> Counter:
    return Counter(zip(nodes.cpu_cap.tolist(), nodes.mem_cap.tolist(), nodes.gpu_count.tolist(), nodes.model.tolist()))


def best_pattern(values: dict[int, float], capacity: int = MILLI) -> tuple[float, dict[int, int]]:
    """The most valuable multiset of share sizes (``values[m]`` per share of ``m`` milli) on one device of
    ``capacity`` milli: an unbounded knapsack, by dynamic programming over the sizes' common divisor."""
    sizes = [m for m, v in values.items() if v > 0 and m <= capacity]
    if not sizes:
        return 0.0, {}
    unit = math.gcd(*sizes)
    cap = capacity // unit
    best = np.zeros(cap + 1)
    take = np.full(cap + 1, -1, dtype=np.int64)
    for c in range(1, cap + 1):
        for m in sizes:
            w = m // unit
            if w <= c and best[c - w] + values[m] > best[c]:
                best[c], take[c] = best[c - w] + values[m], m
    pattern: Counter = Counter()
    c = int(np.argmax(best))
    while c > 0 and take[c] >= 0:
        pattern[int(take[c])] += 1
        c -= int(take[c]) // unit
    return float(best.max()), dict(pattern)


@dataclass
class _Lp:
    """The LP with its per-shape device rows and per-shape, per-share-size cover rows."""

    solver: pywraplp.Solver
    devices: dict[Shape, pywraplp.Constraint] = field(default_factory=dict)
    cover: dict[Shape, dict[int, pywraplp.Constraint]] = field(default_factory=dict)
    assign: dict[tuple[Kind, Shape], pywraplp.Variable] = field(default_factory=dict)

    def add_pattern(self, shape: Shape, pattern: dict[int, int]) -> None:
        z = self.solver.NumVar(0, self.solver.infinity(), "")
        self.devices[shape].SetCoefficient(z, 1)
        for m, c in pattern.items():
            self.cover[shape][m].SetCoefficient(z, -c)


def _row(solver: pywraplp.Solver, upper: float, terms: list) -> pywraplp.Constraint:
    """``sum(terms) <= upper`` as a row that columns can be added to later (also when ``terms`` is empty)."""
    row = solver.Constraint(-solver.infinity(), upper)
    for c, y in terms:
        row.SetCoefficient(y, c)
    return row


def _build(nodes: GpuNodes, kinds: Counter) -> _Lp:
    shapes = _shapes(nodes)
    lp = _Lp(pywraplp.Solver.CreateSolver("GLOP"))
    use: dict[Shape, list] = {s: [] for s in shapes}
    per_kind: dict[Kind, list] = {k: [] for k in kinds}
    for k in kinds:
        cpu, mem, num, _, spec = k
        allowed = model_access(nodes.models, tuple(x for x in spec.split("|") if x))
        for s in shapes:
            if cpu > s[0] or mem > s[1] or num > s[2] or (num and not allowed[s[3]]):
                continue
            y = lp.assign[k, s] = lp.solver.NumVar(0, kinds[k], "")
            use[s].append((k, y))
            per_kind[k].append(y)
    for k, ys in per_kind.items():
        lp.solver.Add(sum(ys) <= kinds[k])
    for s, items in use.items():
        n, (scpu, smem, gpus, _) = shapes[s], s
        lp.solver.Add(sum(k[0] / MILLI * y for k, y in items) <= n * scpu / MILLI)  # rows in cores, GiB, GPUs:
        lp.solver.Add(sum(k[1] / 1024 * y for k, y in items) <= n * smem / 1024)  # scaled alike, GLOP stays stable
        lp.solver.Add(sum(y for _, y in items) <= n * MAX_PODS)
        lp.solver.Add(sum(k[2] * k[3] / MILLI * y for k, y in items) <= n * gpus)
        lp.devices[s] = _row(lp.solver, n * gpus, [(k[2], y) for k, y in items if k[3] == MILLI])
        lp.cover[s] = {}
        for m in sorted({k[3] for k, _ in items if 0 < k[3] < MILLI}):
            lp.cover[s][m] = _row(lp.solver, 0, [(1, y) for k, y in items if k[3] == m])
            lp.add_pattern(s, {m: MILLI // m})
    lp.solver.Maximize(sum(k[2] * k[3] / MILLI * y for ys in use.values() for k, y in ys))  # in GPUs
    return lp


def allocation_bound(nodes: GpuNodes, pods: PodTable, rows: np.ndarray, seconds: float = 60.0) -> float:
    """Upper bound on the GPU milli the pods ``rows`` can be allocated on the empty cluster ``nodes``;
    patterns are generated for at most ``seconds`` (the bound holds at any stop)."""
    kinds = Counter((int(pods.cpu[r]), int(pods.mem[r]), int(pods.num_gpu[r]), int(pods.gpu_milli[r]), pods.spec[r])
                    for r in rows)
    return _solve(nodes, kinds, seconds)[0]


def bound_and_plan(nodes: GpuNodes, pods: Sequence[GpuPod],
                   seconds: float = 60.0) -> tuple[float, dict[tuple[GpuPod, Shape], float]]:
    """:func:`allocation_bound` for the pods ``pods``, with the LP's assignment: how many pods of each kind
    go to the nodes of each shape (fractions; a guide for a constructive placement, not a placement)."""
    key = {p: (p.cpu, p.mem, p.num_gpu, p.gpu_milli, "|".join(p.spec)) for p in set(pods)}
    back = {k: p for p, k in key.items()}
    bound, values = _solve(nodes, Counter(key[p] for p in pods), seconds)
    return bound, {(back[k], s): v for (k, s), v in values.items() if v > 0}


def _solve(nodes: GpuNodes, kinds: Counter, seconds: float) -> tuple[float, dict[tuple[Kind, Shape], float]]:
    """The bound (generating patterns for at most ``seconds``) and the last LP's assignment, capped at the
    demand."""
    lp, added = _build(nodes, kinds), list[tuple[Shape, dict[int, int]]]()
    count = {s: n * s[2] for s, n in _shapes(nodes).items()}
    demand = sum(k[2] * k[3] * c for k, c in kinds.items())
    end = time.perf_counter() + seconds
    last: tuple[float, dict] | None = None
    while True:
        if lp.solver.Solve() != pywraplp.Solver.OPTIMAL:  # GLOP's warm start can fail: solve afresh once
            lp = _build(nodes, kinds)
            for s, pattern in added:
                lp.add_pattern(s, pattern)
            if lp.solver.Solve() != pywraplp.Solver.OPTIMAL:
                if last is None:
                    raise RuntimeError("the bound LP did not solve to optimality")
                return last  # the previous round's Farley bound holds
        value, gain, new = float(lp.solver.Objective().Value()), 0.0, []
        for s, rows_m in lp.cover.items():  # read every dual before the model changes
            price, pattern = best_pattern({m: c.dual_value() for m, c in rows_m.items()})
            reduced = price - lp.devices[s].dual_value()
            if reduced > TOLERANCE * max(1.0, price):
                gain += count[s] * reduced
                new.append((s, pattern))
        last = min((value + gain) * MILLI, demand), {at: y.solution_value() for at, y in lp.assign.items()}
        if not new or time.perf_counter() > end:
            return last
        for s, pattern in new:
            lp.add_pattern(s, pattern)
        added += new
