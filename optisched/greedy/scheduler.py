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
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC

import numpy as np

from .. import interrupt
from ..framework import Code, CycleState, FilterAborted, FilterResult, PodNotHandled, Status
from ..model.snapshot import Snapshot
from ..model.state import ClusterState, for_release
from ..preemption.default_preemption import DefaultPreemption, PreemptionOutcome
from ..preemption.pdb import PDBLedger
from ..preemption.vector_dry_run import DryRuns, VectorPreemption
from ..profile import Profile, SchedulerConfig
from .cached_framework import CachedFramework
from .fiterror import fit_error_message
from .framework_runner import FilterPass, Framework, ScorePass
from .nodetree import node_tree_order, num_feasible_nodes_to_find
from .queue import ClusterEvent, SchedulingQueue, split_handled
from .select import TieBreak, heap_top, select_host

__all__ = ["CycleRecord", "GreedyOptions", "GreedyResult", "GreedyScheduler"]


@dataclass(frozen=True)
class GreedyOptions:
    tie_break: TieBreak = TieBreak.FIRST
    seed: int = 0
    requeue: bool = True
    queue_seed: int | None = None  # a seeded order within each priority instead of creation times
    record: bool = True  # keep per-cycle records (traces, explain); off for large benchmark runs
    record_candidates: bool = True  # with record: preemption's per-node candidate table (traces)
    reference: bool = False  # the plain per-node code paths the optimized ones are tested against
    interruptible: bool = False  # Ctrl-C stops the queue (a run whose partial answer is shown, not a prediction)


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
    absent: np.ndarray | None = None  # nodes a PreFilterResult excluded (upstream's absent nodes)
    absent_reason: str = ""  # their one shared status (``NodeToStatus.absentNodesStatus``)
    absent_plugins: tuple[str, ...] = ()  # the PreFilter plugins whose result excluded them
    post_filter: PreemptionOutcome | None = None
    allocations: dict[str, dict] | None = None  # DRA: what each claim of the bound pod got, by claim key
    deallocated: list[str] | None = None  # DRA: the claims the PostFilter deallocated


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
    interrupted: bool = False  # Ctrl-C stopped the queue between two cycles (optisched.interrupt)

    @property
    def not_attempted(self) -> list[int]:
        """Pending pods the run never tried (it was interrupted first): neither placed nor unschedulable."""
        if not self.interrupted:
            return []
        node_of = self.snapshot.node_of
        return [p for p in self.state.pending
                if node_of[p] < 0 and p not in self.unschedulable and p not in self.skipped]

    def placements(self) -> dict[str, str | None]:
        """Every pod: its node after the run, or None."""
        names = self.state.node_names
        return {p.key: (names[n] if (n := int(self.snapshot.node_of[i])) >= 0 else None)
                for i, p in enumerate(self.state.pods)}


class _ChangeCount:
    """Snapshot listener counting adds and removes: what a cycle saw holds while the count stays;
    ``nodes`` lists the node of each change in order."""

    def __init__(self) -> None:
        self.n = 0
        self.nodes: list[int] = []

    def on_add(self, pod: int, node: int) -> None:
        self.n += 1
        self.nodes.append(node)

    def on_remove(self, pod: int, node: int) -> None:
        self.n += 1
        self.nodes.append(node)


def _seconds(ts) -> float | None:  # type: ignore[no-untyped-def]
    if ts is None:
        return None
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=UTC)
    return ts.timestamp()


class GreedyScheduler:
    """kube-scheduler over a :class:`ClusterState`, one profile per ``schedulerName``."""

    def __init__(self, state: ClusterState, config: SchedulerConfig, options: GreedyOptions = GreedyOptions()):
        self.state = state = for_release(state, config.requests_key)
        self.config = config
        self.options = options
        self.snapshot = Snapshot(state)
        self.order = node_tree_order(state.nodes)
        self.tree_rank = np.empty(len(self.order), dtype=np.int64)
        self.tree_rank[self.order] = np.arange(len(self.order))
        self.next_start = 0
        self.rng = random.Random(options.seed)
        self._frameworks: dict[str, Framework] = {}
        self.nominated: dict[int, int] = {}  # pod -> nominated node
        self.start_time, self.bind_epoch = self._start_times()
        self.cycle_no = 0
        # PDB status as the input had it: no disruption controller runs during a simulated run; built when
        # preemption first reads it (most runs never preempt)
        self.pdb_bound = state.pod_node >= 0
        self._pdbs: PDBLedger | None = None
        # Failed cycles, by pod shape, valid while nothing they read changed (see schedule_one)
        self._changes = _ChangeCount()
        self.snapshot.subscribe(self._changes)
        self._nominations = 0  # bumped whenever a nomination is made or dropped
        self._objects = 0  # bumped whenever a cycle changes an object besides placements (a claim deallocated)
        self._last_cycle: CycleState | None = None
        self._failed: dict[tuple, list[CycleRecord]] = {}  # by _hint; each record's pod has its shape
        self._failed_at: tuple[int, int, int] | None = None
        self._shapes: dict[int, tuple] = {}
        # the last preemptor's dry runs: (profile, _hint, skipped filters), the pod, the runs
        self._dry_runs: tuple[tuple, int, DryRuns] | None = None

    def _start_times(self) -> tuple[np.ndarray, float]:
        return start_times(self.state)

    def restart(self) -> None:
        """Forget what a run learnt besides the snapshot, as a scheduler started on the cluster as it is
        now: no nominations, no cached failures or dry runs, ``nextStartNodeIndex`` 0, budgets over the
        pods bound now (a caller replaying several runs on one kept snapshot, :mod:`optisched.reschedule.live`)."""
        self.pdb_bound, self._pdbs = self.snapshot.node_of >= 0, None
        self.next_start, self.nominated, self._nominations = 0, {}, 0
        self._failed, self._failed_at, self._shapes, self._dry_runs = {}, None, {}, None

    @property
    def pdbs(self) -> PDBLedger:
        """The PodDisruptionBudgets over the pods bound when the run started (:attr:`pdb_bound`)."""
        if self._pdbs is None:
            self._pdbs = PDBLedger(self.state, self.pdb_bound.tolist())
        return self._pdbs

    def framework(self, profile: Profile) -> Framework:
        fw = self._frameworks.get(profile.scheduler_name)
        if fw is None:
            kind = Framework if self.options.reference else CachedFramework
            fw = self._frameworks[profile.scheduler_name] = kind(self.snapshot, profile)
        return fw

    # ------------------------------------------------------------------ nominated pods
    def _nominated_on(self, node: int, pod: int) -> list[int]:
        prio = self.state.pod_priority[pod]
        return [p for p, n in self.nominated.items()
                if n == node and p != pod and self.state.pod_priority[p] >= prio and self.snapshot.node_of[p] < 0]

    def filter_node(self, fw: Framework, cycle: CycleState, node: int) -> tuple[bool, str, Code, list[str]]:
        """``RunFilterPluginsWithNominatedPods`` on one node: first with the nominated pods of equal or
        higher priority added, then (if that passed and pods were added) without them."""
        extra = self._nominated_on(node, cycle.pod)
        for p in extra:
            self.snapshot.add(p, node)
        try:
            result = fw.filter_one(cycle, node)
        finally:
            for p in extra:
                self.snapshot.remove(p)
        if extra and result[0]:
            result = fw.filter_one(cycle, node)
        return result

    def _apply_nominated(self, fw: Framework, cycle: CycleState, fp: FilterPass) -> None:
        """Re-check passing nodes that hold nominated pods (rare), in place."""
        if not self.nominated:
            return
        nodes = {n for p, n in self.nominated.items() if p != cycle.pod}
        for pos in np.flatnonzero(fp.passed):
            node = int(fp.evaluated[pos])
            if node in nodes and self._nominated_on(node, cycle.pod):
                ok, plugin, code, reasons = self.filter_node(fw, cycle, node)
                if not ok:
                    fp.passed[pos] = False
                    fp.fail_plugin[pos] = fp.plugin_names.index(plugin)
                    fp.fail_code[pos] = int(code)
                    mask = np.zeros(len(fp.evaluated), dtype=bool)
                    mask[pos] = True
                    res = FilterResult(np.where(mask, np.int8(code), np.int8(0)), [(mask, r) for r in reasons])
                    fp.results.append((plugin, np.arange(len(fp.evaluated)), res))

    # ------------------------------------------------------------------ one cycle
    def _find_feasible(self, fw: Framework, cycle: CycleState, skipped: set[str],
                       restrict: np.ndarray | None) -> FilterPass:
        """Filter from ``nextStartNodeIndex`` until enough feasible nodes are found (sequential pass)."""
        nodes = self.order if restrict is None else self.order[restrict[self.order]]
        n_all = len(self.order)
        if len(nodes) == 0:
            return fw.filter(cycle, nodes, skipped)
        start = self.next_start % len(nodes)
        rotated = np.concatenate((nodes[start:], nodes[:start]))
        pct = cycle.profile.effective_percentage(self.config.percentage_of_nodes_to_score)
        to_find = num_feasible_nodes_to_find(pct, n_all)
        # most cycles find enough feasible nodes early: filter a head first, the rest only if needed
        head = min(2 * (to_find + 1) + 64, len(rotated))
        if 4 * (len(rotated) - head) < head:
            head = len(rotated)  # a short rest costs less than a second pass's fixed cost
        fp = fw.filter(cycle, rotated[:head], skipped)
        self._apply_nominated(fw, cycle, fp)
        if head < len(rotated) and np.count_nonzero(fp.passed) <= to_find:
            tail = fw.filter(cycle, rotated[head:], skipped)
            self._apply_nominated(fw, cycle, tail)
            fp = fp.extend(tail)
        feasible_pos = np.flatnonzero(fp.passed)
        if len(feasible_pos) > to_find:
            # the (to_find+1)-th feasible node cancels the search and is not kept
            fp = fp.truncate(int(feasible_pos[to_find]))
        self.next_start = (self.next_start + len(fp.evaluated)) % n_all
        return fp

    def _node_codes(self, rec: CycleRecord) -> np.ndarray:
        """Filter status code per node row (absent nodes: UnschedulableAndUnresolvable)."""
        codes = np.full(self.state.num_nodes, int(Code.UNSCHEDULABLE_AND_UNRESOLVABLE), dtype=np.int8)
        if rec.pre_filter is not None:
            codes[:] = int(rec.pre_filter[0].code)
        elif rec.filters is not None:
            codes[rec.filters.evaluated] = rec.filters.fail_code
        return codes

    def _shape(self, pod: int) -> tuple:
        """Everything a cycle reads of a pod but its name, uid and creation time."""
        key = self._shapes.get(pod)
        if key is None:
            obj = self.state.pods[pod]
            # an ephemeral volume's claim is named after the pod: there the name is part of the shape
            meta = {"uid", "creation_timestamp"} | (set() if any(v.ephemeral is not None for v in obj.spec.volumes)
                                                    else {"name"})
            key = self._shapes[pod] = (
                obj.model_dump_json(exclude={"metadata": meta}),
                self.state.pod_requests[pod].tobytes(), self.state.pod_nonzero[pod].tobytes(),
                int(self.state.pod_priority[pod]))
        return key

    def _hint(self, pod: int) -> tuple:
        """A part of ``_shape`` that is cheap to build: pods whose hints differ differ in shape, so the
        shape (a JSON dump of the pod) is only built for pods whose hint matches another's."""
        return self.state.pod_requests[pod].tobytes(), int(self.state.pod_priority[pod])

    def _same_shape(self, a: int, b: int) -> bool:
        return a == b or self._shape(a) == self._shape(b)

    def _stamp(self) -> tuple[int, int, int]:
        """What a failed cycle's outcome depends on besides the pod: snapshot, nominations, start index."""
        return self._changes.n + self._objects, self._nominations, self.next_start

    def schedule_one(self, pod: int, profile: Profile, attempt: int) -> CycleRecord:
        """One cycle. A pod of the same shape as one that just failed, on the same snapshot, with the same
        nominations and the same ``nextStartNodeIndex``, fails the same way (PreFilter, Filter and
        PostFilter are functions of these): its record is reused. Only failures that evaluated every
        node (and so left the start index where it was) and nominated nothing are kept."""
        memo = (not self.options.reference and pod not in self.nominated
                and not self.state.pods[pod].status.nominated_node_name)
        stamp = self._stamp()
        if memo and stamp == self._failed_at:
            for hit in self._failed.get(self._hint(pod), ()):
                if self._same_shape(hit.pod, pod):
                    return replace(hit, pod=pod, attempt=attempt)
        try:
            rec = self._cycle(pod, profile, attempt)
        except FilterAborted as e:  # a Filter or Score Error: the cycle ends, no PostFilter
            rec = CycleRecord(pod, attempt, None, None, None, set(), None, None, None,
                              f'running "{e.plugin}" {e.point} plugin: {e}', unschedulable_plugins=frozenset({e.plugin}))
        if memo and rec.chosen is None and rec.preemption is None and self._stamp() == stamp:
            if stamp != self._failed_at:
                self._failed, self._failed_at = {}, stamp
            self._failed.setdefault(self._hint(pod), []).append(rec)  # its shape differs from the others'
        return rec

    def _cycle(self, pod: int, profile: Profile, attempt: int) -> CycleRecord:
        fw = self.framework(profile)
        cycle = self._last_cycle = CycleState(pod, self.snapshot, profile)
        nominated_row = self.nominated.get(pod)
        nominated = self.state.node_names[nominated_row] if nominated_row is not None else \
            self.state.pods[pod].status.nominated_node_name
        status, plugin, skipped = fw.pre_filter(cycle)
        if status.code != Code.SUCCESS:
            rec = CycleRecord(pod, attempt, nominated, None, (status, plugin), skipped, None, None, None, None,
                              unschedulable_plugins=frozenset({plugin}))
            if status.code == Code.ERROR:  # not a FitError: no PostFilter (schedulingCycle's error path)
                rec.message = f'running PreFilter plugin "{plugin}": {", ".join(status.reasons)}'
                return rec
            rec.message = fit_error_message(self.state.num_nodes, Counter(), ", ".join(status.reasons))
            return self._post_filter(fw, cycle, rec)
        fp: FilterPass | None = None
        if nominated and nominated in self.state.node_index:
            # evaluateNominatedNode: the nominated node alone first; if it passes, it is the answer
            row = self.state.node_index[nominated]
            one = fw.filter(cycle, np.array([row], dtype=np.int64), skipped)
            self._apply_nominated(fw, cycle, one)
            if one.passed[0]:
                fp = one
        absent: np.ndarray | None = None
        absent_reason, absent_plugins = "", tuple[str, ...]()
        if fp is None:  # findNodesThatFitPod returns the passing nominated node before the absent nodes are set
            fp = self._find_feasible(fw, cycle, skipped, status.nodes)
            absent, absent_reason, absent_plugins = _absent_nodes(cycle, status)
        feasible = fp.feasible
        if len(feasible) == 0:
            plugins = frozenset(fw.filter_names[i] for i in set(fp.fail_plugin.tolist()) if i >= 0)
            hist = fp.histogram()
            if absent is not None and absent.any():
                hist[absent_reason] += int(absent.sum())
            rec = CycleRecord(pod, attempt, nominated, fp, None, skipped, None, None, None,
                              fit_error_message(self.state.num_nodes, hist), unschedulable_plugins=plugins,
                              absent=absent, absent_reason=absent_reason, absent_plugins=absent_plugins)
            return self._post_filter(fw, cycle, rec)
        if len(feasible) == 1:
            chosen = int(feasible[0])
            sp = fw.score(cycle, feasible) if self.options.record else None
            return CycleRecord(pod, attempt, nominated, fp, None, skipped, sp, chosen, chosen, None,
                               absent=absent, absent_reason=absent_reason, absent_plugins=absent_plugins)
        sp = fw.score(cycle, feasible)
        if sp.error:  # schedulingCycle's error path: no node, no PostFilter
            return CycleRecord(pod, attempt, nominated, fp, None, skipped, sp, None, None, sp.error,
                               absent=absent, absent_reason=absent_reason, absent_plugins=absent_plugins)
        chosen = select_host(feasible, sp.total, self.tree_rank, self.options.tie_break, self.rng)
        heap_pick = int(feasible[heap_top(sp.total.tolist())]) if self.options.record else None
        return CycleRecord(pod, attempt, nominated, fp, None, skipped, sp, chosen, heap_pick, None,
                           absent=absent, absent_reason=absent_reason, absent_plugins=absent_plugins)

    def _post_filter(self, fw: Framework, cycle: CycleState, rec: CycleRecord) -> CycleRecord:
        """Run the profile's PostFilter plugins in order (``RunPostFilterPlugins``): DynamicResources may
        free a claim, then DefaultPreemption; each one's message joins the FitError's."""
        reasons = []
        for rule in fw.post_filter_rules:
            reason, freed = rule.post_filter(cycle)
            reasons.append(reason)
            if freed:
                rec.deallocated = freed
                self._objects += 1
        if "DefaultPreemption" in cycle.profile.plugins.get("postFilter", ()):
            outcome = self._preemption(fw, cycle, rec)
            rec.post_filter = outcome
            names = self.state.node_names
            if outcome.nominated is not None:
                rec.preemption = {
                    "nominatedNode": names[outcome.nominated],
                    "victims": [self.state.pods[v].key for v in outcome.victims],
                    "candidates": {names[n]: c for n, c in outcome.table.items()},
                }
                return rec
            reasons.append(outcome.message)
        if reasons:
            msg = ", ".join(reasons)
            rec.message = f"{rec.message} {msg}" + ("" if msg.endswith(".") else ".")
        return rec

    def _preemption(self, fw: Framework, cycle: CycleState, rec: CycleRecord) -> PreemptionOutcome:
        """DefaultPreemption's dry runs: all candidate nodes at once, or node by node (the reference)."""
        args = (self.snapshot, cycle.profile.preemption, self.start_time, self.pdbs)
        codes = self._node_codes(rec)
        filter_node = lambda c, n: self.filter_node(fw, c, n)
        if not self.options.reference:
            prio = self.state.pod_priority[cycle.pod]
            nominated = {n for p, n in self.nominated.items()
                         if p != cycle.pod and self.state.pod_priority[p] >= prio and self.snapshot.node_of[p] < 0}
            runs = None if nominated else self._kept_dry_runs(cycle, rec)
            changes = self._changes.n
            outcome = VectorPreemption(*args).post_filter_all(cycle, codes, self.order, filter_node, fw,
                                                              rec.skipped_filters, nominated,
                                                              self.options.record and self.options.record_candidates,
                                                              runs)
            if runs is None or not runs.local or self._changes.n != changes:
                self._dry_runs = None
            if outcome is not None:
                return outcome
        fit_failed = None
        fit_rule = fw.filter_rules.get("NodeResourcesFit")
        if rec.filters is not None and fit_rule is not None and not self.nominated:
            fit_failed = np.zeros(self.state.num_nodes, dtype=bool)
            fit_idx = fw.filter_names.index("NodeResourcesFit")
            fit_failed[rec.filters.evaluated[rec.filters.fail_plugin == fit_idx]] = True
        return DefaultPreemption(*args).post_filter(cycle, codes, self.order, filter_node, fit_failed, fit_rule)

    def _kept_dry_runs(self, cycle: CycleState, rec: CycleRecord) -> DryRuns:
        """The dry runs of the last preemptor when it had this pod's shape (preemptors of one workload
        come one after another), without the nodes changed since; else new ones, kept for the next."""
        key = (cycle.profile.scheduler_name, self._hint(cycle.pod), frozenset(rec.skipped_filters))
        log = self._changes.nodes
        if self._dry_runs is not None and self._dry_runs[0] == key and self._same_shape(self._dry_runs[1], cycle.pod):
            runs = self._dry_runs[2]
            if len(log) > runs.seen:
                runs.invalidate(np.unique(np.asarray(log[runs.seen:], dtype=np.int64)))
        else:
            runs = DryRuns(self.state.num_nodes)
            self._dry_runs = (key, cycle.pod, runs)
        runs.seen = len(log)
        return runs

    # ------------------------------------------------------------------ the run
    def run(self, progress: Callable[[int, int], None] | None = None, pods: list[int] | None = None) -> GreedyResult:
        """Schedule the pending pods (``pods``: those rows only, unbound, in any order; default every pod
        the state has pending) in queue order."""
        state = self.state
        profiles = {p.scheduler_name: p for p in self.config.profiles}
        pending, skipped = split_handled(state, list(state.pending) if pods is None else pods, set(profiles))
        held = {p: why for p in pending if (why := self.framework(profiles[state.pods[p].spec.scheduler_name])
                                            .pre_enqueue(p)) is not None}
        if held:  # a PreEnqueue plugin keeps them out of the queue: never attempted
            pending = [p for p in pending if p not in held]
            skipped.update(held)
        queue = SchedulingQueue(state, pending, requeue=self.options.requeue, shuffle=self.options.queue_seed)
        result = GreedyResult(state, self.snapshot, self.order, queue.initial_order(), [], {}, skipped=skipped)
        done = 0
        while (p := queue.pop()) is not None:
            if self.options.interruptible and interrupt.requested():  # between two cycles: the pods bound so far stand
                result.interrupted = True
                break
            profile = profiles[state.pods[p].spec.scheduler_name]
            attempt = queue.attempts[p]
            while True:
                try:
                    rec = self.schedule_one(p, profile, attempt)
                except PodNotHandled as e:  # a rule met what optisched does not model: reported, not guessed
                    result.skipped[p] = f"not modelled: {e}"
                    break
                self.cycle_no += 1
                if self.options.record:
                    result.cycles.append(rec)
                if rec.preemption is None or rec.post_filter is None:
                    break
                self._preempt(result, queue, p, rec.post_filter)
                attempt += 1  # retried at once, the nominated node first
                if attempt > 2 and not self.options.requeue:
                    break
            if p in result.skipped:
                done += 1
                continue
            if rec.chosen is not None:
                self.snapshot.add(p, rec.chosen)
                assert self._last_cycle is not None and self._last_cycle.pod == p  # a placed cycle is never reused
                got = self.framework(profile).reserve(self._last_cycle, rec.chosen)
                if got and self.options.record:
                    rec.allocations = got
                self.start_time[p] = self.bind_epoch + self.cycle_no
                if self.nominated.pop(p, None) is not None:
                    self._nominations += 1
                result.unschedulable.pop(p, None)
                queue.on_event(ClusterEvent.ASSIGNED_POD_ADD)
            else:
                result.unschedulable[p] = rec.message or ""
                queue.park(p, rec.unschedulable_plugins)
            done += 1
            if progress is not None:
                progress(done, len(pending))
        return result

    def _profile_of(self, pod: int) -> Profile:
        name = self.state.pods[pod].spec.scheduler_name
        return next((p for p in self.config.profiles if p.scheduler_name == name), self.config.profiles[0])

    def _preempt(self, result: GreedyResult, queue: SchedulingQueue, pod: int, outcome: PreemptionOutcome) -> None:
        """Evict the victims and nominate the node; pods the deletions may help move back to the queue."""
        assert outcome.nominated is not None
        fw = self.framework(self._profile_of(pod))
        for v in outcome.victims:
            self.snapshot.remove(v)
            fw.deleted(v)
            self.nominated.pop(v, None)
            result.preempted[v] = (pod, outcome.nominated)
        self.nominated[pod] = outcome.nominated
        self._nominations += 1
        queue.on_event(ClusterEvent.ASSIGNED_POD_DELETE)


def _absent_nodes(cycle: CycleState, status: Status) -> tuple[np.ndarray | None, str, tuple[str, ...]]:
    """Nodes the PreFilter result left out, their shared reason and the plugins that narrowed the nodes
    (``findNodesThatFitPod``: ``SetAbsentNodesStatus`` with ``node(s) didn't satisfy plugin(s) [...]``
    naming, sorted, every PreFilter plugin that returned node names)."""
    if status.nodes is None:
        return None, "", ()
    ran: dict[str, Status] = cycle.data.get("__prefilter__", {})
    plugins = tuple(sorted(name for name, st in ran.items() if st.ok and st.nodes is not None))
    return ~status.nodes, f"node(s) didn't satisfy plugin(s) [{' '.join(plugins)}]", plugins


def start_times(state: ClusterState) -> tuple[np.ndarray, float]:
    """``status.startTime`` of bound pods (else their creation time), and the start time of pods bound
    during a run: the latest time in the input + 1 h (a run adds the cycle number in seconds)."""
    times = np.zeros(len(state.pods), dtype=np.float64)
    latest = 0.0
    for i, p in enumerate(state.pods):
        created = _seconds(p.metadata.creation_timestamp)
        started = _seconds(p.status.start_time)
        times[i] = started if started is not None else (created or 0.0)
        latest = max(latest, created or 0.0, started or 0.0)
    return times, latest + 3600.0
