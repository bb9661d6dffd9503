"""NodeName: a pod that names a node (``spec.nodeName``) fits only that node.

Upstream: ``pkg/scheduler/framework/plugins/nodename/node_name.go``.
"""
from __future__ import annotations

import numpy as np

from ..framework import Code, CycleState, FilterResult, Status
from ..model.snapshot import Snapshot

__all__ = ["REASON", "NodeName"]

REASON = "node(s) didn't match the requested node name"


class NodeName:
    name = "NodeName"

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
