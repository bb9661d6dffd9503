"""InterPodAffinity's affinity terms as upstream's ``AffinityTerm`` reads them (``framework/types.go``),
and the per-topology-pair counts of the placed pods they match, kept as pods are added and removed."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ...model.label_syntax import aggregate
from ...model.objects import Pod, PodAffinityTerm
from ...model.pod_counts import NOTHING, MatchCounter, Selector, selector_of
from ...model.selectors import selector_error
from ...model.snapshot import Snapshot
from ...model.state import ClusterState

__all__ = ["REASON_AFFINITY", "REASON_ANTI", "REASON_EXISTING", "TERM_KINDS", "AffinityIndex", "AffinityTerm", "PodTerms", "PreFilterState"]

REASON_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_ANTI = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING = "node(s) didn't satisfy existing pods anti-affinity rules"


@dataclass(frozen=True)
class AffinityTerm:
    namespaces: frozenset[str]
    ns_selector: Selector  # NOTHING unless given; an empty selector matches every namespace
    selector: Selector
    topology_key: str
    weight: int = 0

    def matches(self, pod: Pod, ns_labels: dict[str, str] | None) -> bool:
        """``AffinityTerm.Matches``: namespace listed or selected, then the label selector."""
        ns = pod.metadata.namespace or "default"
        if ns in self.namespaces or self.ns_selector.matches(ns_labels or {}):
            return self.selector.matches(pod.metadata.labels)
        return False

    def count_scope(self) -> frozenset[str] | None:
        """Namespaces for a :class:`MatchCounter` (None = all), valid once the selector is resolved."""
        return None if self.ns_selector.empty else self.namespaces


def _term(pod: Pod, t: PodAffinityTerm, weight: int = 0) -> AffinityTerm:
    names = frozenset(t.namespaces) if (t.namespaces or t.namespace_selector is not None) else \
        frozenset({pod.metadata.namespace or "default"})
    return AffinityTerm(names, selector_of(t.namespace_selector) if t.namespace_selector is not None else NOTHING,
                        selector_of(t.label_selector), t.topology_key, weight)


TERM_KINDS = ("required_affinity", "required_anti", "preferred_affinity", "preferred_anti")
_KIND_NAMES = ("requiredAffinityTerms", "requiredAntiAffinityTerms", "preferredAffinityTerms",
               "preferredAntiAffinityTerms")


def _terms(pod: Pod, kind: str, terms: list[tuple[PodAffinityTerm, int]]) -> tuple[tuple[AffinityTerm, ...], str]:
    """``getAffinityTerms``: the parsed list, or no terms and the first selector error."""
    for t, _ in terms:
        err = selector_error(t.label_selector) or selector_error(t.namespace_selector)
        if err is not None:
            return (), f"{kind}: {err}"
    return tuple(_term(pod, t, w) for t, w in terms), ""


@dataclass(frozen=True)
class PodTerms:
    """A pod's parsed terms (``framework.PodInfo``)."""

    required_affinity: tuple[AffinityTerm, ...]
    required_anti: tuple[AffinityTerm, ...]
    preferred_affinity: tuple[AffinityTerm, ...]
    preferred_anti: tuple[AffinityTerm, ...]
    has_affinity: bool  # podAffinity or podAntiAffinity present at all
    error: str = ""  # the parse errors (``PodInfo`` Update's aggregate), "" when every list parsed

    @staticmethod
    def of(pod: Pod) -> PodTerms:
        aff = pod.spec.affinity
        pa = aff.pod_affinity if aff else None
        paa = aff.pod_anti_affinity if aff else None
        if pa is None and paa is None:
            return _NO_TERMS
        raw = ([(t, 0) for t in (pa.required_during_scheduling_ignored_during_execution if pa else ())],
               [(t, 0) for t in (paa.required_during_scheduling_ignored_during_execution if paa else ())],
               [(w.pod_affinity_term, w.weight) for w in (pa.preferred_during_scheduling_ignored_during_execution
                                                          if pa else ())],
               [(w.pod_affinity_term, w.weight) for w in (paa.preferred_during_scheduling_ignored_during_execution
                                                          if paa else ())])
        (ra, ra_err), (rn, rn_err), (pa_, pa_err), (pn, pn_err) = (
            _terms(pod, kind, terms) for kind, terms in zip(_KIND_NAMES, raw))
        return PodTerms(ra, rn, pa_, pn, True, aggregate([e for e in (ra_err, rn_err, pa_err, pn_err) if e]) or "")


_NO_TERMS = PodTerms((), (), (), (), False)


def _terms_key(pod: Pod) -> tuple[str, str] | None:
    """What :meth:`PodTerms.of` reads of a pod (namespace, pod affinity and anti-affinity); None: no terms."""
    aff = pod.spec.affinity
    if aff is None or (aff.pod_affinity is None and aff.pod_anti_affinity is None):
        return None
    return pod.metadata.namespace or "default", aff.model_dump_json(include={"pod_affinity", "pod_anti_affinity"})


class _StaticTerms:
    """Every pod's parsed terms, interned to ids, and indexes over them: read-only, one per ClusterState
    (greedy mode, the batch model and the checker each build snapshots over the same pods)."""

    def __init__(self, state: ClusterState) -> None:
        parsed: dict[tuple[str, str], PodTerms] = {}  # replicas of a workload share their terms
        self.terms = [_NO_TERMS if (key := _terms_key(p)) is None else
                      parsed.get(key) or parsed.setdefault(key, PodTerms.of(p)) for p in state.pods]
        self.ns_labels = state.cluster.namespace_labels()
        term_ids: dict[AffinityTerm, int] = {}
        self.pod_term_ids: list[dict[str, tuple[int, ...]] | None] = []
        for t in self.terms:
            if not t.has_affinity:
                self.pod_term_ids.append(None)
                continue
            self.pod_term_ids.append({kind: tuple(term_ids.setdefault(x, len(term_ids)) for x in getattr(t, kind))
                                      for kind in TERM_KINDS})
        self.term_list: list[AffinityTerm] = list(term_ids)
        self.kind_terms = {kind: sorted({tid for ids in self.pod_term_ids if ids for tid in ids[kind]})
                           for kind in TERM_KINDS}
        # per kind: term ids by one label pair their selector requires (a pod without it cannot match)
        self.buckets: dict[str, dict[tuple[str, str] | None, list[int]]] = {kind: {} for kind in TERM_KINDS}
        for kind, tids in self.kind_terms.items():
            for tid in tids:
                sel = self.term_list[tid].selector
                if not sel.nothing:
                    self.buckets[kind].setdefault(min(sel.labels) if sel.labels else None, []).append(tid)

    @staticmethod
    def of(state: ClusterState) -> _StaticTerms:
        hit = state.__dict__.get("_affinity_terms")
        if hit is None:
            hit = state.__dict__["_affinity_terms"] = _StaticTerms(state)
        return hit


class AffinityIndex:
    """Shared per snapshot: every pod's terms, namespace labels, and which placed pods carry terms."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.state: ClusterState = snapshot.state
        static = _StaticTerms.of(self.state)  # what depends only on the pods' specs, parsed once per state
        self.terms = static.terms
        self.ns_labels = static.ns_labels
        self.term_list = static.term_list
        self.pod_term_ids = static.pod_term_ids
        self._kind_terms = static.kind_terms
        self._buckets = static.buckets
        self.placed: dict[str, dict[int, np.ndarray]] = {k: {} for k in TERM_KINDS}
        self.placed_total: dict[str, dict[int, int]] = {k: {} for k in TERM_KINDS}
        self._signature: dict[tuple, int] = {}  # (namespace, labels) -> id
        self._matching: dict[tuple[str, int], list[int]] = {}  # (kind, signature) -> term ids matching it
        self.counter: MatchCounter = snapshot.shared(MatchCounter)
        snapshot.subscribe(self)

    def _update(self, pod: int, node: int, sign: int) -> None:
        ids = self.pod_term_ids[pod]
        if ids is None:
            return
        for kind in TERM_KINDS:
            placed, totals = self.placed[kind], self.placed_total[kind]
            for tid in ids[kind]:
                vec = placed.get(tid)
                if vec is None:
                    vec = placed[tid] = np.zeros(self.state.num_nodes, dtype=np.int64)
                vec[node] += sign
                totals[tid] = totals.get(tid, 0) + sign

    def on_add(self, pod: int, node: int) -> None:
        self._update(pod, node, 1)

    def on_remove(self, pod: int, node: int) -> None:
        self._update(pod, node, -1)

    def placed_matching(self, kind: str, pod: Pod) -> list[tuple[AffinityTerm, np.ndarray]]:
        """Placed pods' terms of ``kind`` that match ``pod``, each with its per-node carrier count."""
        totals, placed = self.placed_total[kind], self.placed[kind]
        return [(self.term_list[tid], placed[tid]) for tid in self._matching_terms(kind, pod)
                if totals.get(tid, 0) > 0]

    def _matching_terms(self, kind: str, pod: Pod) -> list[int]:
        """Ids of the ``kind`` terms of any pod that match ``pod`` (``AffinityTerm.Matches``), cached per
        (namespace, labels): replicas of one workload share the answer."""
        ns = pod.metadata.namespace or "default"
        sig = self._signature.setdefault((ns, frozenset(pod.metadata.labels.items())), len(self._signature))
        hit = self._matching.get((kind, sig))
        if hit is None:
            labels = self.ns_labels.get(ns)
            buckets = self._buckets[kind]
            plausible = {tid for pair in [None, *pod.metadata.labels.items()] for tid in buckets.get(pair, ())}
            hit = self._matching[(kind, sig)] = [tid for tid in sorted(plausible)
                                                  if self.term_list[tid].matches(pod, labels)]
        return hit

    @cached_property
    def namespace_names(self) -> list[str]:
        return [ns.metadata.name for ns in self.state.cluster.namespaces]

    def resolve(self, term: AffinityTerm) -> AffinityTerm:
        """``mergeAffinityTermNamespacesIfNotEmpty``: a non-empty namespaceSelector becomes namespace names."""
        if term.ns_selector.empty:
            return term
        labels = self.ns_labels
        extra = {n for n in self.namespace_names if term.ns_selector.matches(labels.get(n, {}))}
        return AffinityTerm(term.namespaces | extra, NOTHING, term.selector, term.topology_key, term.weight)

    def pair_counts(self, key: str, per_node: np.ndarray) -> np.ndarray:
        """Sum a per-node vector into its topology values (nodes without the label drop out)."""
        col = self.state.label(key)
        has = col.codes >= 0
        return np.bincount(col.codes[has], weights=per_node[has], minlength=len(col.values)).astype(np.int64)

    def term_node_counts(self, terms: tuple[AffinityTerm, ...]) -> np.ndarray:
        """Per node: placed pods matching all of ``terms`` (resolved incoming-pod terms)."""
        scope: frozenset[str] | None = None
        sel = terms[0].selector
        for i, t in enumerate(terms):
            s = t.count_scope()
            if s is not None:
                scope = s if scope is None else scope & s
            if i:
                sel = NOTHING if sel.labels is None or t.selector.labels is None else \
                    Selector(sel.labels | t.selector.labels, sel.exprs + t.selector.exprs)
        return self.counter.counts(scope, sel)


@dataclass
class PreFilterState:
    """What PreFilter computes for a pod: its resolved terms and the counts Filter reads."""

    affinity: tuple[AffinityTerm, ...]
    anti: tuple[AffinityTerm, ...]
    affinity_counts: dict[str, np.ndarray]
    any_affinity: bool
    anti_counts: dict[str, np.ndarray]
    existing: dict[str, np.ndarray]
    self_match: bool
