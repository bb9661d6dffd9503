"""PodTopologySpread's preemption world (:class:`optisched.framework.World`): per hard constraint, the
count of each candidate node's domain and the minimum over the domains, moved as ``AddPod``/``RemovePod``
move them."""
from __future__ import annotations

import numpy as np

from ...framework import Code, CycleState, FilterResult
from ...model.pod_index import PodIndex, count_at, count_in
from .common import (
    REASON,
    REASON_MISSING_LABEL,
)

__all__ = ["SpreadWorld"]


class SpreadWorld:
    """PodTopologySpread's Filter with each node's domain count and minimum of its own."""

    def __init__(self, rule, cycle: CycleState, nodes: np.ndarray, index: PodIndex) -> None:  # type: ignore[no-untyped-def]
        rule.filter(cycle, nodes[:0])  # brings the cycle's counts up to the snapshot
        st = cycle.data[rule.name]
        self.index = index
        self.hard = []
        for h, minimum in zip(st.hard, st.minimum):
            codes = h.codes[nodes]
            counted = h.counted[nodes]
            cnt = count_at(h.counts, codes)
            few = int(h.present.sum()) < h.c.min_domains  # minMatchNum stays 0
            if few:
                others = np.full(len(nodes), minimum, dtype=np.int64)
            else:
                present = np.flatnonzero(h.present)
                vals = h.counts[present]
                first = int(np.argmin(vals))
                second = int(np.delete(vals, first).min()) if len(vals) > 1 else np.iinfo(np.int64).max
                others = np.where(codes == present[first], second, int(vals[first]))
                # a node that is not counted never moves a count: its world keeps the cycle's minimum
                others = np.where(counted, others, minimum)
            members = index.matching(frozenset({st.namespace}), h.c.selector, alive_only=False)
            self.hard.append((h, codes, counted, cnt, others, few, members))

    def move(self, pos: np.ndarray, pods: np.ndarray, sign: int) -> None:
        for h, _, counted, cnt, _, _, members in self.hard:
            hit = count_in(self.index, members, pods, sign) * counted[pos]
            np.add.at(cnt, pos, hit)

    def check(self, qs: np.ndarray) -> FilterResult:
        n = len(qs)
        code = np.zeros(n, dtype=np.int8)
        missing = np.zeros(n, dtype=bool)
        skewed = np.zeros(n, dtype=bool)
        for h, codes, counted, cnt, others, few, _ in self.hard:
            undecided = code == 0
            has = codes[qs] >= 0
            lacks = undecided & ~has
            code[lacks] = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            missing |= lacks
            match = cnt[qs]
            minimum = others[qs] if few else np.where(counted[qs], np.minimum(others[qs], match), others[qs])
            bad = undecided & has & (match + h.self_match - minimum > h.c.max_skew)
            code[bad] = Code.UNSCHEDULABLE
            skewed |= bad
        return FilterResult(code, [(m, r) for m, r in ((missing, REASON_MISSING_LABEL), (skewed, REASON)) if m.any()])
