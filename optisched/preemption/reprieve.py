"""The reprieve loop of ``SelectVictimsOnNode`` for many nodes at once.

Upstream (``pkg/scheduler/framework/preemption/preemption.go``): with every lower-priority pod taken
off, the victims are sorted by importance (higher priority, then earlier start; ``MoreImportantPod``),
split into those whose eviction would violate a PodDisruptionBudget and the rest, and put back one by
one — violating ones first — each staying on the node when the pod still fits. The nodes are
independent, so step *k* treats the *k*-th pod of every node together.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..framework import FilterResult
from .default_preemption import MAX_INT32

__all__ = ["Reprieved", "pdb_violating", "reprieve"]


@dataclass
class Reprieved:
    victims: dict[int, list[int]] = field(default_factory=dict)  # world position -> victims, in order
    violations: dict[int, int] = field(default_factory=dict)
    keys: dict[int, tuple] = field(default_factory=dict)  # pickOneNodeForPreemption's criteria


def _group_starts(sorted_pos: np.ndarray) -> np.ndarray:
    return np.flatnonzero(np.r_[True, sorted_pos[1:] != sorted_pos[:-1]]) if len(sorted_pos) else sorted_pos


def pdb_violating(ledger, pos: np.ndarray, pods: np.ndarray) -> np.ndarray:  # type: ignore[no-untyped-def]
    """``filterPodsWithPDBViolation`` per node for pairs sorted by node then importance: a pod violates
    when one of its budgets has no disruption left after the node's earlier pods took theirs."""
    rows, budgets = [], []
    for i, p in enumerate(pods.tolist()):
        for b in ledger.budgets_of(p):
            rows.append(i)
            budgets.append(b)
    out = np.zeros(len(pods), dtype=bool)
    if not rows:
        return out
    r, b = np.array(rows, dtype=np.int64), np.array(budgets, dtype=np.int64)
    o = np.lexsort((r, b, pos[r]))
    r, b = r[o], b[o]
    key = pos[r] * (int(b.max()) + 1) + b
    starts = _group_starts(key)
    taken = np.arange(len(r)) - np.repeat(starts, np.diff(np.r_[starts, len(r)])) + 1
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


def reprieve(dp, qs: np.ndarray, pairs: tuple[np.ndarray, np.ndarray], checks, worlds) -> Reprieved:  # type: ignore[no-untyped-def]
    """Victims of the nodes at world positions ``qs`` (their worlds hold every lower-priority pod
    taken off); ``pairs`` = (world position, pod) of those pods; ``checks`` the dynamic filters."""
    state, snap = dp.state, dp.snapshot
    sel = np.isin(pairs[0], qs)
    pp, pv = pairs[0][sel], pairs[1][sel]
    prio, start = state.pod_priority[pv], dp.start_time[pv]
    o = np.lexsort((snap.slot[pv], start, -prio, pp))  # importance; ties keep NodeInfo order
    pp, pv, prio, start = pp[o], pv[o], prio[o], start[o]
    viol = pdb_violating(dp.ledger, pp, pv)
    ro = np.lexsort((np.arange(len(pp)), ~viol, pp))  # violating ones first
    pp, pv, prio, start, viol = pp[ro], pv[ro], prio[ro], start[ro], viol[ro]
    starts = _group_starts(pp)
    sizes = np.diff(np.r_[starts, len(pp)])
    rank = np.arange(len(pp)) - np.repeat(starts, sizes)
    victim = np.zeros(len(pp), dtype=bool)
    for r in range(int(sizes.max()) if len(sizes) else 0):
        idx = np.flatnonzero(rank == r)
        for w in worlds:
            w.move(pp[idx], pv[idx], 1)
        bad = idx[~_fits(checks, pp[idx])]
        if len(bad):
            for w in worlds:
                w.move(pp[bad], pv[bad], -1)
            victim[bad] = True
    n_viol = np.add.reduceat(viol.astype(np.int64), starts) if len(sizes) else sizes
    mixed = np.repeat((n_viol > 0) & (n_viol < sizes), sizes)
    return _collect(pp, pv, prio, start, viol, victim, mixed)


def _collect(pp, pv, prio, start, viol, victim, mixed) -> Reprieved:  # type: ignore[no-untyped-def]
    """Victims per node: in reprieve order, re-sorted by importance when both groups were present."""
    v = np.flatnonzero(victim)
    o = np.lexsort((v, np.where(mixed[v], start[v], 0.0), np.where(mixed[v], -prio[v], 0), pp[v]))
    v = v[o]
    out = Reprieved()
    if len(v) == 0:
        return out
    starts = _group_starts(pp[v])
    ends = np.r_[starts[1:], len(v)]
    pr = prio[v]
    total = np.add.reduceat(pr + MAX_INT32 + 1, starts)
    top = np.maximum.reduceat(pr, starts)
    earliest = np.minimum.reduceat(np.where(pr == np.repeat(top, ends - starts), start[v], np.inf), starts)
    nviol = np.add.reduceat(viol[v].astype(np.int64), starts)
    for i, (s, e) in enumerate(zip(starts.tolist(), ends.tolist())):
        q = int(pp[v[s]])
        out.victims[q] = pv[v[s:e]].tolist()
        out.violations[q] = int(nviol[i])
        out.keys[q] = (-int(nviol[i]), -int(pr[s]), -int(total[i]), -(e - s), float(earliest[i]))
    return out
