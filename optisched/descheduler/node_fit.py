"""The descheduler's ``NodeFit``: the predicates it checks, and only those.

kubernetes-sigs/descheduler v0.34.0 ``pkg/descheduler/node/node.go`` ``NodeFit`` asks, for a pod and a node:

1. ``PodMatchNodeSelector``: the pod's nodeSelector and required node affinity;
2. ``TolerationsTolerateTaintsWithFilter``: the node's NoSchedule and NoExecute taints are tolerated;
3. ``fitsRequest`` (skipped on the pod's own node): every resource the pod requests is at most the node's
   allocatable minus the requests of the pods assigned to it, and one pod slot is left;
4. ``IsNodeUnschedulable``: ``spec.unschedulable`` (a toleration of the unschedulable taint does not help);
5. ``podMatchesInterPodAntiAffinity``: the pod's *own* required anti-affinity terms against the pods
   assigned to that node (``utils.CheckPodsWithAntiAffinityExist`` with the node alone in its node map).

It does not ask the pods already on the node about their anti-affinity, nor the pod's required pod
affinity, nor topology spread: kube-scheduler's InterPodAffinity and PodTopologySpread filters are not
part of it. Predicates 1-3 are greedy mode's own NodeAffinity, TaintToleration and NodeResourcesFit
filters; 4 and 5 are written here because upstream's differ from kube-scheduler's.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

import numpy as np

from ..framework import Code, CycleState
from ..greedy.framework_runner import Framework
from ..model.objects import Pod
from ..model.selectors import selector_of
from ..model.snapshot import Snapshot
from ..model.state import ClusterState
from ..profile import SchedulerConfig

__all__ = ["NODE_FIT_FILTERS", "NodeFit", "anti_terms", "term_matcher", "term_matches", "term_namespaces"]

NODE_FIT_FILTERS = ("NodeAffinity", "TaintToleration", "NodeResourcesFit")


def anti_terms(pod: Pod, preferred: bool = False) -> list:
    """The pod's required anti-affinity terms (``GetPodAntiAffinityTerms``); ``preferred``: the terms of
    its preferred ones instead (what ``reschedule --goal repair --soft`` also repairs)."""
    aff = pod.spec.affinity
    anti = aff.pod_anti_affinity if aff is not None else None
    if anti is None:
        return []
    if preferred:
        return [w.pod_affinity_term for w in anti.preferred_during_scheduling_ignored_during_execution]
    return list(anti.required_during_scheduling_ignored_during_execution)


def term_namespaces(term, owner: Pod) -> list[str | None]:  # type: ignore[no-untyped-def]
    """The namespaces a term of ``owner`` looks in: those it lists, else the owner's."""
    return list(term.namespaces) or [owner.metadata.namespace]


def term_matcher(term, owner: Pod) -> Callable[[str | None, Mapping[str, str]], bool]:  # type: ignore[no-untyped-def]
    """``PodMatchesTermsNamespaceAndSelector`` for one term of ``owner``, its selector built once: a
    pod's (namespace, labels) -> whether it is in the term's namespaces (the owner's when none are
    listed) and matches its label selector."""
    namespaces = term_namespaces(term, owner)
    selector = selector_of(term.label_selector) if term.label_selector is not None else None
    return lambda namespace, labels: namespace in namespaces and selector is not None and selector.matches(labels)


def term_matches(term, owner: Pod, other: Pod) -> bool:  # type: ignore[no-untyped-def]
    """:func:`term_matcher` for one pod ``other``."""
    return term_matcher(term, owner)(other.metadata.namespace, other.metadata.labels)


class NodeFit:
    """``NodeFit`` over every node at once for one cluster snapshot."""

    def __init__(self, state: ClusterState, config: SchedulerConfig) -> None:
        self.state = state
        prof = config.profiles[0]
        keep = {pt: tuple(n for n in prof.plugins.get(pt, ()) if n in NODE_FIT_FILTERS) for pt in ("preFilter", "filter")}
        self._fw = Framework(Snapshot(state), replace(prof, plugins={**prof.plugins, **keep}))

    def _anti_ok(self, p: int) -> np.ndarray:
        """bool [N]: no pod assigned to the node matches one of ``p``'s own anti-affinity terms."""
        s = self.state
        ok = np.ones(s.num_nodes, dtype=bool)
        pod = s.pods[p]
        terms = anti_terms(pod)
        if not terms:
            return ok
        for q in np.flatnonzero(s.pod_node >= 0).tolist():
            other = s.pods[q]
            if other.metadata.name != pod.metadata.name and any(term_matches(t, pod, other) for t in terms):
                ok[int(s.pod_node[q])] = False
        return ok

    def mask(self, p: int, nodes: np.ndarray) -> np.ndarray:
        """bool [N]: the nodes of ``nodes`` (bool [N]) that pass ``NodeFit`` for pod row ``p``."""
        s = self.state
        allowed = nodes & ~s.unschedulable & self._anti_ok(p)
        out = np.zeros(s.num_nodes, dtype=bool)
        cycle = CycleState(p, self._fw.snapshot, self._fw.profile)
        status, _, skipped = self._fw.pre_filter(cycle)
        if status.code != Code.SUCCESS:
            return out
        rows = np.flatnonzero(allowed)
        if status.nodes is not None:
            rows = rows[status.nodes[rows]]
        if len(rows):
            out[self._fw.filter(cycle, rows, skipped).feasible] = True
        return out
