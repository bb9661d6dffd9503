"""What the nodes a placement uses cost per hour, from the node label or annotation :data:`COST_KEY`.

The price is a decimal number of any currency per hour (``"0.192"``) from 0 to :data:`MAX_COST`, the
same on every node of a cluster; optimal mode's ``pack`` objective reads it through :func:`node_costs` too.
"""
from __future__ import annotations

from decimal import Decimal, InvalidOperation

import numpy as np

from ..errors import InputError
from ..model.state import ClusterState
from .resources import pods_per_node

__all__ = ["COST_KEY", "MAX_COST", "hourly_cost", "node_costs"]

COST_KEY = "optisched.io/hourly-cost"
MAX_COST = Decimal(1_000_000)  # per node and hour: thousandths summed over 10^5 nodes stay far within int64


def node_costs(state: ClusterState) -> np.ndarray | None:
    """Per node the hourly cost in thousandths (label, else annotation :data:`COST_KEY`); None when no
    node has one. A node without a cost costs the highest cost found, so an unpriced node is never the
    cheap choice."""
    raw: list[Decimal | None] = []
    for node in state.nodes:
        text = node.metadata.labels.get(COST_KEY, node.metadata.annotations.get(COST_KEY))
        if text is None:
            raw.append(None)
            continue
        try:
            value = Decimal(text)
        except InvalidOperation:
            value = Decimal("NaN")
        if not value.is_finite() or not 0 <= value <= MAX_COST:
            where = "labels" if COST_KEY in node.metadata.labels else "annotations"
            raise InputError(f"{text!r} is not a number from 0 to {MAX_COST}", obj=f"Node/{node.metadata.name}",
                             path=f".metadata.{where}[{COST_KEY!r}]")
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
