"""Objectives an operator asks for (``--objective``), solved as one tier after the placement and
disruption tiers and before the profile's score: what the user asks for outranks the score surrogate.

* ``pack``: fewest nodes the batch uses among those no fixed pod holds; when nodes carry an hourly
  cost (label or annotation :data:`COST_KEY`, a decimal number such as ``"0.192"``), the lowest total
  cost of those nodes instead (cost in thousandths; a node without one costs the highest cost found,
  so an unpriced node is never the cheap choice).
* ``spread``: per resource (cpu, memory), the highest per-mille utilization of the nodes the batch may
  use, weighted by their number, plus the sum over those nodes of utilization²/1000 so the nodes below
  the maximum spread too.
* ``balance``: the sum over the nodes the batch may use of |cpu − memory| per-mille fractions.

Utilization here counts actual requests (no scoring defaults), fixed pods included.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..errors import InputError
from ..metrics.cost import COST_KEY, node_costs
from .score_terms import abs_var, add_var, convex_load, node_fractions, node_utilization, upper_var, used_flag
from .tiers import Linear

if TYPE_CHECKING:
    from .model import BatchModel

__all__ = ["COST_KEY", "OBJECTIVES", "check_objective", "node_costs", "user_objective"]

OBJECTIVES = ("pack", "spread", "balance")
RESOURCES = ("cpu", "memory")


def check_objective(name: str | None) -> None:
    """Refuse an objective that is not one of :data:`OBJECTIVES`."""
    if name is not None and name not in OBJECTIVES:
        raise InputError(f"--objective: {name!r} is not one of {', '.join(OBJECTIVES)}")


def _var_nodes(model: BatchModel) -> np.ndarray:
    return np.array([n for n, terms in enumerate(model.node_terms()) if terms], dtype=np.int64)


def _pack(model: BatchModel, lin: Linear) -> None:
    costs = node_costs(model.state)
    for n in _var_nodes(model).tolist():
        if not model.snapshot.pods_on[n]:
            add_var(lin, used_flag(model, lin, n, f"pack{n}"), 1 if costs is None else int(costs[n]))


def _spread(model: BatchModel, lin: Linear) -> None:
    nodes = _var_nodes(model)
    for r in RESOURCES:
        utils = node_utilization(model, r, True, nodes)
        if not utils:
            continue
        add_var(lin, upper_var(model, lin, list(utils.values()), f"spread_max_{r}"), len(utils))
        for n, u in utils.items():
            add_var(lin, convex_load(model, lin, u, f"spread{n}_{r}"), 1)


def _balance(model: BatchModel, lin: Linear) -> None:
    for n, row in node_fractions(model, list(RESOURCES), True, _var_nodes(model)).items():
        if len(row) == len(RESOURCES):
            add_var(lin, abs_var(model, lin, row["cpu"].minus(row["memory"]), f"balance{n}"), 1)


def user_objective(model: BatchModel, name: str) -> Linear:
    """The user objective ``name``, to be minimized (the tier ``objective:NAME``)."""
    check_objective(name)
    lin = Linear()
    {"pack": _pack, "spread": _spread, "balance": _balance}[name](model, lin)
    return lin
