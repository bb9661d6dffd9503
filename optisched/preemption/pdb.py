"""PodDisruptionBudgets as preemption sees them (``filterPodsWithPDBViolation``).

A victim violates a budget when taking it would drop the budget's ``disruptionsAllowed`` below zero,
counting the victims already taken on that node in order. A budget with a nil or empty selector
matches nothing here, as upstream says.
"""
from __future__ import annotations

import numpy as np

from ..model.pdb import budget_views
from ..model.pod_counts import selector_of
from ..model.state import ClusterState

__all__ = ["PDBLedger"]


class PDBLedger:
    """Per budget: the pods it covers (by row) and its current ``disruptionsAllowed``."""

    def __init__(self, state: ClusterState, bound: list[bool]) -> None:
        self.state = state
        views = budget_views(state.cluster.pdbs, state.pods, bound)
        self.allowed = [v.disruptions_allowed for v in views]
        self.selectors = [selector_of(v.pdb.spec.selector) for v in views]
        self.namespaces = [v.pdb.metadata.namespace for v in views]
        self.names = [f"{v.pdb.metadata.namespace}/{v.pdb.metadata.name}" for v in views]
        self._csr: tuple[np.ndarray, np.ndarray, list[int]]  # set by budget_pairs
        # budgets by (namespace, one label pair their selector requires); None: selectors without pairs
        self._buckets: dict[tuple[str | None, tuple[str, str] | None], list[int]] = {}
        for i, sel in enumerate(self.selectors):
            if not sel.nothing and not sel.empty:
                pair = min(sel.labels) if sel.labels else None
                self._buckets.setdefault((self.namespaces[i], pair), []).append(i)

    def budgets_of(self, pod: int) -> list[int]:
        """Budgets whose selector matches the pod (static: labels do not change); cached per pod."""
        cache = self.__dict__.setdefault("_budgets", {})
        hit = cache.get(pod)
        if hit is None:
            hit = cache[pod] = self._budgets_of(pod)
        return hit

    def _budgets_of(self, pod: int) -> list[int]:
        p = self.state.pods[pod]
        labels = p.metadata.labels
        if not labels:
            return []
        ns = p.metadata.namespace or "default"
        plausible = {i for pair in [None, *labels.items()] for i in self._buckets.get((ns, pair), ())}
        return [i for i in sorted(plausible) if self.selectors[i].matches(labels)]

    def budget_pairs(self, pods: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(index into ``pods``, budget) for every budget covering each of ``pods``, in order."""
        csr: tuple[np.ndarray, np.ndarray, list[int]] | None = self.__dict__.get("_csr")
        if csr is None:  # per pod: where its budgets start in a flat list, and how many (-1: not known yet)
            csr = self._csr = (np.zeros(len(self.state.pods), dtype=np.int64),
                               np.full(len(self.state.pods), -1, dtype=np.int64), [])
        start, count, flat = csr
        for p in np.unique(pods[count[pods] < 0]).tolist():
            found = self.budgets_of(p)
            start[p], count[p] = len(flat), len(found)
            flat.extend(found)
        n = count[pods]
        rows = np.repeat(np.arange(len(pods)), n)
        if len(rows) == 0:
            return rows, rows
        if len(self.__dict__.get("_flat", ())) != len(flat):
            self._flat = np.asarray(flat, dtype=np.int64)
        offsets = np.arange(len(rows)) - np.repeat(np.cumsum(n) - n, n)
        return rows, self._flat[np.repeat(start[pods], n) + offsets]

    def split_by_violation(self, pods: list[int]) -> tuple[list[int], list[int]]:
        """(violating, non-violating), keeping order; budgets are decremented per pod taken."""
        left = list(self.allowed)
        violating: list[int] = []
        ok: list[int] = []
        for p in pods:
            hit = False
            for i in self.budgets_of(p):
                left[i] -= 1
                if left[i] < 0:
                    hit = True
            (violating if hit else ok).append(p)
        return violating, ok
