"""The offline optimum of the FGD protocol: how much GPU any placement of the arrived pods can allocate.

At an arrived-workload point (100 % of GPU capacity, say) of a run (workload, seed), the pods that have
arrived so far are placed as one batch on the empty cluster: maximize the allocated GPU milli, then the
pods placed, in optimal mode's model with the GPU sharing rule's encoding (:mod:`.fgd_optimum_model`).
The search starts from the best of four greedy placements (FGD as the protocol runs it, BestFit offline
with the largest pods first, and two device-by-device fills of :mod:`.fgd_construct`, one guided by the
bound LP's assignment of pod kinds to node shapes). A small instance is solved as one CP-SAT model, which
also gives the model's proven bound; a cluster-sized one is improved part by part (:mod:`.fgd_lns`) and
bounded by the configuration LP of :mod:`.fgd_bound`. Every placement reported is replayed through the greedy filter with its devices.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from ortools.sat.python import cp_model

from .. import cpsat
from ..datasets.openb import PodTable, load_nodes, load_pods
from ..plugins.gpu.share import MILLI, GpuNodes
from .fgd import RunResult, arrival_order, run_fgd
from .fgd_bound import bound_and_plan
from .fgd_construct import fill_devices
from .fgd_lns import search
from .fgd_optimum_model import Placement, build_model, decode_model, hint_model, verify

__all__ = ["OPTIMUM_COLUMNS", "OPTIMUM_WORKLOADS", "OptimumPoint", "arrived_rows", "optimum_point", "run_optimum"]

OPTIMUM_COLUMNS = ["workload", "seed", "arrived_pct", "pods", "fgd_alloc_pct", "greedy_best_alloc_pct",
                   "optimum_alloc_pct", "bound_pct", "model_bound_pct", "lp_bound_pct", "method", "status",
                   "time_limit", "seconds", "start", "cpu_seconds"]

OPTIMUM_WORKLOADS = ("default", "gpushare40", "gpushare60", "gpushare80", "gpushare100", "multigpu20", "multigpu30",
                     "multigpu40", "multigpu50", "gpuspec10", "gpuspec20", "gpuspec25", "gpuspec33")
FULL_MODEL_LIMIT = 40_000  # (pod kind, node) pairs up to which the whole batch is one CP-SAT model


@dataclass(frozen=True)
class OptimumPoint:
    """Allocated GPU milli: FGD's online run, the best greedy start, the solver's best and its bound."""

    pods: int
    fgd: int
    greedy_best: int  # the best start
    start: str  # which start: FGD, BestFit-decreasing, fill, fill-lp
    optimum: int
    bound: int  # the tighter of the two below
    model_bound: int | None  # CP-SAT's proven bound of the whole model (None: not solved as one model)
    lp_bound: float
    method: str  # "cp-sat" (one model) or "lns" (part by part)
    status: str
    placement: Placement


def arrived_rows(pods: PodTable, capacity: int, seed: int, pct: float) -> np.ndarray:
    """The protocol's arrived pods (rows, in arrival order) while their GPU request is at most ``pct`` %
    of capacity."""
    order = arrival_order(pods, capacity, seed)
    cum = np.cumsum(pods.total_milli[order])
    return order[: int(np.searchsorted(cum, pct / 100 * capacity, side="right"))]


def _from_run(run: RunResult, k: int) -> Placement:
    return [(int(run.node[i]), run.devices[i]) for i in range(k)]


def _greedy_starts(nodes: GpuNodes, table: PodTable, rows: np.ndarray, seed: int,
                   plan: dict) -> dict[str, Placement]:
    """Placements of the arrived pods to start from: FGD online (the protocol's run up to the point, the
    same ties and draws), BestFit offline with the pods sorted by GPU request, then CPU, largest first, and
    the device-by-device fills of :mod:`.fgd_construct` (CPU-poor nodes first; alone and after the LP's
    plan)."""
    starts = {"FGD": _from_run(run_fgd(nodes, table, "FGD", seed, order=rows), len(rows))}
    key = np.lexsort((-table.cpu[rows], -table.total_milli[rows]))
    run = run_fgd(nodes, table, "BestFit", seed, order=rows[key])
    back: Placement = [(-1, ())] * len(rows)
    for j, i in enumerate(key.tolist()):
        back[i] = (int(run.node[j]), run.devices[j])
    starts["BestFit-decreasing"] = back
    pods = [table.pod(int(r)) for r in rows]
    cpu_poor = np.argsort(nodes.cpu_cap / np.maximum(nodes.gpu_count, 1), kind="stable")
    starts["fill"] = fill_devices(nodes, pods, cpu_poor)
    starts["fill-lp"] = fill_devices(nodes, pods, cpu_poor, plan)
    return starts


def optimum_point(nodes: GpuNodes, table: PodTable, seed: int, pct: float, time_limit: float,
                  workers: int = 4) -> OptimumPoint:
    """The offline optimum at ``pct`` % arrived of run ``seed``: best placement found and its bound."""
    rows = arrived_rows(table, int(nodes.gpu_count.sum()) * MILLI, seed, pct)
    pods = [table.pod(int(r)) for r in rows]
    lp, plan = bound_and_plan(nodes, pods)
    starts = _greedy_starts(nodes, table, rows, seed, plan)
    values = {name: verify(nodes, pods, s) for name, s in starts.items()}
    start = max(values, key=lambda name: values[name])  # the first of equals: FGD wins ties
    placement = starts[start]
    model_bound: int | None = None
    if len(set(pods)) * len(nodes.names) <= FULL_MODEL_LIMIT:
        method = "cp-sat"
        placement, model_bound = _solve_whole(nodes, pods, placement, time_limit, workers)
    else:
        method = "lns"
        placement, _ = search(nodes, pods, placement, time_limit, workers, seed)
    value = verify(nodes, pods, placement)
    bound = min(math.floor(lp + 1e-6), model_bound if model_bound is not None else lp)
    if bound < value:
        raise AssertionError(f"bound {bound} below a verified placement {value}")
    return OptimumPoint(len(pods), values["FGD"], values[start], start, value, int(bound), model_bound, lp, method,
                        "OPTIMAL" if value == bound else "FEASIBLE", placement)


def _solve_whole(nodes: GpuNodes, pods: list, start: Placement, seconds: float,
                 workers: int) -> tuple[Placement, int | None]:
    """The batch as one model from ``start``: the better placement and the model's proven GPU bound (None
    when the solver proved nothing)."""
    model = build_model(nodes, pods)
    hint_model(model, nodes, start)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = seconds
    solver.parameters.num_workers = workers
    status = cpsat.solve(solver, model.cp)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return start, None
    found = decode_model(model, solver)
    better = verify(nodes, pods, found) > verify(nodes, pods, start)
    return (found if better else start), int(solver.best_objective_bound) // model.weight


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
                t0, c0 = time.perf_counter(), time.process_time()
                r = optimum_point(nodes, table, seed, pct, time_limit, workers)
                model_bound = r.model_bound / cap if r.model_bound is not None else float("nan")
                rows.append([w, seed, pct, r.pods, r.fgd / cap, r.greedy_best / cap, r.optimum / cap, r.bound / cap,
                             model_bound, r.lp_bound / cap, r.method, r.status, time_limit,
                             round(time.perf_counter() - t0, 1), r.start,
                             round(time.process_time() - c0, 1)])
                if progress:
                    progress()
    return pd.DataFrame(rows, columns=OPTIMUM_COLUMNS)
