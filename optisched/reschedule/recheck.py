"""Before each wave, ``--apply`` reads the pods and nodes again and stops when the cluster no longer
matches the plan's prediction.

The wave's nodes are the sources of its evictions and the nodes their replacements are predicted on. The
reference is the cluster the prediction starts from: for the first wave, the pods the plan was made from
(or, without them, the pods read when the run starts); for a later wave, the pods read when the previous
wave was checked (its replacements bound where predicted, nothing else new). The cluster *matches* when,
on the wave's nodes, leaving out finished pods (``Succeeded``/``Failed``, which kube-scheduler does not
count) and the pods this run evicted (which may still be terminating):

- every pod the reference has there is there still, on the same node (none gone, none moved), and every
  pod the wave evicts is on its eviction's source node;
- no other pod is there (a pod bound since onto one of these nodes changes what fits and how the nodes
  score: the replay that predicted the wave did not see it);
- every pod there whose requests the reference knows requests the same (an in-place resize changes what
  fits; the requests as :func:`optisched.model.requests.pod_requests` counts them for the plan's release
  and gates, e.g. 1.36's pod-level resize);
- the nodes are the same and each reads the same to the scheduler: its labels, its taints (but the
  ``node.kubernetes.io/unschedulable`` taint a cordon brings), its allocatable, and, for the nodes this
  run did not cordon, whether it is unschedulable (a node added, removed, tainted or cordoned since is a
  node the replays did not see).

Any difference stops the run before the wave's first eviction, with the first difference as the reason.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from pydantic import ValidationError

from ..model.objects import Node, Pod
from ..model.requests import pod_requests
from ..model.state import ClusterState
from .waves import Move

__all__ = ["Reference", "bound", "mismatch", "placement", "reference"]

FINISHED = ("Succeeded", "Failed")
CORDON_TAINT = "node.kubernetes.io/unschedulable"  # the node lifecycle controller's taint on a cordoned node

Print = tuple | None  # what the scheduler reads of an object (None: it cannot be read)


@dataclass
class Reference:
    """The cluster a wave's prediction starts from: pod -> node (bound, not finished), and where known
    each pod's requests and the nodes (None: a node that cannot be read; empty: not known, not compared)."""

    pods: dict[str, str]
    requests: dict[str, Print] = field(default_factory=dict)
    nodes: dict[str, Node | None] = field(default_factory=dict)


def requests_print(pod: Pod, requests: str = "1.35") -> Print:
    """``pod``'s requests as ``requests`` (a :func:`optisched.model.requests.requests_key`) counts them."""
    return tuple(sorted(pod_requests(pod, requests).items()))


def node_print(node: Node, cordoned: bool = False) -> tuple:
    """Labels, taints (but a cordon's), allocatable and, unless ``cordoned`` (this run's), unschedulable."""
    taints = tuple(sorted((t.key, t.value or "", str(t.effect)) for t in node.spec.taints if t.key != CORDON_TAINT))
    return (tuple(sorted(node.metadata.labels.items())), taints, tuple(sorted(node.allocatable.items())),
            None if cordoned else node.spec.unschedulable)


def _parse(model, raw: dict):  # type: ignore[no-untyped-def]
    try:
        return model.model_validate(raw)
    except ValidationError:
        return None


def reference(pods: dict[str, dict], nodes: Iterable[dict] | None = None, requests: str = "1.35") -> Reference:
    """The :class:`Reference` of pods and nodes read from the API server (raw JSON); every pod read has
    its requests (a pod that is not bound too), counted as ``requests`` names."""
    ref = Reference(bound(pods))
    for key, raw in pods.items():
        pod = _parse(Pod, raw)
        ref.requests[key] = requests_print(pod, requests) if pod is not None else None
    for raw in nodes or ():
        ref.nodes[(raw.get("metadata") or {}).get("name", "")] = _parse(Node, raw)
    return ref


def bound(pods: dict[str, dict]) -> dict[str, str]:
    """``namespace/name`` -> node for the pods read that are bound to a node and not finished."""
    out = {}
    for key, p in pods.items():
        node = (p.get("spec") or {}).get("nodeName")
        if node and (p.get("status") or {}).get("phase") not in FINISHED:
            out[key] = node
    return out


def placement(state: ClusterState) -> Reference:
    """The cluster a plan was made from (the first wave's reference; a compiled state holds no finished
    pod): its bound pods, their requests, its nodes."""
    names = state.node_names
    pods = {p.key: names[n] for p, n in zip(state.pods, state.pod_node.tolist(), strict=True) if n >= 0}
    return Reference(pods, {p.key: requests_print(p, state.release) for p in state.pods if p.key in pods},
                     {n.metadata.name: n for n in state.cluster.nodes})


def mismatch(wave: list[Move], live: dict[str, str], reference: Reference, now: Reference,
             evicted: set[str], cordoned: Iterable[str] = ()) -> str | None:
    """Why the cluster ``now`` differs from ``reference`` for ``wave`` (see the module docstring), or None
    when it matches. ``live``: a pod the plan moves again -> its replacement's name; ``evicted``: every
    pod this run evicted so far (under the names it evicted them by); ``cordoned``: the nodes this run
    cordoned (whether they are unschedulable is not compared)."""
    nodes = {m.source for m in wave} | {m.predicted for m in wave if m.predicted is not None}
    expected = {k: n for k, n in reference.pods.items() if n in nodes and k not in evicted}
    seen = {k: n for k, n in now.pods.items() if n in nodes and k not in evicted}
    for m in wave:
        name = live.get(m.key, m.key)
        on = now.pods.get(name)
        if on != m.source:
            where = f"is on {on} now" if on else ("is not bound to a node" if name in now.requests else "is gone")
            return f"{name}, to be evicted from {m.source}, {where}"
    for key, node in sorted(expected.items()):
        if seen.get(key) != node:
            where = f"is on {seen[key]} now" if key in seen else "is gone"
            return f"{key}, expected on {node}, {where}"
    strangers = sorted(set(seen) - set(expected))
    if strangers:
        return f"a pod the plan does not expect appeared on {seen[strangers[0]]}: {strangers[0]}"
    for key in sorted(expected):
        if key in reference.requests and now.requests.get(key) != reference.requests[key]:
            return f"{key} on {expected[key]} requests {_requests_text(now.requests.get(key))} now, not " \
                   f"{_requests_text(reference.requests[key])}"
    return _node_change(reference.nodes, now.nodes, set(cordoned)) if reference.nodes else None


def _requests_text(req: Print) -> str:
    return "what cannot be read" if req is None else (", ".join(f"{r}={v}" for r, v in req) or "nothing")


def _node_change(before: dict[str, Node | None], after: dict[str, Node | None], cordoned: set[str]) -> str | None:
    """Why the nodes ``after`` differ from ``before`` to the scheduler, or None."""
    for name in sorted(set(before) | set(after)):
        if name not in after:
            return f"node {name} is gone"
        if name not in before:
            return f"node {name} appeared"
        old, new = before[name], after[name]
        if new is None:
            return f"node {name} cannot be read"
        if old is None:
            continue
        a, b = node_print(old, name in cordoned), node_print(new, name in cordoned)
        for i, what in enumerate(("labels", "taints", "allocatable", "unschedulable")):
            if a[i] != b[i]:
                return f"node {name} changed its {what} since the plan"
    return None
