"""Input warnings for pods with terms kube-scheduler cannot build, each naming the file, the pod and the field.

The API server does not check node-affinity values nor that a ``Gt``/``Lt`` value is an integer, so such
pods exist; kube-scheduler v1.35.4 then meets the error while scheduling them (docs/fidelity.md):

* a required node-affinity term (``nodeaffinity.NewNodeSelector``): the term matches no node;
* a preferred node-affinity term (``NewPreferredSchedulingTerms``, NodeAffinity PreScore) or a soft
  topology spread constraint's selector (PodTopologySpread PreScore): every cycle in which two or more
  nodes pass the filters ends with that error, without a node;
* a hard topology spread constraint's selector: PreFilter fails with an Error, the pod is never placed;
* a pod (anti-)affinity term's label or namespace selector (``framework.NewPodInfo``): the pod is rejected
  at PreFilter; on a placed pod, that list of terms is ignored.
"""
from __future__ import annotations

from collections.abc import Iterator

from .model.label_syntax import term_errors
from .model.objects import Pod, PodAffinity
from .model.selectors import selector_error
from .model.state import ClusterState

__all__ = ["term_warnings"]

SHOWN = 5  # pods named in one line before "and N more pods"
_NODE_AFFINITY = ".spec.affinity.nodeAffinity"
_PRE_SCORE = ("kube-scheduler's {} PreScore fails with this error in every cycle where two or more nodes pass "
              "the filters: such a cycle places the pod nowhere")
_CONSEQUENCE = {
    "required": "kube-scheduler cannot build the term, which matches no node (the pod's other terms still count)",
    "preferred": _PRE_SCORE.format("NodeAffinity"),
    "soft": _PRE_SCORE.format("PodTopologySpread"),
    "hard": "kube-scheduler's PodTopologySpread PreFilter fails with this error: the pod is never placed",
    "pod-affinity": "kube-scheduler rejects the pod at InterPodAffinity's PreFilter (parsing pod), and ignores "
                    "this list of terms of a pod already placed",
}


def _node_affinity(pod: Pod) -> Iterator[tuple[str, str, str]]:
    """(field, error, consequence) of each node-affinity requirement that cannot be built."""
    aff = pod.spec.affinity.node_affinity if pod.spec.affinity else None
    if aff is None:
        return
    req = aff.required_during_scheduling_ignored_during_execution
    for i, term in enumerate(req.node_selector_terms if req is not None else []):
        for err in term_errors(term, f"{_NODE_AFFINITY}.requiredDuringSchedulingIgnoredDuringExecution"
                                     f".nodeSelectorTerms[{i}]"):
            yield *_split(err), "required"
    for i, weighted in enumerate(aff.preferred_during_scheduling_ignored_during_execution):
        for err in term_errors(weighted.preference,
                               f"{_NODE_AFFINITY}.preferredDuringSchedulingIgnoredDuringExecution[{i}].preference"):
            yield *_split(err), "preferred"


def _split(err: str) -> tuple[str, str]:
    """A field error ``path: Invalid value: ...`` as (``.path``, the rest)."""
    path, _, rest = err.partition(": ")
    return "." + path.lstrip("."), rest


def _selectors(pod: Pod) -> Iterator[tuple[str, str, str]]:
    """(field, error, consequence) of each spread constraint or pod (anti-)affinity selector that cannot
    be built (``metav1.LabelSelectorAsSelector``)."""
    for i, c in enumerate(pod.spec.topology_spread_constraints):
        if (err := selector_error(c.label_selector)) is not None:
            kind = "hard" if c.when_unsatisfiable == "DoNotSchedule" else "soft"
            yield f".spec.topologySpreadConstraints[{i}].labelSelector", err, kind
    aff = pod.spec.affinity
    for name, spec in (("podAffinity", aff.pod_affinity if aff else None),
                       ("podAntiAffinity", aff.pod_anti_affinity if aff else None)):
        yield from _pod_affinity(f".spec.affinity.{name}", spec)


def _pod_affinity(where: str, spec: PodAffinity | None) -> Iterator[tuple[str, str, str]]:
    if spec is None:
        return
    terms = [(f"{where}.requiredDuringSchedulingIgnoredDuringExecution[{i}]", t)
             for i, t in enumerate(spec.required_during_scheduling_ignored_during_execution)]
    terms += [(f"{where}.preferredDuringSchedulingIgnoredDuringExecution[{i}].podAffinityTerm", w.pod_affinity_term)
              for i, w in enumerate(spec.preferred_during_scheduling_ignored_during_execution)]
    for path, t in terms:
        for field, sel in (("labelSelector", t.label_selector), ("namespaceSelector", t.namespace_selector)):
            if (err := selector_error(sel)) is not None:
                yield f"{path}.{field}", err, "pod-affinity"


def term_warnings(state: ClusterState) -> list[str]:
    """One line per requirement or selector kube-scheduler cannot build, on any pod of the input:
    ``FILE: Pod/ns/name FIELD: ERROR: what kube-scheduler does with it``; pods of one file with the same
    field and error (the replicas of a workload) share a line, the first :data:`SHOWN` named."""
    found: dict[tuple[str, str, str, str], list[str]] = {}
    for pod in state.pods:
        source = state.cluster.origins.get(("Pod", pod.metadata.namespace, pod.metadata.name), "")
        for field, err, kind in (*_node_affinity(pod), *_selectors(pod)):
            found.setdefault((source, field, err, kind), []).append(pod.ref)
    out = []
    for (source, field, err, kind), refs in found.items():
        more = f" and {len(refs) - SHOWN} more pods" if len(refs) > SHOWN else ""
        out.append(f"{source + ': ' if source else ''}{', '.join(refs[:SHOWN])}{more} {field}: {err}: "
                   f"{_CONSEQUENCE[kind]}")
    return out
