"""Where the goal tier starts: a plan found node by node with greedy mode's filters.

The target model starts each tier from the incumbent; for ``consolidate`` and ``repair`` that is the
cluster as it is, which CP-SAT's search barely leaves at hundreds of nodes (docs/performance.md). These
starts are what a simulator finds in one pass, and the solver then only has to improve on them.

* :func:`consolidation_start`: cluster-autoscaler's scale-down simulation (kubernetes/autoscaler master,
  ``cluster-autoscaler/core/scaledown/planner/planner.go`` ``categorizeNodes`` at commit 01389b01 and
  ``cluster-autoscaler/simulator/cluster.go`` ``SimulateNodeRemoval`` / ``findPlaceFor`` at 004ab12a,
  the version with the tainted ghost node): candidate nodes one at a time;
  a candidate's movable pods are taken off it and each is placed on another node that passes the
  scheduler's filters (``HintingSimulator.TrySchedulePods`` with ``breakOnFailure``); when every pod
  finds a node the placement is kept (the snapshot is committed, ``canPersist``) and the node is no
  longer a destination, else the node is left as it was. Candidates are the nodes every pod of which
  (DaemonSet and mirror/static pods aside) the eviction policy lets leave, least utilized first
  (``simulator/utilization/info.go``: the larger of the cpu and memory requests over allocatable).
  Three choices differ from upstream, to empty more nodes, and the costly ones: every candidate is
  tried (upstream only those below ``--scale-down-utilization-threshold``, 0.5); with
  ``optisched.io/hourly-cost`` on nodes, the most expensive first (then by utilization); and a pod goes
  to the most allocated node that passes the filters, largest pods first (upstream: the first passing node in the snapshot's list,
  from where the last search stopped; ``predicate/plugin_runner.go`` ``RunFiltersUntilPassingNode``).
  A node being emptied stays in the snapshot, as the plan cordons it (upstream keeps a tainted ghost
  node, for the same reason: topology spread still counts its domain).
* :func:`repair_start`: each pod a repaired rule rejects where it runs is placed, largest first, on the
  most allocated other node that passes the filters and where it breaks none of the repaired rules.

The filters are greedy mode's own (:class:`optisched.greedy.framework_runner.Framework` on a
:class:`optisched.model.snapshot.Snapshot`): the same PreFilter and Filter code kube-scheduler's cycle
runs, over all nodes at once, so no rule is written again here.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..descheduler.duplicates import owner_keys, upper_average
from ..framework import Code, CycleState
from ..greedy.framework_runner import FilterPass, Framework
from ..metrics.cost import node_costs
from ..metrics.resources import requested_per_node
from ..model.snapshot import Snapshot
from ..model.state import ClusterState
from ..optimal.check import check_placement
from ..profile import SchedulerConfig
from .violations import daemon_only

__all__ = ["Accept", "Placer", "by_size", "consolidation_start", "duplicate_check", "repair_start", "settled", "shares",
           "utilization"]


Accept = Callable[["Placer", int], bool]  # (the placer, with the pod placed) -> whether it may stay there


class Placer:
    """A snapshot of a placement and greedy mode's filters over it, to move pods one at a time."""

    def __init__(self, state: ClusterState, config: SchedulerConfig, node_of: np.ndarray) -> None:
        self.state = state
        self.snapshot = Snapshot(state, with_bound=False)
        for p in np.flatnonzero(node_of >= 0).tolist():
            self.snapshot.add(p, int(node_of[p]))
        self.frameworks = {prof.scheduler_name: Framework(self.snapshot, prof) for prof in config.profiles}
        alloc = state.allocatable.astype(float)
        self._alloc = np.where(alloc > 0, alloc, np.inf)
        self._cols = [state.resource_col(r) for r in ("cpu", "memory") if r in state.resources]

    def filtered(self, p: int, allowed: np.ndarray) -> FilterPass | None:
        """The filters' pass for pod ``p`` over the node rows of ``allowed`` (bool [N]) that its PreFilter
        leaves; None when ``p``'s scheduler is not configured or its PreFilter rejects it."""
        fw = self.frameworks.get(self.state.pods[p].spec.scheduler_name)
        if fw is None:
            return None
        cycle = CycleState(p, self.snapshot, fw.profile)
        status, _, skipped = fw.pre_filter(cycle)
        if status.code != Code.SUCCESS:
            return None
        if self.state.pod_node[p] >= 0:  # a running pod's replacement has no nodeName (as optimal/check.py)
            skipped = skipped | {"NodeName"}
        mask = allowed if status.nodes is None else allowed & status.nodes
        return fw.filter(cycle, np.flatnonzero(mask), skipped)

    def feasible(self, p: int, allowed: np.ndarray) -> np.ndarray:
        """The node rows of ``allowed`` (bool [N]) where the filters let pod ``p`` go now (none when
        ``p``'s scheduler is not configured or its PreFilter rejects it)."""
        fp = self.filtered(p, allowed)
        return np.zeros(0, dtype=np.int64) if fp is None else fp.feasible

    def fullest(self, nodes: np.ndarray, emptiest: bool = False) -> int:
        """The most (``emptiest``: least) allocated of ``nodes`` (cpu and memory shares summed; ties: the
        lowest row)."""
        used = (self.snapshot.requested[nodes][:, self._cols] / self._alloc[nodes][:, self._cols]).sum(axis=1)
        return int(nodes[int(np.argmin(used) if emptiest else np.argmax(used))])

    def place(self, p: int, allowed: np.ndarray, accept: Accept | None = None, emptiest: bool = False) -> int:
        """Put ``p`` (off any node) on the most (``emptiest``: least) allocated node of ``allowed`` that
        passes the filters (and ``accept(placer, p)``, checked with ``p`` there, in that order); -1 when
        none does."""
        nodes = self.feasible(p, allowed)
        while len(nodes):
            n = self.fullest(nodes, emptiest)
            self.snapshot.add(p, n)
            if accept is None or accept(self, p):
                return n
            self.snapshot.remove(p)
            nodes = nodes[nodes != n]
        return -1


def shares(state: ClusterState, node_of: np.ndarray, resources: list[str],
           counted: np.ndarray | None = None) -> np.ndarray:
    """float [N, R]: per node, the requests of the (``counted``) pods ``node_of`` puts there over its
    allocatable, for ``resources`` (0 where a node has none)."""
    where = np.asarray(node_of, dtype=np.int64)
    if counted is not None:
        where = np.where(counted, where, -1)
    cols = [state.resource_col(r) for r in resources]
    req = requested_per_node(state, where)[:, cols].astype(np.float64)
    alloc = state.allocatable[:, cols].astype(float)
    return np.divide(req, alloc, out=np.zeros_like(req), where=alloc > 0)


def utilization(state: ClusterState, node_of: np.ndarray, counted: np.ndarray) -> np.ndarray:
    """float [N]: cluster-autoscaler's node utilization, the larger of the ``counted`` pods' cpu and
    memory requests over allocatable (``utilization.Calculate``)."""
    share = shares(state, node_of, [r for r in ("cpu", "memory") if r in state.resources], counted)
    return share.max(axis=1) if share.shape[1] else np.zeros(state.num_nodes)


def by_size(state: ClusterState, rows: list[int]) -> list[int]:
    """Largest first (cpu and memory shares of the largest node), then row order: first-fit decreasing."""
    cols = [state.resource_col(r) for r in ("cpu", "memory") if r in state.resources]
    top = np.maximum(state.allocatable[:, cols].max(axis=0), 1) if cols else np.ones(0)
    size = (state.pod_requests[rows][:, cols] / top).sum(axis=1) if cols else np.zeros(len(rows))
    return [rows[i] for i in sorted(range(len(rows)), key=lambda i: (-float(size[i]), rows[i]))]


def consolidation_start(state: ClusterState, config: SchedulerConfig, may_leave: np.ndarray,
                        node_of: np.ndarray | None = None, allowed: np.ndarray | None = None,
                        accept: Accept | None = None) -> tuple[np.ndarray, list[int]]:
    """The placement cluster-autoscaler's scale-down simulation reaches from ``node_of`` (default: the
    cluster as it is) and the nodes it empties, in the order emptied (see the module docstring).
    ``may_leave``: bool [P], the pods the eviction policy lets leave; ``allowed`` (bool [N]) and
    ``accept(placer, pod)``: where a pod may go besides the filters (what keeps an earlier goal's value)."""
    node_of = (state.pod_node if node_of is None else np.asarray(node_of)).astype(np.int64)
    daemon = daemon_only(state)
    placed = node_of >= 0
    stays = placed & ~may_leave & ~daemon
    held = np.zeros(state.num_nodes, dtype=bool)
    held[node_of[stays]] = True
    busy = np.zeros(state.num_nodes, dtype=bool)
    busy[node_of[placed & ~daemon]] = True
    candidates = np.flatnonzero(busy & ~held)
    util = utilization(state, node_of, ~daemon)
    costs = node_costs(state)
    cost = np.zeros(state.num_nodes, dtype=np.int64) if costs is None else costs
    order = sorted(candidates.tolist(), key=lambda n: (-int(cost[n]), float(util[n]), state.node_names[n]))
    placer = Placer(state, config, node_of)
    destinations = np.ones(state.num_nodes, dtype=bool) if allowed is None else allowed.copy()
    emptied: list[int] = []
    for n in order:
        movers = by_size(state, [p for p in placer.snapshot.pods_on[n] if not daemon[p]])
        destinations[n] = False
        for p in movers:
            placer.snapshot.remove(p)
        landed = []
        for p in movers:
            if placer.place(p, destinations, accept) < 0:
                break
            landed.append(p)
        if len(landed) == len(movers):
            emptied.append(n)
            continue
        for p in landed:
            placer.snapshot.remove(p)
        for p in movers:
            placer.snapshot.add(p, n)
        destinations[n] = True if allowed is None else bool(allowed[n])
    return placer.snapshot.node_of.copy(), emptied


def repair_start(state: ClusterState, config: SchedulerConfig, bad: dict[int, str], may_leave: np.ndarray,
                 breaks: Accept, node_of: np.ndarray | None = None,
                 allowed: np.ndarray | None = None) -> np.ndarray:
    """The placement reached from ``node_of`` (default: the cluster as it is) by moving each pod of
    ``bad`` (pod row -> the repaired rule it breaks) that may leave to the most allocated other node of
    ``allowed`` (default: any) that passes the filters and where ``breaks(placer, pod)`` is false with
    it there; a pod no node takes stays. Largest pods first."""
    node_of = (state.pod_node if node_of is None else np.asarray(node_of)).astype(np.int64)
    placer = Placer(state, config, node_of)
    for p in by_size(state, [p for p in bad if may_leave[p] and node_of[p] >= 0]):
        home = placer.snapshot.remove(p)
        there = np.ones(state.num_nodes, dtype=bool) if allowed is None else allowed.copy()
        there[home] = False
        if placer.place(p, there, lambda pl, q: not breaks(pl, q)) < 0:
            placer.snapshot.add(p, home)
    return placer.snapshot.node_of.copy()


def duplicate_check(state: ClusterState, counted: np.ndarray) -> Callable[[list[int], int], bool]:
    """``over(pods, p)``: pod ``p``, beside the other ``pods`` of its node, is one of more than
    ``upperAvg`` pods with its duplicate keys there (RemoveDuplicates' rule, with the helpers of
    :mod:`optisched.descheduler.duplicates`; ``counted``: the pods its evictor counts)."""
    keys = [k[1] if counted[p] and (k := owner_keys(pod)) is not None else None for p, pod in enumerate(state.pods)]
    owners: dict[tuple[str, ...], int] = {}
    for p in np.flatnonzero(state.pod_node >= 0).tolist():
        if (key := keys[p]) is not None:
            owners[key] = owners.get(key, 0) + 1

    uppers: dict[tuple[str, ...], int | None] = {}  # one owner's pods share their template: one average

    def over(pods: list[int], p: int) -> bool:
        key = keys[p]
        if key is None:
            return False
        if key not in uppers:
            uppers[key] = upper_average(state, p, owners.get(key, 1))
        upper = uppers[key]
        return upper is not None and sum(1 for q in pods if keys[q] == key) > upper
    return over


def settled(state: ClusterState, config: SchedulerConfig, start: np.ndarray, rounds: int = 4,
            home: np.ndarray | None = None) -> np.ndarray:
    """``start`` with the moved pods the filters reject in the end state (batch semantics, as optimal
    mode checks its answers: :func:`optisched.optimal.check.check_placement`) back where ``home`` (default:
    the cluster as it is) has them, until none is (a pod placed early can be refused once later pods
    move: a spread's skew, an anti-affinity term), so the target model takes the start as it is."""
    out = np.asarray(start, dtype=np.int64).copy()
    home = state.pod_node if home is None else home
    for _ in range(rounds):
        bad = check_placement(state, config, out)
        if not bad:
            break
        for v in bad:
            p = state.pod_index[v.pod]
            out[p] = home[p]
    return out
