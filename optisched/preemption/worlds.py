"""Filters answering for many preemption dry runs at once: one "world" per candidate node.

``SelectVictimsOnNode`` (``pkg/scheduler/framework/preemption/preemption.go``) runs on a copy of the
cycle state where only one node's pods change, so the dry runs of different nodes are independent.
Each world class below keeps, per candidate node, the part of one filter's state that the node's own
removals and returns can move, and answers the filter for those nodes as the rule would on the
modified snapshot:

* NodeResourcesFit: what is requested on the node;
* NodePorts: whether each host port the pod could conflict with is marked used on the node (a pod
  taken off clears its ports and a pod put back sets them, as ``HostPortInfo`` does);
* PodTopologySpread: per hard constraint, the count of the node's domain and the minimum over the
  domains (the other domains keep their counts, so the minimum is theirs or the node's domain's),
  moved as ``AddPod``/``RemovePod`` move them (same namespace, selector match, counted node);
* InterPodAffinity: per topology key, the counts of the node's value for the pod's required affinity
  and anti-affinity terms and for existing pods' anti-affinity terms matching the pod, and whether any
  pod still satisfies the affinity terms anywhere (``satisfyPodAffinity``'s first-pod exception).

``move(pos, pods, sign)`` takes ``pods[i]`` off (``sign`` −1) or puts it back (+1) on the node at
position ``pos[i]``; ``check(qs)`` is the filter's :class:`FilterResult` for the nodes at positions ``qs``.
"""
from __future__ import annotations

import numpy as np

from ..constraints.inter_pod_affinity import REASON_AFFINITY, REASON_ANTI, REASON_EXISTING, AffinityIndex
from ..constraints.node_ports import ANY_IP, PodHostPorts, host_ports
from ..constraints.node_ports import REASON as REASON_PORTS
from ..constraints.pod_topology_spread import REASON, REASON_MISSING_LABEL
from ..constraints.selectors import NOTHING, Selector
from ..framework import Code, CycleState, FilterResult
from .pod_index import PodIndex, count_in

__all__ = ["AffinityWorld", "PortsWorld", "ResourceWorld", "SpreadWorld"]


def _at(counts: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """``counts[code]`` per node, 0 where the node lacks the label (code -1) or there are no values."""
    if len(counts) == 0:
        return np.zeros(len(codes), dtype=np.int64)
    return np.where(codes >= 0, counts[np.maximum(codes, 0)], 0).astype(np.int64)


_MANY = 512  # pods moved at once from which ResourceWorld sums them with bincount


class ResourceWorld:
    """NodeResourcesFit (``fitsRequest``) against each node's own requested amounts."""

    def __init__(self, rule, cycle: CycleState, nodes: np.ndarray) -> None:  # type: ignore[no-untyped-def]
        self.rule, self.pod, self.nodes = rule, cycle.pod, nodes
        self.used = rule.snapshot.requested[nodes]
        self.requests = rule.snapshot.state.pod_requests
        self.allocatable = rule.snapshot.state.allocatable[nodes]

    def move(self, pos: np.ndarray, pods: np.ndarray, sign: int) -> None:
        if len(pos) < _MANY or not self.rule.sums_exact:
            np.add.at(self.used, pos, sign * self.requests[pods])
            return
        # many pods (taking every lower-priority pod off): one bincount per requested column, about
        # four times faster than np.add.at; its float64 sums are exact below 2**53
        req = self.requests[pods]
        for j in np.flatnonzero(req.any(axis=0)).tolist():
            self.used[:, j] += sign * np.bincount(pos, weights=req[:, j], minlength=len(self.used)).astype(np.int64)

    def check(self, qs: np.ndarray) -> FilterResult:
        return self.rule.fits(self.pod, self.nodes[qs], self.used[qs])

    def put_back(self, pos: np.ndarray, pods: np.ndarray) -> np.ndarray:
        """``move(pos, pods, 1)`` for the pods that then pass :meth:`check` (positions do not repeat);
        which did. The reprieve step when this is the only dynamic filter."""
        used = self.used[pos] + self.requests[pods]
        ok = self.rule.fits_rows(self.pod, self.allocatable[pos], used)
        self.used[pos[ok]] = used[ok]
        return ok


class _PortUsers:
    """Pod rows declaring each (hostIP, protocol, hostPort), per snapshot."""

    def __init__(self, snapshot) -> None:  # type: ignore[no-untyped-def]
        rows: dict[tuple[str, str, int], list[int]] = {}
        for i, ports in enumerate(snapshot.shared(PodHostPorts).of):
            for key in ports:
                rows.setdefault(key, []).append(i)
        self.rows = {k: np.array(v, dtype=np.int64) for k, v in rows.items()}


class PortsWorld:
    """NodePorts' Filter over each node's own used-port marks."""

    def __init__(self, rule, cycle: CycleState, nodes: np.ndarray, index: PodIndex) -> None:  # type: ignore[no-untyped-def]
        users: _PortUsers = cycle.snapshot.shared(_PortUsers)
        self.index = index
        self.marks = []  # (pods declaring the port, used mark per node)
        for ip, proto, port in host_ports(cycle.pod_obj):
            others = rule.ips.get((proto, port), ()) if ip == ANY_IP else (ANY_IP, ip)
            for other in others:
                used = rule.used.get((other, proto, port))
                if used is not None:
                    members = users.rows.get((other, proto, port), np.zeros(0, dtype=np.int64))
                    self.marks.append((members, used[nodes].copy()))

    def move(self, pos: np.ndarray, pods: np.ndarray, sign: int) -> None:
        for members, used in self.marks:
            hit = count_in(self.index, members, pods) > 0
            used[pos[hit]] = sign > 0

    def check(self, qs: np.ndarray) -> FilterResult:
        conflict = np.zeros(len(qs), dtype=bool)
        for _, used in self.marks:
            conflict |= used[qs]
        return FilterResult.from_mask(conflict, REASON_PORTS)


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
            cnt = _at(h.counts, codes)
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


def _merged(terms) -> tuple[frozenset[str] | None, Selector]:  # type: ignore[no-untyped-def]
    """The scope and selector ``AffinityIndex.term_node_counts`` counts with (all terms at once)."""
    scope: frozenset[str] | None = None
    sel = terms[0].selector
    for i, t in enumerate(terms):
        s = t.count_scope()
        if s is not None:
            scope = s if scope is None else scope & s
        if i:
            sel = NOTHING if (sel.nothing or t.selector.nothing) else Selector(sel.labels | t.selector.labels,
                                                                               sel.exprs + t.selector.exprs)
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
        self.codes = {}  # topology key -> value code per candidate node
        self.counts = []  # (kind, key, count per node, [(members, weight)])
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
        self.counts.append((kind, key, _at(counts, codes), members))

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
