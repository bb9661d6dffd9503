"""InterPodAffinity scoring: preferred (anti-)affinity of the pod, and existing pods' terms towards it.

Upstream: ``pkg/scheduler/framework/plugins/interpodaffinity/scoring.go``. Per topology pair, the
incoming pod's preferred terms add (affinity) or subtract (anti-affinity) their weight for each
existing pod they match; existing pods' required affinity terms that match the incoming pod add
``hardPodAffinityWeight``, their preferred terms add or subtract their weight (unless
``ignorePreferredTermsOfExistingPods``). A node scores the sum over the pairs of its labels;
NormalizeScore is min–max to 0..100 (float64, truncated).

The batch objective is a SURROGATE (:meth:`InterPodAffinityScore.encode_score`): the greedy score against
the fixed pods per arrival, normalized over the nodes the class may use, plus indicators per domain
for each class's preferred terms towards the batch's other pods.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from ortools.sat.python import cp_model

from ...framework import MAX_NODE_SCORE, CycleState, Fidelity, Plugin, Status
from ...model.snapshot import Snapshot
from ...optimal.score_terms import SCORE_SCALE, add_arrival_scores, add_var, static_scores
from .. import names
from .common import AffinityIndex, AffinityTerm

if TYPE_CHECKING:
    from ...optimal.classes import PodClass
    from ...optimal.model import BatchModel
    from ...optimal.tiers import Linear

Terms = dict[int, list[tuple[cp_model.IntVar, int]]]

__all__ = ["InterPodAffinityScore"]


class InterPodAffinityScore(Plugin):
    name = names.INTER_POD_AFFINITY
    points = frozenset({"preScore", "score"})

    def __init__(self, snapshot: Snapshot, profile: object) -> None:
        self.state = snapshot.state
        self.index: AffinityIndex = snapshot.shared(AffinityIndex)
        args = getattr(profile, "inter_pod_affinity", None)
        self.hard_weight = args.hard_pod_affinity_weight if args else 1
        self.ignore_existing_preferred = args.ignore_preferred_terms_of_existing_pods if args else False

    def pre_score(self, cycle: CycleState, nodes: np.ndarray) -> Status:
        if len(nodes) == 0:
            return Status.skip()
        idx = self.index
        pod = cycle.pod_obj
        terms = idx.terms[cycle.pod]
        has_constraints = bool(terms.preferred_affinity or terms.preferred_anti)
        if self.ignore_existing_preferred and not has_constraints:
            return Status.skip()
        scores: dict[str, np.ndarray] = {}
        touched = False

        # the incoming pod's preferred terms against every placed pod
        for sign, group in ((1, terms.preferred_affinity), (-1, terms.preferred_anti)):
            for t in group:
                r = idx.resolve(t)
                per_node = idx.counter.counts(r.count_scope(), r.selector)
                pairs = idx.pair_counts(t.topology_key, per_node)
                if pairs.any():
                    touched = True
                    vec = scores.setdefault(t.topology_key, np.zeros(len(pairs), dtype=np.int64))
                    vec += sign * t.weight * pairs
        # placed pods' terms against the incoming pod
        kinds = [("required_affinity", self.hard_weight, 1)] if self.hard_weight > 0 else []
        if not self.ignore_existing_preferred:
            kinds += [("preferred_affinity", None, 1), ("preferred_anti", None, -1)]
        for kind, weight, sign in kinds:
            for t, carriers in idx.placed_matching(kind, pod):
                pairs = idx.pair_counts(t.topology_key, carriers)
                if pairs.any():
                    touched = True
                    vec = scores.setdefault(t.topology_key, np.zeros(len(pairs), dtype=np.int64))
                    vec += sign * (weight if weight is not None else t.weight) * pairs
        if not touched:
            return Status.skip()
        cycle.data[self.name] = scores
        return Status()

    def score(self, cycle: CycleState, nodes: np.ndarray) -> np.ndarray:
        scores: dict[str, np.ndarray] = cycle.data[self.name]
        total = np.zeros(len(nodes), dtype=np.int64)
        for key, vec in scores.items():
            codes = self.state.label(key).codes[nodes]
            has = codes >= 0
            total += np.where(has, vec[np.where(has, codes, 0)], 0)
        return total

    def normalize(self, cycle: CycleState, scores: np.ndarray) -> np.ndarray:
        if not cycle.data.get(self.name):
            return scores
        lo, hi = int(scores.min()), int(scores.max())
        diff = hi - lo
        if diff <= 0:
            return np.zeros_like(scores)
        return (MAX_NODE_SCORE * ((scores - lo).astype(np.float64) / float(diff))).astype(np.int64)

    # ------------------------------------------------------------------ CP-SAT side
    score_fidelity = Fidelity.SURROGATE

    def encode_score(self, model: BatchModel, classes: list[PodClass], weight: int, objective: Linear) -> None:
        """Towards fixed pods: per arrival, the greedy score (the pod's preferred terms, the fixed pods'
        required terms times hardPodAffinityWeight and their preferred terms), min–max normalized over
        the nodes the class may use. Between batch pods: each class's own preferred terms, a term of
        weight w costing or earning ``100 · w / Σ|w|`` points (its share of the normalized score) per
        pod: anti-affinity per arrival in a domain holding another pod the term matches; affinity to
        other classes per arrival in a domain holding a pod they have there, or, for a term the class
        matches itself, per domain its arrivals use (pulling them together). Terms of batch pods
        towards each other are counted once, by the class that carries them; the hardPodAffinityWeight
        bonus between batch pods is left out (their required affinity is a filter)."""
        for c in classes:
            model.check_time()
            scores = static_scores(model, self, c)
            if scores is not None:
                add_arrival_scores(model, c, scores, SCORE_SCALE * weight, objective)
            terms = self.index.terms[c.rep]
            total = sum(t.weight for t in terms.preferred_affinity + terms.preferred_anti)
            for sign, group in ((1, terms.preferred_affinity), (-1, terms.preferred_anti)):
                for t in group:
                    unit = round(SCORE_SCALE * weight * MAX_NODE_SCORE * t.weight / total)
                    if unit:
                        self._encode_term(model, c, self.index.resolve(t), sign, unit, objective)

    def _encode_term(self, model: BatchModel, c: PodClass, t: AffinityTerm, sign: int, unit: int,
                     objective: Linear) -> None:
        labels = self.index.ns_labels
        matched = model.classes_where(("affinity", (t,)), lambda p: p.metadata.deletion_timestamp is None and
                                      t.matches(p, labels.get(p.metadata.namespace or "default")),
                                      t.selector.labels or ())
        codes = self.state.label(t.topology_key).codes
        self_match = any(d.index == c.index for d in matched)
        others = model.domain_terms([d for d in matched if d.index != c.index], codes)
        if self_match:  # the class's pods that stay count as others
            for dom, kept in _kept(model, c, codes).items():
                others.setdefault(dom, []).extend(kept)
        elif not others:
            return
        arrivals = model.domain_terms([c], codes, arrivals_only=True)
        for dom, arr in arrivals.items():
            occ = others.get(dom, [])
            if sign > 0 and self_match:
                y = _any(model, objective, arr, f"ipa_dom{c.index}_{dom}")
                add_var(objective, y, -unit)
            elif sign > 0 and occ:
                add_var(objective, _with_others(model, objective, arr, occ, f"ipa_aff{c.index}_{dom}"), unit)
            elif sign < 0 and (occ or self_match):
                add_var(objective, _conflicts(model, objective, arr, occ, self_match, f"ipa_anti{c.index}_{dom}"),
                        -unit)


def _total(terms: list[tuple[cp_model.IntVar, int]], values: dict[int, int]) -> int:
    return sum(values.get(v.Index(), 0) for v, _ in terms)


def _kept(model: BatchModel, c: PodClass, codes: np.ndarray) -> Terms:
    cv = model.vars[c.index]
    out: Terms = {}
    for n, v, u in zip(cv.keep_nodes.tolist(), cv.keep_vars, cv.keep_ub.tolist()):
        if codes[n] >= 0:
            out.setdefault(int(codes[n]), []).append((v, u))
    return out


def _any(model: BatchModel, objective: Linear, terms: list[tuple[cp_model.IntVar, int]], name: str) -> cp_model.IntVar:
    """A boolean true when any of ``terms`` is positive."""
    y = model.cp.new_bool_var(name)
    model.cp.add(cp_model.LinearExpr.sum([v for v, _ in terms]) <= sum(u for _, u in terms) * y)
    objective.derived.append((y, lambda values: int(_total(terms, values) > 0)))
    return y


def _with_others(model: BatchModel, objective: Linear, arr: list[tuple[cp_model.IntVar, int]],
                 occ: list[tuple[cp_model.IntVar, int]], name: str) -> cp_model.IntVar:
    """Arrivals ``arr`` in a domain where ``occ`` holds a pod (0 otherwise), to be maximized."""
    ub = sum(u for _, u in arr)
    z = model.cp.new_bool_var(name + "_z")
    r = model.cp.new_int_var(0, ub, name)
    model.cp.add(r <= cp_model.LinearExpr.sum([v for v, _ in arr]))
    model.cp.add(r <= ub * z)
    model.cp.add(cp_model.LinearExpr.sum([v for v, _ in occ]) >= z)
    objective.derived.append((z, lambda values: int(_total(occ, values) > 0)))
    objective.derived.append((r, lambda values: _total(arr, values) if _total(occ, values) > 0 else 0))
    return r


def _conflicts(model: BatchModel, objective: Linear, arr: list[tuple[cp_model.IntVar, int]],
               occ: list[tuple[cp_model.IntVar, int]], self_match: bool, name: str) -> cp_model.IntVar:
    """Matched pods the arrivals ``arr`` meet in their domain, to be minimized: with a self-matching
    term ``arrivals + others − 1`` when there are arrivals, else the arrivals when ``occ`` holds a pod."""
    a_expr, a_ub = cp_model.LinearExpr.sum([v for v, _ in arr]), sum(u for _, u in arr)
    o_expr, o_ub = cp_model.LinearExpr.sum([v for v, _ in occ]), sum(u for _, u in occ)
    e = model.cp.new_int_var(0, a_ub + o_ub, name)
    if self_match:
        y = _any(model, objective, arr, name + "_y")
        model.cp.add(e >= a_expr + o_expr - 1).only_enforce_if(y)
        objective.derived.append((e, lambda values: max(0, _total(arr, values) + _total(occ, values) - 1)
                                  if _total(arr, values) else 0))
        return e
    z = model.cp.new_bool_var(name + "_z")
    model.cp.add(o_expr <= o_ub * z)
    model.cp.add(e >= a_expr - a_ub * (1 - z))
    objective.derived.append((z, lambda values: int(_total(occ, values) > 0)))
    objective.derived.append((e, lambda values: _total(arr, values) if _total(occ, values) > 0 else 0))
    return e
