"""NodeResourcesBalancedAllocation: favour nodes whose resource fractions stay balanced.

Upstream (v1.35.4 and v1.36.2): ``pkg/scheduler/framework/plugins/noderesources/balanced_allocation.go``
(``PreScore``, ``Score``, ``balancedResourceScorer``; no NormalizeScore) on the shared
``resource_allocation.go`` with ``useRequested: true``.

* PreScore: the pod's *actual* requests (``resource.PodRequests``, no 100m / 200 MiB defaults) for the
  configured resources (default cpu, memory); when all are zero the pod is "best effort" for this
  plugin and it returns Skip (issue #129138), so it adds nothing to any node's score.
* Score, per node: for each configured resource the node has (allocatable ≠ 0; a scalar resource the
  pod does not request is left out), fraction = (requested on the node + the pod's request) /
  allocatable as float64, capped at 1. With two fractions std = |f1 − f2| / 2; with more, the
  population standard deviation (mean and sum of squares accumulated in resource order, as Go does);
  with fewer, 0. Score = ``int64((1 − std) · MaxNodeScore)``, truncated (:func:`balanced_score`).
* Since v1.36 (kubernetes PR 135573, no feature gate) the score is the change in balance the pod
  causes: the same score of the node with the pod (*with*) and of its requests without it (*without*,
  same resources left out), then ``MaxNodeScore/2 + (MaxNodeScore/2 + with − without) / 2`` in int64
  (:func:`balanced_change`): about 75 when the balance does not move, towards 100 when the pod
  improves it, towards 50 when it spoils it.

The batch objective is a SURROGATE (a pod's score depends on the pods placed before it on its node):
per node the batch may change, the absolute differences of the resources' per-mille fractions at the
end, minimized (:meth:`BalancedAllocation.encode_score`). With 1.35's score each pod earns the balance
its node ends with; with 1.36's the pods arriving on a node earn, together, half the change in balance
from the node's start to its end (the changes of consecutive arrivals add up), so the same end-state
term counts half as much.
"""
from __future__ import annotations

from itertools import combinations
from typing import TYPE_CHECKING

import numpy as np

from ...framework import MAX_NODE_SCORE, CycleState, Fidelity, Plugin, Status
from ...model.snapshot import Snapshot
from ...optimal.score_terms import SCORE_SCALE, abs_var, add_var, class_nodes, node_fractions
from ...profile import BalancedAllocationArgs
from ...profile.releases import DEFAULT_VERSION, at_least
from .. import names
from .scoring import ResourceAllocationScorer

if TYPE_CHECKING:
    from ...optimal.classes import PodClass
    from ...optimal.model import BatchModel
    from ...optimal.tiers import Linear

__all__ = ["BalancedAllocation", "balanced_change", "balanced_pair", "balanced_score"]


def balanced_score(req: np.ndarray, alloc: np.ndarray) -> np.ndarray:
    """``balancedResourceScorer`` over rows of (requested, allocatable) per resource, float64 as Go."""
    n, k = req.shape
    present = alloc != 0
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = req.astype(np.float64) / np.where(present, alloc, 1).astype(np.float64)
    frac = np.where(present, np.minimum(frac, 1.0), 0.0)
    count = present.sum(axis=1)
    # sequential float sums in resource order (Go's loop), not numpy's pairwise summation
    total = np.zeros(n)
    for j in range(k):
        total = total + frac[:, j]
    std = np.zeros(n)
    two = count == 2
    if two.any():
        first = np.argmax(present, axis=1)
        rest = present.copy()
        rest[np.arange(n), first] = False
        second = np.argmax(rest, axis=1)
        rows = np.arange(n)
        std[two] = np.abs((frac[rows, first] - frac[rows, second]) / 2)[two]
    many = count > 2
    if many.any():
        mean = total / np.maximum(count, 1)
        sq = np.zeros(n)
        for j in range(k):
            d = frac[:, j] - mean
            sq = sq + np.where(present[:, j], d * d, 0.0)
        std[many] = np.sqrt(sq / np.maximum(count, 1))[many]
    return ((1 - std) * MAX_NODE_SCORE).astype(np.int64)


def balanced_pair(req1: np.ndarray, alloc1: np.ndarray, req2: np.ndarray, alloc2: np.ndarray) -> np.ndarray:
    """``balanced_score`` with two resources every node has: std = |f1 − f2| / 2, the same float64 steps."""
    f1 = np.minimum(req1.astype(np.float64) / alloc1.astype(np.float64), 1.0)
    f2 = np.minimum(req2.astype(np.float64) / alloc2.astype(np.float64), 1.0)
    return ((1 - np.abs((f1 - f2) / 2)) * MAX_NODE_SCORE).astype(np.int64)


def balanced_change(with_pod: np.ndarray, without: np.ndarray) -> np.ndarray:
    """v1.36's ``balancedResourceScorer`` from the node's balanced scores with and without the pod (each
    :func:`balanced_score` or :func:`balanced_pair`): both lie in [50, 100], so Go's truncating division
    is a floor here."""
    half = MAX_NODE_SCORE // 2
    return half + (half + with_pod - without) // 2


class BalancedAllocation(Plugin):
    """PreScore + Score of ``NodeResourcesBalancedAllocation``."""

    name = names.BALANCED_ALLOCATION
    points = frozenset({"preScore", "score"})
    state_key = "PreScoreNodeResourcesBalancedAllocation"

    def __init__(self, snapshot: Snapshot, profile: object) -> None:
        self.snapshot = snapshot
        args: BalancedAllocationArgs = getattr(profile, "balanced", None) or BalancedAllocationArgs()
        self.scorer = ResourceAllocationScorer(snapshot, args.resources, use_requested=True)
        # since 1.36 the score is the change in balance the pod causes (balanced_change)
        self.change = at_least(getattr(profile, "kubernetes_version", DEFAULT_VERSION), "1.36")

    def pre_score(self, cycle: CycleState, nodes: np.ndarray) -> Status:
        req = self.scorer.pod_requests(cycle.pod)
        if not req.any():  # isBestEffortPod
            return Status.skip()
        cycle.data[self.state_key] = req
        return Status()

    def score(self, cycle: CycleState, nodes: np.ndarray) -> np.ndarray:
        pod_req = cycle.data.get(self.state_key)
        if pod_req is None:
            pod_req = self.scorer.pod_requests(cycle.pod)
            if not pod_req.any():  # Score without PreScore returns 0 for a best-effort pod
                return np.zeros(len(nodes), dtype=np.int64)
        columns = self.scorer.plain_inputs(nodes, pod_req) if len(self.scorer.resources) == 2 else None
        if columns is not None:
            (req1, alloc1), (req2, alloc2) = columns
            with_pod = balanced_pair(req1, alloc1, req2, alloc2)
            if not self.change:
                return with_pod
            return balanced_change(with_pod, balanced_pair(req1 - int(pod_req[0]), alloc1, req2 - int(pod_req[1]), alloc2))
        req, alloc = self.scorer.inputs(nodes, pod_req)
        with_pod = balanced_score(req, alloc)
        if not self.change:
            return with_pod
        return balanced_change(with_pod, balanced_score(np.where(alloc != 0, req - pod_req, 0), alloc))

    def normalize(self, cycle: CycleState, scores: np.ndarray) -> np.ndarray:
        return scores

    # ------------------------------------------------------------------ CP-SAT side
    score_fidelity = Fidelity.SURROGATE

    def encode_score(self, model: BatchModel, classes: list[PodClass], weight: int, objective: Linear) -> None:
        """Per node where a class that is not best effort here may go, and per pair of configured resources
        the node has, ``|U_i − U_j|`` (per-mille fractions at the end, actual requests, uncapped) costs
        what it costs one pod's score: with two resources std = |f1 − f2|/2, so 100·std = |U1 − U2|/20
        points (shared among the pairs with more resources)."""
        scored = [c for c in classes if self.scorer.pod_requests(c.rep).any()]
        if not scored:
            return
        nodes = class_nodes(model, scored)
        names = [r for r, ok in zip(self.scorer.resources, self.scorer.scorable.tolist()) if ok]
        pairs = len(names) * (len(names) - 1) // 2
        if not pairs:
            return
        coef = max(1, round(SCORE_SCALE * weight * MAX_NODE_SCORE / (2000 * pairs * (2 if self.change else 1))))
        for n, row in node_fractions(model, names, True, nodes).items():
            for a, b in combinations(row, 2):
                if row[a].terms or row[b].terms:
                    add_var(objective, abs_var(model, objective, row[a].minus(row[b]), f"ba{n}_{a}_{b}"), -coef)
