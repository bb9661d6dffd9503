"""A certified upper bound on the GPU allocation any placement of the arrived pods can reach.

The linear relaxation of placing the pods that have arrived (at 100 % of GPU capacity, say) over the
cluster: pods are grouped into kinds (same CPU, memory, GPU count, share and spec) and nodes into shapes
(same CPU, memory, GPU count and model); ``y[k, s]`` pods of kind ``k`` go to shape ``s``. Per shape, the
CPU, memory, pod slots and GPU milli of its nodes bound what it holds, and so do its devices: a whole-GPU pod
needs ``num_gpu`` devices and a share above 500 milli a device of its own. Every placement (greedy or
optimal) satisfies these, so the LP optimum bounds the allocatable GPU milli; it ignores how shares combine
on one device beyond that, so it is an upper bound, not a placement.
"""
from __future__ import annotations

from collections import Counter

import numpy as np
from ortools.linear_solver import pywraplp

from ..constraints.gpu_share import MAX_PODS, MILLI, GpuNodes, model_access
from ..datasets.openb import PodTable

__all__ = ["allocation_bound"]


def _shapes(nodes: GpuNodes) -> Counter:
    return Counter(zip(nodes.cpu_cap.tolist(), nodes.mem_cap.tolist(), nodes.gpu_count.tolist(), nodes.model.tolist()))


def allocation_bound(nodes: GpuNodes, pods: PodTable, rows: np.ndarray) -> float:
    """Upper bound on the GPU milli the pods ``rows`` can be allocated on the empty cluster ``nodes``."""
    kinds = Counter((int(pods.cpu[r]), int(pods.mem[r]), int(pods.num_gpu[r]), int(pods.gpu_milli[r]), pods.spec[r])
                    for r in rows)
    shapes = _shapes(nodes)
    lp = pywraplp.Solver.CreateSolver("GLOP")
    use: dict[tuple, list] = {s: [] for s in shapes}
    per_kind: dict[tuple, list] = {k: [] for k in kinds}
    for k in kinds:
        cpu, mem, num, _, spec = k
        allowed = model_access(nodes.models, tuple(x for x in spec.split("|") if x))
        for s in shapes:
            scpu, smem, gpus, model = s
            if cpu > scpu or mem > smem or num > gpus or (num and not allowed[model]):
                continue
            y = lp.NumVar(0, kinds[k], "")
            use[s].append((k, y))
            per_kind[k].append(y)
    for k, ys in per_kind.items():
        lp.Add(sum(ys) <= kinds[k])
    for s, items in use.items():
        n, (scpu, smem, gpus, _) = shapes[s], s
        lp.Add(sum(k[0] * y for k, y in items) <= n * scpu)
        lp.Add(sum(k[1] * y for k, y in items) <= n * smem)
        lp.Add(sum(y for _, y in items) <= n * MAX_PODS)
        lp.Add(sum(k[2] * k[3] * y for k, y in items) <= n * gpus * MILLI)
        lp.Add(sum((k[2] if k[3] == MILLI else 1) * y for k, y in items if k[3] > MILLI // 2) <= n * gpus)
    lp.Maximize(sum(k[2] * k[3] * y for ys in use.values() for k, y in ys))
    if lp.Solve() != pywraplp.Solver.OPTIMAL:
        raise RuntimeError("the bound LP did not solve to optimality")
    return float(lp.Objective().Value())
