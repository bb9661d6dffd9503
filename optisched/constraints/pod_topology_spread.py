"""PodTopologySpread filter, and the constraint resolution its scoring shares.

Upstream: ``pkg/scheduler/framework/plugins/podtopologyspread/{common,filtering,plugin}.go`` and
``helper/spread.go`` (``DefaultSelector``). Hard constraints (DoNotSchedule) come from the pod or,
when it has none, from the profile's default constraints with the selector of the Services,
ReplicationControllers, ReplicaSets and StatefulSets that select the pod. ``matchLabelKeys`` values are
merged into the selector. Domain counts cover nodes that carry every constraint's topology key and
pass the constraint's nodeAffinityPolicy / nodeTaintsPolicy; when two constraints share a topology key,
a node's count comes from the last of them that includes the node, as upstream's pair map does.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..framework import Code, CycleState, FilterResult, Status
from ..model.objects import Pod, TaintEffect, TopologySpreadConstraint
from ..model.snapshot import Snapshot
from ..model.state import HOSTNAME_LABEL as HOSTNAME
from ..model.state import ClusterState
from .node_affinity import required_mask
from .pod_counts import MatchCounter, Selector, selector_of
from .taint_toleration import untolerated

__all__ = [
    "HOSTNAME",
    "REASON",
    "REASON_MISSING_LABEL",
    "PodTopologySpread",
    "SpreadConstraint",
    "default_selector",
    "resolve_constraints",
]

REASON = "node(s) didn't match pod topology spread constraints"
REASON_MISSING_LABEL = REASON + " (missing required label)"
MAX_INT32 = 2**31 - 1


@dataclass(frozen=True)
class SpreadConstraint:
    max_skew: int
    topology_key: str
    selector: Selector
    min_domains: int = 1
    honor_affinity: bool = True
    honor_taints: bool = False


def default_selector(state: ClusterState, pod: Pod) -> Selector:
    """``helper.DefaultSelector``: the union of selectors of the Services, RC, RS, StatefulSet selecting ``pod``.

    Cached per pod: workloads and Services do not change during a run."""
    cache: dict[str, Selector] = state.__dict__.setdefault("_default_selectors", {})
    hit = cache.get(pod.key)
    if hit is None:
        hit = cache[pod.key] = _default_selector(state, pod)
    return hit


def _service_index(state: ClusterState) -> dict[tuple[str, str, str], list[dict[str, str]]]:
    """Service selectors by (namespace, one of their label pairs): a pod only checks plausible Services."""
    idx: dict[tuple[str, str, str], list[dict[str, str]]] | None = state.__dict__.get("_service_index")
    if idx is None:
        idx = {}
        for svc in state.cluster.services:
            sel = svc.spec.selector
            if sel:  # a Service without a selector selects nothing
                k, v = min(sel.items())
                idx.setdefault((svc.metadata.namespace or "default", k, v), []).append(sel)
        state.__dict__["_service_index"] = idx
    return idx


def _default_selector(state: ClusterState, pod: Pod) -> Selector:
    ns = pod.metadata.namespace or "default"
    labels: dict[str, str] = {}
    cluster = state.cluster
    pod_labels = pod.metadata.labels
    index = _service_index(state)
    for k, v in pod_labels.items():
        for sel in index.get((ns, k, v), ()):
            if all(pod_labels.get(a) == b for a, b in sel.items()):
                labels.update(sel)
    selector = Selector(frozenset(labels.items()))
    owner = next((o for o in pod.metadata.owner_references if o.controller), None)
    if owner is None:
        return selector
    if owner.kind == "ReplicationController" and owner.api_version == "v1":
        for rc in cluster.replication_controllers:
            if rc.metadata.namespace == ns and rc.metadata.name == owner.name:
                labels.update(rc.spec.selector)
                return Selector(frozenset(labels.items()))
    if owner.api_version == "apps/v1" and owner.kind in ("ReplicaSet", "StatefulSet"):
        objs = cluster.replica_sets if owner.kind == "ReplicaSet" else cluster.stateful_sets
        for o in objs:
            if o.metadata.namespace == ns and o.metadata.name == owner.name:
                other = selector_of(o.spec.selector)
                if other.nothing:
                    return selector
                return Selector(selector.labels | other.labels, selector.exprs + other.exprs)  # type: ignore
    return selector


def _from_api(c: TopologySpreadConstraint | dict, pod: Pod, selector: Selector | None) -> SpreadConstraint:
    if isinstance(c, dict):
        c = TopologySpreadConstraint.model_validate(c)
    sel = selector if selector is not None else selector_of(c.label_selector)
    if c.match_label_keys:
        extra = {k: pod.metadata.labels[k] for k in c.match_label_keys if k in pod.metadata.labels}
        sel = sel.with_labels(extra)
    return SpreadConstraint(c.max_skew, c.topology_key, sel, c.min_domains or 1,
                            c.node_affinity_policy == "Honor", c.node_taints_policy == "Honor")


def resolve_constraints(state: ClusterState, pod: Pod, defaults: tuple[dict, ...], action: str) -> list[SpreadConstraint]:
    """The pod's constraints with ``whenUnsatisfiable == action``, or the defaults (``buildDefaultConstraints``)."""
    own = pod.spec.topology_spread_constraints
    if own:
        return [_from_api(c, pod, None) for c in own if c.when_unsatisfiable == action]
    wanted = [c for c in defaults if c.get("whenUnsatisfiable") == action]
    if not wanted:
        return []
    sel = default_selector(state, pod)
    if sel.empty:
        return []
    return [_from_api(c, pod, sel) for c in wanted]


class NodeEligibility:
    """Which nodes count for a constraint: all topology keys present, and the inclusion policies."""

    def __init__(self, state: ClusterState, pod: Pod, constraints: list[SpreadConstraint]) -> None:
        self.state = state
        self.all_keys = np.ones(state.num_nodes, dtype=bool)
        for c in constraints:
            self.all_keys &= state.label(c.topology_key).has()
        self._affinity: np.ndarray | None = None
        self._taints: np.ndarray | None = None
        self.pod = pod

    def policy_mask(self, c: SpreadConstraint) -> np.ndarray:
        mask = np.ones(self.state.num_nodes, dtype=bool)
        if c.honor_affinity:
            if self._affinity is None:
                self._affinity = required_mask(self.state, self.pod)
            mask &= self._affinity
        if c.honor_taints:
            if self._taints is None:
                taints, matrix = self.state.distinct_taints
                bad = untolerated(self.pod.spec.tolerations, taints, {TaintEffect.NO_SCHEDULE, TaintEffect.NO_EXECUTE})
                self._taints = ~(matrix[:, bad].any(axis=1)) if len(taints) else np.ones(self.state.num_nodes, bool)
            mask &= self._taints
        return mask


@dataclass
class _FilterState:
    constraints: list[SpreadConstraint]
    pair_count: dict[str, np.ndarray]  # topology key -> count per value code
    min_match: dict[str, int]
    domains: dict[str, int]


class PodTopologySpread:
    name = "PodTopologySpread"
    depends_on_placement = True  # PreFilter state changes when pods are added or removed

    def __init__(self, snapshot: Snapshot, profile: object) -> None:
        self.snapshot = snapshot
        self.state = snapshot.state
        spread = getattr(profile, "spread", None)
        self.defaults = spread.effective_default_constraints if spread is not None else ()
        self.counter: MatchCounter = snapshot.shared(MatchCounter)

    def _node_counts(self, pod: Pod, c: SpreadConstraint) -> np.ndarray:
        if c.selector.empty:  # countPodsMatchSelector counts nothing for an empty selector
            return np.zeros(self.state.num_nodes, dtype=np.int64)
        return self.counter.counts(frozenset({pod.metadata.namespace or "default"}), c.selector)

    def pre_filter(self, cycle: CycleState) -> Status:
        pod = cycle.pod_obj
        cons = resolve_constraints(self.state, pod, self.defaults, "DoNotSchedule")
        if not cons:
            cycle.data[self.name] = None
            return Status.skip()
        elig = NodeEligibility(self.state, pod, cons)
        pair_count: dict[str, np.ndarray] = {}
        min_match: dict[str, int] = {}
        domains: dict[str, int] = {}
        for key in dict.fromkeys(c.topology_key for c in cons):
            col = self.state.label(key)
            source = np.full(self.state.num_nodes, -1, dtype=np.int64)  # last including constraint per node
            for i, c in enumerate(cons):
                if c.topology_key == key:
                    source[elig.all_keys & elig.policy_mask(c)] = i
            node_value = np.zeros(self.state.num_nodes, dtype=np.int64)
            for i, c in enumerate(cons):
                sel = source == i
                if sel.any():
                    node_value[sel] = self._node_counts(pod, c)[sel]
            included = source >= 0
            counts = np.bincount(col.codes[included], weights=node_value[included], minlength=len(col.values))
            present = np.zeros(len(col.values), dtype=bool)
            present[col.codes[included]] = True
            pair_count[key] = counts.astype(np.int64)
            domains[key] = int(present.sum())
            min_match[key] = int(counts[present].min()) if present.any() else MAX_INT32
        cycle.data[self.name] = _FilterState(cons, pair_count, min_match, domains)
        return Status()

    def filter(self, cycle: CycleState, nodes: np.ndarray) -> FilterResult:
        st: _FilterState | None = cycle.data.get(self.name)
        n = len(nodes)
        if st is None:
            return FilterResult.passing(n)
        labels = cycle.pod_obj.metadata.labels
        code = np.zeros(n, dtype=np.int8)
        missing = np.zeros(n, dtype=bool)
        skewed = np.zeros(n, dtype=bool)
        for c in st.constraints:
            undecided = code == 0
            codes = self.state.label(c.topology_key).codes[nodes]
            lacks = undecided & (codes < 0)
            code[lacks] = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            missing |= lacks
            minimum = st.min_match[c.topology_key]
            if st.domains[c.topology_key] < c.min_domains:
                minimum = 0
            self_match = 1 if c.selector.matches(labels) else 0
            counts = st.pair_count[c.topology_key]
            has = codes >= 0
            match = np.where(has, counts[np.where(has, codes, 0)] if len(counts) else 0, 0)
            bad = undecided & has & (match + self_match - minimum > c.max_skew)
            code[bad] = Code.UNSCHEDULABLE
            skewed |= bad
        reasons = [(m, r) for m, r in ((missing, REASON_MISSING_LABEL), (skewed, REASON)) if m.any()]
        return FilterResult(code, reasons)


