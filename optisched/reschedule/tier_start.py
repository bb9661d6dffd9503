"""Where each goal's tier starts: its simulator run from the answer of the tiers before it.

Optimal mode asks for a start once per goal tier (:class:`optisched.optimal.goal_tier.TierStarts`), with
the placement the tiers already solved reached (the placement tiers', then each earlier goal's). The
start is that placement improved by the goal's own simulator (:mod:`.start`, greedy mode's filters):

* ``consolidate`` (``objective:pack``): cluster-autoscaler's scale-down simulation;
* ``repair`` (``objective:repair``): each pod a repaired rule rejects in that placement re-placed;
* ``fit-pending`` (each placement tier ``placed[priority=L]``): the pods of priority ``L`` the answer
  so far leaves out (pending, or evicted by kube-scheduler's preemption in greedy mode's placement)
  placed where the filters pass, else where kube-scheduler's preemption makes room, its victims moved
  (:mod:`.start_pending`);
* ``balance`` (``objective:spread``, ``objective:excess[...]``): the descheduler's LowNodeUtilization
  (kubernetes-sigs/descheduler v0.34.0 ``pkg/framework/plugins/nodeutilization/lownodeutilization.go``):
  over-utilized nodes (any resource above its target) most used first, their pods lowest priority first
  (``SortPodsBasedOnPriorityLowToHigh``), while the node stays above its target, each re-placed on the
  least allocated under-utilized node (every resource at or below its threshold; LowNodeUtilization
  evicts and leaves the landing to kube-scheduler, whose default LeastAllocated score prefers it) that
  passes the filters and stays at or below its targets. Without thresholds, both are the mean
  utilization (``useDeviationThresholds`` with deviations of 0).

A later goal's simulator must not give up what an earlier goal's tier holds, so its moves are limited:
after ``consolidate``, no pod goes to a node the answer leaves empty; after ``repair``, no move creates a
violation anywhere (:func:`.violations.landing_violations`, the accept step's check) or a duplicate;
after ``balance``, no node goes over the targets (without thresholds, over the most utilized node). The
tier machinery still evaluates every fixed tier on the start and does not offer one that is worse.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..descheduler.evictor import sort_low_to_high
from ..descheduler.utilization import above_any, below_all, usage
from ..model.state import ClusterState
from ..optimal.tier_key import TierKey
from ..optimal.user_objectives import excess_name
from ..policy.eviction import EvictionPolicy
from ..profile import SchedulerConfig
from .goals import OBJECTIVE, Goal, empty_nodes
from .start import Accept, Placer, consolidation_start, duplicate_check, repair_start, settled, shares
from .start_pending import fit_pending_start, start_breaks
from .violations import daemon_only, landing_violations, violating

__all__ = ["GoalStarts", "balance_start", "goal_start"]


def _pct(placer: Placer, resources: list[str], nodes: np.ndarray | slice = slice(None)) -> np.ndarray:
    """float [N, R]: percent of allocatable the placer's pods request, per node and resource."""
    cols = [placer.state.resource_col(r) for r in resources]
    alloc = placer.state.allocatable[nodes][:, cols].astype(float)
    used = placer.snapshot.requested[nodes][:, cols].astype(float)
    return np.divide(100.0 * used, alloc, out=np.zeros_like(used), where=alloc > 0)


def balance_start(state: ClusterState, config: SchedulerConfig, may_leave: np.ndarray, node_of: np.ndarray,
                  thresholds: dict[str, int] | None = None, targets: dict[str, int] | None = None,
                  allowed: np.ndarray | None = None, accept: Accept | None = None) -> np.ndarray:
    """The placement LowNodeUtilization's evictions reach from ``node_of``, each evicted pod re-placed
    (see the module docstring) on an ``allowed`` node (default: any) that ``accept`` takes.
    ``thresholds``/``targets``: percent per resource (None: the mean)."""
    resources: list[str] = list(targets) if targets else [r for r in ("cpu", "memory") if r in state.resources]
    placer = Placer(state, config, node_of)
    pct = _pct(placer, resources)
    mean = pct.mean(axis=0) if len(pct) else np.zeros(len(resources))
    high = np.array([targets[r] for r in resources], dtype=float) if targets else mean
    # (as goals.utilization_classes: under by the thresholds' own resources, over by the targets')
    low_pct = _pct(placer, list(thresholds)) if thresholds else pct
    low = np.array(list(thresholds.values()), dtype=float) if thresholds else mean
    under = below_all(low_pct, low) & ~state.unschedulable & (True if allowed is None else allowed)
    sources = np.flatnonzero(above_any(pct, high))
    if not under.any() or not len(sources):
        return placer.snapshot.node_of.copy()
    names = list(dict.fromkeys([*resources, "cpu", "memory", "pods"]))
    total = usage(state, names)[0].sum(axis=1)  # the descheduler's order: raw usage summed, most first

    def fits(pl: Placer, p: int) -> bool:
        n = int(pl.snapshot.node_of[p])
        return not above_any(_pct(pl, resources, np.array([n])), high)[0] and (accept is None or accept(pl, p))
    daemon = daemon_only(state)
    for n in sources[np.argsort(-total[sources], kind="stable")].tolist():
        for p in sort_low_to_high(state, [p for p in placer.snapshot.pods_on[n] if may_leave[p] and not daemon[p]]):
            if not above_any(_pct(placer, resources, np.array([n])), high)[0]:
                break
            placer.snapshot.remove(p)
            if placer.place(p, under, fits, emptiest=True) < 0:
                placer.snapshot.add(p, n)
    return placer.snapshot.node_of.copy()


@dataclass
class _Keep:
    """Where a later goal's simulator may put a pod, so the earlier goals' values hold."""

    allowed: np.ndarray | None = None
    checks: list[Accept] = field(default_factory=list)

    def accept(self, placer: Placer, p: int) -> bool:
        return all(check(placer, p) for check in self.checks)


@dataclass
class GoalStarts:
    """Each goal tier's start (see the module docstring), with the summary's line per tier."""

    state: ClusterState
    config: SchedulerConfig
    goals: list[Goal]
    policy: EvictionPolicy
    counted: np.ndarray
    soft: bool = False
    thresholds: tuple[dict[str, int], dict[str, int]] | None = None
    said: dict[TierKey, str] = field(default_factory=dict)
    _over: Callable[[list[int], int], bool] | None = field(default=None, init=False, repr=False)  # made once
    # the first goal's start from the placement the solve starts from, with its line (:meth:`preview`)
    _previewed: tuple[Goal, bytes, np.ndarray | None, str | None] | None = field(default=None, init=False, repr=False)

    def _goal(self, tier: TierKey) -> Goal | None:
        for g in self.goals:
            name = OBJECTIVE[g] if g != Goal.BALANCE or self.thresholds is None else excess_name(self.thresholds[1])
            if name is not None and tier == TierKey.user(name):
                return g
        return None

    def _no_violation(self, placer: Placer, p: int) -> bool:
        """The move of ``p`` creates no violation anywhere and no duplicate (the accept step's check)."""
        if self._over is None:
            self._over = duplicate_check(self.state, self.counted)
        over = self._over
        n = int(placer.snapshot.node_of[p])
        return not over(placer.snapshot.pods_on[n], p) and \
            not landing_violations(self.state, self.config, placer.snapshot, placer.frameworks, p, self.soft)

    def _keep(self, earlier: list[Goal], node_of: np.ndarray) -> _Keep:
        keep = _Keep()
        if Goal.CONSOLIDATE in earlier:
            keep.allowed = ~empty_nodes(self.state, node_of)
        if Goal.REPAIR in earlier:
            keep.checks.append(self._no_violation)
        if Goal.BALANCE in earlier:
            resources: list[str] = list(self.thresholds[1]) if self.thresholds else \
                [r for r in ("cpu", "memory") if r in self.state.resources]
            high = np.array(list(self.thresholds[1].values()), dtype=float) if self.thresholds else \
                np.full(len(resources), 100.0 * shares(self.state, node_of, resources).max(initial=0.0))
            keep.checks.append(lambda pl, p: not above_any(_pct(pl, resources, pl.snapshot.node_of[p:p + 1]), high)[0])
        return keep

    def _pending(self, tier: TierKey, level: int, node_of: np.ndarray, rows: np.ndarray) -> np.ndarray | None:
        """fit-pending's start for the placement tier ``placed[priority=L]`` (:mod:`.start_pending`)."""
        state = self.state
        # pending pods the answer so far leaves out, and running pods it evicts (kube-scheduler's own
        # preemption in greedy mode's placement, the solver's first hint, evicts its victims)
        pods = np.flatnonzero((node_of < 0) & rows & (state.pod_priority == level)).tolist()
        if not pods:
            return None
        may_leave = self.policy.verdicts(state).may_leave & rows & (state.pod_node >= 0)
        found, defragmented = fit_pending_start(state, self.config, may_leave, node_of, pods)
        out = settled(state, self.config, found, home=node_of)
        placed = int(np.count_nonzero(out[pods] >= 0))
        if not placed:
            return None
        moved = int(np.count_nonzero((state.pod_node >= 0) & (node_of >= 0) & (out != node_of)))
        by = "kube-scheduler's preemption"
        if (k := int(np.count_nonzero(out[defragmented] >= 0))):
            by = f"{by} and defragmentation ({k} pod(s) placed by moving pods of any priority)"
        line = f"start of fit-pending: {placed} of {len(pods)} unplaced pod(s) of priority {level} placed, " \
               f"{by} making room by {moved} move(s)"
        broken = start_breaks(state, self.config, node_of, out)
        self._say(tier, line if broken is None else f"{line}; not offered: {broken}")
        return out if broken is None else None

    def start(self, tier: TierKey, node_of: np.ndarray, rows: np.ndarray) -> np.ndarray | None:
        if tier.level is not None:
            return self._pending(tier, tier.level, node_of, rows) if Goal.FIT_PENDING in self.goals else None
        goal = self._goal(tier)
        if goal is None or goal == Goal.FIT_PENDING:
            return None
        earlier = self.goals[:self.goals.index(goal)]
        seen = self._previewed
        if seen is not None and seen[0] == goal and seen[1] == np.asarray(node_of, dtype=np.int64).tobytes():
            # the preview's placement: a part of the model takes the moves of its own pods (``rows``)
            out, line = (None, None) if seen[2] is None or np.array_equal(seen[2][rows], node_of[rows]) \
                else (np.where(rows, seen[2], node_of), seen[3])
        else:
            out, line = self._goal_start(goal, node_of, rows)
        if line is not None:
            after = [str(g) for g in earlier if g != Goal.FIT_PENDING]
            self._say(tier, line if not after else line.replace("start:", f"start of {goal} (after {', '.join(after)}):", 1))
        return out

    def _goal_start(self, goal: Goal, node_of: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray | None, str | None]:
        keep = self._keep(self.goals[:self.goals.index(goal)], node_of)
        may_leave = self.policy.verdicts(self.state).may_leave & rows
        return goal_start(self.state, self.config, goal, may_leave, node_of, self.counted, self.soft,
                          self.thresholds, keep.allowed, keep.accept if keep.checks else None)

    def preview(self, node_of: np.ndarray) -> np.ndarray | None:
        """The first goal's start from ``node_of``, the placement the solve starts from, before its model
        is built: a large model keeps the nodes it moves pods to as candidates
        (:func:`optisched.optimal.goal_tier.previews`), and the goal's tier is offered it again when the
        answer so far is still ``node_of`` (no pending pod placed elsewhere, nothing evicted)."""
        goal = next((g for g in self.goals if g != Goal.FIT_PENDING), None)
        if goal is None:
            return None
        node_of = np.asarray(node_of, dtype=np.int64)
        out, line = self._goal_start(goal, node_of, np.ones(len(node_of), dtype=bool))
        self._previewed = (goal, node_of.tobytes(), out, line)
        return out

    def _say(self, tier: TierKey, line: str) -> None:
        """The summary's line for ``tier``; the parts of a model solved apart add theirs to it."""
        if tier in self.said and line in self.said[tier].split("; "):
            return  # a part of the model offered the same start (the preview's) says it once
        self.said[tier] = f"{self.said[tier]}; {line}" if tier in self.said else line

    def outcome(self, tier: TierKey, what: str) -> None:
        if tier in self.said and what != "taken":
            self.said[tier] += f"; {what}"

    def lines(self) -> list[str]:
        return list(self.said.values())


def goal_start(state: ClusterState, config: SchedulerConfig, goal: Goal, may_leave: np.ndarray,
               node_of: np.ndarray, counted: np.ndarray, soft: bool = False,
               thresholds: tuple[dict[str, int], dict[str, int]] | None = None, allowed: np.ndarray | None = None,
               accept: Accept | None = None) -> tuple[np.ndarray | None, str | None]:
    """``goal``'s simulator run from ``node_of`` moving only pods of ``may_leave``, limited to ``allowed``
    nodes and ``accept``: the start and a line saying what it does; (None, None) when it moves nothing."""
    node_of = np.asarray(node_of, dtype=np.int64)
    placed = node_of >= 0
    if goal == Goal.CONSOLIDATE:
        start, emptied = consolidation_start(state, config, may_leave, node_of, allowed, accept)
        start = settled(state, config, start, home=node_of)
        emptied = [n for n in emptied if not np.any(start[~daemon_only(state)] == n)]
        if not emptied:
            return None, None
        names = ", ".join(state.node_names[n] for n in emptied[:10]) + (", ..." if len(emptied) > 10 else "")
        return start, f"start: cluster-autoscaler's scale-down simulation empties {len(emptied)} node(s) ({names})"
    if goal == Goal.REPAIR:
        bad = violating(state, config, node_of, counted, soft)
        over = duplicate_check(state, counted)

        def breaks(pl: Placer, p: int) -> bool:
            return over(pl.snapshot.pods_on[int(pl.snapshot.node_of[p])], p) or (accept is not None and not accept(pl, p))
        start = settled(state, config, repair_start(state, config, bad, may_leave, breaks, node_of, allowed),
                        home=node_of)
        moved = int(np.count_nonzero(placed & (start != node_of)))
        line = f"start: {moved} of {len(bad)} violating pod(s) re-placed by the scheduler's filters"
        return (start, line) if moved else (None, None)
    if goal == Goal.BALANCE:
        low, high = thresholds or (None, None)
        start = settled(state, config, balance_start(state, config, may_leave, node_of, low, high, allowed, accept),
                        home=node_of)
        moved = int(np.count_nonzero(placed & (start != node_of)))
        line = f"start: LowNodeUtilization's evictions, re-placed by the scheduler's filters, move {moved} pod(s)"
        return (start, line) if moved else (None, None)
    return None, None
