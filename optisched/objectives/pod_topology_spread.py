"""PodTopologySpread scoring: prefer nodes whose domains hold fewer matching pods (soft constraints).

Upstream: ``pkg/scheduler/framework/plugins/podtopologyspread/scoring.go``. Constraints are the pod's
ScheduleAnyway ones or the defaults (System: hostname maxSkew 3, zone maxSkew 5) with the selector of
the workloads selecting the pod. Per constraint, domain totals sum matching pods over every node that
qualifies (all topology keys when the constraints are the pod's own or listed defaults, plus the
inclusion policies) and whose domain holds a feasible node; hostname counts are per node. Score =
round(Σ cnt·log(size+2) + maxSkew−1); NormalizeScore maps it to ``100·(max+min−s)/max``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..constraints.pod_counts import MatchCounter
from ..constraints.pod_topology_spread import (
    HOSTNAME,
    NodeEligibility,
    SpreadConstraint,
    resolve_constraints,
)
from ..framework import MAX_NODE_SCORE, CycleState, Status
from ..model.snapshot import Snapshot

__all__ = ["PodTopologySpreadScore"]


@dataclass
class _ScoreState:
    constraints: list[SpreadConstraint]
    ignored: np.ndarray  # bool over all nodes
    value_counts: list[np.ndarray | None]  # per constraint: count per value code (None for hostname)
    weights: list[float]
    node_counts: list[np.ndarray]


class PodTopologySpreadScore:
    name = "PodTopologySpread"

    def __init__(self, snapshot: Snapshot, profile: object) -> None:
        self.snapshot = snapshot
        self.state = snapshot.state
        spread = getattr(profile, "spread", None)
        self.defaults = spread.effective_default_constraints if spread is not None else ()
        self.system_defaulted = spread is None or spread.defaulting_type == "System"
        self.counter: MatchCounter = snapshot.shared(MatchCounter)

    def pre_score(self, cycle: CycleState, nodes: np.ndarray) -> Status:
        state = self.state
        pod = cycle.pod_obj
        if len(nodes) == 0 or state.num_nodes == 0:
            return Status.skip()
        cons = resolve_constraints(state, pod, self.defaults, "ScheduleAnyway")
        if not cons:
            return Status.skip()
        require_all = bool(pod.spec.topology_spread_constraints) or not self.system_defaulted
        elig = NodeEligibility(state, pod, cons)
        ignored = np.zeros(state.num_nodes, dtype=bool)
        if require_all:
            ignored[nodes[~elig.all_keys[nodes]]] = True
        considered = nodes[~ignored[nodes]]
        qualifies = elig.all_keys if require_all else np.ones(state.num_nodes, dtype=bool)
        ns = frozenset({pod.metadata.namespace or "default"})
        value_counts: list[np.ndarray | None] = []
        weights: list[float] = []
        node_counts: list[np.ndarray] = []
        for c in cons:
            counts = (np.zeros(state.num_nodes, dtype=np.int64) if c.selector.empty
                      else self.counter.counts(ns, c.selector))
            node_counts.append(counts)
            if c.topology_key == HOSTNAME:
                value_counts.append(None)
                weights.append(math.log(len(nodes) - int(ignored.sum()) + 2))
                continue
            col = state.label(c.topology_key)
            cand = col.codes[considered]  # a node without the label makes the "" domain (upstream quirk)
            in_play = np.zeros(len(col.values) + 1, dtype=bool)
            in_play[cand] = True  # code -1 (no label) lands on the extra slot
            size = int(in_play.sum())
            weights.append(math.log(size + 2))
            member = qualifies & elig.policy_mask(c) & (col.codes >= 0)
            member &= in_play[col.codes]
            totals = np.bincount(col.codes[member], weights=counts[member], minlength=len(col.values))
            value_counts.append(totals.astype(np.int64))
        cycle.data[self.name] = _ScoreState(cons, ignored, value_counts, weights, node_counts)
        return Status()

    def score(self, cycle: CycleState, nodes: np.ndarray) -> np.ndarray:
        st: _ScoreState = cycle.data[self.name]
        cycle.data[self.name + "/ignored_of_scored"] = st.ignored[nodes]
        total = np.zeros(len(nodes), dtype=np.float64)
        for i, c in enumerate(st.constraints):
            codes = self.state.label(c.topology_key).codes[nodes]
            has = codes >= 0
            if st.value_counts[i] is None:
                cnt = st.node_counts[i][nodes]
            else:
                vc = st.value_counts[i]
                cnt = np.where(has, vc[np.where(has, codes, 0)], 0) if len(vc) else np.zeros(len(nodes), np.int64)
            total += np.where(has, cnt * st.weights[i] + (c.max_skew - 1), 0.0)
        out = np.where(total >= 0, np.floor(total + 0.5), np.ceil(total - 0.5)).astype(np.int64)
        return np.where(st.ignored[nodes], 0, out)

    def normalize(self, cycle: CycleState, scores: np.ndarray) -> np.ndarray:
        st: _ScoreState | None = cycle.data.get(self.name)
        if st is None:
            return scores
        nodes_ignored = cycle.data.get(self.name + "/ignored_of_scored")
        ignored = nodes_ignored if nodes_ignored is not None else np.zeros(len(scores), dtype=bool)
        live = scores[~ignored]
        if len(live) == 0:
            return np.zeros_like(scores)
        lo, hi = int(live.min()), int(live.max())
        if hi == 0:
            out = np.full_like(scores, MAX_NODE_SCORE)
        else:
            out = MAX_NODE_SCORE * (hi + lo - scores) // hi
        return np.where(ignored, 0, out)
