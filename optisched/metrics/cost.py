"""What the nodes a placement uses cost per hour, from the node label or annotation :data:`COST_KEY`.

The price is a decimal number of any currency per hour (``"0.192"``) from 0 to :data:`MAX_COST`, the
same on every node of a cluster; optimal mode's ``pack`` objective reads it through :func:`node_costs` too.
"""
from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..model.hourly_cost import COST_KEY, MAX_COST, cost_error, cost_text, parse_cost
from ..model.state import ClusterState
from .resources import pods_per_node

__all__ = ["COST_KEY", "MAX_COST", "hourly_cost", "node_costs"]


def node_costs(state: ClusterState) -> np.ndarray | None:
    """Per node the hourly cost in thousandths (label, else annotation :data:`COST_KEY`); None when no
    node has one. A node without a cost costs the highest cost found, so an unpriced node is never the
    cheap choice. (Loaded nodes were checked on load, :mod:`optisched.model.hourly_cost`.)"""
    raw: list = []
    for node in state.nodes:
        found = cost_text(node.metadata)
        if found is None:
            raw.append(None)
            continue
        value = parse_cost(found[1])
        if value is None:
            raise InputError(cost_error(found[1]), obj=f"Node/{node.metadata.name}",
                             path=f".metadata.{found[0]}[{COST_KEY}]")
        raw.append(value)
    known = [v for v in raw if v is not None]
    if not known:
        return None
    top = max(known)
    return np.array([int((top if v is None else v) * 1000) for v in raw], dtype=np.int64)


def hourly_cost(state: ClusterState, node_of: np.ndarray) -> float | None:
    """The summed hourly cost of the nodes that hold at least one pod (the nodes ``nodes_used``
    counts); None when no node carries a cost."""
    costs = node_costs(state)
    if costs is None:
        return None
    used = pods_per_node(state, node_of) > 0
    return int(costs[used].sum()) / 1000
