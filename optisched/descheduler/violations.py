"""Deschedule plugins that evict pods violating a rule on their current node.

kubernetes-sigs/descheduler v0.34.0 ``pkg/framework/plugins/``: ``removepodsviolatingnodetaints``
(a pod that does not tolerate a NoSchedule taint of its node; ``includePreferNoSchedule`` adds those),
``removepodsviolatingnodeaffinity`` (``requiredDuringSchedulingIgnoredDuringExecution``: the node no longer
matches the pod's node selector and required affinity, and the pod fits another node) and
``removepodsviolatinginterpodantiaffinity`` (a pod whose required anti-affinity matches another pod in the
same topology domain; pods are visited lowest priority first and an evicted pod no longer counts).
The node-side checks are greedy mode's own helpers.
"""
from __future__ import annotations

import numpy as np

from ..model.objects import Pod, TaintEffect
from ..model.state import ClusterState
from ..plugins.node_affinity import preferred_score, required_mask
from ..plugins.taint_toleration import untolerated
from .args import Args, PodScope, pod_scope
from .context import Context
from .duplicates import target_nodes
from .evictor import sort_low_to_high
from .node_fit import anti_terms, term_matcher, term_matches, term_namespaces

__all__ = ["RemovePodsViolatingInterPodAntiAffinity", "RemovePodsViolatingNodeAffinity",
           "RemovePodsViolatingNodeTaints", "anti_affinity_violated", "anti_affinity_violated_each", "anti_terms",
           "matched_by", "preferred_affinity_violated", "preferred_weights", "term_matches"]


def _candidates(ctx: Context, scope: PodScope) -> list[int]:
    """Bound pods in the strategy's scope that the evictor's Filter lets go, node by node (the
    descheduler's node loop)."""
    s = ctx.state
    rows = np.nonzero(s.pod_node >= 0)[0]
    return [int(p) for p in rows[np.argsort(s.pod_node[rows], kind="stable")]
            if ctx.evictor.filter(int(p)) and scope.admits(s.pods[int(p)])]


class RemovePodsViolatingNodeTaints:
    name = "RemovePodsViolatingNodeTaints"
    point = "deschedule"

    def __init__(self, args: Args) -> None:
        args.only("namespaces", "labelSelector", "includePreferNoSchedule", "excludedTaints", "includedTaints")
        self.scope = pod_scope(args)
        self.effects = {TaintEffect.NO_SCHEDULE}
        if args.get("includePreferNoSchedule", bool, False):
            self.effects.add(TaintEffect.PREFER_NO_SCHEDULE)
        self.excluded = set(args.get("excludedTaints", list, []))
        self.included = set(args.get("includedTaints", list, []))

    def _counts(self, taint) -> bool:  # type: ignore[no-untyped-def]
        keys = {taint.key, f"{taint.key}={taint.value}"}
        if self.included and not keys & self.included:
            return False
        return not keys & self.excluded

    def run(self, ctx: Context) -> None:
        s = ctx.state
        for p in _candidates(ctx, self.scope):
            taints = [t for t in s.taints[int(s.pod_node[p])] if self._counts(t)]
            violates = bool(taints) and bool(untolerated(s.pods[p].spec.tolerations, taints, self.effects).any())
            if violates and ctx.evictor.pre_eviction_filter(p):
                ctx.evictor.evict(p, self.name)


class RemovePodsViolatingNodeAffinity:
    name = "RemovePodsViolatingNodeAffinity"
    point = "deschedule"
    REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"

    def __init__(self, args: Args) -> None:
        args.only("nodeAffinityType", "namespaces", "labelSelector")
        self.scope = pod_scope(args)
        types = args.get("nodeAffinityType", list, [])
        if not types:
            raise args.error("nodeAffinityType", f"give at least one type, e.g. {self.REQUIRED}")
        bad = [t for t in types if t != self.REQUIRED]
        if bad:
            raise args.error("nodeAffinityType", f"{bad[0]!r} is not modelled; types: {self.REQUIRED}")

    def run(self, ctx: Context) -> None:
        s = ctx.state
        for p in _candidates(ctx, self.scope):
            moved_away = not required_mask(s, s.pods[p])[int(s.pod_node[p])]
            if moved_away and ctx.evictor.fits_elsewhere(p) and ctx.evictor.pre_eviction_filter(p):
                ctx.evictor.evict(p, self.name)


def matched_by(state: ClusterState, term, owner: Pod) -> np.ndarray:  # type: ignore[no-untyped-def]
    """bool [P]: the pods ``term`` of ``owner`` matches (:func:`term_matches`), kept per state: the replicas
    of a workload share their terms."""
    key = ("descheduler.matched_by", owner.metadata.namespace, term.model_dump_json())
    hit = state.memo.get(key)
    if hit is None:
        groups, group_of = _label_groups(state)
        match = term_matcher(term, owner)
        found = np.zeros(len(groups), dtype=bool)
        for ns in dict.fromkeys(term_namespaces(term, owner)):  # the other namespaces' pods never match
            for g in _groups_in(state, groups).get(ns, ()):
                found[g] = match(ns, groups[g][1])
        hit = state.memo[key] = found[group_of]
    return hit


def _groups_in(state: ClusterState, groups: list[tuple[str | None, dict[str, str]]]) -> dict[str | None, list[int]]:
    """Per namespace, the indexes of its label groups (kept per state)."""
    hit = state.memo.get(("descheduler.groups_in",))
    if hit is None:
        out: dict[str | None, list[int]] = {}
        for g, (ns, _) in enumerate(groups):
            out.setdefault(ns, []).append(g)
        hit = state.memo[("descheduler.groups_in",)] = out  # type: ignore[assignment]
    return hit  # type: ignore[return-value]


def _label_groups(state: ClusterState) -> tuple[list[tuple[str | None, dict[str, str]]], np.ndarray]:
    """The distinct (namespace, labels) of the pods, what a term reads of a pod, and each pod's index
    among them (kept per state): a term is matched against each group once, not each pod."""
    hit = state.memo.get(("descheduler.label_groups",))
    if hit is None:
        index: dict[tuple, int] = {}
        groups: list[tuple[str | None, dict[str, str]]] = []
        group_of = np.empty(len(state.pods), dtype=np.int64)
        for p, pod in enumerate(state.pods):
            ns, labels = pod.metadata.namespace, pod.metadata.labels
            k = index.setdefault((ns, tuple(sorted(labels.items()))), len(groups))
            if k == len(groups):
                groups.append((ns, labels))
            group_of[p] = k
        hit = state.memo[("descheduler.label_groups",)] = (groups, group_of)  # type: ignore[assignment]
    return hit  # type: ignore[return-value]


def anti_affinity_violated(state: ClusterState, p: int, node_of: np.ndarray, present: np.ndarray,
                           preferred: bool = False) -> bool:
    """Whether pod ``p``, on its node in ``node_of``, has an anti-affinity term that another ``present``
    pod in the same topology domain matches (``CheckPodsWithAntiAffinityExist``); a node without the
    term's topology key violates nothing."""
    pod, node = state.pods[p], int(node_of[p])
    on = present & (node_of >= 0)
    for term in anti_terms(pod, preferred):
        col = state.label(term.topology_key).codes
        if col[node] < 0:
            continue
        near = on & (col[np.maximum(node_of, 0)] == col[node]) & matched_by(state, term, pod)
        near[p] = False
        if near.any():
            return True
    return False


def anti_affinity_violated_each(state: ClusterState, rows: np.ndarray, node_of: np.ndarray, present: np.ndarray,
                                preferred: bool = False) -> np.ndarray:
    """bool [K]: :func:`anti_affinity_violated` for each of ``rows``, pods identical in namespace and
    anti-affinity terms (one class), in one pass per term: per topology domain, the ``present`` pods the
    term matches, less the pod itself."""
    out = np.zeros(len(rows), dtype=bool)
    owner = state.pods[int(rows[0])]
    on = present & (node_of >= 0)
    nodes = node_of[rows]
    for term in anti_terms(owner, preferred):
        col = state.label(term.topology_key).codes
        at = np.where(on, col[np.maximum(node_of, 0)], -1)
        hits = matched_by(state, term, owner) & (at >= 0)
        per_domain = np.bincount(at[hits], minlength=int(col.max(initial=-1)) + 1)
        mine = col[nodes]
        near = per_domain[np.maximum(mine, 0)] - hits[rows] if len(per_domain) else np.zeros(len(rows), dtype=np.int64)
        out |= (mine >= 0) & (near > 0)
    return out


def preferred_weights(state: ClusterState, p: int) -> tuple[np.ndarray, int] | None:
    """Per node, the weight of pod ``p``'s preferred node affinity terms it matches, and the best weight
    among the nodes the pod could use (:func:`.duplicates.target_nodes`); None without preferred terms."""
    aff = state.pods[p].spec.affinity
    spec = aff.node_affinity if aff is not None else None
    if spec is None or not spec.preferred_during_scheduling_ignored_during_execution:
        return None
    weight = preferred_score(state, spec)
    return weight, int(weight[target_nodes(state, p)].max(initial=0))


def preferred_affinity_violated(state: ClusterState, p: int, node: int) -> bool:
    """``RemovePodsViolatingNodeAffinity`` with ``preferredDuringSchedulingIgnoredDuringExecution``: the
    pod's node weighs less, by its preferred node affinity, than the best node it could use
    (``GetBestNodeWeightGivenPodPreferenceList > GetNodeWeightGivenPodPreferenceList``; the nodes it could
    use are those its selector, required affinity and taints allow, resources aside)."""
    found = preferred_weights(state, p)
    return found is not None and int(found[0][node]) < found[1]


class RemovePodsViolatingInterPodAntiAffinity:
    name = "RemovePodsViolatingInterPodAntiAffinity"
    point = "deschedule"

    def __init__(self, args: Args) -> None:
        args.only("namespaces", "labelSelector")
        self.scope = pod_scope(args)

    def run(self, ctx: Context) -> None:
        s = ctx.state
        # the pods listed (candidates and the pods they repel alike) are those in the strategy's scope
        present = (s.pod_node >= 0) & np.array([self.scope.admits(pod) for pod in s.pods], dtype=bool)
        for n in range(s.num_nodes):
            rows = [p for p in np.nonzero((s.pod_node == n) & present)[0].tolist()]
            for p in sort_low_to_high(s, rows):
                if not ctx.evictor.filter(p) or not anti_terms(s.pods[p]):
                    continue
                if anti_affinity_violated(s, p, s.pod_node, present) and ctx.evictor.pre_eviction_filter(p) and \
                        ctx.evictor.evict(p, self.name):
                    present[p] = False
