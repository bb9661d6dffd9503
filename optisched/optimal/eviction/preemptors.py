"""Who may preempt whom in a batch: kube's rule that a running pod of priority q leaves a node only for a
pod of priority > q whose ``preemptionPolicy`` is not ``Never`` (kubernetes v1.35.4
``pkg/scheduler/framework/plugins/defaultpreemption``), read on a placement and on a model."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from ortools.sat.python import cp_model

from ...model.objects import PreemptionPolicy

if TYPE_CHECKING:
    from ..classes import Batch, PodClass
    from ..model import BatchModel

__all__ = ["preemptor_priority", "preemptors_of"]


def preemptor_priority(batch: Batch, node_of: np.ndarray) -> np.ndarray:
    """int64 [N]: per node, the highest priority of a batch pod that arrives there and may preempt (the
    int64 minimum where none does). A running pod of lower priority that leaves such a node is a victim."""
    state = batch.state
    best = np.full(state.num_nodes, np.iinfo(np.int64).min, dtype=np.int64)
    arrived = np.flatnonzero((node_of >= 0) & (node_of != state.pod_node) & (batch.class_of >= 0))
    for p in arrived.tolist():
        if state.pods[p].spec.preemption_policy != PreemptionPolicy.NEVER:
            best[node_of[p]] = max(best[node_of[p]], state.pod_priority[p])
    return best


def preemptors_of(model: BatchModel, c: PodClass, node: int) -> list[cp_model.IntVar]:
    """The arrival variables on ``node`` of the classes that may preempt ``c``'s pods there (one list per
    node and priority, shared by the classes of that priority: do not modify)."""
    cache = model.preemptors_cache
    hit = cache.get((node, c.priority))
    if hit is None:
        hit = cache[(node, c.priority)] = [v for d, v, _ in model.node_arrivals()[node]
                                           if d.preempts and d.priority > c.priority]
    return hit
