"""The offline optimum of the FGD protocol: how much GPU any placement of the arrived pods can allocate.

At an arrived-workload point (100 % of GPU capacity, say) of a run (workload, seed), the pods that have
arrived so far are placed as one batch on the empty cluster: maximize the allocated GPU milli, then the
pods placed. The model is optimal mode's (one integer per pod kind and node, identical pods aggregated as
:mod:`optisched.optimal.classes` does for ReplicaSets) with the GPU sharing rule's own CP-SAT encoding
(:func:`optisched.constraints.gpu_share.encode_gpu_share`: per-device packing, whole GPUs on idle devices,
CPU, memory and pod slots). CP-SAT starts from the better of two greedy placements (FGD as the protocol
runs it, and BestFit offline, largest pods first) and returns its best placement and its proven
bound within the time limit; every placement reported is replayed through the greedy filter with its
devices (:func:`verify`). The bound is the model's; the LP bound of :mod:`.fgd_bound` is reported beside.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from ortools.sat.python import cp_model

from ..constraints.gpu_share import MILLI, DeviceVars, GpuNodes, GpuPod, encode_gpu_share, feasible
from ..datasets.openb import PodTable, load_nodes, load_pods
from .fgd import RunResult, arrival_order, run_fgd
from .fgd_bound import allocation_bound

__all__ = ["OPTIMUM_COLUMNS", "OPTIMUM_WORKLOADS", "OptimumPoint", "Placement", "arrived_rows", "optimum_point", "run_optimum",
           "verify"]

OPTIMUM_COLUMNS = ["workload", "seed", "arrived_pct", "pods", "fgd_alloc_pct", "greedy_best_alloc_pct",
                   "optimum_alloc_pct", "bound_pct", "lp_bound_pct", "status", "time_limit", "seconds"]

OPTIMUM_WORKLOADS = ("default", "gpushare40", "gpushare60", "gpushare80", "gpushare100", "multigpu20", "multigpu30",
                     "multigpu40", "multigpu50", "gpuspec10", "gpuspec20", "gpuspec25", "gpuspec33")

Placement = list[tuple[int, tuple[int, ...]]]  # per arrived pod: (node, devices), node -1 when not placed


@dataclass(frozen=True)
class OptimumPoint:
    """Allocated GPU milli: FGD's online run, the best greedy start, the solver's best and its bound."""

    pods: int
    fgd: int
    greedy_best: int
    optimum: int
    bound: int
    lp_bound: float
    status: str
    placement: Placement


def arrived_rows(pods: PodTable, capacity: int, seed: int, pct: float) -> np.ndarray:
    """The protocol's arrived pods (rows, in arrival order) while their GPU request is at most ``pct`` %
    of capacity."""
    order = arrival_order(pods, capacity, seed)
    cum = np.cumsum(pods.total_milli[order])
    return order[: int(np.searchsorted(cum, pct / 100 * capacity, side="right"))]


def verify(nodes: GpuNodes, pods: Sequence[GpuPod], placement: Placement) -> int:
    """Replay ``placement`` pod by pod through the greedy filter with its devices on a copy of ``nodes``;
    the allocated GPU milli. Raises ``ValueError`` on the first pod the filter or a device refuses."""
    nodes = nodes.copy()
    total = 0
    for i, (n, devs) in enumerate(placement):
        if n < 0:
            continue
        pod = pods[i]
        if not feasible(nodes, pod)[n] or any(nodes.dev_free[n, d] < pod.gpu_milli for d in devs):
            raise ValueError(f"pod {i} does not fit node {n} devices {devs}")
        nodes.bind(pod, n, devs)
        total += pod.total_milli
    return total


def _from_run(run: RunResult, k: int) -> Placement:
    return [(int(run.node[i]), run.devices[i]) for i in range(k)]


def _greedy_starts(nodes: GpuNodes, table: PodTable, rows: np.ndarray, seed: int) -> list[Placement]:
    """Placements of the arrived pods to start from: FGD online (the protocol's run up to the point, the
    same ties and draws) and BestFit offline with the pods sorted by GPU request, then CPU, largest first."""
    starts = [_from_run(run_fgd(nodes, table, "FGD", seed, order=rows), len(rows))]
    key = np.lexsort((-table.cpu[rows], -table.total_milli[rows]))
    run = run_fgd(nodes, table, "BestFit", seed, order=rows[key])
    back: Placement = [(-1, ())] * len(rows)
    for j, i in enumerate(key.tolist()):
        back[i] = (int(run.node[j]), run.devices[j])
    return [*starts, back]


@dataclass
class _Model:
    cp: cp_model.CpModel
    kinds: list[GpuPod]
    kind_of: np.ndarray
    place: dict[tuple[int, int], cp_model.IntVar]
    dev: DeviceVars
    weight: int


def _build(nodes: GpuNodes, pods: list[GpuPod]) -> _Model:
    """One integer per (pod kind, node where the kind fits the empty node), the GPU sharing encoding, and
    the objective ``weight × GPU milli + pods`` (lexicographic: GPU first)."""
    index: dict[GpuPod, int] = {}
    kind_of = np.array([index.setdefault(p, len(index)) for p in pods], dtype=np.int64)
    kinds, counts = list(index), np.bincount(kind_of, minlength=len(index))
    m = cp_model.CpModel()
    place: dict[tuple[int, int], cp_model.IntVar] = {}
    for k, pod in enumerate(kinds):
        where = np.flatnonzero(feasible(nodes, pod))
        ub = np.minimum(counts[k], _fit_bound(nodes, pod)[where])
        xs = [place.setdefault((k, n), m.new_int_var(0, u, f"x{k}_{n}"))
              for n, u in zip(where.tolist(), ub.tolist()) if u > 0]
        if xs:
            m.add(sum(xs) <= int(counts[k]))
    dev = encode_gpu_share(m, nodes, kinds, place)
    weight = len(pods) + 1
    m.maximize(sum((weight * kinds[k].total_milli + 1) * x for (k, _), x in place.items()))
    return _Model(m, kinds, kind_of, place, dev, weight)


def _fit_bound(nodes: GpuNodes, pod: GpuPod) -> np.ndarray:
    """How many of ``pod`` each empty node holds at most, per resource (a variable's upper bound)."""
    big = np.iinfo(np.int64).max // 4
    most = np.minimum(nodes.cpu_free // pod.cpu if pod.cpu else big, nodes.mem_free // pod.mem if pod.mem else big)
    if pod.sharing:
        most = np.minimum(most, (nodes.dev_free // pod.gpu_milli).sum(axis=1))
    elif pod.num_gpu:
        most = np.minimum(most, (nodes.dev_free == MILLI).sum(axis=1) // pod.num_gpu)
    return np.minimum(most, nodes.pods_free)


def _hint(model: _Model, nodes: GpuNodes, placement: Placement) -> None:
    """A complete hint from a placement; each node's devices renumbered by load, largest first (the
    encoding orders the loads of equal devices)."""
    counts: dict[tuple[int, int], int] = {}
    share: dict[tuple[int, int, int], int] = {}
    whole: set[tuple[int, int]] = set()
    load = np.zeros_like(nodes.dev_free)
    for i, (n, devs) in enumerate(placement):
        if n >= 0:
            for d in devs:
                load[n, d] += model.kinds[model.kind_of[i]].gpu_milli
    rank = np.argsort(np.argsort(-load, axis=1, kind="stable"), axis=1)
    for i, (n, devs) in enumerate(placement):
        if n < 0:
            continue
        k = int(model.kind_of[i])
        counts[k, n] = counts.get((k, n), 0) + 1
        pod = model.kinds[k]
        for d in devs:
            if pod.sharing:
                slot = (pod.gpu_milli, n, int(rank[n, d]))
                share[slot] = share.get(slot, 0) + 1
            else:
                whole.add((n, int(rank[n, d])))
    for at, x in model.place.items():
        model.cp.add_hint(x, counts.get(at, 0))
    for slot, u in model.dev.share.items():
        model.cp.add_hint(u, share.get(slot, 0))
    for dev, w in model.dev.whole.items():
        model.cp.add_hint(w, int(dev in whole))


def _decode(model: _Model, solver: cp_model.CpSolver) -> Placement:
    counts = {key: int(solver.value(x)) for key, x in model.place.items() if solver.value(x)}
    devices = model.dev.devices(solver.value, model.kinds, counts)
    free: dict[int, list[tuple[int, tuple[int, ...]]]] = {}
    for (k, n), devs in devices.items():
        free.setdefault(k, []).extend((n, d) for d in devs)
    placement: Placement = []
    for k in model.kind_of.tolist():
        slots = free.get(k)
        placement.append(slots.pop() if slots else (-1, ()))
    return placement


def optimum_point(nodes: GpuNodes, table: PodTable, seed: int, pct: float, time_limit: float,
                  workers: int = 4) -> OptimumPoint:
    """The offline optimum at ``pct`` % arrived of run ``seed``: best placement found and its bound."""
    rows = arrived_rows(table, int(nodes.gpu_count.sum()) * MILLI, seed, pct)
    pods = [table.pod(int(r)) for r in rows]
    starts = _greedy_starts(nodes, table, rows, seed)
    values = [verify(nodes, pods, s) for s in starts]
    best = starts[int(np.argmax(values))]
    model = _build(nodes, pods)
    _hint(model, nodes, best)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit
    solver.parameters.num_workers = workers
    status = solver.solve(model.cp)
    placement, value = best, max(values)
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        found = _decode(model, solver)
        if verify(nodes, pods, found) > value:
            placement, value = found, verify(nodes, pods, found)
    bound = min(int(solver.best_objective_bound) // model.weight, sum(p.total_milli for p in pods)) \
        if status != cp_model.MODEL_INVALID else sum(p.total_milli for p in pods)
    proven = "OPTIMAL" if value >= bound else solver.status_name(status)
    return OptimumPoint(len(pods), values[0], max(values), value, max(bound, value),
                        allocation_bound(nodes, table, rows), proven, placement)


def run_optimum(data: str | Path, workloads: Sequence[str], seeds: Sequence[int], points: Sequence[float],
                time_limit: float, workers: int = 4, cluster: str = "openb_node_list_gpu_node",
                progress: Callable[[], None] | None = None) -> pd.DataFrame:
    """One row per workload, seed and point (:data:`OPTIMUM_COLUMNS`; percentages of GPU capacity)."""
    csv = Path(data) / "csv"
    nodes = load_nodes(csv / f"{cluster}.csv")
    cap = int(nodes.gpu_count.sum()) * MILLI / 100
    rows = []
    for w in workloads:
        table = load_pods(csv / f"openb_pod_list_{w}.csv")
        for seed in seeds:
            for pct in points:
                t0 = time.perf_counter()
                r = optimum_point(nodes, table, seed, pct, time_limit, workers)
                rows.append([w, seed, pct, r.pods, r.fgd / cap, r.greedy_best / cap, r.optimum / cap, r.bound / cap,
                             r.lp_bound / cap, r.status, time_limit, round(time.perf_counter() - t0, 1)])
                if progress:
                    progress()
    return pd.DataFrame(rows, columns=OPTIMUM_COLUMNS)
