"""Which pods a selector or an affinity term matches, as sorted arrays of pod rows (labels are static).

The vectorized dry run needs "how many of the pods taken off each node match X" for many pods at
once. Pod labels, namespaces and terms never change during a run, so the answer per selector is a
fixed set of pod rows, found through an index of the pods carrying each label pair and cached.
"""
from __future__ import annotations

import numpy as np

from .selectors import Selector
from .snapshot import Snapshot

__all__ = ["PodIndex", "count_at", "count_in"]


class PodIndex:
    """Shared per snapshot (``snapshot.shared(PodIndex)``): pod rows by label pair, matches cached."""

    def __init__(self, snapshot: Snapshot) -> None:
        pods = snapshot.state.pods
        self.num_pods = len(pods)
        self._labels, self._ns, self._alive = snapshot.state.pod_meta
        by_pair: dict[tuple[str, str], list[int]] = {}
        for i, labels in enumerate(self._labels):
            for pair in labels.items():
                by_pair.setdefault(pair, []).append(i)
        self._by_pair = by_pair
        self._cache: dict[tuple, np.ndarray] = {}
        self.scratch = np.zeros(self.num_pods, dtype=np.int64)

    def matching(self, namespaces: frozenset[str] | None, selector: Selector, *, alive_only: bool) -> np.ndarray:
        """Rows of the pods in ``namespaces`` (None = any) whose labels ``selector`` matches; with
        ``alive_only``, terminating pods are left out (``MatchCounter``'s rule)."""
        key = (namespaces, selector, alive_only)
        hit = self._cache.get(key)
        if hit is None:
            hit = self._cache[key] = np.array(self._compute(namespaces, selector, alive_only), dtype=np.int64)
        return hit

    def _compute(self, namespaces: frozenset[str] | None, selector: Selector, alive_only: bool) -> list[int]:
        if selector.nothing:
            return []
        if selector.labels:
            pool: list[int] | range = min((self._by_pair.get(pair, []) for pair in selector.labels), key=len)
        else:
            pool = range(self.num_pods)
        return [p for p in pool
                if (not alive_only or self._alive[p]) and (namespaces is None or self._ns[p] in namespaces)
                and selector.matches(self._labels[p])]


def count_in(index: PodIndex, members: np.ndarray, pods: np.ndarray, weight: int = 1) -> np.ndarray:
    """For each of ``pods``: ``weight`` times how often it appears in ``members`` (0 when absent)."""
    scratch = index.scratch
    np.add.at(scratch, members, weight)
    out = scratch[pods]
    scratch[members] = 0
    return out


def count_at(counts: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """``counts[code]`` per node, 0 where the node lacks the label (code -1) or there are no values."""
    if len(counts) == 0:
        return np.zeros(len(codes), dtype=np.int64)
    return np.where(codes >= 0, counts[np.maximum(codes, 0)], 0).astype(np.int64)
