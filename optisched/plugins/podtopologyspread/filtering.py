"""PodTopologySpread's PreFilter and Filter (``filtering.go``): per-constraint domain counts kept up to
date with the snapshot, ``minMatchNum``, and the skew check; its CP-SAT side is :mod:`.encoding`, its
preemption world :mod:`.dry_run`."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ...framework import ClusterEvent, Code, CycleState, Fidelity, FilterResult, Plugin, Status
from ...model.objects import Pod
from ...model.pod_counts import MatchCounter
from ...model.pod_index import PodIndex
from ...model.snapshot import Snapshot
from ...profile.gates import gate_enabled
from .. import names
from .common import (
    DO_NOT_SCHEDULE,
    REASON,
    REASON_MISSING_LABEL,
    SCHEDULE_ANYWAY,
    NodeEligibility,
    SpreadConstraint,
    _namespace,
    constraints_error,
    domain_counts,
    matching_pods_per_node,
    resolve_constraints,
)
from .dry_run import SpreadWorld
from .encoding import SpreadEncoding

__all__ = ["PodTopologySpread"]


@dataclass
class _Hard:
    """One hard constraint's PreFilter state: ``TpValueToMatchNum[i]`` as a vector over value codes."""

    c: SpreadConstraint
    codes: np.ndarray  # int32 [N]: the node's value code for the key, -1 absent
    counted: np.ndarray  # bool [N]: nodes updated by AddPod/RemovePod (all keys + policies)
    counts: np.ndarray  # int64 [V]: matching pods per domain, with the deltas applied so far
    present: np.ndarray  # bool [V]: the constraint's domains (fixed: deltas only touch counted nodes)
    self_match: int


@dataclass
class _FilterState:
    pod: int
    namespace: str
    hard: list[_Hard]
    version: int  # snapshot changes applied up to here (see PodTopologySpread._log)
    minimum: list[int] = field(default_factory=list)


class PodTopologySpread(SpreadEncoding, Plugin):
    """PreFilter + Filter of ``PodTopologySpread``."""

    name = names.POD_TOPOLOGY_SPREAD
    points = frozenset({"preFilter", "filter"})
    events = frozenset({ClusterEvent.ASSIGNED_POD_ADD, ClusterEvent.ASSIGNED_POD_DELETE})
    depends_on_placement = True  # Filter follows pods added/removed after PreFilter (AddPod/RemovePod)

    def __init__(self, snapshot: Snapshot, profile: object) -> None:
        self.snapshot = snapshot
        self.state = snapshot.state
        spread = getattr(profile, "spread", None)
        self.defaults: tuple[dict, ...] = spread.effective_default_constraints if spread is not None else ()
        self.match_label_keys = gate_enabled(profile, "MatchLabelKeysInPodTopologySpread")
        self.counter: MatchCounter = snapshot.shared(MatchCounter)
        # snapshot changes since the last fresh PreFilter: (pod, node, +1/-1); version = base + len
        self._log: list[tuple[int, int, int]] = []
        self._log_base = 0
        self._replaying = True
        snapshot.subscribe(self)
        self._replaying = False

    # snapshot listener: remember what changes after a PreFilter
    def dry_run(self, cycle: CycleState, nodes: np.ndarray, index: PodIndex) -> SpreadWorld:
        """Per hard constraint, the count of the node's domain and the minimum over the domains (the other
        domains keep their counts, so the minimum is theirs or the node's domain's), moved as
        ``AddPod``/``RemovePod`` move them (same namespace, selector match, counted node)."""
        return SpreadWorld(self, cycle, nodes, index)

    def on_add(self, pod: int, node: int) -> None:
        if not self._replaying:
            self._log.append((pod, node, 1))

    def on_remove(self, pod: int, node: int) -> None:
        self._log.append((pod, node, -1))

    @property
    def _version(self) -> int:
        return self._log_base + len(self._log)

    def pre_filter(self, cycle: CycleState) -> Status:
        """``calPreFilterState``; Skip without hard constraints. Called again in the same cycle (as the
        engines do after adding or removing pods) it keeps the cycle's state: Filter applies the changes."""
        if self.name in cycle.data:
            return Status.skip() if cycle.data[self.name] is None else Status()
        # a fresh PreFilter: earlier cycles' changes are no longer needed
        self._log_base += len(self._log)
        self._log.clear()
        pod = cycle.pod_obj
        if (err := constraints_error(pod, DO_NOT_SCHEDULE)) is not None:
            return Status(Code.ERROR, (f"obtaining pod's hard topology spread constraints: {err}",))
        cons = resolve_constraints(self.snapshot, pod, self.defaults, DO_NOT_SCHEDULE, self.match_label_keys)
        cycle.data[self.name] = self._compute(cycle.pod, pod, cons) if cons else None
        return Status() if cons else Status.skip()

    def pre_filter_soft(self, cycle: CycleState) -> Status:
        """PreFilter over the pod's ScheduleAnyway constraints as if they were hard, so Filter then says
        whether a node breaks their maxSkew: what the descheduler's RemovePodsViolatingTopologySpreadConstraint
        checks with ``constraints: [ScheduleAnyway]`` (``reschedule --goal repair --soft``). Skip without any."""
        pod = cycle.pod_obj
        cons = [] if constraints_error(pod, SCHEDULE_ANYWAY) is not None else \
            resolve_constraints(self.snapshot, pod, self.defaults, SCHEDULE_ANYWAY, self.match_label_keys)
        cycle.data[self.name] = self._compute(cycle.pod, pod, cons) if cons else None
        return Status() if cons else Status.skip()

    def _compute(self, row: int, pod: Pod, cons: list[SpreadConstraint]) -> _FilterState:
        elig = NodeEligibility(self.state, pod, cons)
        hard = []
        for c in cons:
            col = self.state.label(c.topology_key)
            counted = elig.counted(c)
            per_node = matching_pods_per_node(self.counter, pod, c.selector)
            counts, present = domain_counts(col.codes, counted, per_node, len(col.values))
            hard.append(_Hard(c, col.codes, counted, counts, present, int(c.selector.matches(pod.metadata.labels))))
        st = _FilterState(row, _namespace(pod), hard, self._version)
        st.minimum = [self._min_match(h) for h in hard]
        return st

    @staticmethod
    def _min_match(h: _Hard) -> int:
        """``minMatchNum``: the smallest domain count (``criticalPaths[0]``, exact as long as the changes
        since PreFilter touch one node, as upstream's are); 0 with fewer domains than minDomains."""
        num_domains = int(h.present.sum())
        if num_domains < h.c.min_domains:
            return 0
        return int(h.counts[h.present].min())

    def _catch_up(self, st: _FilterState) -> None:
        """Apply the snapshot changes since ``st.version`` as ``updateWithPod`` does."""
        if st.version == self._version:
            return
        if st.version < self._log_base:  # a state from an earlier cycle: its base is gone
            fresh = self._compute(st.pod, self.state.pods[st.pod], [h.c for h in st.hard])
            st.hard, st.minimum, st.version = fresh.hard, fresh.minimum, fresh.version
            return
        events = self._log[st.version - self._log_base:]
        pods = self.state.pods
        changed = set()
        for p, node, sign in events:
            obj = pods[p]
            if _namespace(obj) != st.namespace:
                continue
            for i, h in enumerate(st.hard):
                if h.counted[node] and h.c.selector.matches(obj.metadata.labels):
                    h.counts[h.codes[node]] += sign
                    changed.add(i)
        for i in changed:
            st.minimum[i] = self._min_match(st.hard[i])
        st.version = self._version

    def filter(self, cycle: CycleState, nodes: np.ndarray) -> FilterResult:
        st: _FilterState | None = cycle.data.get(self.name)
        n = len(nodes)
        if st is None:
            return FilterResult.passing(n)
        self._catch_up(st)
        return self._judge(st, nodes, [(h.counts[np.where(h.codes[nodes] >= 0, h.codes[nodes], 0)]
                                         if len(h.counts) else np.zeros(n, dtype=np.int64), minimum)
                                        for h, minimum in zip(st.hard, st.minimum)])

    @staticmethod
    def _judge(st: _FilterState, nodes: np.ndarray, seen: Sequence[tuple[np.ndarray, np.ndarray | int]]) -> FilterResult:
        """Filter's verdict per node from each hard constraint's (matching pods in the node's domain,
        minMatchNum): a node lacking the key is unresolvable, else ``match + selfMatch - min > maxSkew``
        is unschedulable; each node stops at its first failing constraint."""
        n = len(nodes)
        code = np.zeros(n, dtype=np.int8)
        missing = np.zeros(n, dtype=bool)
        skewed = np.zeros(n, dtype=bool)
        for h, (match, minimum) in zip(st.hard, seen):
            undecided = code == 0
            has = h.codes[nodes] >= 0
            lacks = undecided & ~has
            code[lacks] = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            missing |= lacks
            bad = undecided & has & (match + h.self_match - minimum > h.c.max_skew)
            code[bad] = Code.UNSCHEDULABLE
            skewed |= bad
        reasons = [(m, r) for m, r in ((missing, REASON_MISSING_LABEL), (skewed, REASON)) if m.any()]
        return FilterResult(code, reasons)

    def filter_each_without_self(self, cycle: CycleState, rows: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        """Filter codes (int8 [K]) of each placed pod ``rows[k]`` on its own node ``nodes[k]`` against the
        snapshot without that pod: what Filter says for each pod arriving last, as the reschedule summary
        asks of every running pod, in one call for a class of identical pods (same namespace, labels and
        spec as the cycle's pod, whose PreFilter was taken with all of them placed). Each pod's own count
        leaves its domain as ``updateWithPod`` with -1 does (:meth:`_catch_up`: counted node, selector
        matching its labels, not terminating; an empty selector counts nothing), and minMatchNum follows that one domain going down."""
        st: _FilterState | None = cycle.data.get(self.name)
        if st is None:
            return np.zeros(len(rows), dtype=np.int8)
        self._catch_up(st)
        alive = np.array([self.state.pod_meta[2][r] for r in rows.tolist()], dtype=bool)
        seen = []
        for h, minimum in zip(st.hard, st.minimum):
            codes = h.codes[nodes]
            has = codes >= 0
            own = has & h.counted[nodes] & alive & bool(h.self_match) & (not h.c.selector.empty)
            match = (h.counts[np.where(has, codes, 0)] if len(h.counts) else np.zeros(len(rows), dtype=np.int64)) - own
            floor = np.where(own, np.minimum(minimum, match), minimum) \
                if int(h.present.sum()) >= h.c.min_domains else np.full(len(rows), minimum)
            seen.append((match, floor))
        return self._judge(st, nodes, seen).code

    filter_fidelity = Fidelity.EXACT  # the batch model's side: .encoding
