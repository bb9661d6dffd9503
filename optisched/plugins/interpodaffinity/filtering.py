"""InterPodAffinity's PreFilter and Filter (``filtering.go``): the pod's required affinity, its required
anti-affinity, then existing pods' required anti-affinity against it; its CP-SAT side is :mod:`.encoding`,
its preemption world :mod:`.dry_run`."""
from __future__ import annotations

import numpy as np

from ...framework import ClusterEvent, Code, CycleState, FilterResult, Plugin, Status
from ...model.objects import Pod
from ...model.pod_index import PodIndex, count_at
from ...model.snapshot import Snapshot
from .. import names
from .common import (
    REASON_AFFINITY,
    REASON_ANTI,
    REASON_EXISTING,
    AffinityIndex,
    PreFilterState,
)
from .dry_run import AffinityWorld
from .encoding import AffinityEncoding

__all__ = ["InterPodAffinity"]




class InterPodAffinity(AffinityEncoding, Plugin):
    name = names.INTER_POD_AFFINITY
    points = frozenset({"preFilter", "filter"})
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
        cycle.data[self.name] = PreFilterState(affinity, anti, affinity_counts, any_affinity, anti_counts, existing,
                                           self_match)
        return Status()

    def filter(self, cycle: CycleState, nodes: np.ndarray) -> FilterResult:
        st: PreFilterState | None = cycle.data.get(self.name)
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
                pods_exist &= count_at(st.affinity_counts[t.topology_key], codes) > 0
            first_pod_ok = (not st.any_affinity) and st.self_match
            aff_fail = missing | (~pods_exist & (not first_pod_ok))
            code[aff_fail] = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        # satisfyPodAntiAffinity
        anti_fail = np.zeros(n, dtype=bool)
        for t in st.anti:
            codes = self.state.label(t.topology_key).codes[nodes]
            anti_fail |= count_at(st.anti_counts[t.topology_key], codes) > 0
        anti_fail &= ~aff_fail
        code[anti_fail] = Code.UNSCHEDULABLE
        # satisfyExistingPodsAntiAffinity
        ex_fail = np.zeros(n, dtype=bool)
        for key, counts in st.existing.items():
            ex_fail |= count_at(counts, self.state.label(key).codes[nodes]) > 0
        ex_fail &= ~aff_fail & ~anti_fail
        code[ex_fail] = Code.UNSCHEDULABLE
        reasons = [(m, r) for m, r in ((aff_fail, REASON_AFFINITY), (anti_fail, REASON_ANTI),
                                      (ex_fail, REASON_EXISTING)) if m.any()]
        return FilterResult(code, reasons)
