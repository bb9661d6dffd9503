"""What "no worse than doing nothing" means for a plan, measured on any predicted placement.

A plan is carried out wave by wave, and a run may stop after any wave (a budget that never allows the
next eviction, a landing elsewhere than predicted, Ctrl-C). So every wave's predicted end state, not only
the last, must be at least as good as the cluster left alone, on every goal of the plan:

* ``consolidate``: the nodes in use (a node holding only DaemonSet and mirror/static pods is empty), or
  the hourly cost of the nodes in use when nodes carry ``optisched.io/hourly-cost``;
* ``repair``: per repaired rule, the pods breaking it (:func:`.violations.violations`);
* ``balance``: with target thresholds, the nodes over them; without, the most utilized node's cpu or
  memory share (the ``spread`` tier's first term);
* ``fit-pending``: the pending pods placed;

in the order the goals are given, as the target's tiers are solved: a later goal may be worse only
where an earlier one is better than left alone (``--goal consolidate,balance`` raises the most utilized
node to empty nodes), never a rule of ``repair`` for another of its rules; and on the placement guarantees of every plan: per priority, no fewer pods on a node, and (but for
``fit-pending``, which may evict a pod to make room for a more important one) no pod that runs now left
without a node. "Left alone" is the input with kube-scheduler placing its pending pods (one replay
without evictions): the pods it would place anyway are no gain of the plan, the room they take no loss.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..descheduler.utilization import above_any
from ..metrics.cost import node_costs
from ..model.state import ClusterState
from ..plans.landing import predict_landing
from ..profile import SchedulerConfig
from .goals import Goal, empty_nodes
from .start import shares
from .violations import violations

__all__ = ["Measures", "goal_value", "left_alone"]

RESOURCES = ("cpu", "memory")


def left_alone(state: ClusterState, config: SchedulerConfig) -> np.ndarray:
    """The placement kube-scheduler reaches from the input without an eviction: the input itself when
    nothing is pending, else one replay that places the pending pods (preempting as it would)."""
    if not (state.pod_node < 0).any():
        return state.pod_node.copy()
    final = predict_landing(state, config, state.pod_node).replay.placements()
    return np.array([state.node_index[n] if (n := final.get(p.key)) else -1 for p in state.pods], dtype=np.int64)


def goal_value(goal: Goal, values: dict[str, float]) -> tuple[str, float]:
    """The goal's one number (its measure's name and value) from :meth:`Measures.of`: the sum over rules
    for ``repair``."""
    if goal == Goal.REPAIR:
        return "violations", sum(v for k, v in values.items() if k.startswith("violations["))
    key = {Goal.CONSOLIDATE: ("nodesUsed", "hourlyCost"), Goal.BALANCE: ("nodesOverTarget", "utilizationMax"),
           Goal.FIT_PENDING: ("pendingPlaced",)}[goal]
    k = next(k for k in key if k in values)
    return k, values[k]


@dataclass
class Measures:
    """The goals' measures (lower is better, :meth:`of`) and the guarantees, against ``baseline``."""

    state: ClusterState
    config: SchedulerConfig
    goals: list[Goal]
    counted: np.ndarray
    soft: bool
    targets: dict[str, int] | None  # balance's target thresholds (percent per resource)
    baseline: np.ndarray  # the placement left alone (:func:`left_alone`)

    def __post_init__(self) -> None:
        self.costs = node_costs(self.state)
        self.running = self.state.pod_node >= 0
        self.levels = np.unique(self.state.pod_priority)
        self.start = self.of(self.baseline)
        self.placed0 = self._placed(self.baseline)

    def _placed(self, node_of: np.ndarray) -> np.ndarray:
        """int [L]: pods on a node per priority level (ascending)."""
        on = np.asarray(node_of) >= 0
        return np.array([np.count_nonzero(on & (self.state.pod_priority == v)) for v in self.levels])

    def of(self, node_of: np.ndarray) -> dict[str, float]:
        """Per measure name (``nodesUsed``, ``hourlyCost``, ``violations[RULE]``, ``nodesOverTarget``,
        ``utilizationMax``, ``pendingPlaced``), its value on ``node_of``; lower is better but for
        ``pendingPlaced``."""
        node_of = np.asarray(node_of, dtype=np.int64)
        out: dict[str, float] = {}
        state = self.state
        if Goal.CONSOLIDATE in self.goals:
            used = ~empty_nodes(state, node_of)
            if self.costs is None:
                out["nodesUsed"] = int(used.sum())
            else:
                out["hourlyCost"] = int(self.costs[used].sum()) / 1000
        if Goal.REPAIR in self.goals:
            out |= {f"violations[{k}]": v for k, v in violations(state, self.config, node_of, self.counted,
                                                                 self.soft).items()}
        if Goal.BALANCE in self.goals:
            if self.targets:
                pct = 100.0 * shares(state, node_of, list(self.targets))
                out["nodesOverTarget"] = int(above_any(pct, np.array(list(self.targets.values()), float)).sum())
            else:
                keep = [r for r in RESOURCES if r in state.resources]
                out["utilizationMax"] = round(float(shares(state, node_of, keep).max()), 4) if keep else 0.0
        if Goal.FIT_PENDING in self.goals:
            out["pendingPlaced"] = int(np.count_nonzero(node_of[~self.running] >= 0))
        return out

    def worse(self, node_of: np.ndarray) -> str | None:
        """Why ``node_of`` is worse than the cluster left alone (one clause), or None when it is not."""
        now = self.of(node_of)
        for goal in self.goals:  # lexicographic, as the target's tiers: a later goal may give way to a gain
            for k in (k for k in now if _owner(k) == goal):
                before, v = self.start[k], now[k]
                if (v < before) if k == "pendingPlaced" else (v > before + 1e-9):
                    return f"{k} {_fmt(before)} -> {_fmt(v)}"
            gain = goal_value(goal, now)[1] - goal_value(goal, self.start)[1]
            if (gain > 0) if goal == Goal.FIT_PENDING else (gain < -1e-9):
                break
        placed = self._placed(node_of)
        low = np.flatnonzero(placed < self.placed0)
        if Goal.FIT_PENDING in self.goals:  # placement tiers are lexicographic, highest priority first
            diff = np.flatnonzero(placed != self.placed0)
            low = diff[-1:] if diff.size and placed[diff[-1]] < self.placed0[diff[-1]] else low[:0]
        if low.size:
            v = int(self.levels[low[-1]])
            return f"pods placed at priority {v} {int(self.placed0[low[-1]])} -> {int(placed[low[-1]])}"
        if Goal.FIT_PENDING not in self.goals:
            homeless = np.count_nonzero(self.running & (np.asarray(node_of) < 0) & (self.baseline >= 0))
            if homeless:
                return f"{homeless} running pod(s) left without a node"
        return None

    def rank(self, node_of: np.ndarray) -> tuple[float, ...]:
        """The goals' numbers in the order given, lower is better (to compare two placements)."""
        values = self.of(node_of)
        return tuple(-v if k == "pendingPlaced" else v for k, v in (goal_value(g, values) for g in self.goals))

    def empty(self, node_of: np.ndarray) -> np.ndarray:
        """bool [N]: the nodes ``node_of`` leaves empty in the consolidation sense."""
        return empty_nodes(self.state, node_of)


def _owner(measure: str) -> Goal:
    """The goal a measure of :meth:`Measures.of` belongs to."""
    if measure.startswith("violations["):
        return Goal.REPAIR
    return {"nodesUsed": Goal.CONSOLIDATE, "hourlyCost": Goal.CONSOLIDATE, "nodesOverTarget": Goal.BALANCE,
            "utilizationMax": Goal.BALANCE, "pendingPlaced": Goal.FIT_PENDING}[measure]


def _fmt(x: float) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)
