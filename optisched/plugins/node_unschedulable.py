"""NodeUnschedulable: ``spec.unschedulable`` nodes reject pods that do not tolerate the
``node.kubernetes.io/unschedulable:NoSchedule`` taint.

Upstream: ``pkg/scheduler/framework/plugins/nodeunschedulable/node_unschedulable.go``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..framework import Code, CycleState, Fidelity, FilterResult, Plugin, Status
from ..model.objects import Taint, TaintEffect
from ..model.snapshot import Snapshot
from . import names

if TYPE_CHECKING:
    from ..optimal.classes import PodClass
    from ..optimal.model import BatchModel

__all__ = ["REASON", "NodeUnschedulable"]

REASON = "node(s) were unschedulable"
_TAINT = Taint(key="node.kubernetes.io/unschedulable", effect=TaintEffect.NO_SCHEDULE)


class NodeUnschedulable(Plugin):
    name = names.NODE_UNSCHEDULABLE
    points = frozenset({"filter"})
    static = True
    placement_free = True

    def __init__(self, snapshot: Snapshot, profile: object) -> None:
        self.unschedulable = snapshot.state.unschedulable

    def pre_filter(self, cycle: CycleState) -> Status:
        return Status()

    def filter(self, cycle: CycleState, nodes: np.ndarray) -> FilterResult:
        if any(t.tolerates(_TAINT) for t in cycle.pod_obj.spec.tolerations):
            return FilterResult.passing(len(nodes))
        return FilterResult.from_mask(self.unschedulable[nodes], REASON, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    # ------------------------------------------------------------------ CP-SAT side
    filter_fidelity = Fidelity.EXACT

    def restrict(self, model: BatchModel, classes: list[PodClass]) -> None:
        """The pod and the node decide: the greedy verdict over every node is the domain."""
        model.restrict_by_filter(self, classes)

    def encode_filter(self, model: BatchModel, classes: list[PodClass]) -> None:
        """Nothing here depends on where other pods go."""
