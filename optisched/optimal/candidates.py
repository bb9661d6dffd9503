"""Candidate nodes per class, for batches too large to give every class a variable on every node.

A class keeps the nodes its pods occupy in the starting placement (so that placement stays feasible),
the nodes with the most room left for its request vector, a few of every topology domain its own
constraints spread over, and a seeded random sample of the rest. Restricting nodes only shrinks the
feasible set: every answer is still valid, and the optimality bound then comes from the LP relaxation
of the unrestricted problem (:mod:`.bound`), not from CP-SAT.
"""
from __future__ import annotations

import numpy as np

from ..model.state import ClusterState
from .classes import Batch

__all__ = ["choose_candidates"]


def _room(state: ClusterState, used: np.ndarray, req: np.ndarray) -> np.ndarray:
    """Copies of ``req`` that fit in each node's room (every requested resource)."""
    cols = np.flatnonzero(req > 0)
    if len(cols) == 0:
        return np.full(state.num_nodes, 1 << 30, dtype=np.int64)
    return ((state.allocatable[:, cols] - used[:, cols]).clip(min=0) // req[cols]).min(axis=1)


def _best(room: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` largest values of ``room``, ties to the lower position: the first ``k`` of a
    stable descending sort, found by one partition instead of a sort."""
    if k >= len(room):
        return np.arange(len(room))
    kth = np.partition(room, len(room) - k)[len(room) - k]
    above = np.flatnonzero(room > kth)
    return np.concatenate([above, np.flatnonzero(room == kth)[:k - len(above)]])


def choose_candidates(batch: Batch, allowed: np.ndarray, start: np.ndarray, per_class: int, seed: int,
                      domain_keys: dict[int, list[str]], also: tuple[np.ndarray, ...] = ()) -> dict[int, np.ndarray]:
    """Candidate node rows per class index. ``allowed`` [C, N] is the model's domain, ``start`` a node
    per pod row, ``domain_keys`` the topology keys each class's constraints spread over; ``also``: more
    placements (a node per pod row) whose nodes stay candidates too, where the model allows them (a
    goal's start, which the model can only take where it has the variables)."""
    state = batch.state
    rng = np.random.default_rng(seed)
    used = np.zeros_like(state.allocatable)
    on = start >= 0
    np.add.at(used, start[on], state.pod_requests[on])
    out: dict[int, np.ndarray] = {}
    rooms: dict[bytes, np.ndarray] = {}  # per request vector: its copies that fit on each node
    for c in batch.classes:
        mine = np.flatnonzero(allowed[c.index])
        if len(mine) <= per_class:
            continue  # the class keeps every node it may use
        rows = c.pending + [p for pods in c.running.values() for p in pods]
        keep = {int(start[p]) for p in rows if start[p] >= 0}
        for other in also:
            keep.update(int(n) for n in other[rows].tolist() if n >= 0 and allowed[c.index, n])
        req = state.pod_requests[c.rep]
        every = rooms.get(req.tobytes())
        if every is None:
            every = rooms[req.tobytes()] = _room(state, used, req)
        room = every[mine]
        best = mine[_best(room, max(per_class, c.size + 2))]
        keep.update(best.tolist())
        for key in domain_keys.get(c.index, ()):
            codes = state.label(key).codes[mine]
            for code in np.unique(codes[codes >= 0]).tolist():
                in_domain = mine[codes == code]
                keep.update(in_domain[np.argsort(-room[codes == code], kind="stable")[:2]].tolist())
        sample = rng.choice(mine, size=min(len(mine), max(2, per_class // 2)), replace=False)
        keep.update(sample.tolist())
        out[c.index] = np.array(sorted(keep), dtype=np.int64)
    return out
