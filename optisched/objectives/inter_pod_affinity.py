"""InterPodAffinity scoring: preferred (anti-)affinity of the pod, and existing pods' terms towards it.

Upstream: ``pkg/scheduler/framework/plugins/interpodaffinity/scoring.go``. Per topology pair, the
incoming pod's preferred terms add (affinity) or subtract (anti-affinity) their weight for each
existing pod they match; existing pods' required affinity terms that match the incoming pod add
``hardPodAffinityWeight``, their preferred terms add or subtract their weight (unless
``ignorePreferredTermsOfExistingPods``). A node scores the sum over the pairs of its labels;
NormalizeScore is min–max to 0..100 (float64, truncated).
"""
from __future__ import annotations

import numpy as np

from ..constraints.inter_pod_affinity import AffinityIndex
from ..framework import MAX_NODE_SCORE, CycleState, Status
from ..model.snapshot import Snapshot

__all__ = ["InterPodAffinityScore"]


class InterPodAffinityScore:
    name = "InterPodAffinity"

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
