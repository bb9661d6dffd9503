"""Resource metrics of a placement: what each node carries, how full it is, how many nodes are used.

Pure functions over ``(state, node_of)``: ``node_of[p]`` is pod row ``p``'s node row after a run (-1 =
not placed). Every pod that ``node_of`` places counts, bound or newly placed, in the integer units of
:class:`~optisched.model.state.ClusterState` (millicores, bytes, counts). Ratios are taken over the
schedulable nodes (``spec.unschedulable`` unset): cordoned nodes take no new pods, so their capacity
is not capacity a placement could have used.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.state import ClusterState

__all__ = [
    "UtilizationStats",
    "allocation_ratio",
    "free_capacity",
    "nodes_used",
    "pods_per_node",
    "requested_per_node",
    "utilization",
    "utilization_stats",
]


def requested_per_node(state: ClusterState, node_of: np.ndarray) -> np.ndarray:
    """int64 [N, R]: the summed effective requests of the pods ``node_of`` puts on each node."""
    node_of = np.asarray(node_of, dtype=np.int64)
    placed = node_of >= 0
    out = np.zeros(state.allocatable.shape, dtype=np.int64)
    np.add.at(out, node_of[placed], state.pod_requests[placed])
    return out


def pods_per_node(state: ClusterState, node_of: np.ndarray) -> np.ndarray:
    """int64 [N]: how many pods each node holds."""
    node_of = np.asarray(node_of, dtype=np.int64)
    return np.bincount(node_of[node_of >= 0], minlength=state.num_nodes).astype(np.int64)


def free_capacity(state: ClusterState, node_of: np.ndarray) -> np.ndarray:
    """int64 [N, R]: allocatable minus requested, never below zero (an overcommitted input node has none)."""
    return np.maximum(state.allocatable - requested_per_node(state, node_of), 0)


def nodes_used(state: ClusterState, node_of: np.ndarray) -> int:
    """Nodes that hold at least one pod."""
    return int(np.count_nonzero(pods_per_node(state, node_of)))


def allocation_ratio(state: ClusterState, node_of: np.ndarray) -> np.ndarray:
    """float [R]: requested / allocatable summed over the schedulable nodes; NaN for a resource none of
    them offers."""
    ok = ~state.unschedulable
    req = requested_per_node(state, node_of)[ok].sum(axis=0)
    alloc = state.allocatable[ok].sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(alloc > 0, req / np.where(alloc > 0, alloc, 1), np.nan)


def utilization(state: ClusterState, node_of: np.ndarray) -> np.ndarray:
    """float [N, R]: each node's requested / allocatable; NaN where the node offers none of the resource."""
    alloc = state.allocatable
    req = requested_per_node(state, node_of)
    return np.where(alloc > 0, req / np.where(alloc > 0, alloc, 1), np.nan)


@dataclass(frozen=True)
class UtilizationStats:
    """Per resource, over the schedulable nodes that offer it: the distribution of node utilization."""

    mean: np.ndarray  # float [R]
    max: np.ndarray  # float [R]
    std: np.ndarray  # float [R], population standard deviation (ddof 0)
    nodes: np.ndarray  # int64 [R]: how many nodes the statistics cover


def utilization_stats(state: ClusterState, node_of: np.ndarray) -> UtilizationStats:
    """Mean, max and standard deviation of per-node utilization (empty nodes included: a placement that
    leaves nodes idle has a lower mean and a wider spread than one that uses them evenly)."""
    util = utilization(state, node_of)[~state.unschedulable]
    covered = ~np.isnan(util)
    count = covered.sum(axis=0)
    filled = np.where(covered, util, 0.0)
    safe = np.maximum(count, 1)
    mean = filled.sum(axis=0) / safe
    var = (np.where(covered, util - mean, 0.0) ** 2).sum(axis=0) / safe
    none = count == 0
    top = np.where(covered, util, -np.inf).max(axis=0, initial=-np.inf)
    return UtilizationStats(np.where(none, np.nan, mean), np.where(none, np.nan, top),
                            np.where(none, np.nan, np.sqrt(var)), count.astype(np.int64))
