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

from .objects import Pod, PodDisruptionBudget
from .selectors import selector_of

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


def _index(pods: list[Pod], bound: list[bool]) -> tuple[dict, dict]:
    """Bound pods by namespace, and by (namespace, label, value), to avoid a scan per budget."""
    by_ns: dict[str, list[int]] = {}
    by_label: dict[tuple[str, str, str], list[int]] = {}
    for i, p in enumerate(pods):
        if not bound[i]:
            continue
        ns = p.metadata.namespace or "default"
        by_ns.setdefault(ns, []).append(i)
        for k, v in p.metadata.labels.items():
            by_label.setdefault((ns, k, v), []).append(i)
    return by_ns, by_label


def budget_views(pdbs: list[PodDisruptionBudget], pods: list[Pod], bound: list[bool]) -> list[BudgetView]:
    out = []
    by_ns, by_label = _index(pods, bound) if pdbs else ({}, {})
    for pdb in pdbs:
        ns = pdb.metadata.namespace
        sel = pdb.spec.selector
        pool = by_ns.get(ns, [])
        if sel is not None and sel.match_labels:
            k, v = next(iter(sel.match_labels.items()))
            pool = by_label.get((ns, k, v), [])
        # policy/v1: an empty selector matches every pod in the namespace, a nil one none; parsed once
        # per budget, not per pod (each wave's replay builds these)
        parsed = selector_of(sel)
        rows = tuple(i for i in pool if (pods[i].metadata.namespace or "default") == ns
                     and parsed.matches(pods[i].metadata.labels))
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
