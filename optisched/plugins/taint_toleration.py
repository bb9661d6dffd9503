"""TaintToleration: NoSchedule/NoExecute taints a pod does not tolerate filter the node out;
intolerable PreferNoSchedule taints lower its score.

Upstream: ``pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go``. Vectorized over the
cluster's distinct taints: per pod, which distinct taints it tolerates is computed once, then a
matrix product gives every node's count.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..framework import Code, CycleState, Fidelity, FilterResult, Plugin, Status, default_normalize
from ..model.objects import Pod, TaintEffect, Toleration
from ..model.snapshot import Snapshot
from ..optimal.score_terms import encode_static
from . import names

if TYPE_CHECKING:
    from ..optimal.classes import PodClass
    from ..optimal.model import BatchModel
    from ..optimal.tiers import Linear

__all__ = ["REASON", "TaintToleration", "untolerated"]

REASON = "node(s) had untolerated taint(s)"


def untolerated(tolerations: list[Toleration], taints: list, effects: set[TaintEffect]) -> np.ndarray:
    """For each taint: it has one of ``effects`` and no toleration tolerates it."""
    return np.array([t.effect in effects and not any(tol.tolerates(t) for tol in tolerations) for t in taints],
                    dtype=bool)


class TaintToleration(Plugin):
    name = names.TAINT_TOLERATION
    points = frozenset({"filter", "preScore", "score"})
    static = True
    placement_free = True

    @staticmethod
    def score_key(pod: Pod) -> tuple:
        return tuple(pod.spec.tolerations),

    def __init__(self, snapshot: Snapshot, profile: object) -> None:
        self.taints, self.matrix = snapshot.state.distinct_taints  # [T], bool [N, T]

    def pre_filter(self, cycle: CycleState) -> Status:
        return Status()

    def _count(self, cycle: CycleState, nodes: np.ndarray, effects: set[TaintEffect]) -> np.ndarray:
        if not self.taints:
            return np.zeros(len(nodes), dtype=np.int64)
        bad = untolerated(cycle.pod_obj.spec.tolerations, self.taints, effects)
        if not bad.any():
            return np.zeros(len(nodes), dtype=np.int64)
        return self.matrix[nodes][:, bad].sum(axis=1, dtype=np.int64)

    def filter(self, cycle: CycleState, nodes: np.ndarray) -> FilterResult:
        fails = self._count(cycle, nodes, {TaintEffect.NO_SCHEDULE, TaintEffect.NO_EXECUTE}) > 0
        return FilterResult.from_mask(fails, REASON, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    def pre_score(self, cycle: CycleState, nodes: np.ndarray) -> Status:
        return Status()

    def score(self, cycle: CycleState, nodes: np.ndarray) -> np.ndarray:
        """Count of intolerable PreferNoSchedule taints; only tolerations with an empty or
        PreferNoSchedule effect count (``getAllTolerationPreferNoSchedule``)."""
        tols = [t for t in cycle.pod_obj.spec.tolerations if t.effect in (None, TaintEffect.PREFER_NO_SCHEDULE)]
        if not self.taints:
            return np.zeros(len(nodes), dtype=np.int64)
        bad = untolerated(tols, self.taints, {TaintEffect.PREFER_NO_SCHEDULE})
        return self.matrix[nodes][:, bad].sum(axis=1, dtype=np.int64) if bad.any() else np.zeros(len(nodes), np.int64)

    def normalize(self, cycle: CycleState, scores: np.ndarray) -> np.ndarray:
        return default_normalize(scores, reverse=True)

    # ------------------------------------------------------------------ CP-SAT side
    filter_fidelity = Fidelity.EXACT

    def restrict(self, model: BatchModel, classes: list[PodClass]) -> None:
        """Untolerated NoSchedule/NoExecute taints: the greedy verdict over every node is the domain."""
        model.restrict_by_filter(self, classes)

    def encode_filter(self, model: BatchModel, classes: list[PodClass]) -> None:
        """Nothing here depends on where other pods go."""

    score_fidelity = Fidelity.SURROGATE

    def encode_score(self, model: BatchModel, classes: list[PodClass], weight: int, objective: Linear) -> None:
        """Per arrival, the greedy score against the fixed pods: untolerated PreferNoSchedule taints,
        reverse-normalized over the nodes the class may use (SURROGATE: kube normalizes over the nodes
        feasible when the pod is scheduled, which the batch's other pods change)."""
        encode_static(self, model, classes, weight, objective)
