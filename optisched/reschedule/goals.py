"""What a rescheduling plan is for (``--goal``), and the per-state metrics a summary compares.

Each goal is a tier of optimal mode's model, solved after the placement tiers (no running pod left
homeless, no pending pod that greedy mode places left out) and before disruption (fewest moves after the
goal):

* ``consolidate``: the ``pack`` objective (:mod:`optisched.optimal.user_objectives`): fewest nodes in use,
  or the cheapest set by ``optisched.io/hourly-cost``. A node holding only DaemonSet and mirror/static pods
  counts as empty, as the descheduler's ``HighNodeUtilization`` and cluster-autoscaler's scale-down do.
* ``fit-pending``: the placement tiers themselves: as many pending pods per priority as fit, running
  pods moved only where that makes room (the defragmentation per-node preemption cannot do); disruption,
  weighted by priority, is minimized after them, so the fewest and least important pods move.
* ``balance``: the ``spread`` objective: the most utilized node's cpu and memory, then the sum of squares
  (the intent of the descheduler's ``LowNodeUtilization``, kubernetes-sigs/descheduler v0.34.0
  ``pkg/framework/plugins/nodeutilization/lownodeutilization.go``). With its ``thresholds`` and
  ``targetThresholds`` (:func:`utilization_classes`), only pods on over-utilized nodes may leave, and only
  when some node is under-utilized.

* ``repair``: the ``repair`` objective: running pods off the nodes whose required node affinity they
  no longer match or whose NoSchedule/NoExecute taints they do not tolerate, DoNotSchedule topology
  spread back within maxSkew, pods whose required anti-affinity is violated, replicas of one owner above
  RemoveDuplicates' average on a node (the descheduler's ``RemovePodsViolatingNodeAffinity``,
  ``RemovePodsViolatingNodeTaints``, ``RemovePodsViolatingTopologySpreadConstraint``,
  ``RemovePodsViolatingInterPodAntiAffinity``, ``RemoveDuplicates``); with ``soft``, the ``repair-soft``
  tier after it: the same for preferred node affinity, ScheduleAnyway spread and preferred
  anti-affinity. Which pods break what: :mod:`.violations`.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from ..descheduler.utilization import above_any, below_all, percent, usage
from ..errors import InputError
from ..metrics.cost import node_costs
from ..metrics.resources import pods_per_node, utilization_stats
from ..model.state import ClusterState
from ..optimal.user_objectives import excess_name
from ..profile import SchedulerConfig
from .violations import daemon_only, violations

__all__ = ["Goal", "empty_nodes", "goal_objectives", "metrics", "parse_goals", "parse_thresholds",
           "utilization_classes"]


class Goal(StrEnum):
    CONSOLIDATE = "consolidate"
    FIT_PENDING = "fit-pending"
    REPAIR = "repair"
    BALANCE = "balance"


OBJECTIVE = {Goal.CONSOLIDATE: "pack", Goal.BALANCE: "spread", Goal.FIT_PENDING: None, Goal.REPAIR: "repair"}


def parse_goals(text: str | Sequence[str]) -> list[Goal]:
    """``consolidate,fit-pending``: the goals in the order given (lexicographic)."""
    names = [x.strip() for x in (text.split(",") if isinstance(text, str) else text) if x.strip()]
    if not names:
        raise InputError("--goal: name at least one goal; goals: " + ", ".join(Goal))
    goals = []
    for x in names:
        if x not in set(Goal):
            raise InputError(f"--goal: {x!r} is not a goal; goals: {', '.join(Goal)}")
        goals.append(Goal(x))
    return list(dict.fromkeys(goals))


def goal_objectives(goals: list[Goal], soft: bool = False, targets: dict[str, int] | None = None) -> tuple[str, ...]:
    """The objective tiers the goals ask for, in the order given (lexicographic: each tier is optimized,
    then held at its value while the next is). ``fit-pending`` is the placement tiers, which come first
    whatever the order; ``soft``: ``repair`` is followed by its preferences' tier, ``repair-soft``;
    ``targets`` (LowNodeUtilization's targetThresholds): ``balance`` is each node's excess over them
    (``excess[...]``), not the most utilized node (``spread``)."""
    if soft and Goal.REPAIR not in goals:
        raise InputError("--soft repairs preferences: it needs --goal repair")
    names = {**OBJECTIVE, Goal.BALANCE: excess_name(targets)} if targets else OBJECTIVE
    out = [o for g in goals if (o := names[g]) is not None]
    if soft:
        out.insert(out.index("repair") + 1, "repair-soft")
    return tuple(out)


def empty_nodes(state: ClusterState, node_of: np.ndarray) -> np.ndarray:
    """bool [N]: nodes where ``node_of`` leaves only DaemonSet and mirror/static pods (or none)."""
    node_of = np.asarray(node_of, dtype=np.int64)
    busy = node_of.copy()
    busy[daemon_only(state)] = -1
    return pods_per_node(state, busy) == 0


@dataclass(frozen=True)
class Metrics:
    nodes_used: int
    empty_nodes: int
    hourly_cost: float | None
    util_mean: dict[str, float]
    util_max: dict[str, float]
    pending_placed: int
    violations: dict[str, int]

    def to_dict(self) -> dict:
        return {"nodesUsed": self.nodes_used, "emptyNodes": self.empty_nodes, "hourlyCost": self.hourly_cost,
                "utilizationMean": self.util_mean, "utilizationMax": self.util_max,
                "pendingPlaced": self.pending_placed, "violations": self.violations}


def metrics(state: ClusterState, node_of: np.ndarray, pending: np.ndarray,
            config: SchedulerConfig | None = None, counted: np.ndarray | None = None, soft: bool = False) -> Metrics:
    """The summary's metrics for ``node_of``; ``pending``: rows of the pods pending in the input.
    Cost counts the nodes that are not empty in the consolidation sense (an autoscaler keeps those).
    ``counted`` and ``soft``: as :func:`.violations.violating` takes them."""
    node_of = np.asarray(node_of, dtype=np.int64)
    empty = empty_nodes(state, node_of)
    costs = node_costs(state)
    cost = None if costs is None else int(costs[~empty].sum()) / 1000
    stats = utilization_stats(state, node_of)
    keep = [r for r in ("cpu", "memory") if r in state.resources]
    idx = [state.resources.index(r) for r in keep]
    return Metrics(int((~empty).sum()), int(empty.sum()), cost,
                   {r: round(float(stats.mean[i]), 4) for r, i in zip(keep, idx)},
                   {r: round(float(stats.max[i]), 4) for r, i in zip(keep, idx)},
                   int(np.count_nonzero(node_of[pending] >= 0)),
                   violations(state, config, node_of, counted, soft) if config is not None else {})


def parse_thresholds(text: str, option: str) -> dict[str, int]:
    """``cpu=20,memory=20``: percent of allocatable per resource (LowNodeUtilization's arguments)."""
    out: dict[str, int] = {}
    for part in (x.strip() for x in text.split(",") if x.strip()):
        name, _, value = part.partition("=")
        if not value.strip().isdigit() or not 0 <= int(value) <= 100:
            raise InputError(f"{option}: {part!r} is not RESOURCE=PERCENT (0-100)")
        out[name.strip()] = int(value)
    return out


def utilization_classes(state: ClusterState, thresholds: dict[str, int],
                        targets: dict[str, int]) -> tuple[list[str], list[str]]:
    """(under-utilized, over-utilized) node names as the descheduler's LowNodeUtilization sorts them
    (kubernetes-sigs/descheduler v0.34.0, ``pkg/framework/plugins/nodeutilization/lownodeutilization.go``):
    under when every threshold resource is at or below its percent (schedulable nodes only), over when any
    target resource is above its percent; requests of the pods on the node against allocatable, counted
    as the descheduler counts them (:func:`optisched.descheduler.utilization.usage`)."""
    names = np.array(state.node_names, dtype=object)

    def side(given: dict[str, int], option: str) -> tuple[np.ndarray, np.ndarray]:
        missing = [r for r in given if r not in state.resources]
        if missing:
            raise InputError(f"{option}: no node offers {missing[0]!r}")
        pct_of = percent(*usage(state, list(given)))
        return pct_of, np.array(list(given.values()), dtype=float)

    under = below_all(*side(thresholds, "--thresholds")) & ~state.unschedulable
    over = above_any(*side(targets, "--target-thresholds"))
    return names[under & ~over].tolist(), names[over].tolist()
