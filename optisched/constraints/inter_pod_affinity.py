"""InterPodAffinity filter, and the affinity terms its scoring shares.

Upstream: ``pkg/scheduler/framework/plugins/interpodaffinity/{filtering,plugin}.go`` and
``AffinityTerm`` in ``pkg/scheduler/framework/types.go``. A term selects pods by label selector within
namespaces: its ``namespaces`` list, or the pod's own namespace when neither the list nor a
namespaceSelector is given; the incoming pod's namespaceSelector is resolved to the namespaces it
matches (``{}`` keeps matching every namespace). Filter order and codes as upstream: the pod's required
affinity (UnschedulableAndUnresolvable; a pod that is the first of a self-affine series may go to any
node with the topology keys), the pod's required anti-affinity, then existing pods' required
anti-affinity against the pod (both Unschedulable). Counts are per topology pair (label key, value).

A term whose label or namespace selector cannot be built (``selectors.selector_error``) spoils its
whole list, as ``framework.NewPodInfo`` (v1.35 ``types.go``) parses it: a placed pod's list of that
kind is dropped, and a pod to schedule is rejected at PreFilter (UnschedulableAndUnresolvable,
``parsing pod: requiredAffinityTerms: <apimachinery's field error>``).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
from ortools.sat.python import cp_model

from ..framework import ClusterEvent, Code, CycleState, Fidelity, FilterResult, Plugin, Status
from ..model.label_syntax import aggregate
from ..model.objects import Pod, PodAffinityTerm
from ..model.pod_counts import NOTHING, MatchCounter, Selector, selector_of
from ..model.pod_index import PodIndex, count_at, count_in
from ..model.selectors import selector_error
from ..model.snapshot import Snapshot
from ..model.state import ClusterState
from ..optimal.order import Interaction
from ..plugins import names

if TYPE_CHECKING:
    from ..optimal.classes import PodClass
    from ..optimal.model import BatchModel

__all__ = [
    "REASON_AFFINITY",
    "REASON_ANTI",
    "REASON_EXISTING",
    "AffinityIndex",
    "AffinityTerm",
    "AffinityWorld",
    "InterPodAffinity",
    "PodTerms",
]

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
class _PreFilter:
    affinity: tuple[AffinityTerm, ...]
    anti: tuple[AffinityTerm, ...]
    affinity_counts: dict[str, np.ndarray]
    any_affinity: bool
    anti_counts: dict[str, np.ndarray]
    existing: dict[str, np.ndarray]
    self_match: bool


class InterPodAffinity(Plugin):
    name = names.INTER_POD_AFFINITY
    events = frozenset({ClusterEvent.ASSIGNED_POD_ADD, ClusterEvent.ASSIGNED_POD_DELETE})
    depends_on_placement = True  # PreFilter state changes when pods are added or removed

    def __init__(self, snapshot: Snapshot, profile: object) -> None:
        self.state = snapshot.state
        self.index: AffinityIndex = snapshot.shared(AffinityIndex)

    def dry_run(self, cycle: CycleState, nodes: np.ndarray, index: PodIndex) -> AffinityWorld:
        """Per topology key, the counts of the node's value for the pod's required affinity and
        anti-affinity terms and for existing pods' anti-affinity terms matching the pod, and whether any
        pod still satisfies the affinity terms anywhere (``satisfyPodAffinity``'s first-pod exception)."""
        return AffinityWorld(self, cycle, nodes, index)

    def _existing_anti_counts(self, pod: Pod) -> dict[str, np.ndarray]:
        """Per topology pair: placed pods whose required anti-affinity terms match ``pod``."""
        idx = self.index
        out: dict[str, np.ndarray] = {}
        for t, carriers in idx.placed_matching("required_anti", pod):
            c = idx.pair_counts(t.topology_key, carriers)
            prev = out.get(t.topology_key)
            out[t.topology_key] = c if prev is None else prev + c
        return out

    def pre_filter(self, cycle: CycleState) -> Status:
        idx = self.index
        pod = cycle.pod_obj
        terms = idx.terms[cycle.pod]
        if terms.error:
            cycle.data[self.name] = None
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (f"parsing pod: {terms.error}",))
        affinity = tuple(idx.resolve(t) for t in terms.required_affinity)
        anti = tuple(idx.resolve(t) for t in terms.required_anti)
        existing = self._existing_anti_counts(pod)
        if not any(v.any() for v in existing.values()) and not affinity and not anti:
            cycle.data[self.name] = None
            return Status.skip()
        affinity_counts: dict[str, np.ndarray] = {}
        any_affinity = False
        if affinity:
            per_node = idx.term_node_counts(affinity)
            for t in affinity:
                c = idx.pair_counts(t.topology_key, per_node)
                prev = affinity_counts.get(t.topology_key)
                affinity_counts[t.topology_key] = c if prev is None else prev + c
            any_affinity = any(v.any() for v in affinity_counts.values())
        anti_counts: dict[str, np.ndarray] = {}
        for t in anti:
            c = idx.pair_counts(t.topology_key, idx.counter.counts(t.count_scope(), t.selector))
            prev = anti_counts.get(t.topology_key)
            anti_counts[t.topology_key] = c if prev is None else prev + c
        self_match = bool(affinity) and all(t.matches(pod, None) for t in affinity)
        cycle.data[self.name] = _PreFilter(affinity, anti, affinity_counts, any_affinity, anti_counts, existing,
                                           self_match)
        return Status()

    def _lookup(self, counts: np.ndarray, codes: np.ndarray) -> np.ndarray:
        has = codes >= 0
        if len(counts) == 0:
            return np.zeros(len(codes), dtype=np.int64)
        return np.where(has, counts[np.where(has, codes, 0)], 0)

    def filter(self, cycle: CycleState, nodes: np.ndarray) -> FilterResult:
        st: _PreFilter | None = cycle.data.get(self.name)
        n = len(nodes)
        if st is None:
            return FilterResult.passing(n)
        code = np.zeros(n, dtype=np.int8)
        # satisfyPodAffinity
        aff_fail = np.zeros(n, dtype=bool)
        if st.affinity:
            missing = np.zeros(n, dtype=bool)
            pods_exist = np.ones(n, dtype=bool)
            for t in st.affinity:
                codes = self.state.label(t.topology_key).codes[nodes]
                missing |= codes < 0
                pods_exist &= self._lookup(st.affinity_counts[t.topology_key], codes) > 0
            first_pod_ok = (not st.any_affinity) and st.self_match
            aff_fail = missing | (~pods_exist & (not first_pod_ok))
            code[aff_fail] = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        # satisfyPodAntiAffinity
        anti_fail = np.zeros(n, dtype=bool)
        for t in st.anti:
            codes = self.state.label(t.topology_key).codes[nodes]
            anti_fail |= self._lookup(st.anti_counts[t.topology_key], codes) > 0
        anti_fail &= ~aff_fail
        code[anti_fail] = Code.UNSCHEDULABLE
        # satisfyExistingPodsAntiAffinity
        ex_fail = np.zeros(n, dtype=bool)
        for key, counts in st.existing.items():
            ex_fail |= self._lookup(counts, self.state.label(key).codes[nodes]) > 0
        ex_fail &= ~aff_fail & ~anti_fail
        code[ex_fail] = Code.UNSCHEDULABLE
        reasons = [(m, r) for m, r in ((aff_fail, REASON_AFFINITY), (anti_fail, REASON_ANTI),
                                      (ex_fail, REASON_EXISTING)) if m.any()]
        return FilterResult(code, reasons)



    # ------------------------------------------------------------------ CP-SAT side
    filter_fidelity = Fidelity.EXACT

    def restrict(self, model: BatchModel, classes: list[PodClass]) -> None:
        """What the fixed pods decide: nodes missing a required-affinity topology key, domains holding
        fixed pods that the class's anti-affinity terms match, and domains whose fixed pods' anti-affinity
        terms match the class. (Required affinity itself may be satisfied by the batch: encoded below.)"""
        nodes = np.arange(self.state.num_nodes)
        for c in model.each(classes):
            cyc = CycleState(c.rep, model.snapshot, model.cycle(c).profile)
            code = self.pre_filter(cyc).code
            if code == Code.SKIP:
                continue
            if code != Code.SUCCESS:  # its terms cannot be parsed: no node
                model.forbid(c, np.ones(len(nodes), dtype=bool))
                continue
            st: _PreFilter = cyc.data[self.name]
            bad = np.zeros(len(nodes), dtype=bool)
            for t in st.affinity:
                bad |= self.state.label(t.topology_key).codes < 0
            for t in st.anti:
                bad |= self._lookup(st.anti_counts[t.topology_key], self.state.label(t.topology_key).codes) > 0
            for key, counts in st.existing.items():
                bad |= self._lookup(counts, self.state.label(key).codes) > 0
            model.forbid(c, bad)

    def _matching(self, model: BatchModel, terms: tuple[AffinityTerm, ...]) -> list[PodClass]:
        """Classes whose pods every one of ``terms`` matches (resolved terms)."""
        labels = self.index.ns_labels
        pairs = [pair for t in terms if t.selector.labels for pair in t.selector.labels]
        return model.classes_where(("affinity", terms), lambda p: all(
            p.metadata.deletion_timestamp is None and t.matches(p, labels.get(p.metadata.namespace or "default"))
            for t in terms), pairs)

    def encode_filter(self, model: BatchModel, classes: list[PodClass]) -> None:
        """Required anti-affinity, both directions, and required affinity with the first-pod rule, as
        the Filter checks each placed pod against the final cluster with the pod removed."""
        idx = self.index
        for c in model.each(classes):
            terms = idx.terms[c.rep]
            for t in terms.required_anti:
                self._encode_anti(model, c, idx.resolve(t))
            if terms.required_affinity:
                self._encode_affinity(model, c, tuple(idx.resolve(t) for t in terms.required_affinity))

    def _encode_anti(self, model: BatchModel, c: PodClass, t: AffinityTerm) -> None:
        """Where the batch places a pod of ``c``, no other pod its term matches in the domain; where it
        places a pod the term matches, no pod of ``c`` that stays (existing pods' anti-affinity)."""
        codes = self.state.label(t.topology_key).codes
        matched = self._matching(model, (t,))
        others = [d for d in matched if d.index != c.index]
        mine = model.domain_terms([c], codes)
        theirs = model.domain_terms(others, codes)
        self_match = len(others) != len(matched)
        for dom, y in model.presence(c, t.topology_key, codes).items():
            expr, ub = model.total(theirs.get(dom, []) + (mine.get(dom, []) if self_match else []))
            if ub > int(self_match):
                model.cp.add(expr <= int(self_match)).only_enforce_if(y)
        if model.order.enabled:
            self._encode_anti_victims(model, c, t, codes, others)
        if not c.running:
            return
        cv = model.vars[c.index]
        kept: dict[int, list[tuple[cp_model.IntVar, int]]] = {}
        for n, v, u in zip(cv.keep_nodes.tolist(), cv.keep_vars, cv.keep_ub.tolist()):
            if codes[n] >= 0:
                kept.setdefault(int(codes[n]), []).append((v, u))
        for d in others:
            for dom, y in model.presence(d, t.topology_key, codes).items():
                if dom in kept:
                    model.cp.add(model.total(kept[dom])[0] == 0).only_enforce_if(y)

    @staticmethod
    def _encode_anti_victims(model: BatchModel, c: PodClass, t: AffinityTerm, codes: np.ndarray,
                             others: list[PodClass]) -> None:
        """Under an arrival order, a victim still in place when a pod arrives refuses it as a running pod
        does: no victim that ``c``'s term matches in a domain where ``c`` arrives, and none of a running
        ``c`` where a class its term matches arrives (:meth:`ArrivalOrder.victims`)."""
        pairs = [(c, d) for d in others] + ([(m, c) for m in others] if c.running else [])
        for arriving, victim in pairs:
            seen_by = list(model.order.victims.seen(arriving, victim, codes, None))
            where = model.presence(arriving, t.topology_key, codes) if seen_by else {}
            for dom, (seen, _) in seen_by:
                if dom in where:
                    model.cp.add(seen == 0).only_enforce_if([where[dom], *model.order.when(True)])

    def arrival_interactions(self, model: BatchModel, classes: list[PodClass]) -> list[Interaction]:
        """Required affinity counts the classes its terms match: a pod of theirs satisfies it, or ends
        the first-pod rule, only when it came before (:mod:`optisched.optimal.order`). Anti-affinity is
        checked both ways, so the pod that comes second refuses the pair whatever the order."""
        out = []
        for c in classes:
            out += self._anti_interactions(model, c)
            terms = self.index.terms[c.rep].required_affinity
            if not terms:
                continue
            resolved = tuple(self.index.resolve(t) for t in terms)
            matched = self._matching(model, resolved)
            if any(d.index != c.index for d in matched):
                out += [Interaction(c, tuple(matched), self.state.label(t.topology_key).codes) for t in resolved]
        return out

    def _anti_interactions(self, model: BatchModel, c: PodClass) -> list[Interaction]:
        """Required anti-affinity, either way, sees the preemption victims still in place when a pod
        arrives (:mod:`optisched.optimal.victim_times`): ``c``'s terms the running classes they match,
        a running ``c``'s terms the classes they match."""
        out = []
        for t in self.index.terms[c.rep].required_anti:
            t = self.index.resolve(t)
            codes = self.state.label(t.topology_key).codes
            matched = [d for d in self._matching(model, (t,)) if d.index != c.index]
            running = tuple(d for d in matched if d.running)
            if running:
                out.append(Interaction(c, running, codes, victims_only=True))
            if c.running:
                out += [Interaction(m, (c,), codes, victims_only=True) for m in matched]
        return out

    def _encode_affinity(self, model: BatchModel, c: PodClass, terms: tuple[AffinityTerm, ...]) -> None:
        """Where the batch places a pod of ``c``, each term's domain holds another pod matching all terms
        (fixed, or of a matching class) — unless no pod but this one matches anywhere and it matches
        itself (the first pod of a self-affine series). With an arrival order, also (one literal choosing)
        counting only the pods that came before the class's block ends."""
        matched = self._matching(model, terms)
        order = model.order
        if not order.active(c):
            self._encode_affinity_counts(model, c, terms, matched, lambda cls, codes, tag: model.domain_terms(cls, codes), [])
            return
        self._encode_affinity_counts(model, c, terms, matched, lambda cls, codes, tag: model.domain_terms(cls, codes),
                                     order.when(False))
        self._encode_affinity_counts(model, c, terms, matched,
                                     lambda cls, codes, tag: order.prefix_terms(c, cls, codes, None, tag),
                                     order.when(True))

    def _encode_affinity_counts(self, model: BatchModel, c: PodClass, terms: tuple[AffinityTerm, ...],
                                matched: list[PodClass], count, enforce: list) -> None:  # type: ignore[no-untyped-def]
        """The check above with the matching pods counted by ``count(classes, codes, tag)`` (value code ->
        variables; ``tag`` names ``codes``), under ``enforce``."""
        self_match = any(d.index == c.index for d in matched)
        fixed = self.index.term_node_counts(terms)
        first: cp_model.IntVar | None = None
        if self_match:
            has_key = np.zeros(self.state.num_nodes, dtype=bool)
            for t in terms:
                has_key |= self.state.label(t.topology_key).codes >= 0
            if not fixed[has_key].any():
                first = model.cp.new_bool_var(f"first{c.index}")
                everywhere = [vu for vus in count(matched, np.where(has_key, 0, -1), "affinity-any").values() for vu in vus]
                model.cp.add(model.total(everywhere)[0] <= 1).only_enforce_if(first)
        for t in terms:
            codes = self.state.label(t.topology_key).codes
            fixed_dom = self.index.pair_counts(t.topology_key, fixed)
            theirs = count(matched, codes, f"affinity:{t.topology_key}")
            for dom, y in model.presence(c, t.topology_key, codes).items():
                expr, _ = model.total(theirs.get(dom, []))
                need = 1 + int(self_match) - (int(fixed_dom[dom]) if dom < len(fixed_dom) else 0)
                if need <= 0:
                    continue
                model.cp.add(expr >= need).only_enforce_if([y, *enforce] if first is None else [y, first.Not(), *enforce])


def _merged(terms) -> tuple[frozenset[str] | None, Selector]:  # type: ignore[no-untyped-def]
    """The scope and selector ``AffinityIndex.term_node_counts`` counts with (all terms at once)."""
    scope: frozenset[str] | None = None
    sel = terms[0].selector
    for i, t in enumerate(terms):
        s = t.count_scope()
        if s is not None:
            scope = s if scope is None else scope & s
        if i:
            sel = NOTHING if sel.labels is None or t.selector.labels is None else \
                Selector(sel.labels | t.selector.labels, sel.exprs + t.selector.exprs)
    return scope, sel


class _Carriers:
    """Pod rows carrying each interned affinity term (with multiplicity), per snapshot."""

    def __init__(self, snapshot) -> None:  # type: ignore[no-untyped-def]
        idx: AffinityIndex = snapshot.shared(AffinityIndex)
        self.term_id = {t: i for i, t in enumerate(idx.term_list)}
        rows: dict[int, list[int]] = {}
        for p, ids in enumerate(idx.pod_term_ids):
            if ids is not None:
                for tid in ids["required_anti"]:
                    rows.setdefault(tid, []).append(p)
        self.required_anti = {tid: np.array(v, dtype=np.int64) for tid, v in rows.items()}


class AffinityWorld:
    """InterPodAffinity's Filter with each node's counts of its own topology values."""

    def __init__(self, rule, cycle: CycleState, nodes: np.ndarray, index: PodIndex) -> None:  # type: ignore[no-untyped-def]
        rule.pre_filter(cycle)  # the rule's PreFilter on the snapshot as it is (what Filter reruns)
        st = cycle.data[rule.name]
        self.st, self.index, self.state = st, index, rule.state
        self.codes: dict[str, np.ndarray] = {}  # topology key -> value code per candidate node
        self.counts: list[tuple[str, str, np.ndarray, list]] = []  # (kind, key, count per node, [(members, weight)])
        if st is None:
            return
        idx: AffinityIndex = rule.index
        if st.affinity:
            scope, sel = _merged(st.affinity)
            members = index.matching(scope, sel, alive_only=True)
            for key, c in st.affinity_counts.items():
                weight = sum(1 for t in st.affinity if t.topology_key == key)
                self._add("affinity", key, c, nodes, [(members, weight)])
            self.total = {key: np.full(len(nodes), int(c.sum()), dtype=np.int64)
                          for key, c in st.affinity_counts.items()}
        for key, c in st.anti_counts.items():
            self._add("anti", key, c, nodes, [(index.matching(t.count_scope(), t.selector, alive_only=True), 1)
                                              for t in st.anti if t.topology_key == key])
        carriers: _Carriers = idx.snapshot.shared(_Carriers)
        matching = [carriers.term_id[t] for t, _ in idx.placed_matching("required_anti", cycle.pod_obj)]
        for key, c in st.existing.items():
            self._add("existing", key, c, nodes, [(carriers.required_anti[tid], 1) for tid in matching
                                                   if idx.term_list[tid].topology_key == key])

    def _add(self, kind: str, key: str, counts: np.ndarray, nodes: np.ndarray, members: list) -> None:
        codes = self.codes.get(key)
        if codes is None:
            codes = self.codes[key] = self.state.label(key).codes[nodes]
        self.counts.append((kind, key, count_at(counts, codes), members))

    def move(self, pos: np.ndarray, pods: np.ndarray, sign: int) -> None:
        for kind, key, cnt, members in self.counts:
            delta = sum(count_in(self.index, m, pods, sign * w) for m, w in members)
            if not isinstance(delta, np.ndarray):
                continue
            delta = delta * (self.codes[key][pos] >= 0)
            np.add.at(cnt, pos, delta)
            if kind == "affinity":
                np.add.at(self.total[key], pos, delta)

    def _any(self, kind: str, qs: np.ndarray) -> dict[str, np.ndarray]:
        return {key: cnt[qs] > 0 for k, key, cnt, _ in self.counts if k == kind}

    def check(self, qs: np.ndarray) -> FilterResult:
        st, n = self.st, len(qs)
        if st is None:
            return FilterResult.passing(n)
        code = np.zeros(n, dtype=np.int8)
        aff_fail = np.zeros(n, dtype=bool)
        if st.affinity:
            found = self._any("affinity", qs)
            missing = np.zeros(n, dtype=bool)
            pods_exist = np.ones(n, dtype=bool)
            for t in st.affinity:
                missing |= self.codes[t.topology_key][qs] < 0
                pods_exist &= found[t.topology_key]
            anywhere = np.zeros(n, dtype=bool)
            for tot in self.total.values():
                anywhere |= tot[qs] > 0
            aff_fail = missing | (~pods_exist & ~(~anywhere & st.self_match))
            code[aff_fail] = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        anti_fail = np.zeros(n, dtype=bool)
        for hit in self._any("anti", qs).values():
            anti_fail |= hit
        anti_fail &= ~aff_fail
        code[anti_fail] = Code.UNSCHEDULABLE
        ex_fail = np.zeros(n, dtype=bool)
        for hit in self._any("existing", qs).values():
            ex_fail |= hit
        ex_fail &= ~aff_fail & ~anti_fail
        code[ex_fail] = Code.UNSCHEDULABLE
        reasons = [(m, r) for m, r in ((aff_fail, REASON_AFFINITY), (anti_fail, REASON_ANTI),
                                      (ex_fail, REASON_EXISTING)) if m.any()]
        return FilterResult(code, reasons)
