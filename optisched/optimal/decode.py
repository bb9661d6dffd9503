"""Between class counts and pods: a model solution to a node per pod, and a placement to counts."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .classes import Batch

if TYPE_CHECKING:
    from .model import BatchModel

__all__ = ["counts_of", "decode", "variable_values"]


def decode(batch: Batch, arrivals: list[dict[int, int]], kept: list[dict[int, int]]) -> np.ndarray:
    """Node row per pod row. Running pods a class keeps on a node stay in input order; the ones that
    leave are re-placed first (a move rather than an eviction), then pending pods in queue order."""
    state = batch.state
    node_of = state.pod_node.copy()
    for c in batch.classes:
        movers: list[int] = []
        for n, pods in c.running.items():
            k = kept[c.index].get(n, 0)
            for p in pods[k:]:
                node_of[p] = -1
                movers.append(p)
        queue = movers + c.pending
        i = 0
        for n in sorted(arrivals[c.index]):
            for _ in range(arrivals[c.index][n]):
                node_of[queue[i]] = n
                i += 1
    return node_of


def counts_of(batch: Batch, node_of: np.ndarray) -> tuple[list[dict[int, int]], list[dict[int, int]]]:
    """(arrivals, kept) per class of a placement: the inverse of :func:`decode` up to pod identity."""
    arrivals: list[dict[int, int]] = [{} for _ in batch.classes]
    kept: list[dict[int, int]] = [{} for _ in batch.classes]
    for c in batch.classes:
        for n, pods in c.running.items():
            stay = sum(1 for p in pods if node_of[p] == n)
            kept[c.index][n] = stay
            for p in pods:
                if node_of[p] >= 0 and node_of[p] != n:
                    arrivals[c.index][int(node_of[p])] = arrivals[c.index].get(int(node_of[p]), 0) + 1
        for p in c.pending:
            if node_of[p] >= 0:
                arrivals[c.index][int(node_of[p])] = arrivals[c.index].get(int(node_of[p]), 0) + 1
    return arrivals, kept


def variable_values(model: BatchModel, node_of: np.ndarray) -> dict[int, int]:
    """Arrival and keep variable values (variable index -> value) of a placement; pods on nodes without
    a variable are left out."""
    arrivals, kept = counts_of(model.batch, node_of)
    values: dict[int, int] = {}
    for c in model.classes:
        cv = model.vars[c.index]
        for n, v in zip(cv.arr_nodes.tolist(), cv.arr_vars):
            values[v.Index()] = arrivals[c.index].get(n, 0)
        for n, v in zip(cv.keep_nodes.tolist(), cv.keep_vars):
            values[v.Index()] = kept[c.index].get(n, 0)
    return values
