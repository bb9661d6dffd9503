"""A large-neighbourhood search for the offline optimum: re-pack a few nodes at a time with CP-SAT.

The whole cluster as one CP-SAT model (1,213 nodes, ~300,000 variables) does not get past its root LP in
minutes on a small machine. The search keeps a placement and, while time is left, picks a few nodes (most
of them with idle GPU milli, the others at random), takes every pod on them plus a sample of the pods that
are not placed, and solves that part exactly with the same model on those nodes alone (the GPU sharing
rule's encoding, :func:`optisched.plugins.gpu.share.encode_gpu_share`); the part's new placement is
kept when it allocates more GPU milli (then places more pods). Each step can only improve the placement.
"""
from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
from ortools.sat.python import cp_model

from .. import cpsat
from ..plugins.gpu.share import GpuNodes, GpuPod
from .fgd_optimum_model import build_model, decode_model, hint_model

__all__ = ["search"]

NODES_PER_STEP = 8
UNPLACED_PER_STEP = 40


def _subset(nodes: GpuNodes, rows: np.ndarray) -> GpuNodes:
    return GpuNodes(
        [nodes.names[i] for i in rows.tolist()], nodes.models, nodes.cpu_cap[rows], nodes.mem_cap[rows],
        nodes.gpu_count[rows], nodes.model[rows])


def _pick(nodes: GpuNodes, pods: Sequence[GpuPod], where: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Nodes to re-pack: two thirds weighted by idle GPU milli, the rest uniformly among GPU nodes."""
    milli = np.array([p.total_milli for p in pods], dtype=np.float64)
    placed = where >= 0
    used = np.bincount(where[placed], weights=milli[placed], minlength=len(nodes.names))
    idle = nodes.gpu_count * 1000 - used
    gpu_nodes = np.flatnonzero(nodes.gpu_count > 0)
    k = min(NODES_PER_STEP, len(gpu_nodes))
    chosen: set[int] = set()
    if idle.sum() > 0:
        weights = idle[gpu_nodes] / idle[gpu_nodes].sum()
        take = min(2 * k // 3, int(np.count_nonzero(weights)))
        chosen.update(rng.choice(gpu_nodes, size=take, replace=False, p=weights).tolist())
    rest = [n for n in rng.permutation(gpu_nodes).tolist() if n not in chosen]
    chosen.update(rest[: k - len(chosen)])
    return np.array(sorted(chosen), dtype=np.int64)


def _step(nodes: GpuNodes, pods: Sequence[GpuPod], placement: list, subset: np.ndarray, seconds: float,
          wall: float, workers: int, rng: np.random.Generator) -> bool:
    """Re-pack ``subset`` with its pods and a sample of unplaced pods (``seconds`` of CP-SAT's deterministic
    time, at most ``wall`` seconds); update ``placement`` if better."""
    where = np.array([n for n, _ in placement], dtype=np.int64)
    on = np.flatnonzero(np.isin(where, subset))
    waiting = np.flatnonzero((where < 0) & np.array([p.num_gpu > 0 for p in pods]))
    sample = rng.choice(waiting, size=min(UNPLACED_PER_STEP, len(waiting)), replace=False) if len(waiting) else waiting
    rows = np.concatenate([on, sample]).astype(np.int64)
    local = {int(n): i for i, n in enumerate(subset.tolist())}
    sub_pods = [pods[i] for i in rows.tolist()]
    sub_nodes = _subset(nodes, subset)
    model = build_model(sub_nodes, sub_pods)
    start = [(local.get(placement[i][0], -1), placement[i][1]) for i in rows.tolist()]
    hint_model(model, sub_nodes, start)
    before = sum(model.weight * p.total_milli + 1 for p, (n, _) in zip(sub_pods, start) if n >= 0)
    solver = cp_model.CpSolver()
    solver.parameters.max_deterministic_time = seconds  # work, not wall time: a loaded machine still
    solver.parameters.max_time_in_seconds = wall  # gives each part the same effort
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = int(rng.integers(2**31))
    if cpsat.solve(solver, model.cp) not in (cp_model.OPTIMAL, cp_model.FEASIBLE) or solver.objective_value <= before:
        return False
    for i, (n, devs) in zip(rows.tolist(), decode_model(model, solver)):
        placement[i] = (int(subset[n]) if n >= 0 else -1, devs if n >= 0 else ())
    return True


def search(nodes: GpuNodes, pods: Sequence[GpuPod], start: list, seconds: float, workers: int,
           seed: int, step_seconds: float = 1.5) -> tuple[list, int]:
    """Improve ``start`` (per pod: node, devices) for ``seconds`` (wall), each part for ``step_seconds`` of
    deterministic time; the placement and the steps that helped."""
    rng = np.random.default_rng(seed)
    placement = list(start)
    end = time.perf_counter() + seconds
    better = 0
    while (left := end - time.perf_counter()) > 1:
        where = np.array([n for n, _ in placement], dtype=np.int64)
        subset = _pick(nodes, pods, where, rng)
        better += _step(nodes, pods, placement, subset, step_seconds, min(20 * step_seconds, left), workers, rng)
    return placement, better
