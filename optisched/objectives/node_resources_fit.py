"""NodeResourcesFit scoring: LeastAllocated, MostAllocated, RequestedToCapacityRatio.

Upstream: ``pkg/scheduler/framework/plugins/noderesources/{least_allocated,most_allocated,
requested_to_capacity_ratio}.go`` and ``helper/shape_score.go``; integer math as Go (truncating
division; ``math.Round`` half away from zero). Scores use non-zero cpu/memory requests.
No NormalizeScore.
"""
from __future__ import annotations

import numpy as np

from ..framework import MAX_NODE_SCORE, CycleState, Status
from ..model.snapshot import Snapshot
from ..profile import NodeResourcesFitArgs, ScoringStrategyType
from .resource_allocation import cycle_allocation, pod_request_list

__all__ = [
    "NodeResourcesFitScore",
    "broken_linear",
    "go_div",
    "least_allocated",
    "most_allocated",
    "requested_to_capacity_ratio",
]

MAX_UTILIZATION = 100
MAX_CUSTOM_PRIORITY_SCORE = 10


def go_div(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """Go's integer division (truncates toward zero)."""
    q = np.abs(a) // np.abs(b)
    return np.where((np.sign(a) * np.sign(b)) < 0, -q, q)


def _weighted(per_resource: np.ndarray, alloc: np.ndarray, weights: np.ndarray) -> np.ndarray:
    present = alloc != 0
    w = np.where(present, weights, 0)
    total = (per_resource * w).sum(axis=1)
    wsum = w.sum(axis=1)
    return np.where(wsum > 0, total // np.maximum(wsum, 1), 0)


def least_allocated(req: np.ndarray, alloc: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``(capacity - requested) * 100 / capacity`` per resource (0 when over capacity), weighted mean."""
    cap = np.maximum(alloc, 1)
    s = np.where((alloc == 0) | (req > alloc), 0, (alloc - req) * MAX_NODE_SCORE // cap)
    return _weighted(s, alloc, weights)


def most_allocated(req: np.ndarray, alloc: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``requested * 100 / capacity`` per resource (requested capped at capacity), weighted mean."""
    cap = np.maximum(alloc, 1)
    s = np.where(alloc == 0, 0, np.minimum(req, alloc) * MAX_NODE_SCORE // cap)
    return _weighted(s, alloc, weights)


def broken_linear(points: list[tuple[int, int]], p: np.ndarray) -> np.ndarray:
    """``helper.BuildBrokenLinearFunction``: piecewise linear through (utilization, score) points."""
    out = np.full(p.shape, points[-1][1], dtype=np.int64)
    done = np.zeros(p.shape, dtype=bool)
    for i, (u, s) in enumerate(points):
        hit = ~done & (p <= u)
        if i == 0:
            out[hit] = s
        else:
            u0, s0 = points[i - 1]
            out[hit] = s0 + go_div((s - s0) * (p[hit] - u0), u - u0)
        done |= hit
    return out


def requested_to_capacity_ratio(req: np.ndarray, alloc: np.ndarray, weights: np.ndarray,
                                shape: list[tuple[int, int]]) -> np.ndarray:
    """Shape scores (scaled ×10) of integer-percent utilization; resources scoring 0 leave the weight
    sum; rounded weighted mean."""
    pts = [(u, s * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE)) for u, s in shape]
    cap = np.maximum(alloc, 1)
    util = np.where((alloc == 0) | (req > alloc), MAX_UTILIZATION, req * MAX_UTILIZATION // cap)
    s = broken_linear(pts, util)
    counted = (alloc != 0) & (s > 0)
    w = np.where(counted, weights, 0)
    total = (s * w).sum(axis=1)
    wsum = w.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(wsum > 0, total / np.maximum(wsum, 1), 0.0)
    return np.floor(mean + 0.5).astype(np.int64)  # math.Round on non-negative values


class NodeResourcesFitScore:
    name = "NodeResourcesFit"

    def __init__(self, snapshot: Snapshot, profile: object) -> None:
        self.snapshot = snapshot
        self.args: NodeResourcesFitArgs = getattr(profile, "fit", NodeResourcesFitArgs())
        self.resources = [r.name for r in self.args.resources]
        self.weights = np.array([r.weight for r in self.args.resources], dtype=np.int64)
        self.shape = [(p.utilization, p.score) for p in self.args.shape]

    def pre_score(self, cycle: CycleState, nodes: np.ndarray) -> Status:
        cycle.data[self.name] = pod_request_list(self.snapshot, cycle.pod, self.resources, use_requested=False)
        return Status()

    def score(self, cycle: CycleState, nodes: np.ndarray) -> np.ndarray:
        req, alloc = cycle_allocation(self.snapshot, cycle, self.name, nodes, self.resources, use_requested=False)
        strategy = self.args.strategy
        if strategy == ScoringStrategyType.MOST_ALLOCATED:
            return most_allocated(req, alloc, self.weights)
        if strategy == ScoringStrategyType.REQUESTED_TO_CAPACITY_RATIO:
            return requested_to_capacity_ratio(req, alloc, self.weights, self.shape)
        return least_allocated(req, alloc, self.weights)

    def normalize(self, cycle: CycleState, scores: np.ndarray) -> np.ndarray:
        return scores
