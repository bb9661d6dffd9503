"""The reprieve loop of ``SelectVictimsOnNode`` for many nodes at once.

Upstream (``pkg/scheduler/framework/preemption/preemption.go``): with every lower-priority pod taken
off, the victims are sorted by importance (higher priority, then earlier start; ``MoreImportantPod``),
split into those whose eviction would violate a PodDisruptionBudget and the rest, and put back one by
one — violating ones first — each staying on the node when the pod still fits. The nodes are
independent, so step *k* treats the *k*-th pod of every node together.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..framework import FilterResult
from ..plugins.noderesources.fit import ResourceWorld
from .default_preemption import MAX_INT32

__all__ = ["Reprieved", "pdb_violating", "reprieve"]


@dataclass
class Reprieved:
    """Per world position: victims found, PDB violations among them, ``pickOneNodeForPreemption``'s
    criteria (to maximize, in order) and where its victims sit in ``victims`` (in order)."""

    count: np.ndarray
    violations: np.ndarray
    keys: np.ndarray  # float64 [positions, 5]
    start: np.ndarray
    victims: np.ndarray

    @classmethod
    def empty(cls, n: int) -> Reprieved:
        z = np.zeros(n, dtype=np.int64)
        return cls(z, z.copy(), np.zeros((n, 5)), z.copy(), z[:0])

    def of(self, q: int) -> list[int]:
        s = int(self.start[q])
        return self.victims[s:s + int(self.count[q])].tolist()


def _group_starts(sorted_pos: np.ndarray) -> np.ndarray:
    if len(sorted_pos) == 0:
        return sorted_pos
    new = np.empty(len(sorted_pos), dtype=bool)
    new[0] = True
    np.not_equal(sorted_pos[1:], sorted_pos[:-1], out=new[1:])
    return np.flatnonzero(new)


def _sizes(starts: np.ndarray, n: int) -> np.ndarray:
    """Group sizes from the groups' starts in a sequence of ``n``."""
    out = np.empty(len(starts), dtype=np.int64)
    if len(starts):
        np.subtract(starts[1:], starts[:-1], out=out[:-1])
        out[-1] = n - starts[-1]
    return out


def pdb_violating(ledger, pos: np.ndarray, pods: np.ndarray) -> np.ndarray:  # type: ignore[no-untyped-def]
    """``filterPodsWithPDBViolation`` per node for pairs sorted by node then importance: a pod violates
    when one of its budgets has no disruption left after the node's earlier pods took theirs."""
    r, b = ledger.budget_pairs(pods)
    out = np.zeros(len(pods), dtype=bool)
    if len(r) == 0:
        return out
    o = np.lexsort((r, b, pos[r]))
    r, b = r[o], b[o]
    key = pos[r] * (int(b.max()) + 1) + b
    starts = _group_starts(key)
    taken = np.arange(len(r)) - np.repeat(starts, _sizes(starts, len(r))) + 1
    out[r[taken > np.asarray(ledger.allowed, dtype=np.int64)[b]]] = True
    return out


def _fits(checks, qs: np.ndarray) -> np.ndarray:  # type: ignore[no-untyped-def]
    ok = np.ones(len(qs), dtype=bool)
    for _, check in checks:
        live = np.flatnonzero(ok)
        if len(live) == 0:
            break
        res: FilterResult = check(qs[live])
        ok[live[res.code != 0]] = False
    return ok


def reprieve(dp, qs: np.ndarray, pairs: tuple[np.ndarray, np.ndarray], checks, worlds,  # type: ignore[no-untyped-def]
             n: int) -> Reprieved:
    """Victims of the nodes at world positions ``qs`` (of ``n``; their worlds hold every lower-priority
    pod taken off); ``pairs`` = (world position, pod) of those pods; ``checks`` the dynamic filters."""
    state, snap = dp.state, dp.snapshot
    wanted = np.zeros(n, dtype=bool)
    wanted[qs] = True
    sel = wanted[pairs[0]]
    pp, pv = pairs[0][sel], pairs[1][sel]
    prio, start = state.pod_priority[pv], dp.start_time[pv]
    o = np.lexsort((snap.slot[pv], start, -prio, pp))  # importance; ties keep NodeInfo order
    pp, pv, prio, start = pp[o], pv[o], prio[o], start[o]
    viol = pdb_violating(dp.ledger, pp, pv)
    ro = np.lexsort((np.arange(len(pp)), ~viol, pp))  # violating ones first
    pp, pv, prio, start, viol = pp[ro], pv[ro], prio[ro], start[ro], viol[ro]
    starts = _group_starts(pp)
    sizes = _sizes(starts, len(pp))
    rank = np.arange(len(pp)) - np.repeat(starts, sizes)
    by_rank = np.argsort(rank, kind="stable")
    bounds = np.searchsorted(rank[by_rank], np.arange(int(sizes.max()) + 1 if len(sizes) else 1))
    victim = np.zeros(len(pp), dtype=bool)
    only = worlds[0] if len(worlds) == 1 and len(checks) == 1 and isinstance(worlds[0], ResourceWorld) else None
    for r in range(len(bounds) - 1):
        idx = by_rank[bounds[r]:bounds[r + 1]]
        if only is not None:  # NodeResourcesFit alone: put back and check in one step
            victim[idx[~only.put_back(pp[idx], pv[idx])]] = True
            continue
        for w in worlds:
            w.move(pp[idx], pv[idx], 1)
        bad = idx[~_fits(checks, pp[idx])]
        if len(bad):
            for w in worlds:
                w.move(pp[bad], pv[bad], -1)
            victim[bad] = True
    n_viol = np.add.reduceat(viol.astype(np.int64), starts) if len(sizes) else sizes
    mixed = np.repeat((n_viol > 0) & (n_viol < sizes), sizes)
    return _collect(n, pp, pv, prio, start, viol, victim, mixed)


def _collect(n, pp, pv, prio, start, viol, victim, mixed) -> Reprieved:  # type: ignore[no-untyped-def]
    """Victims per node: in reprieve order, re-sorted by importance when both groups were present."""
    v = np.flatnonzero(victim)
    o = np.lexsort((v, np.where(mixed[v], start[v], 0.0), np.where(mixed[v], -prio[v], 0), pp[v]))
    v = v[o]
    out = Reprieved.empty(n)
    if len(v) == 0:
        return out
    starts = _group_starts(pp[v])
    sizes = _sizes(starts, len(v))
    q = pp[v[starts]]
    pr = prio[v]
    top = np.maximum.reduceat(pr, starts)
    out.count[q] = sizes
    out.start[q] = starts
    out.violations[q] = np.add.reduceat(viol[v].astype(np.int64), starts)
    out.keys[q, 0] = -out.violations[q]
    out.keys[q, 1] = -pr[starts]
    out.keys[q, 2] = -np.add.reduceat(pr + MAX_INT32 + 1, starts)
    out.keys[q, 3] = -sizes
    out.keys[q, 4] = np.minimum.reduceat(np.where(pr == np.repeat(top, sizes), start[v], np.inf), starts)
    out.victims = pv[v]
    return out
