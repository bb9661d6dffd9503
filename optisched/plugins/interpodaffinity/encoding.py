"""InterPodAffinity in the CP-SAT batch model (EXACT): what the fixed pods decide, and the batch's own
pods' required affinity and anti-affinity per topology domain, with the arrival order's interactions."""
from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import numpy as np
from ortools.sat.python import cp_model

from ...framework import Code, CycleState, Fidelity, Status
from ...model.pod_index import count_at
from ...model.state import ClusterState
from ...optimal.order import Interaction
from .common import (
    AffinityIndex,
    AffinityTerm,
    PreFilterState,
)

if TYPE_CHECKING:
    from ...optimal.classes import PodClass
    from ...optimal.model import BatchModel

__all__ = ["AffinityEncoding"]


class AffinityEncoding:
    """The CP-SAT side of :class:`.filtering.InterPodAffinity` (it reads the rule's ``state`` and ``index``)."""

    state: ClusterState
    index: AffinityIndex
    filter_fidelity = Fidelity.EXACT

    if TYPE_CHECKING:
        name: ClassVar[str]

        def pre_filter(self, cycle: CycleState) -> Status: ...

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
            st: PreFilterState = cyc.data[self.name]
            bad = np.zeros(len(nodes), dtype=bool)
            for t in st.affinity:
                bad |= self.state.label(t.topology_key).codes < 0
            for t in st.anti:
                bad |= count_at(st.anti_counts[t.topology_key], self.state.label(t.topology_key).codes) > 0
            for key, counts in st.existing.items():
                bad |= count_at(counts, self.state.label(key).codes) > 0
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
