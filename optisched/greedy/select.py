"""Choosing among the highest-scored nodes (``selectHost`` in ``pkg/scheduler/schedule_one.go``).

Upstream pushes the feasible nodes, in the order the filters found them, into a
max-heap (``container/heap``) and samples uniformly among those tied at the top.
Three policies:

- ``first``: the first max-score node in nodeTree order (the conformance traces' choice);
- ``heap``: the node at the top of upstream's heap after ``heap.Init`` over the
  sequential filter order (kube-scheduler's pick with ``parallelism: 1`` before sampling);
- ``random``: a seeded uniform pick among the ties, modelling the race of the parallel filter workers.
"""
from __future__ import annotations

import random
from enum import StrEnum

import numpy as np

__all__ = ["TieBreak", "heap_top", "select_host"]


class TieBreak(StrEnum):
    FIRST = "first"
    HEAP = "heap"
    RANDOM = "random"


def _down(scores: list[int], idx: list[int], i0: int, n: int) -> None:
    """``container/heap.down`` with ``Less(i, j) = score[i] > score[j]``."""
    i = i0
    while True:
        j1 = 2 * i + 1
        if j1 >= n or j1 < 0:
            break
        j = j1
        j2 = j1 + 1
        if j2 < n and scores[idx[j2]] > scores[idx[j1]]:
            j = j2
        if not scores[idx[j]] > scores[idx[i]]:
            break
        idx[i], idx[j] = idx[j], idx[i]
        i = j


def heap_top(totals: list[int]) -> int:
    """Position (in ``totals``) of the element ``heap.Init`` puts at the root of upstream's score heap."""
    idx = list(range(len(totals)))
    n = len(idx)
    for i in range(n // 2 - 1, -1, -1):
        _down(totals, idx, i, n)
    return idx[0]


def select_host(found_order: np.ndarray, totals: np.ndarray, tree_rank: np.ndarray, policy: TieBreak,
                rng: random.Random | None = None) -> int:
    """Pick a node row among ``found_order`` (feasible rows in filter order) with scores ``totals``.

    ``tree_rank[row]`` is the node's position in nodeTree order, for the ``first`` policy.
    """
    best = totals.max()
    if policy == TieBreak.HEAP:
        return int(found_order[heap_top(totals.tolist())])
    ties = found_order[totals == best]
    if policy == TieBreak.RANDOM and len(ties) > 1:
        return int(ties[(rng or random.Random(0)).randrange(len(ties))])
    return int(ties[np.argmin(tree_rank[ties])])
