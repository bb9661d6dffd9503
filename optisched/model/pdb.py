"""PodDisruptionBudgets: which pods they cover and how many disruptions they allow.

When a budget has no ``status``, ``disruptionsAllowed`` is computed as the
disruption controller would (``pkg/controller/disruption``) from the pods bound to
nodes: expected = healthy = the bound pods the selector matches in the budget's
namespace, desired healthy from ``minAvailable`` or ``maxUnavailable``
(percentages round up), allowed = max(0, healthy − desired).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..constraints.selectors import label_selector_matches
from .objects import Pod, PodDisruptionBudget

__all__ = ["BudgetView", "budget_views", "scaled_value"]


def scaled_value(v: int | str, total: int, round_up: bool = True) -> int:
    """``intstr.GetScaledValueFromIntOrPercent``."""
    if isinstance(v, int):
        return v
    pct = int(v[:-1])
    x = pct * total / 100
    return math.ceil(x) if round_up else math.floor(x)


@dataclass(frozen=True)
class BudgetView:
    pdb: PodDisruptionBudget
    pods: tuple[int, ...]  # rows of the bound pods it selects
    disruptions_allowed: int
    desired_healthy: int
    current_healthy: int


def _covers(pdb: PodDisruptionBudget, pod: Pod) -> bool:
    if (pod.metadata.namespace or "default") != pdb.metadata.namespace:
        return False
    sel = pdb.spec.selector
    # policy/v1: an empty selector matches every pod in the namespace; a nil one none
    return label_selector_matches(sel, pod.metadata.labels)


def budget_views(pdbs: list[PodDisruptionBudget], pods: list[Pod], bound: list[bool]) -> list[BudgetView]:
    out = []
    for pdb in pdbs:
        rows = tuple(i for i, p in enumerate(pods) if bound[i] and _covers(pdb, p))
        expected = healthy = len(rows)
        spec = pdb.spec
        if spec.max_unavailable is not None:
            desired = max(expected - scaled_value(spec.max_unavailable, expected), 0)
        elif spec.min_available is not None:
            desired = scaled_value(spec.min_available, expected)
        else:
            desired = expected  # neither field set: treated as allowing no disruption
        st = pdb.status
        if st is not None and st.disruptions_allowed is not None:
            allowed = st.disruptions_allowed
            healthy = st.current_healthy if st.current_healthy is not None else healthy
            desired = st.desired_healthy if st.desired_healthy is not None else desired
        else:
            allowed = max(healthy - desired, 0)
        out.append(BudgetView(pdb, rows, allowed, desired, healthy))
    return out
