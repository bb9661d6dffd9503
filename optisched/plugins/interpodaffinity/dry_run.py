"""InterPodAffinity's preemption world (:class:`optisched.framework.World`): per topology key, each
candidate node's counts of its own value, moved as victims leave and return."""
from __future__ import annotations

import numpy as np

from ...framework import Code, CycleState, FilterResult
from ...model.pod_counts import NOTHING, Selector
from ...model.pod_index import PodIndex, count_at, count_in
from .common import (
    REASON_AFFINITY,
    REASON_ANTI,
    REASON_EXISTING,
    AffinityIndex,
)

__all__ = ["AffinityWorld"]


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
