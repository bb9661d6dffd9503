"""Constructive starts for the offline optimum: fill the GPU devices one by one, largest pods first.

The arrived pods are a bin-packing instance above all: the devices are bins of 1000 milli, and the pods
arrived at 100 % ask for all of them. Placing pod by pod into the fullest device (BestFit) leaves a large
share's gap to whatever comes next; filling one device before the next gives each gap the largest waiting
share that fits it (a 650 beside a 350, an 810 beside a 160). Multi-GPU pods go first (to the feasible
node with the fewest idle devices that still has enough), CPU-only pods last (to the node with the most CPU
left per GPU milli taken). Within a share size, pods restricted by ``gpu_spec`` go first, and a node takes
the pod whose CPU best matches its CPU left per GPU milli left, so CPU-poor nodes keep CPU for their GPUs.
Each step asks the GPU sharing rule's filter (:func:`optisched.plugins.gpu.share.feasible`), so the
result is a placement that exists.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..plugins.gpu.share import MILLI, GpuNodes, GpuPod, exclusive_devices, feasible, model_access

__all__ = ["decreasing_order", "fill_devices"]

Placement = list[tuple[int, tuple[int, ...]]]


def decreasing_order(nodes: GpuNodes, pods: Sequence[GpuPod]) -> np.ndarray:
    """Pod indices, largest GPU request first; per request, fewer allowed GPU models first, then more CPU."""
    allowed = {spec: int(model_access(nodes.models, spec).sum()) for spec in {p.spec for p in pods}}
    total = np.array([p.total_milli for p in pods])
    share = np.array([p.gpu_milli for p in pods])
    spec = np.array([allowed[p.spec] if p.spec else len(nodes.models) for p in pods])
    cpu = np.array([p.cpu for p in pods])
    return np.lexsort((-cpu, spec, -share, -total))


def _node_for(nodes: GpuNodes, pod: GpuPod, ok: np.ndarray) -> tuple[int, tuple[int, ...]] | None:
    """Where a multi-GPU or CPU-only ``pod`` goes among the feasible nodes ``ok``: (node, devices), or None."""
    if not ok.any():
        return None
    if pod.num_gpu:
        idle = np.where(ok, (nodes.dev_free == MILLI).sum(axis=1), MILLI)
        node = int(np.argmin(idle))
        return node, exclusive_devices(nodes.dev_free[node], pod.num_gpu)
    taken = nodes.gpu_count * MILLI - nodes.gpu_free
    per_milli = np.where(ok, nodes.cpu_free / (taken + 1.0), -1.0)
    return int(np.argmax(per_milli)), ()


def fill_devices(nodes: GpuNodes, pods: Sequence[GpuPod], node_order: np.ndarray | None = None,
                 plan: dict[tuple[GpuPod, tuple], float] | None = None) -> Placement:
    """Place ``pods`` device by device: multi-GPU pods first by best fit, then each device of each node
    (in ``node_order``) takes the largest waiting single-GPU pod that fits it and the node, again and again
    until none fits; CPU-only pods last. With ``plan`` (the bound LP's pods per kind and node shape), a first
    pass gives each shape only its planned pods, a second pass whatever still fits."""
    state = nodes.copy()
    access = {spec: model_access(nodes.models, spec) for spec in {p.spec for p in pods}}
    placement: Placement = [(-1, ())] * len(pods)
    order = decreasing_order(nodes, pods)
    for i in order.tolist():
        if pods[i].num_gpu > 1 and (at := _node_for(state, pods[i], feasible(state, pods[i], access[pods[i].spec]))):
            state.bind(pods[i], *at)
            placement[i] = at
    single = np.array([i for i in order.tolist() if pods[i].num_gpu == 1], dtype=np.int64)
    singles = [pods[i] for i in single.tolist()]
    if plan is not None:  # first each shape's share of the LP plan, then anything that still fits
        _fill(state, singles, access, single, placement, node_order, _quota(nodes, singles, plan))
    _fill(state, singles, access, single, placement, node_order)
    for i in order.tolist():
        if pods[i].num_gpu == 0 and (at := _node_for(state, pods[i], feasible(state, pods[i]))):
            state.bind(pods[i], *at)
            placement[i] = at
    return placement


def _quota(nodes: GpuNodes, pods: list[GpuPod], plan: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per pod its kind, per node its shape, and per (kind, shape) the pods the plan sends there (rounded up)."""
    kinds = {p: i for i, p in enumerate(dict.fromkeys(pods))}
    shapes: dict[tuple, int] = {}
    shape_of = np.array([shapes.setdefault(s, len(shapes)) for s in zip(
        nodes.cpu_cap.tolist(), nodes.mem_cap.tolist(), nodes.gpu_count.tolist(), nodes.model.tolist())])
    left = np.zeros((len(kinds), len(shapes)), dtype=np.int64)
    for (p, s), v in plan.items():
        if p in kinds and s in shapes:
            left[kinds[p], shapes[s]] = int(np.ceil(v - 1e-6))
    return np.array([kinds[p] for p in pods], dtype=np.int64), shape_of, left


def _fill(state: GpuNodes, pods: list[GpuPod], access: dict, index: np.ndarray, placement: Placement,
          node_order: np.ndarray | None, quota: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> None:
    """Device by device, the first waiting pod (``pods`` in decreasing order) that fits; binds on ``state``."""
    milli = np.array([p.gpu_milli for p in pods], dtype=np.int64)
    cpu = np.array([p.cpu for p in pods], dtype=np.int64)
    mem = np.array([p.mem for p in pods], dtype=np.int64)
    allowed = np.array([access[p.spec] for p in pods], dtype=bool).reshape(len(pods), len(state.models))
    restricted = np.array([bool(p.spec) for p in pods])
    waiting = np.array([placement[int(i)][0] < 0 for i in index.tolist()], dtype=bool)
    for n in (np.arange(len(state.names)) if node_order is None else node_order).tolist():
        here = waiting & allowed[:, state.model[n]]
        if quota is not None:
            here &= quota[2][quota[0], quota[1][n]] > 0
        for d in range(int(state.gpu_count[n])):
            while True:
                ok = here & (milli <= state.dev_free[n, d]) & (cpu <= state.cpu_free[n]) & (mem <= state.mem_free[n])
                if state.pods_free[n] <= 0 or not ok.any():
                    break
                j = _balanced(state, n, ok, milli, cpu, restricted)
                state.bind(pods[j], n, (d,))
                placement[int(index[j])] = (n, (d,))
                waiting[j] = here[j] = False
                if quota is not None:
                    quota[2][quota[0][j], quota[1][n]] -= 1
                    here &= quota[2][quota[0], quota[1][n]] > 0


def _balanced(state: GpuNodes, n: int, ok: np.ndarray, milli: np.ndarray, cpu: np.ndarray,
              restricted: np.ndarray) -> int:
    """Among the fitting pods with the largest share (``gpu_spec``-restricted ones first), the one whose CPU
    is closest to the node's free CPU per free GPU milli times that share: a CPU-poor node takes CPU-light
    pods and leaves CPU-heavy ones to nodes with CPU to spare."""
    top = ok & (milli == milli[ok].max())
    if (top & restricted).any():
        top &= restricted
    target = state.cpu_free[n] / max(int(state.gpu_free[n]), 1) * milli[top][0]
    return int(np.argmin(np.where(top, np.abs(cpu - target), np.inf)))
