"""kube-scheduler's node order: the nodeTree's zone round-robin and the feasible-node budget.

``pkg/scheduler/backend/cache/node_tree.go`` groups nodes by zone key (region and
zone labels, ``k8s.io/component-helpers/node/topology.GetZoneKey``) in the order
nodes were added, and lists them by taking one node from each zone in turn.
``numFeasibleNodesToFind`` (``pkg/scheduler/schedule_one.go``) bounds how many
feasible nodes a cycle looks for.
"""
from __future__ import annotations

import numpy as np

from ..model.objects import Node
from ..model.state import REGION_LABEL, ZONE_LABEL

__all__ = [
    "MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND",
    "MIN_FEASIBLE_NODES_TO_FIND",
    "node_tree_order",
    "num_feasible_nodes_to_find",
    "zone_key",
]

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5


def zone_key(node: Node) -> str:
    """``GetZoneKey``: region and zone (GA labels, else the beta failure-domain labels)."""
    labels = node.metadata.labels
    zone = labels.get(ZONE_LABEL, labels.get("failure-domain.beta.kubernetes.io/zone", ""))
    region = labels.get(REGION_LABEL, labels.get("failure-domain.beta.kubernetes.io/region", ""))
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


def node_tree_order(nodes: list[Node]) -> np.ndarray:
    """Node rows in nodeTree ``list()`` order: round-robin over zones, each zone in insertion order."""
    zones: dict[str, list[int]] = {}
    for i, n in enumerate(nodes):
        zones.setdefault(zone_key(n), []).append(i)
    out: list[int] = []
    depth = max((len(v) for v in zones.values()), default=0)
    for k in range(depth):
        for members in zones.values():
            if k < len(members):
                out.append(members[k])
    return np.array(out, dtype=np.int64)


def num_feasible_nodes_to_find(percentage: int, num_all_nodes: int) -> int:
    """``numFeasibleNodesToFind``: all nodes below 100, else the (adaptive when 0) percentage, at least 100."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    if percentage == 0:
        percentage = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    n = num_all_nodes * percentage // 100
    return max(n, MIN_FEASIBLE_NODES_TO_FIND)
