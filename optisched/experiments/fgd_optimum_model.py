"""The offline optimum's CP-SAT model: one integer per (pod kind, node), the GPU sharing rule's encoding.

Optimal mode's shape (identical pods aggregated into a count per node, as :mod:`optisched.optimal.classes`
does for ReplicaSets) with the GPU sharing rule's own CP-SAT encoding
(:func:`optisched.plugins.gpu.share.encode_gpu_share`: per-device packing, whole GPUs on idle devices,
CPU, memory and pod slots); objective: GPU milli, then pods. :func:`verify` replays a placement through
the greedy filter with its devices.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from ortools.sat.python import cp_model

from ..plugins.gpu.share import MILLI, DeviceVars, GpuNodes, GpuPod, encode_gpu_share, feasible

__all__ = ["OptimumModel", "Placement", "build_model", "decode_model", "hint_model", "verify"]

Placement = list[tuple[int, tuple[int, ...]]]  # per pod: (node, devices), node -1 when not placed


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


@dataclass
class OptimumModel:
    cp: cp_model.CpModel
    kinds: list[GpuPod]
    kind_of: np.ndarray
    place: dict[tuple[int, int], cp_model.IntVar]
    dev: DeviceVars
    weight: int


def build_model(nodes: GpuNodes, pods: list[GpuPod]) -> OptimumModel:
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
    return OptimumModel(m, kinds, kind_of, place, dev, weight)


def _fit_bound(nodes: GpuNodes, pod: GpuPod) -> np.ndarray:
    """How many of ``pod`` each empty node holds at most, per resource (a variable's upper bound)."""
    big = np.iinfo(np.int64).max // 4
    most = np.minimum(nodes.cpu_free // pod.cpu if pod.cpu else big, nodes.mem_free // pod.mem if pod.mem else big)
    if pod.sharing:
        most = np.minimum(most, (nodes.dev_free // pod.gpu_milli).sum(axis=1))
    elif pod.num_gpu:
        most = np.minimum(most, (nodes.dev_free == MILLI).sum(axis=1) // pod.num_gpu)
    return np.minimum(most, nodes.pods_free)


def hint_model(model: OptimumModel, nodes: GpuNodes, placement: Placement) -> None:
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


def decode_model(model: OptimumModel, solver: cp_model.CpSolver) -> Placement:
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
