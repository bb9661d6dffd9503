"""NodeName: a pod that names a node (``spec.nodeName``) fits only that node.

Upstream: ``pkg/scheduler/framework/plugins/nodename/node_name.go``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..framework import Code, CycleState, Fidelity, FilterResult, Plugin, Status
from ..model.snapshot import Snapshot
from . import names

if TYPE_CHECKING:
    from ..optimal.classes import PodClass
    from ..optimal.model import BatchModel

__all__ = ["REASON", "NodeName"]

REASON = "node(s) didn't match the requested node name"


class NodeName(Plugin):
    name = names.NODE_NAME
    points = frozenset({"filter"})
    static = True
    placement_free = True

    def __init__(self, snapshot: Snapshot, profile: object) -> None:
        self.state = snapshot.state

    def pre_filter(self, cycle: CycleState) -> Status:
        return Status()

    def filter(self, cycle: CycleState, nodes: np.ndarray) -> FilterResult:
        wanted = cycle.pod_obj.spec.node_name
        if not wanted:
            return FilterResult.passing(len(nodes))
        row = self.state.node_index.get(wanted, -1)
        return FilterResult.from_mask(nodes != row, REASON, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    # ------------------------------------------------------------------ CP-SAT side
    filter_fidelity = Fidelity.EXACT

    def restrict(self, model: BatchModel, classes: list[PodClass]) -> None:
        """The greedy verdict over every node is the domain. A running pod's ``nodeName`` is where it
        runs, not a request: a class of running pods only (re-placed when they move) is not restricted."""
        model.restrict_by_filter(self, [c for c in classes if c.pending])

    def encode_filter(self, model: BatchModel, classes: list[PodClass]) -> None:
        """Nothing here depends on where other pods go."""
