"""NodeAffinity: ``nodeSelector``, required node affinity and the profile's ``addedAffinity`` filter;
preferred terms score.

Upstream: ``pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go`` (v1.35) and
``k8s.io/component-helpers/scheduling/corev1/nodeaffinity``. PreFilter narrows the nodes to those named
by ``matchFields metadata.name In`` when every required term names nodes (``PreFilterResult``).
PreScore skips only when neither the pod nor the profile's ``addedAffinity`` has preferred terms.
A term kube-scheduler cannot build (an invalid label value, say) matches no node: see ``selectors``.
A pod's *preferred* term that cannot be built fails PreScore with an Error, which ends the cycle
(when more than one node is feasible); optimal mode places such a pod only where one node alone passes
its static rules (:mod:`optisched.optimal.score_errors`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..framework import Code, CycleState, Fidelity, FilterResult, Plugin, Status, default_normalize
from ..model.label_syntax import aggregate, term_errors
from ..model.objects import NodeAffinity as NodeAffinitySpec
from ..model.objects import NodeSelectorOperator, Pod
from ..model.selectors import labels_mask, node_selector_mask, term_mask
from ..model.snapshot import Snapshot
from ..model.state import ClusterState
from ..optimal.score_terms import encode_static
from . import names

if TYPE_CHECKING:
    from ..optimal.classes import PodClass
    from ..optimal.model import BatchModel
    from ..optimal.tiers import Linear

__all__ = ["REASON_CONFLICT", "REASON_ENFORCED", "REASON_POD", "NodeAffinity", "preferred_error", "preferred_score",
           "required_mask"]

REASON_POD = "node(s) didn't match Pod's node affinity/selector"
REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
REASON_CONFLICT = "pod affinity terms conflict"


def required_mask(state: ClusterState, pod: Pod) -> np.ndarray:
    """``GetRequiredNodeAffinity(pod).Match``: nodeSelector AND required node affinity, over all nodes."""
    mask = labels_mask(state, pod.spec.node_selector) if pod.spec.node_selector else np.ones(state.num_nodes, bool)
    aff = pod.spec.affinity.node_affinity if pod.spec.affinity else None
    if aff is not None and aff.required_during_scheduling_ignored_during_execution is not None:
        mask &= node_selector_mask(state, aff.required_during_scheduling_ignored_during_execution)
    return mask


def preferred_score(state: ClusterState, spec: NodeAffinitySpec | None) -> np.ndarray:
    """Sum of the weights of the preferred terms each node matches (empty terms never match)."""
    out = np.zeros(state.num_nodes, dtype=np.int64)
    if spec is None:
        return out
    for t in spec.preferred_during_scheduling_ignored_during_execution:
        out += t.weight * term_mask(state, t.preference)
    return out


def preferred_error(pod: Pod) -> str | None:
    """The error ``nodeaffinity.NewPreferredSchedulingTerms`` returns for the pod's preferred terms
    (paths from the list: ``[0].matchExpressions[0].values[0]: Invalid value: ...``), or None."""
    aff = pod.spec.affinity.node_affinity if pod.spec.affinity else None
    preferred = aff.preferred_during_scheduling_ignored_during_execution if aff is not None else []
    return aggregate([e for i, t in enumerate(preferred) for e in term_errors(t.preference, f"[{i}]")])


def _node_names_restriction(state: ClusterState, pod: Pod) -> Status:
    """PreFilterResult from ``matchFields: metadata.name In``: every term must name nodes."""
    aff = pod.spec.affinity.node_affinity if pod.spec.affinity else None
    req = aff.required_during_scheduling_ignored_during_execution if aff else None
    if req is None:
        return Status()
    names: set[str] | None = None
    for term in req.node_selector_terms:
        term_names: set[str] | None = None
        for r in term.match_fields:
            if r.key == "metadata.name" and r.operator == NodeSelectorOperator.IN:
                s = set(r.values)
                term_names = s if term_names is None else term_names & s
        if term_names is None:
            return Status()
        names = term_names if names is None else names | term_names
    if names is not None and not names:
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON_CONFLICT,))
    mask = np.zeros(state.num_nodes, dtype=bool)
    for n in names or ():
        if n in state.node_index:
            mask[state.node_index[n]] = True
    return Status(nodes=mask)


class NodeAffinity(Plugin):
    name = names.NODE_AFFINITY
    points = frozenset({"preFilter", "filter", "preScore", "score"})
    static = True
    placement_free = True

    @staticmethod
    def score_key(pod: Pod) -> tuple:
        aff = pod.spec.affinity.node_affinity if pod.spec.affinity else None
        return (aff.model_dump_json() if aff is not None else None),

    def __init__(self, snapshot: Snapshot, profile: object) -> None:
        self.state = snapshot.state
        added = getattr(getattr(profile, "node_affinity", None), "added_affinity", None)
        self.added = NodeAffinitySpec.model_validate(added) if added else None
        req = self.added.required_during_scheduling_ignored_during_execution if self.added else None
        self.added_required = node_selector_mask(self.state, req) if req is not None else None
        self.added_preferred = preferred_score(self.state, self.added) if self.added else None
        self.has_added_preferred = bool(self.added and self.added.preferred_during_scheduling_ignored_during_execution)

    def pre_filter(self, cycle: CycleState) -> Status:
        pod = cycle.pod_obj
        aff = pod.spec.affinity.node_affinity if pod.spec.affinity else None
        has_required = aff is not None and aff.required_during_scheduling_ignored_during_execution is not None
        if not has_required and self.added_required is None and not pod.spec.node_selector:
            return Status.skip()
        cycle.data[self.name] = required_mask(self.state, pod)
        return _node_names_restriction(self.state, pod)

    def filter(self, cycle: CycleState, nodes: np.ndarray) -> FilterResult:
        code = np.zeros(len(nodes), dtype=np.int8)
        reasons = []
        if self.added_required is not None:
            enforced = ~self.added_required[nodes]
            code[enforced] = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            reasons.append((enforced, REASON_ENFORCED))
        else:
            enforced = np.zeros(len(nodes), dtype=bool)
        mask = cycle.data.get(self.name)
        if mask is not None:
            pod_fail = ~mask[nodes] & ~enforced
            code[pod_fail] = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            reasons.append((pod_fail, REASON_POD))
        return FilterResult(code, [(m, r) for m, r in reasons if m.any()])

    def pre_score_error(self, pod: Pod) -> str | None:
        """Why PreScore fails on ``pod`` alone: a preferred term ``NewPreferredSchedulingTerms`` cannot
        build (an Error, which ends the cycle), or None."""
        return preferred_error(pod)

    def pre_score(self, cycle: CycleState, nodes: np.ndarray) -> Status:
        """Skip only when neither the pod nor the profile's ``addedAffinity`` has preferred terms; an
        Error when a pod's preferred term cannot be built (``NewPreferredSchedulingTerms``)."""
        if (err := preferred_error(cycle.pod_obj)) is not None:
            return Status(Code.ERROR, (err,))
        aff = cycle.pod_obj.spec.affinity.node_affinity if cycle.pod_obj.spec.affinity else None
        if not (aff is not None and aff.preferred_during_scheduling_ignored_during_execution) \
                and not self.has_added_preferred:
            return Status.skip()
        return Status()

    def score(self, cycle: CycleState, nodes: np.ndarray) -> np.ndarray:
        pod = cycle.pod_obj
        aff = pod.spec.affinity.node_affinity if pod.spec.affinity else None
        total = preferred_score(self.state, aff)[nodes]
        if self.added_preferred is not None:
            total = total + self.added_preferred[nodes]
        return total

    def normalize(self, cycle: CycleState, scores: np.ndarray) -> np.ndarray:
        return default_normalize(scores, reverse=False)

    # ------------------------------------------------------------------ CP-SAT side
    filter_fidelity = Fidelity.EXACT

    def restrict(self, model: BatchModel, classes: list[PodClass]) -> None:
        """nodeSelector, required node affinity, addedAffinity and the PreFilter's node names: the
        greedy verdict over every node is the domain."""
        model.restrict_by_filter(self, classes)

    def encode_filter(self, model: BatchModel, classes: list[PodClass]) -> None:
        """Nothing here depends on where other pods go."""

    score_fidelity = Fidelity.SURROGATE

    def encode_score(self, model: BatchModel, classes: list[PodClass], weight: int, objective: Linear) -> None:
        """Per arrival, the greedy score: the weights of the pod's and the profile's ``addedAffinity``
        preferred terms the node matches (nothing when neither has any: PreScore skips), normalized over
        the nodes the class may use (SURROGATE: kube normalizes over the nodes feasible at the time)."""
        encode_static(self, model, classes, weight, objective)
