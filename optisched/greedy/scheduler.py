"""Greedy mode: kube-scheduler's ``scheduleOne`` loop, cycle by cycle.

One cycle (``pkg/scheduler/schedule_one.go``): PreFilter; the nominated node
first when the pod has one; Filter over the nodes in nodeTree order starting at
``nextStartNodeIndex`` until ``numFeasibleNodesToFind`` feasible nodes are found
(sequentially, as with ``parallelism: 1``); PostFilter when none is feasible;
PreScore/Score/NormalizeScore unless exactly one node is feasible; select the
host; assume the pod into the snapshot.
"""
from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..framework import Code, CycleState, Status
from ..model.snapshot import Snapshot
from ..model.state import ClusterState
from ..profile import Profile, SchedulerConfig
from .fiterror import fit_error_message
from .framework_runner import FilterPass, Framework, ScorePass
from .nodetree import node_tree_order, num_feasible_nodes_to_find
from .queue import ClusterEvent, SchedulingQueue
from .select import TieBreak, heap_top, select_host

__all__ = ["GreedyOptions", "CycleRecord", "GreedyResult", "GreedyScheduler"]


@dataclass(frozen=True)
class GreedyOptions:
    tie_break: TieBreak = TieBreak.FIRST
    seed: int = 0
    requeue: bool = True
    record: bool = True  # keep per-cycle records (traces, explain); off for large benchmark runs


@dataclass
class CycleRecord:
    """What one scheduling cycle saw and decided."""

    pod: int
    attempt: int
    nominated: str | None
    filters: FilterPass | None
    pre_filter: tuple[Status, str] | None
    skipped_filters: set[str]
    scores: ScorePass | None
    chosen: int | None
    heap_pick: int | None
    message: str | None
    preemption: dict | None = None
    unschedulable_plugins: frozenset[str] = frozenset()


@dataclass
class GreedyResult:
    state: ClusterState
    snapshot: Snapshot
    node_order: np.ndarray
    queue_order: list[int]
    cycles: list[CycleRecord]
    unschedulable: dict[int, str]  # pod row -> last FitError message
    preempted: dict[int, tuple[int, int]] = field(default_factory=dict)  # victim -> (preemptor, node)
    skipped: dict[int, str] = field(default_factory=dict)  # pods this scheduler does not handle, and why

    def placements(self) -> dict[str, str | None]:
        """Every pod: its node after the run, or None."""
        names = self.state.node_names
        return {p.key: (names[n] if (n := int(self.snapshot.node_of[i])) >= 0 else None)
                for i, p in enumerate(self.state.pods)}


class GreedyScheduler:
    """kube-scheduler over a :class:`ClusterState`, one profile per ``schedulerName``."""

    def __init__(self, state: ClusterState, config: SchedulerConfig, options: GreedyOptions = GreedyOptions()):
        self.state = state
        self.config = config
        self.options = options
        self.snapshot = Snapshot(state)
        self.order = node_tree_order(state.nodes)
        self.tree_rank = np.empty(len(self.order), dtype=np.int64)
        self.tree_rank[self.order] = np.arange(len(self.order))
        self.next_start = 0
        self.rng = random.Random(options.seed)
        self._frameworks: dict[str, Framework] = {}

    def framework(self, profile: Profile) -> Framework:
        fw = self._frameworks.get(profile.scheduler_name)
        if fw is None:
            fw = self._frameworks[profile.scheduler_name] = Framework(self.snapshot, profile)
        return fw

    # ------------------------------------------------------------------ one cycle
    def _find_feasible(self, fw: Framework, cycle: CycleState, skipped: set[str],
                       restrict: np.ndarray | None) -> tuple[FilterPass, int]:
        """Filter from ``nextStartNodeIndex`` until enough feasible nodes are found (sequential pass)."""
        nodes = self.order if restrict is None else self.order[restrict[self.order]]
        n_all = len(self.order)
        if len(nodes) == 0:
            return fw.filter(cycle, nodes, skipped), 0
        start = self.next_start % len(nodes)
        rotated = np.roll(nodes, -start)
        pct = cycle.profile.effective_percentage(self.config.percentage_of_nodes_to_score)
        to_find = num_feasible_nodes_to_find(pct, n_all)
        fp = fw.filter(cycle, rotated, skipped)
        feasible_pos = np.flatnonzero(fp.passed)
        if len(feasible_pos) > to_find:
            # the (to_find+1)-th feasible node cancels the search and is not kept
            fp = fp.truncate(int(feasible_pos[to_find]))
        processed = len(fp.evaluated)
        self.next_start = (self.next_start + processed) % n_all
        return fp, processed

    def schedule_one(self, pod: int, profile: Profile, attempt: int) -> CycleRecord:
        fw = self.framework(profile)
        cycle = CycleState(pod, self.snapshot, profile)
        pod_obj = self.state.pods[pod]
        nominated = pod_obj.status.nominated_node_name
        status, plugin, skipped = fw.pre_filter(cycle)
        if status.code != Code.SUCCESS:
            msg = fit_error_message(self.state.num_nodes, None or {}, ", ".join(status.reasons))
            return CycleRecord(pod, attempt, nominated, None, (status, plugin), skipped, None, None, None, msg,
                               unschedulable_plugins=frozenset({plugin}))
        fp: FilterPass | None = None
        if nominated and nominated in self.state.node_index:
            # evaluateNominatedNode: the nominated node alone first; if it passes, it is the answer
            row = self.state.node_index[nominated]
            one = fw.filter(cycle, np.array([row], dtype=np.int64), skipped)
            if one.passed[0]:
                fp = one
        if fp is None:
            fp, _ = self._find_feasible(fw, cycle, skipped, status.nodes)
        feasible = fp.feasible
        if len(feasible) == 0:
            plugins = frozenset(fw.filter_names[i] for i in set(fp.fail_plugin.tolist()) if i >= 0)
            msg = fit_error_message(self.state.num_nodes, fp.histogram())
            return CycleRecord(pod, attempt, nominated, fp, None, skipped, None, None, None, msg,
                               unschedulable_plugins=plugins)
        if len(feasible) == 1:
            chosen = int(feasible[0])
            sp = fw.score(cycle, feasible) if self.options.record else None
            return CycleRecord(pod, attempt, nominated, fp, None, skipped, sp, chosen, chosen, None)
        sp = fw.score(cycle, feasible)
        chosen = select_host(feasible, sp.total, self.tree_rank, self.options.tie_break, self.rng)
        heap_pick = int(feasible[heap_top(sp.total.tolist())]) if self.options.record else None
        return CycleRecord(pod, attempt, nominated, fp, None, skipped, sp, chosen, heap_pick, None)

    # ------------------------------------------------------------------ the run
    def run(self, progress: Callable[[int, int], None] | None = None) -> GreedyResult:
        state = self.state
        profiles = {p.scheduler_name: p for p in self.config.profiles}
        pending, skipped = [], {}
        for p in state.pending:
            pod = state.pods[p]
            if pod.spec.scheduler_name not in profiles:
                skipped[p] = f"schedulerName {pod.spec.scheduler_name!r} matches no profile"
            elif pod.spec.scheduling_gates:
                skipped[p] = "SchedulingGated"
            else:
                pending.append(p)
        queue = SchedulingQueue(state, pending, requeue=self.options.requeue)
        result = GreedyResult(state, self.snapshot, self.order, queue.initial_order(), [], {}, skipped=skipped)
        done = 0
        while (p := queue.pop()) is not None:
            profile = profiles[state.pods[p].spec.scheduler_name]
            rec = self.schedule_one(p, profile, queue.attempts[p])
            if self.options.record:
                result.cycles.append(rec)
            if rec.chosen is not None:
                self.snapshot.add(p, rec.chosen)
                result.unschedulable.pop(p, None)
                queue.on_event(ClusterEvent.ASSIGNED_POD_ADD)
            else:
                result.unschedulable[p] = rec.message or ""
                queue.park(p, rec.unschedulable_plugins)
            done += 1
            if progress is not None:
                progress(done, len(pending))
        return result
