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

* ``repair``: the ``repair`` objective: running pods off the nodes whose required node affinity they no
  longer match or whose NoSchedule/NoExecute taints they do not tolerate, and DoNotSchedule topology
  spread back within maxSkew (the descheduler's ``RemovePodsViolatingNodeAffinity``,
  ``RemovePodsViolatingNodeTaints``, ``RemovePodsViolatingTopologySpreadConstraint``). Violated required
  anti-affinity and duplicates are not repaired yet.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from ..descheduler.utilization import above_any, below_all
from ..errors import InputError
from ..framework import Code, CycleState
from ..greedy.framework_runner import Framework
from ..metrics.cost import node_costs
from ..metrics.resources import pods_per_node, utilization, utilization_stats
from ..model.snapshot import Snapshot
from ..model.state import ClusterState
from ..optimal.user_objectives import REPAIRED_RULES
from ..policy.eviction import KINDS, Keep, pod_kinds
from ..profile import SchedulerConfig

__all__ = ["Goal", "empty_nodes", "goal_objective", "metrics", "parse_goals", "parse_thresholds",
           "utilization_classes", "violating"]


class Goal(StrEnum):
    CONSOLIDATE = "consolidate"
    FIT_PENDING = "fit-pending"
    REPAIR = "repair"
    BALANCE = "balance"


OBJECTIVE = {Goal.CONSOLIDATE: "pack", Goal.BALANCE: "spread", Goal.FIT_PENDING: None, Goal.REPAIR: "repair"}


def parse_goals(text: str | list[str]) -> list[Goal]:
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


def goal_objective(goals: list[Goal]) -> str | None:
    """The one objective tier the goals ask for. ``fit-pending`` is the placement tiers, which come first
    whatever the order; of ``consolidate`` and ``balance`` the first named is the tier (the model holds one
    objective tier: a second is reported, not optimized)."""
    named = [OBJECTIVE[g] for g in goals if OBJECTIVE[g] is not None]
    return named[0] if named else None


def _daemon_only(state: ClusterState) -> np.ndarray:
    """bool [P]: DaemonSet and mirror/static pods (a node holding only these counts as empty)."""
    kinds = pod_kinds(state)
    return kinds[:, KINDS.index(Keep.STATIC)] | kinds[:, KINDS.index(Keep.DAEMONSET)]


def empty_nodes(state: ClusterState, node_of: np.ndarray) -> np.ndarray:
    """bool [N]: nodes where ``node_of`` leaves only DaemonSet and mirror/static pods (or none)."""
    node_of = np.asarray(node_of, dtype=np.int64)
    busy = node_of.copy()
    busy[_daemon_only(state)] = -1
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


def violating(state: ClusterState, config: SchedulerConfig, node_of: np.ndarray) -> dict[int, str]:
    """Pod row -> the first repaired rule whose greedy filter rejects the node ``node_of`` leaves it on,
    checked as kube would for the pod arriving last: against the end state without it."""
    node_of = np.asarray(node_of, dtype=np.int64)
    memo = ("violating", node_of.tobytes())  # a plan asks twice for one placement (its moves, its summary)
    hit = state.memo.get(memo)
    if hit is not None and hit[0] is config:  # type: ignore[index]
        return dict(hit[1])  # type: ignore[index]
    out = _violating(state, config, node_of)
    state.memo[memo] = (config, out)  # type: ignore[assignment]
    return dict(out)


def _violating(state: ClusterState, config: SchedulerConfig, node_of: np.ndarray) -> dict[int, str]:
    snapshot = Snapshot(state, with_bound=False)
    for p in np.flatnonzero(node_of >= 0).tolist():
        snapshot.add(p, int(node_of[p]))
    frameworks = {p.scheduler_name: Framework(snapshot, p) for p in config.profiles}
    out: dict[int, str] = {}
    for p in np.flatnonzero((node_of >= 0) & ~_daemon_only(state)).tolist():
        fw = frameworks.get(state.pods[p].spec.scheduler_name)
        if fw is None:
            continue
        snapshot.remove(p)
        cyc = CycleState(p, snapshot, fw.profile)
        for name in REPAIRED_RULES:
            rule = fw.filter_rules.get(name)
            if rule is None or name not in fw.filter_names or rule.pre_filter(cyc).code == Code.SKIP:
                continue
            if rule.filter(cyc, node_of[p:p + 1]).code[0] != 0:
                out[p] = name
                break
        snapshot.add(p, int(node_of[p]))
    return out


def violations(state: ClusterState, config: SchedulerConfig, node_of: np.ndarray) -> dict[str, int]:
    """Per repaired rule, how many pods ``node_of`` leaves on a node that rule rejects."""
    found = list(violating(state, config, node_of).values())
    return {name: found.count(name) for name in REPAIRED_RULES}


def metrics(state: ClusterState, node_of: np.ndarray, pending: np.ndarray,
            config: SchedulerConfig | None = None) -> Metrics:
    """The summary's metrics for ``node_of``; ``pending``: rows of the pods pending in the input.
    Cost counts the nodes that are not empty in the consolidation sense (an autoscaler keeps those)."""
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
                   violations(state, config, node_of) if config is not None else {})


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
    target resource is above its percent; requests of the pods on the node against allocatable."""
    pct = utilization(state, state.pod_node) * 100
    names = np.array(state.node_names, dtype=object)

    def column(r: str, option: str) -> np.ndarray:
        if r not in state.resources:
            raise InputError(f"{option}: no node offers {r!r}")
        return np.nan_to_num(pct[:, state.resources.index(r)])

    def side(given: dict[str, int], option: str) -> tuple[np.ndarray, np.ndarray]:
        cols = [column(r, option) for r in given]
        pct_of = np.stack(cols, axis=1) if cols else np.zeros((state.num_nodes, 0))
        return pct_of, np.array(list(given.values()), dtype=float)

    under = below_all(*side(thresholds, "--thresholds")) & ~state.unschedulable
    over = above_any(*side(targets, "--target-thresholds"))
    return names[under & ~over].tolist(), names[over].tolist()
