"""Disruption a placement causes to pods already running: evictions, moves, PodDisruptionBudgets.

A pod bound in the input (``state.pod_node >= 0``) that a run leaves unplaced is *evicted*; one that it
places on another node is *moved* (a move is an eviction and a new pod: the running one stops).
A budget is *violated* when more of the pods it covers are disrupted than its ``disruptionsAllowed``
(the eviction API's rule), i.e. when its healthy count falls below the desired healthy count.
Budgets are read as the input has them (:func:`optisched.model.pdb.budget_views`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.pdb import budget_views
from ..model.state import ClusterState

__all__ = ["PDBViolation", "evicted", "moved", "pdb_violations"]


def evicted(state: ClusterState, node_of: np.ndarray) -> np.ndarray:
    """bool [P]: bound in the input, not placed after the run."""
    return (state.pod_node >= 0) & (np.asarray(node_of) < 0)


def moved(state: ClusterState, node_of: np.ndarray) -> np.ndarray:
    """bool [P]: bound in the input, placed on another node after the run."""
    node_of = np.asarray(node_of)
    return (state.pod_node >= 0) & (node_of >= 0) & (node_of != state.pod_node)


@dataclass(frozen=True)
class PDBViolation:
    pdb: str  # namespace/name
    disrupted: int  # covered pods evicted or moved
    disruptions_allowed: int
    healthy_after: int  # current healthy minus disrupted
    desired_healthy: int


def pdb_violations(state: ClusterState, node_of: np.ndarray) -> list[PDBViolation]:
    """The budgets the run's evictions and moves break, in input order."""
    if not state.cluster.pdbs:
        return []
    disrupted = evicted(state, node_of) | moved(state, node_of)
    out = []
    for view in budget_views(state.cluster.pdbs, state.pods, (state.pod_node >= 0).tolist()):
        hit = int(np.count_nonzero(disrupted[list(view.pods)])) if view.pods else 0
        if hit > view.disruptions_allowed:
            meta = view.pdb.metadata
            out.append(PDBViolation(f"{meta.namespace}/{meta.name}", hit, view.disruptions_allowed,
                                    view.current_healthy - hit, view.desired_healthy))
    return out
