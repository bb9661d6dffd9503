"""DefaultPreemption (PostFilter): evict lower-priority pods on one node so the pod fits there.

Upstream: ``pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go`` and
``pkg/scheduler/framework/preemption/preemption.go``:

- eligibility: ``preemptionPolicy: Never`` never preempts;
- candidates: only nodes whose filter status was ``Unschedulable``, dry-run from an offset (0 here, or
  seeded) in node order until enough candidates are found (``minCandidateNodesPercentage`` /
  ``minCandidateNodesAbsolute``) and at least one violates no PDB;
- per node (``SelectVictimsOnNode``): remove every pod of lower priority, check the pod fits, then
  reprieve victims — PDB-violating ones first, then the rest, each from the most important (priority,
  then earlier start) — keeping every pod whose return still lets the pod fit;
- choosing the node (``pickOneNodeForPreemption``): fewest PDB violations, lowest highest-victim priority,
  lowest sum of priorities, fewest victims, latest start among the highest-priority victims, first node.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..framework import Code, CycleState
from ..model.snapshot import Snapshot
from ..profile import DefaultPreemptionArgs
from .pdb import PDBLedger

__all__ = ["NEVER", "NOT_HELPFUL", "NO_VICTIMS", "Candidate", "DefaultPreemption", "PreemptionOutcome"]

NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
NEVER = "not eligible due to preemptionPolicy=Never."
MAX_INT32 = 2**31 - 1

# filter_node(cycle, node) -> (fits, failing plugin, code, reasons), honouring nominated pods
NodeFilter = Callable[[CycleState, int], tuple[bool, str, Code, list[str]]]


@dataclass
class Candidate:
    node: int
    victims: list[int]  # most important first
    pdb_violations: int


@dataclass
class PreemptionOutcome:
    """What PostFilter did: a nominated node and victims, or the message explaining why not."""

    nominated: int | None
    victims: list[int] = field(default_factory=list)
    message: str = ""  # the status message ("preemption: ..."), empty on success
    table: dict[int, dict] = field(default_factory=dict)  # node -> candidate or dry-run status


class DefaultPreemption:
    name = "DefaultPreemption"

    def __init__(self, snapshot: Snapshot, args: DefaultPreemptionArgs, start_time: np.ndarray,
                 ledger: PDBLedger, offset: Callable[[int], int] | None = None) -> None:
        self.snapshot = snapshot
        self.state = snapshot.state
        self.args = args
        self.start_time = start_time  # seconds, per pod (bound pods)
        self.ledger = ledger
        self.offset = offset or (lambda n: 0)

    # ----------------------------------------------------------------- helpers
    def _importance_key(self, p: int) -> tuple[int, float]:
        """``MoreImportantPod`` as a sort key: higher priority, then earlier start, first."""
        return (-int(self.state.pod_priority[p]), float(self.start_time[p]))

    def num_candidates(self, n: int) -> int:
        """``calculateNumCandidates``."""
        k = n * self.args.min_candidate_nodes_percentage // 100
        return min(max(k, self.args.min_candidate_nodes_absolute), n)

    # ----------------------------------------------------------------- per node
    def select_victims(self, cycle: CycleState, node: int,
                       filter_node: NodeFilter) -> tuple[Candidate | None, tuple[Code, list[str]]]:
        """``SelectVictimsOnNode`` on the live snapshot, restored before returning."""
        snap = self.snapshot
        prio = int(self.state.pod_priority[cycle.pod])
        saved = snap.save_node(node)
        potential = [p for p in snap.pods_on[node] if self.state.pod_priority[p] < prio]
        if not potential:
            return None, (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [NO_VICTIMS])
        for p in potential:
            snap.remove(p)
        removed = set(potential)
        try:
            fits, _, code, reasons = filter_node(cycle, node)
            if not fits:
                return None, (code, reasons)
            potential.sort(key=self._importance_key)
            violating, ok = self.ledger.split_by_violation(potential)
            victims: list[int] = []
            n_violating = 0
            for group, is_violating in ((violating, True), (ok, False)):
                for p in group:
                    snap.add(p, node)
                    removed.discard(p)
                    fits, _, _, _ = filter_node(cycle, node)
                    if not fits:
                        snap.remove(p)
                        removed.add(p)
                        victims.append(p)
                        n_violating += is_violating
            if violating and ok:
                victims.sort(key=self._importance_key)
            return Candidate(node, victims, n_violating), (Code.SUCCESS, [])
        finally:
            for p in removed:
                snap.add(p, node)
            snap.restore_node(node, saved)

    # ----------------------------------------------------------------- choosing
    def pick(self, candidates: list[Candidate]) -> Candidate:
        """``pickOneNodeForPreemption``: the criteria in order; ties go to the first candidate."""
        prio = self.state.pod_priority

        def earliest_top(c: Candidate) -> float:
            top = max(int(prio[v]) for v in c.victims)
            return min(float(self.start_time[v]) for v in c.victims if prio[v] == top)

        funcs = [
            lambda c: -c.pdb_violations,
            lambda c: -int(prio[c.victims[0]]),
            lambda c: -sum(int(prio[v]) + MAX_INT32 + 1 for v in c.victims),
            lambda c: -len(c.victims),
            earliest_top,
        ]
        pool = candidates
        for f in funcs:
            scores = [f(c) for c in pool]
            best = max(scores)
            pool = [c for c, s in zip(pool, scores) if s == best]
            if len(pool) == 1:
                break
        return pool[0]

    # ----------------------------------------------------------------- PostFilter
    def _hopeless(self, cycle: CycleState, nodes: np.ndarray,
                  fit_rule: object) -> dict[int, tuple[Code, list[str]]]:
        """Nodes rejected by NodeResourcesFit that stay short even with every lower-priority pod gone.

        The filters before NodeResourcesFit passed and cannot fail when pods leave, so the dry run would
        end at NodeResourcesFit with these reasons: one vectorized check instead of a dry run per node.
        """
        snap, state = self.snapshot, self.state
        prio = int(state.pod_priority[cycle.pod])
        placed = np.flatnonzero((snap.node_of >= 0) & (state.pod_priority < prio))
        freed = np.zeros_like(snap.requested)
        np.add.at(freed, snap.node_of[placed], state.pod_requests[placed])
        res = fit_rule.fits(cycle.pod, nodes, snap.requested[nodes] - freed[nodes])  # type: ignore[attr-defined]
        return {int(n): (Code(int(res.code[i])), res.reasons_of(i)) for i, n in enumerate(nodes) if res.code[i]}

    def post_filter(self, cycle: CycleState, node_codes: np.ndarray, order: np.ndarray,
                    filter_node: NodeFilter, fit_failed: np.ndarray | None = None,
                    fit_rule: object | None = None) -> PreemptionOutcome:
        """``Evaluator.Preempt`` for one pod. ``node_codes[row]`` is each node's filter status code;
        ``fit_failed[row]`` marks nodes NodeResourcesFit rejected (for the vectorized shortcut)."""
        pod = cycle.pod_obj
        if pod.spec.preemption_policy == "Never":
            return PreemptionOutcome(None, message=f"preemption: {NEVER}")
        potential = order[node_codes[order] == Code.UNSCHEDULABLE]
        n_all = self.state.num_nodes
        statuses: dict[int, tuple[Code, list[str]]] = {}
        table: dict[int, dict] = {}
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        hopeless: dict[int, tuple[Code, list[str]]] = {}
        if fit_failed is not None and fit_rule is not None and len(potential):
            quick = potential[fit_failed[potential]]
            if len(quick):
                hopeless = self._hopeless(cycle, quick, fit_rule)
        if len(potential):
            want = self.num_candidates(len(potential))
            off = self.offset(len(potential))
            for i in range(len(potential)):
                node = int(potential[(off + i) % len(potential)])
                prio = self.state.pod_priority[cycle.pod]
                if node in hopeless and any(self.state.pod_priority[p] < prio for p in self.snapshot.pods_on[node]):
                    cand, status = None, hopeless[node]
                else:
                    cand, status = self.select_victims(cycle, node, filter_node)
                if cand is not None and cand.victims:
                    (non_violating if cand.pdb_violations == 0 else violating).append(cand)
                    table[node] = {"victims": [self.state.pods[v].key for v in cand.victims],
                                   "numPDBViolations": cand.pdb_violations}
                    if non_violating and len(non_violating) + len(violating) >= want:
                        break
                    continue
                statuses[node] = status
                table[node] = {"numPDBViolations": 0, "status": f"{status[0].label}: {', '.join(status[1])}"}
        candidates = non_violating + violating
        if not candidates:
            hist: Counter = Counter()
            for node in range(n_all):
                found = statuses.get(node)
                for r in (found[1] if found is not None else [NOT_HELPFUL]):
                    hist[r] += 1
            from ..greedy.fiterror import fit_error_message

            return PreemptionOutcome(None, message="preemption: " + fit_error_message(n_all, hist), table=table)
        order_rank = {int(n): i for i, n in enumerate(order)}
        candidates.sort(key=lambda c: order_rank[c.node])
        best = self.pick(candidates)
        return PreemptionOutcome(best.node, best.victims, "", table)
