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
from ..constraints.selectors import label_selector_matches
from ..constraints.taint_toleration import untolerated
from ..model.objects import Pod, TaintEffect
from .args import Args
from .context import Context
from .evictor import sort_low_to_high

__all__ = ["RemovePodsViolatingInterPodAntiAffinity", "RemovePodsViolatingNodeAffinity",
           "RemovePodsViolatingNodeTaints"]


def _candidates(ctx: Context) -> list[int]:
    """Bound pods the evictor's Filter lets go, node by node (the descheduler's node loop)."""
    s = ctx.state
    rows = np.nonzero(s.pod_node >= 0)[0]
    return [int(p) for p in rows[np.argsort(s.pod_node[rows], kind="stable")] if ctx.evictor.filter(int(p))]


class RemovePodsViolatingNodeTaints:
    name = "RemovePodsViolatingNodeTaints"
    point = "deschedule"

    def __init__(self, args: Args) -> None:
        args.only("namespaces", "labelSelector", "includePreferNoSchedule", "excludedTaints", "includedTaints")
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
        for p in _candidates(ctx):
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
        types = args.get("nodeAffinityType", list, [])
        if not types:
            raise args.error("nodeAffinityType", f"give at least one type, e.g. {self.REQUIRED}")
        bad = [t for t in types if t != self.REQUIRED]
        if bad:
            raise args.error("nodeAffinityType", f"{bad[0]!r} is not modelled; types: {self.REQUIRED}")

    def run(self, ctx: Context) -> None:
        s = ctx.state
        for p in _candidates(ctx):
            moved_away = not required_mask(s, s.pods[p])[int(s.pod_node[p])]
            if moved_away and ctx.evictor.fits_elsewhere(p) and ctx.evictor.pre_eviction_filter(p):
                ctx.evictor.evict(p, self.name)


def _anti_terms(pod: Pod) -> list:
    aff = pod.spec.affinity
    anti = aff.pod_anti_affinity if aff is not None else None
    return list(anti.required_during_scheduling_ignored_during_execution) if anti else []


def _matches(term, owner: Pod, other: Pod) -> bool:  # type: ignore[no-untyped-def]
    namespaces = term.namespaces or [owner.metadata.namespace]
    return other.metadata.namespace in namespaces and term.label_selector is not None and \
        label_selector_matches(term.label_selector, other.metadata.labels)


class RemovePodsViolatingInterPodAntiAffinity:
    name = "RemovePodsViolatingInterPodAntiAffinity"
    point = "deschedule"

    def __init__(self, args: Args) -> None:
        args.only("namespaces", "labelSelector")

    def _violates(self, ctx: Context, p: int, present: np.ndarray) -> bool:
        s = ctx.state
        pod, node = s.pods[p], int(s.pod_node[p])
        for term in _anti_terms(pod):
            col = s.label(term.topology_key).codes
            if col[node] < 0:
                continue
            near = present & (s.pod_node >= 0)
            near &= np.where(s.pod_node >= 0, col[np.maximum(s.pod_node, 0)] == col[node], False)
            near[p] = False
            if any(_matches(term, pod, s.pods[q]) for q in np.nonzero(near)[0].tolist()):
                return True
        return False

    def run(self, ctx: Context) -> None:
        s = ctx.state
        present = s.pod_node >= 0
        for n in range(s.num_nodes):
            rows = [p for p in np.nonzero(s.pod_node == n)[0].tolist()]
            for p in sort_low_to_high(s, rows):
                if not ctx.evictor.filter(p) or not _anti_terms(s.pods[p]):
                    continue
                if self._violates(ctx, p, present) and ctx.evictor.pre_eviction_filter(p) and \
                        ctx.evictor.evict(p, self.name):
                    present[p] = False
