"""NodeResourcesFit, PreScore and Score: LeastAllocated, MostAllocated, RequestedToCapacityRatio.

Upstream (v1.35): ``pkg/scheduler/framework/plugins/noderesources/fit.go`` (``PreScore``, ``Score``;
no ``ScoreExtensions``, so no NormalizeScore), ``resource_allocation.go`` (``score``,
``calculateResourceAllocatableRequest``, ``calculatePodResourceRequest``), ``least_allocated.go``,
``most_allocated.go``, ``requested_to_capacity_ratio.go`` and ``helper/shape_score.go``.

For each configured resource (``scoringStrategy.resources``, default cpu:1, memory:1) and node:

* requested = what the node's pods request + what this pod requests. For cpu and memory both are the
  *non-zero* requests (100m / 200 MiB for containers that set none: ``NodeInfo.NonZeroRequested``,
  ``useRequested`` is false); every other resource uses the actual requests.
* a resource is left out of the node's score (allocatable 0) when the node does not have it, when it
  is a scalar resource (extended, hugepages…) the pod does not request, or when the scheduler cannot
  account it at all (``pods``, or a name that is neither native nor scalar).
* LeastAllocated: ``(capacity - requested) * 100 / capacity`` (0 when requested > capacity);
  MostAllocated: ``min(requested, capacity) * 100 / capacity``; both averaged with the weights,
  integer division (``nodeScore / weightSum``, 0 when no resource counts).
* RequestedToCapacityRatio: utilization ``requested * 100 / capacity`` (integer; 100 when requested
  > capacity) through ``BuildBrokenLinearFunction`` of the shape, whose scores (0..10) are scaled by
  ``MaxNodeScore / MaxCustomPriorityScore`` = 10; resources scoring 0 leave both sums; the result is
  ``math.Round(nodeScore / weightSum)``.

PreScore never skips (only the DRA extended-resource path, off in v1.35, can fail it).

The batch objective is a SURROGATE (a pod's score depends on the pods placed before it on its node):
LeastAllocated, and RequestedToCapacityRatio with a decreasing shape, *spread* load; MostAllocated, and
an increasing shape, *pack* pods onto fewer nodes (:meth:`NodeResourcesFitScore.encode_score`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...framework import MAX_NODE_SCORE, CycleState, Fidelity, Plugin, Status
from ...model.snapshot import Snapshot
from ...optimal.score_terms import SCORE_SCALE, add_var, class_nodes, convex_load, node_utilization, used_flag
from ...profile import NodeResourcesFitArgs, ResourceSpec, ScoringStrategyType
from .. import names
from ..shape_score import broken_linear, go_div, go_round
from .fit import is_scalar_resource_name
from .resource_allocation import allocation_matrix, pod_request_list

if TYPE_CHECKING:
    from ...optimal.classes import PodClass
    from ...optimal.model import BatchModel
    from ...optimal.tiers import Linear

__all__ = [
    "MAX_CUSTOM_PRIORITY_SCORE",
    "MAX_UTILIZATION",
    "NodeResourcesFitScore",
    "ResourceAllocationScorer",
    "broken_linear",
    "go_div",
    "go_round",
    "least_allocated",
    "most_allocated",
    "requested_to_capacity_ratio",
    "scorable_resource",
]

_NATIVE = ("cpu", "memory", "ephemeral-storage")
MAX_UTILIZATION = 100  # requested_to_capacity_ratio.go maxUtilization
MAX_CUSTOM_PRIORITY_SCORE = 10  # config.MaxCustomPriorityScore


# ------------------------------------------------------------------ resourceAllocationScorer inputs
def scorable_resource(name: str) -> bool:
    """Whether ``calculateResourceAllocatableRequest`` can return a non-zero allocatable for ``name``:
    cpu, memory, ephemeral-storage, or a name ``framework.Resource`` keeps as a scalar resource."""
    return name in ("cpu", "memory", "ephemeral-storage") or is_scalar_resource_name(name)


class ResourceAllocationScorer:
    """``resourceAllocationScorer``: the per-resource (requested, allocatable) inputs both resource
    scorers read, for the configured ``resources``; ``use_requested`` picks actual over non-zero
    cpu/memory requests (true for BalancedAllocation, false for NodeResourcesFit)."""

    def __init__(self, snapshot: Snapshot, resources: tuple[ResourceSpec, ...], use_requested: bool) -> None:
        self.snapshot = snapshot
        self.resources = [r.name for r in resources]
        self.weights = np.array([r.weight for r in resources], dtype=np.int64)
        self.use_requested = use_requested
        self.scorable = np.array([scorable_resource(r) for r in self.resources], dtype=bool)
        self._pod_requests: dict[int, np.ndarray] = {}
        self.columns = self._plain_columns()

    def _plain_columns(self) -> list[tuple[np.ndarray, np.ndarray]] | None:
        """(allocatable, used) per configured resource over all nodes when no node's score leaves any
        resource out: every one is cpu, memory or ephemeral-storage (never skipped for a zero request)
        and every node has it (allocatable ≠ 0). ``used`` is a view of the snapshot's column; None
        otherwise."""
        state, snap = self.snapshot.state, self.snapshot
        if not self.resources or any(r not in _NATIVE or r not in state.resources for r in self.resources):
            return None
        out = []
        for r in self.resources:
            j = state.resource_col(r)
            alloc = np.ascontiguousarray(state.allocatable[:, j])
            if not alloc.all():
                return None
            nonzero = not self.use_requested and r in ("cpu", "memory")
            out.append((alloc, snap.nonzero[:, 0 if r == "cpu" else 1] if nonzero else snap.requested[:, j]))
        return out

    def pod_requests(self, pod: int) -> np.ndarray:
        """``calculatePodResourceRequestList``: the pod's request per configured resource (read-only)."""
        req = self._pod_requests.get(pod)
        if req is None:
            req = pod_request_list(self.snapshot, pod, self.resources, self.use_requested)
            req[~self.scorable] = 0
            req.flags.writeable = False
            self._pod_requests[pod] = req
        return req

    def plain_inputs(self, nodes: np.ndarray, pod_req: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]] | None:
        """(requested with the pod, allocatable) per configured resource, as columns over ``nodes``, when
        ``columns`` applies (then ``inputs`` has no zeroed entry); None otherwise."""
        if self.columns is None:
            return None
        return [(used[nodes] + int(r), alloc[nodes]) for (alloc, used), r in zip(self.columns, pod_req.tolist())]

    def inputs(self, nodes: np.ndarray, pod_req: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(requested [n, k], allocatable [n, k]): requested includes the pod; both 0 for a resource the
        node's score leaves out."""
        req, alloc = allocation_matrix(self.snapshot, nodes, self.resources, pod_req, self.use_requested)
        req[:, ~self.scorable] = 0
        alloc[:, ~self.scorable] = 0
        return req, alloc

    def cycle_inputs(self, cycle: CycleState, key: str, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``inputs`` with the request list PreScore stored under ``key`` (computed if PreScore did not run)."""
        pod_req = cycle.data.get(key)
        if pod_req is None:
            pod_req = self.pod_requests(cycle.pod)
        return self.inputs(nodes, pod_req)


# ------------------------------------------------------------------------------- the strategies
def _weighted_mean(per_resource: np.ndarray, counted: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``nodeScore / weightSum`` over the counted resources, integer division; 0 when none counts."""
    w = np.where(counted, weights, 0)
    total = (per_resource * w).sum(axis=1)
    wsum = w.sum(axis=1)
    return np.where(wsum > 0, total // np.maximum(wsum, 1), 0)


def least_allocated(req: np.ndarray, alloc: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``leastResourceScorer`` over rows of (requested, allocatable) per resource."""
    present = alloc != 0
    cap = np.where(present, alloc, 1)
    s = np.where(present & (req <= alloc), (alloc - req) * MAX_NODE_SCORE // cap, 0)
    return _weighted_mean(s, present, weights)


def most_allocated(req: np.ndarray, alloc: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``mostResourceScorer``: requested is capped at capacity (non-zero defaults can exceed it)."""
    present = alloc != 0
    cap = np.where(present, alloc, 1)
    s = np.where(present, np.minimum(req, alloc) * MAX_NODE_SCORE // cap, 0)
    return _weighted_mean(s, present, weights)


def requested_to_capacity_ratio(req: np.ndarray, alloc: np.ndarray, weights: np.ndarray,
                                shape: list[tuple[int, int]]) -> np.ndarray:
    """``requestedToCapacityRatioScorer`` with ``shape`` as configured (scores 0..10, scaled here)."""
    scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    points = [(int(u), int(s) * scale) for u, s in shape]
    present = alloc != 0
    cap = np.where(present, alloc, 1)
    util = np.where(present & (req <= alloc), req * MAX_UTILIZATION // cap, MAX_UTILIZATION)
    s = broken_linear(points, util)
    counted = present & (s > 0)
    w = np.where(counted, weights, 0)
    total = (s * w).sum(axis=1)
    wsum = w.sum(axis=1)
    mean = total.astype(np.float64) / np.maximum(wsum, 1).astype(np.float64)
    return np.where(wsum > 0, go_round(mean), 0)


# ------------------------------------------------------------------------------------ the plugin
class NodeResourcesFitScore(Plugin):
    """PreScore + Score of ``NodeResourcesFit`` with the profile's scoring strategy."""

    name = names.NODE_RESOURCES_FIT
    points = frozenset({"preScore", "score"})
    state_key = "PreScoreNodeResourcesFit"

    def __init__(self, snapshot: Snapshot, profile: object) -> None:
        self.snapshot = snapshot
        self.args: NodeResourcesFitArgs = getattr(profile, "fit", None) or NodeResourcesFitArgs()
        self.scorer = ResourceAllocationScorer(snapshot, self.args.resources, use_requested=False)
        self.strategy = ScoringStrategyType(self.args.strategy)
        self.shape = [(p.utilization, p.score) for p in self.args.shape]
        if self.strategy == ScoringStrategyType.RequestedToCapacityRatio and not self.shape:
            raise ValueError("RequestedToCapacityRatio needs a shape")

    def pre_score(self, cycle: CycleState, nodes: np.ndarray) -> Status:
        cycle.data[self.state_key] = self.scorer.pod_requests(cycle.pod)
        return Status()

    def score(self, cycle: CycleState, nodes: np.ndarray) -> np.ndarray:
        if self.strategy != ScoringStrategyType.RequestedToCapacityRatio:
            pod_req = cycle.data.get(self.state_key)
            columns = self.scorer.plain_inputs(nodes, self.scorer.pod_requests(cycle.pod) if pod_req is None else pod_req)
            if columns is not None:
                return self._plain_score(columns)
        req, alloc = self.scorer.cycle_inputs(cycle, self.state_key, nodes)
        return self.score_inputs(req, alloc)

    def _plain_score(self, columns: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        """``least_allocated`` / ``most_allocated`` when every resource counts on every node: the same
        integer arithmetic, one column at a time, and the weight sum a constant."""
        most = self.strategy == ScoringStrategyType.MostAllocated
        total: np.ndarray | None = None
        for (req, alloc), w in zip(columns, self.scorer.weights.tolist()):
            if most:
                s = np.minimum(req, alloc) * MAX_NODE_SCORE // alloc
            else:
                s = np.where(req <= alloc, (alloc - req) * MAX_NODE_SCORE // alloc, 0)
            total = s * w if total is None else total + s * w
        wsum = int(self.scorer.weights.sum())
        assert total is not None  # columns has every configured resource, and there is one at least
        return total // wsum if wsum > 0 else np.zeros_like(total)

    def score_inputs(self, req: np.ndarray, alloc: np.ndarray) -> np.ndarray:
        """The strategy over (requested, allocatable) rows."""
        weights = self.scorer.weights
        if self.strategy == ScoringStrategyType.MostAllocated:
            return most_allocated(req, alloc, weights)
        if self.strategy == ScoringStrategyType.RequestedToCapacityRatio:
            return requested_to_capacity_ratio(req, alloc, weights, self.shape)
        return least_allocated(req, alloc, weights)

    def normalize(self, cycle: CycleState, scores: np.ndarray) -> np.ndarray:
        return scores

    # ------------------------------------------------------------------ CP-SAT side
    score_fidelity = Fidelity.SURROGATE

    def direction(self) -> int:
        """+1 when the strategy favours emptier nodes (spread), -1 fuller ones (pack), 0 neither."""
        if self.strategy == ScoringStrategyType.LeastAllocated:
            return 1
        if self.strategy == ScoringStrategyType.MostAllocated:
            return -1
        first, last = self.shape[0][1], self.shape[-1][1]
        return (first > last) - (first < last)

    def encode_score(self, model: BatchModel, classes: list[PodClass], weight: int, objective: Linear) -> None:
        """Spread: per configured resource and node the classes may use, a convex penalty ≈ U²/1000 of the
        node's per-mille utilization U at the end, scaled so that one average pod of the batch moving
        from a node at U_A to one at U_B changes it by LeastAllocated's difference (U_A − U_B)/10 points.
        Pack: ``weight × 100`` points for each node without fixed pods that the batch leaves empty."""
        way = self.direction()
        if way == 0 or not classes:
            return
        nodes = class_nodes(model, classes)
        if way > 0:
            self._spread(model, nodes, weight, objective)
            return
        points = SCORE_SCALE * weight * MAX_NODE_SCORE
        for n in nodes.tolist():
            if not model.snapshot.pods_on[n]:
                add_var(objective, used_flag(model, objective, n, f"fit_used{n}"), -points)
                objective.const += points

    def _spread(self, model: BatchModel, nodes: np.ndarray, weight: int, objective: Linear) -> None:
        wsum = int(self.scorer.weights[self.scorer.scorable].sum())
        for name, w, ok in zip(self.scorer.resources, self.scorer.weights.tolist(), self.scorer.scorable.tolist()):
            if not ok or w == 0:
                continue
            for n, util in node_utilization(model, name, False, nodes).items():
                # f(U) = U²/1000 grows by 2·U·Δ/1000 for a pod of Δ per-mille; LeastAllocated's score
                # falls by U/10 points per per-mille: 50/Δ points per unit of f, Δ the mean request here
                mean_delta = sum(k for _, k, _ in util.terms) / len(util.terms)
                coef = max(1, round(SCORE_SCALE * weight * w * 50 / (wsum * mean_delta)))
                add_var(objective, convex_load(model, objective, util, f"fit_load{n}_{name}"), -coef)
