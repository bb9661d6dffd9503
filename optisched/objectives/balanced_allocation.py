"""NodeResourcesBalancedAllocation: favour nodes whose resource fractions stay balanced.

Upstream: ``pkg/scheduler/framework/plugins/noderesources/balanced_allocation.go``: fractions of the
pod's actual requests (``useRequested``) plus the node's requested over allocatable, capped at 1;
``(1 - std) * 100`` truncated, with std = |f1 - f2| / 2 for two resources. Best-effort pods (no
request for any configured resource) skip the plugin. No NormalizeScore.
"""
from __future__ import annotations

import numpy as np

from ..framework import MAX_NODE_SCORE, CycleState, Status
from ..model.snapshot import Snapshot
from ..profile import BalancedAllocationArgs
from .resource_allocation import cycle_allocation, pod_request_list

__all__ = ["BalancedAllocation", "balanced_score"]


def balanced_score(req: np.ndarray, alloc: np.ndarray) -> np.ndarray:
    """``balancedResourceScorer`` over rows of (requested, allocatable), float64 as Go."""
    present = alloc != 0
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(present, np.minimum(req / np.where(present, alloc, 1).astype(np.float64), 1.0), 0.0)
    k = present.sum(axis=1)
    std = np.zeros(len(req))
    two = k == 2
    if two.any():
        # the two present fractions, in resource order
        idx = np.argsort(~present[two], axis=1, kind="stable")[:, :2]
        f = np.take_along_axis(frac[two], idx, axis=1)
        std[two] = np.abs((f[:, 0] - f[:, 1]) / 2)
    many = k > 2
    if many.any():
        fr = frac[many]
        pr = present[many]
        mean = fr.sum(axis=1) / k[many]
        dev = np.where(pr, (fr - mean[:, None]) ** 2, 0.0)
        std[many] = np.sqrt(dev.sum(axis=1) / k[many])
    return ((1 - std) * MAX_NODE_SCORE).astype(np.int64)


class BalancedAllocation:
    name = "NodeResourcesBalancedAllocation"

    def __init__(self, snapshot: Snapshot, profile: object) -> None:
        self.snapshot = snapshot
        args: BalancedAllocationArgs = getattr(profile, "balanced", BalancedAllocationArgs())
        self.resources = [r.name for r in args.resources]

    def pre_score(self, cycle: CycleState, nodes: np.ndarray) -> Status:
        req = pod_request_list(self.snapshot, cycle.pod, self.resources, use_requested=True)
        if not req.any():
            return Status.skip()
        cycle.data[self.name] = req
        return Status()

    def score(self, cycle: CycleState, nodes: np.ndarray) -> np.ndarray:
        req, alloc = cycle_allocation(self.snapshot, cycle, self.name, nodes, self.resources, use_requested=True)
        return balanced_score(req, alloc)

    def normalize(self, cycle: CycleState, scores: np.ndarray) -> np.ndarray:
        return scores
