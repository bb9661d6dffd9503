"""``fit-pending``'s start where preemption cannot make room: defragmentation moves of any priority.

kube-scheduler's DefaultPreemption only takes pods of lower priority than the pending pod, and evicts
them. A descheduler can move any pod the eviction policy lets leave, whatever its priority, as long as
its replacement has somewhere to go: a low-priority 4-GPU pod fits once two higher-priority 1-GPU pods
move to nodes with a free GPU. When no preemption candidate's victims all find another node
(:mod:`.start_pending`), the pod's room is made that way:

* **candidate nodes**, over all nodes at once: the pod's filters reject the node as ``Unschedulable``
  (a move can change it; ``UnschedulableAndUnresolvable`` — taints, node affinity, node name — no move
  does: kubernetes/kubernetes v1.35 ``pkg/scheduler/framework/preemption/preemption.go``
  ``nodesWherePreemptionMightHelp``), the pod's requests fit there once every pod that may leave is
  gone, and the other nodes' free room together holds what must leave (capacity first). They are
  tried fewest moves first by capacity (per resource, how many of the node's largest movable pods free
  the shortfall; the most over resources), then by the lowest priority that may leave them, then in
  node order, at most as many as ``calculateNumCandidates`` (same file) asks for, and only while one
  could beat the best found;
* **victims on a node** (the dry run with the real filters, ``SelectVictimsOnNode`` over every
  priority): every pod that may leave is taken off; when the pod then passes the filters there, each is
  put back, the most important first (higher priority, then smaller: its requests over the node's
  allocatable, every resource summed, GPUs included; then earlier start), and stays when the pod
  still passes; the others are the victims;
* **re-placed**: the pod goes on the node, and each victim, largest first, to the most allocated other
  node where the filters pass (and the caller's ``accept``). Only the filters put a pod on a node, so no
  move displaces another pod. A victim no node takes is not chosen: it stays, and the victims are
  chosen again without it. The pod and the victims are then checked again where they ended (a victim's
  arrival can change the pod's topology spread);
* **the best candidate**: the fewest victims, then the lowest highest victim priority, then the lowest
  sum of priorities (``pickOneNodeForPreemption``'s criteria, fewest moves first), then the order tried.

Every trial is undone through the snapshot's journal, so the outcome depends on the input only.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..framework import Code
from ..model.state import ClusterState
from .start import Accept, Placer

__all__ = ["Defrag", "defragment", "short"]


@dataclass(frozen=True)
class Defrag:
    """Room made for a pod on ``node``: its ``victims`` and where each goes, in placement order."""

    node: int
    victims: tuple[int, ...]
    moves: tuple[tuple[int, int], ...]

    def key(self, priority: np.ndarray) -> tuple[int, int, int]:
        prio = [int(priority[v]) for v in self.victims]
        return len(prio), max(prio), sum(prio)


def short(placer: Placer, p: int, gone: np.ndarray) -> np.ndarray:
    """bool [N]: nodes where ``p``'s requests do not fit even with the placed pods of ``gone`` (bool [P])
    off them (capacity only: the other filters are left to the dry run)."""
    state, snap = placer.state, placer.snapshot
    rows = np.flatnonzero((snap.node_of >= 0) & gone)
    freed = np.zeros_like(snap.requested)
    np.add.at(freed, snap.node_of[rows], state.pod_requests[rows])
    return (snap.requested - freed + state.pod_requests[p] > state.allocatable).any(axis=1)


def fewest_to_free(placer: Placer, p: int, gone: np.ndarray) -> np.ndarray:
    """int [N]: per node, a lower bound on how many placed pods of ``gone`` must leave for ``p``'s requests
    to fit: per resource short, the count of the node's largest such pods that free the shortfall."""
    state, snap = placer.state, placer.snapshot
    need = snap.requested + state.pod_requests[p] - state.allocatable
    rows = np.flatnonzero((snap.node_of >= 0) & gone)
    nodes = snap.node_of[rows]
    bound = np.zeros(state.num_nodes, dtype=np.int64)
    for r in np.flatnonzero((need > 0).any(axis=0)).tolist():  # over resources, each vectorized over nodes
        req = state.pod_requests[rows, r]
        order = np.lexsort((-req, nodes))  # by node, largest first
        on, q = nodes[order], req[order]
        cum = np.cumsum(q)
        first = np.searchsorted(on, on, side="left")
        before = cum - q - (cum[first] - q[first])  # freed on the node by its larger pods
        bound = np.maximum(bound, np.bincount(on, weights=before < need[on, r], minlength=state.num_nodes)
                           .astype(np.int64))
    return bound


def _candidates(placer: Placer, p: int, may_leave: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The candidate nodes for ``p`` in the order tried, and per node a lower bound on its key
    (:meth:`Defrag.key`'s first two: victims, and the lowest priority among the pods that may leave it)."""
    state, snap = placer.state, placer.snapshot
    fp = placer.filtered(p, np.ones(state.num_nodes, dtype=bool))
    if fp is None:
        return np.zeros(0, dtype=np.int64), np.zeros((0, 2), dtype=np.int64)
    might = np.zeros(state.num_nodes, dtype=bool)
    might[fp.evaluated[fp.fail_code == int(Code.UNSCHEDULABLE)]] = True
    spare = np.maximum(state.allocatable - snap.requested, 0)
    need = np.maximum(snap.requested + state.pod_requests[p] - state.allocatable, 0)
    room = (spare.sum(axis=0) - spare >= need).all(axis=1)  # the other nodes can take what must leave
    nodes = np.flatnonzero(might & room & ~short(placer, p, may_leave))
    rows = np.flatnonzero((snap.node_of >= 0) & may_leave)
    lowest = np.full(state.num_nodes, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(lowest, snap.node_of[rows], state.pod_priority[rows].astype(np.int64))
    bound = np.stack([fewest_to_free(placer, p, may_leave)[nodes], lowest[nodes]], axis=1)
    order = np.lexsort((nodes, bound[:, 1], bound[:, 0]))
    return nodes[order], bound[order]


def _beaten(best: Defrag, low: tuple[int, int], priority: np.ndarray) -> bool:
    """No node whose key is at least ``low`` (victims, lowest priority) can beat ``best``: more victims, a
    higher lowest priority, or as many at the priority of all of ``best``'s (the sum no lower)."""
    count, top, total = best.key(priority)
    return low > (count, top) or (low == (count, top) and total == count * top)


def _shares(state: ClusterState, rows: list[int], n: int) -> np.ndarray:
    """float [len(rows)]: each pod's requests over node ``n``'s allocatable, summed over the resources
    it has (GPUs included, where :func:`.start.by_size` counts cpu and memory only)."""
    alloc = state.allocatable[n].astype(float)
    has = alloc > 0
    return (state.pod_requests[rows][:, has] / alloc[has]).sum(axis=1)


def _victims(placer: Placer, p: int, n: int, movable: list[int], start_time: np.ndarray) -> list[int] | None:
    """Take ``movable`` off ``n``; None when ``p`` still fails the filters there, else put back the most
    important first each that leaves ``p`` passing, and return the rest (left off ``n``)."""
    state, snap = placer.state, placer.snapshot
    only = np.zeros(state.num_nodes, dtype=bool)
    only[n] = True
    for q in movable:
        snap.remove(q)
    if not len(placer.feasible(p, only)):
        return None
    size = dict(zip(movable, _shares(state, movable, n).tolist()))
    victims = []
    for q in sorted(movable, key=lambda q: (-int(state.pod_priority[q]), size[q], float(start_time[q]), q)):
        snap.add(q, n)
        if not len(placer.feasible(p, only)):
            snap.remove(q)
            victims.append(q)
    return victims


def _holds(placer: Placer, pods: list[int]) -> bool:
    """Each of ``pods`` passes the filters where it is, the others where they are."""
    snap = placer.snapshot
    for q in pods:
        n = snap.remove(q)
        only = np.zeros(placer.state.num_nodes, dtype=bool)
        only[n] = True
        ok = len(placer.feasible(q, only)) > 0
        snap.add(q, n)
        if not ok:
            return False
    return True


def _try(placer: Placer, p: int, n: int, may_leave: np.ndarray, accept: Accept | None,
         start_time: np.ndarray) -> Defrag | None:
    """Room for ``p`` on ``n`` with its victims re-placed (module docstring), the snapshot unchanged."""
    snap = placer.snapshot
    assert snap.journal is not None
    away = np.ones(placer.state.num_nodes, dtype=bool)
    away[n] = False
    kept: list[int] = []
    while True:
        mark = len(snap.journal)
        victims = _victims(placer, p, n, [q for q in snap.pods_on[n] if may_leave[q] and q not in kept], start_time)
        if not victims:
            snap.rollback(mark)
            return None
        snap.add(p, n)
        moves: list[tuple[int, int]] = []
        stuck = None
        share = _shares(placer.state, victims, n)
        for v in [victims[i] for i in sorted(range(len(victims)), key=lambda i: (-float(share[i]), victims[i]))]:
            to = placer.place(v, away, accept)
            if to < 0:
                stuck = v
                break
            moves.append((v, to))
        done = stuck is None and _holds(placer, [p, *victims])
        snap.rollback(mark)
        if done:
            return Defrag(n, tuple(victims), tuple(moves))
        if stuck is None:
            return None
        kept.append(stuck)


def defragment(placer: Placer, p: int, may_leave: np.ndarray, accept: Accept | None, start_time: np.ndarray,
               limit: int) -> Defrag | None:
    """Make room for ``p`` (off any node) by moving pods of ``may_leave`` (module docstring), trying at
    most ``limit`` candidate nodes; the moves are made on the placer's snapshot. None when none works."""
    snap, prio = placer.snapshot, placer.state.pod_priority
    nodes, bound = _candidates(placer, p, may_leave)
    own = snap.journal is None
    if own:
        snap.journal = []
    best: Defrag | None = None
    try:
        for n, low in zip(nodes[:limit].tolist(), bound[:limit].tolist()):
            if best is not None and _beaten(best, (low[0], low[1]), prio):
                break
            found = _try(placer, p, n, may_leave, accept, start_time)
            if found is not None and (best is None or found.key(prio) < best.key(prio)):
                best = found
    finally:
        if own:
            snap.journal = None
    if best is None:
        return None
    for v in best.victims:
        snap.remove(v)
    snap.add(p, best.node)
    for v, to in best.moves:
        snap.add(v, to)
    return best
