"""PodTopologySpread: PreScore + Score + NormalizeScore (soft constraints).

Upstream (kubernetes v1.35.4): ``pkg/scheduler/framework/plugins/podtopologyspread/scoring.go``, with
the constraint resolution and counting of ``common.go`` shared with the filter
(:mod:`optisched.plugins.podtopologyspread.filtering`).

* Constraints: the pod's ScheduleAnyway ones or, when it has none at all, the profile's default ones
  (System: hostname maxSkew 3, zone maxSkew 5) with the selector of the Services / workloads selecting
  the pod. None: Skip (so a pod with only DoNotSchedule constraints skips scoring too).
* ``requireAllTopologies`` (the pod's own constraints or List defaulting): a feasible node lacking any
  topology key is ignored (raw 0, normalized 0, left out of min/max); with System defaulting nothing is
  ignored and a node without the zone label forms the ``""`` zone among the feasible ones.
* ``TopologyNormalizingWeight`` = ``log(size + 2)``: size = the distinct values of the key among the
  non-ignored feasible nodes (the ``""`` value included), for hostname the number of non-ignored
  feasible nodes.
* Domain totals (``processAllNode``): over **all** nodes (not just feasible ones) that carry every key
  when required and pass the constraint's inclusion policies, for domains holding a feasible node.
  Hostname constraints skip this: Score counts the node's own matching pods, without the policies.
* Score: ``round(Σ over the constraints whose key the node has of cnt·weight + (maxSkew − 1))`` in
  float64, ``math.Round``. NormalizeScore: ``100·(max + min − s) / max`` over the non-ignored nodes
  (integer division), 100 for all when max is 0.

The batch objective is a SURROGATE (a pod's score depends on the pods placed before it): per distinct
ScheduleAnyway constraint, its skew at the end is minimized (:meth:`PodTopologySpreadScore.encode_score`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ...framework import MAX_NODE_SCORE, Code, CycleState, Fidelity, Plugin, Status
from ...model.objects import Pod
from ...model.pod_counts import MatchCounter
from ...model.snapshot import Snapshot
from ...optimal.score_terms import SCORE_SCALE, Affine, add_var, lower_var, upper_var
from ...profile.gates import gate_enabled
from .. import names
from ..shape_score import go_round
from .common import (
    HOSTNAME,
    SCHEDULE_ANYWAY,
    NodeEligibility,
    SpreadConstraint,
    constraints_error,
    domain_counts,
    domain_totals,
    matching_pods_per_node,
    resolve_constraints,
)

if TYPE_CHECKING:
    from ...optimal.classes import PodClass
    from ...optimal.model import BatchModel
    from ...optimal.tiers import Linear

__all__ = ["PodTopologySpreadScore", "go_round"]


@dataclass
class _SoftState:
    constraints: list[SpreadConstraint]
    ignored: np.ndarray  # bool [N]: IgnoredNodes (feasible nodes lacking a key, when all are required)
    totals: list[np.ndarray | None]  # per constraint: matching pods per value code (None for hostname)
    weights: list[float]
    scored_ignored: np.ndarray | None = None  # ignored[nodes] of the last score() call, for normalize


class PodTopologySpreadScore(Plugin):
    """PreScore + Score + NormalizeScore of ``PodTopologySpread``."""

    name = names.POD_TOPOLOGY_SPREAD
    points = frozenset({"preScore", "score"})

    def __init__(self, snapshot: Snapshot, profile: object) -> None:
        self.snapshot = snapshot
        self.state = snapshot.state
        spread = getattr(profile, "spread", None)
        self.defaults: tuple[dict, ...] = spread.effective_default_constraints if spread is not None else ()
        self.system_defaulted = spread is None or spread.defaulting_type == "System"
        self.match_label_keys = gate_enabled(profile, "MatchLabelKeysInPodTopologySpread")
        self.counter: MatchCounter = snapshot.shared(MatchCounter)

    def pre_score_error(self, pod: Pod) -> str | None:
        """Why PreScore fails on ``pod`` alone (a soft constraint's selector that cannot be built), or None."""
        if (err := constraints_error(pod, SCHEDULE_ANYWAY)) is None:
            return None
        return f"calculating preScoreState: obtaining pod's soft topology spread constraints: {err}"

    def pre_score(self, cycle: CycleState, nodes: np.ndarray) -> Status:
        state = self.state
        cycle.data[self.name] = None
        if state.num_nodes == 0:
            return Status.skip()
        pod = cycle.pod_obj
        if (why := self.pre_score_error(pod)) is not None:
            return Status(Code.ERROR, (why,))
        cons = resolve_constraints(self.snapshot, pod, self.defaults, SCHEDULE_ANYWAY, self.match_label_keys)
        if not cons:
            return Status.skip()
        require_all = bool(pod.spec.topology_spread_constraints) or not self.system_defaulted
        elig = NodeEligibility(state, pod, cons)
        nodes = np.asarray(nodes, dtype=np.int64)
        ignored = np.zeros(state.num_nodes, dtype=bool)
        considered = nodes
        if require_all:
            ignored[nodes[~elig.all_keys[nodes]]] = True
            considered = nodes[~ignored[nodes]]
        totals: list[np.ndarray | None] = []
        weights: list[float] = []
        for c in cons:
            if c.topology_key == HOSTNAME:  # per-node counts, taken in Score
                totals.append(None)
                weights.append(math.log(len(considered) + 2))
                continue
            col = state.label(c.topology_key)
            # the values of the considered nodes; a node without the label (System defaulting only)
            # makes the "" value, code -1, which lands on the extra last slot
            in_play = np.zeros(len(col.values) + 1, dtype=bool)
            in_play[col.codes[considered]] = True
            weights.append(math.log(int(in_play.sum()) + 2))
            # the "" domain's total is never read (Score needs the label), so it is not summed
            counted = elig.policy_mask(c) & (col.codes >= 0)
            if require_all:
                counted &= elig.all_keys
            counted &= in_play[col.codes]
            per_node = matching_pods_per_node(self.counter, pod, c.selector)
            totals.append(domain_totals(col.codes, counted, per_node, len(col.values)))
        cycle.data[self.name] = _SoftState(cons, ignored, totals, weights)
        return Status()

    def score(self, cycle: CycleState, nodes: np.ndarray) -> np.ndarray:
        st: _SoftState = cycle.data[self.name]
        pod = cycle.pod_obj
        nodes = np.asarray(nodes, dtype=np.int64)
        total = np.zeros(len(nodes), dtype=np.float64)
        for c, tot, w in zip(st.constraints, st.totals, st.weights):
            codes = self.state.label(c.topology_key).codes[nodes]
            has = codes >= 0
            if tot is None:
                cnt = matching_pods_per_node(self.counter, pod, c.selector)[nodes]
            elif len(tot):
                cnt = tot[np.where(has, codes, 0)]
            else:
                cnt = np.zeros(len(nodes), dtype=np.int64)
            # float64(cnt)*weight + float64(maxSkew-1), added per constraint in order
            total = total + np.where(has, cnt.astype(np.float64) * w + float(c.max_skew - 1), 0.0)
        st.scored_ignored = st.ignored[nodes]
        return np.where(st.scored_ignored, 0, go_round(total).astype(np.int64))

    def normalize(self, cycle: CycleState, scores: np.ndarray) -> np.ndarray:
        st: _SoftState | None = cycle.data.get(self.name)
        scores = np.asarray(scores, dtype=np.int64)
        if st is None:
            return scores
        ignored = st.scored_ignored if st.scored_ignored is not None else np.zeros(len(scores), dtype=bool)
        live = scores[~ignored]
        if len(live) == 0:
            return np.zeros_like(scores)
        lo, hi = int(live.min()), max(int(live.max()), 0)
        if hi == 0:
            out = np.full_like(scores, MAX_NODE_SCORE)
        else:
            out = MAX_NODE_SCORE * (hi + lo - scores) // hi  # operands are non-negative: // is Go's /
        return np.where(ignored, 0, out)

    # ------------------------------------------------------------------ CP-SAT side
    score_fidelity = Fidelity.SURROGATE

    def encode_score(self, model: BatchModel, classes: list[PodClass], weight: int, objective: Linear) -> None:
        """Per distinct ScheduleAnyway constraint of the classes (their own, else the profile's defaults
        with the pod's default selector), its skew at the end (most minus fewest matching pods over the
        constraint's domains: fixed pods and every class the selector matches in the namespace, on the
        nodes that carry the keys and pass the inclusion policies) costs ``weight × 100 / maxSkew``
        points per unit: kube's score gives the emptiest domain 100 and softens differences by maxSkew.
        Only the domains where the batch has variables get a constraint."""
        seen: set[tuple] = set()
        for c in classes:
            model.check_time()
            pod = self.state.pods[c.rep]
            cons = resolve_constraints(model.snapshot, pod, self.defaults, SCHEDULE_ANYWAY,
                                       self.match_label_keys)
            if not cons:
                continue
            elig = NodeEligibility(self.state, pod, cons)
            require_all = bool(pod.spec.topology_spread_constraints) or not self.system_defaulted
            for h in cons:
                counted = elig.policy_mask(h) & self.state.label(h.topology_key).has()
                if require_all:
                    counted &= elig.all_keys
                key = (pod.metadata.namespace or "default", h.topology_key, h.selector, h.max_skew, counted.tobytes())
                if key not in seen:
                    seen.add(key)
                    self._encode_skew(model, pod, h, counted, weight, objective, len(seen))

    def _encode_skew(self, model: BatchModel, pod: Pod, h: SpreadConstraint, counted: np.ndarray, weight: int,
                     objective: Linear, i: int) -> None:
        if h.selector.empty or h.selector.nothing:  # counts nothing: every node scores alike
            return
        col = self.state.label(h.topology_key)
        per_node = matching_pods_per_node(self.counter, pod, h.selector)
        fixed, present = domain_counts(col.codes, counted, per_node, len(col.values))
        ns = pod.metadata.namespace or "default"
        matching = model.classes_where(("spread", ns, h.selector), lambda p: (p.metadata.namespace or "default") == ns
                                       and p.metadata.deletion_timestamp is None
                                       and h.selector.matches(p.metadata.labels), h.selector.labels or ())
        terms = model.domain_terms(matching, col.codes, counted)
        if not terms:
            return
        affs = [Affine([(v, 1, u) for v, u in t], int(fixed[d])) for d, t in terms.items()]
        const = [int(fixed[d]) for d in np.flatnonzero(present).tolist() if d not in terms]
        most = upper_var(model, objective, affs, f"skew_max{i}", max(const, default=0))
        fewest = lower_var(model, objective, affs, f"skew_min{i}", min(const, default=max(a.bounds()[1] for a in affs)))
        coef = max(1, round(SCORE_SCALE * weight * MAX_NODE_SCORE / h.max_skew))
        add_var(objective, most, -coef)
        add_var(objective, fewest, coef)
