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

from ..constraints.node_affinity import required_mask
from ..constraints.taint_toleration import untolerated
from ..model.objects import TaintEffect
from .args import Args, PodScope, pod_scope
from .context import Context
from .evictor import sort_low_to_high
from .node_fit import anti_terms, term_matches

__all__ = ["RemovePodsViolatingInterPodAntiAffinity", "RemovePodsViolatingNodeAffinity",
           "RemovePodsViolatingNodeTaints"]


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


class RemovePodsViolatingInterPodAntiAffinity:
    name = "RemovePodsViolatingInterPodAntiAffinity"
    point = "deschedule"

    def __init__(self, args: Args) -> None:
        args.only("namespaces", "labelSelector")
        self.scope = pod_scope(args)

    def _violates(self, ctx: Context, p: int, present: np.ndarray) -> bool:
        s = ctx.state
        pod, node = s.pods[p], int(s.pod_node[p])
        for term in anti_terms(pod):
            col = s.label(term.topology_key).codes
            if col[node] < 0:
                continue
            near = present & (s.pod_node >= 0)
            near &= np.where(s.pod_node >= 0, col[np.maximum(s.pod_node, 0)] == col[node], False)
            near[p] = False
            if any(term_matches(term, pod, s.pods[q]) for q in np.nonzero(near)[0].tolist()):
                return True
        return False

    def run(self, ctx: Context) -> None:
        s = ctx.state
        # the pods listed (candidates and the pods they repel alike) are those in the strategy's scope
        present = (s.pod_node >= 0) & np.array([self.scope.admits(pod) for pod in s.pods], dtype=bool)
        for n in range(s.num_nodes):
            rows = [p for p in np.nonzero((s.pod_node == n) & present)[0].tolist()]
            for p in sort_low_to_high(s, rows):
                if not ctx.evictor.filter(p) or not anti_terms(s.pods[p]):
                    continue
                if self._violates(ctx, p, present) and ctx.evictor.pre_eviction_filter(p) and \
                        ctx.evictor.evict(p, self.name):
                    present[p] = False
