"""Before each wave, ``--apply`` reads the pods again and stops when the cluster no longer matches the
plan's prediction on the wave's nodes.

The wave's nodes are the sources of its evictions and the nodes their replacements are predicted on. The
reference is the cluster the prediction starts from: for the first wave, the pods the plan was made from
(or, without them, the pods read when the run starts); for a later wave, the pods read when the previous
wave was checked (its replacements bound where predicted, nothing else new). The cluster *matches* when,
on the wave's nodes, leaving out finished pods (``Succeeded``/``Failed``, which kube-scheduler does not
count) and the pods this run evicted (which may still be terminating):

- every pod the reference has there is there still, on the same node (none gone, none moved), and every
  pod the wave evicts is on its eviction's source node;
- no other pod is there (a pod bound since onto one of these nodes changes what fits and how the nodes
  score: the replay that predicted the wave did not see it).

Any difference stops the run before the wave's first eviction, with the first difference as the reason.
"""
from __future__ import annotations

from ..model.state import ClusterState
from .waves import Move

__all__ = ["bound", "mismatch", "placement"]

FINISHED = ("Succeeded", "Failed")


def bound(pods: dict[str, dict]) -> dict[str, str]:
    """``namespace/name`` -> node for the pods read that are bound to a node and not finished."""
    out = {}
    for key, p in pods.items():
        node = (p.get("spec") or {}).get("nodeName")
        if node and (p.get("status") or {}).get("phase") not in FINISHED:
            out[key] = node
    return out


def placement(state: ClusterState) -> dict[str, str]:
    """``namespace/name`` -> node for the bound pods of the cluster a plan was made from (the first wave's
    reference; a compiled state holds no finished pod)."""
    names = state.node_names
    return {p.key: names[n] for p, n in zip(state.pods, state.pod_node.tolist(), strict=True) if n >= 0}


def mismatch(wave: list[Move], live: dict[str, str], reference: dict[str, str], now: dict[str, dict],
             evicted: set[str]) -> str | None:
    """Why the pods ``now`` differ from ``reference`` (pod -> node, :func:`bound`) on ``wave``'s nodes, or
    None when they match. ``live``: a pod the plan moves again -> its replacement's name; ``evicted``: every
    pod this run evicted so far (under the names it evicted them by)."""
    nodes = {m.source for m in wave} | {m.predicted for m in wave if m.predicted is not None}
    expected = {k: n for k, n in reference.items() if n in nodes and k not in evicted}
    seen = {k: n for k, n in bound(now).items() if n in nodes and k not in evicted}
    for m in wave:
        name = live.get(m.key, m.key)
        on = (now.get(name) or {}).get("spec", {}).get("nodeName")
        if on != m.source:
            where = f"is on {on} now" if on else ("is gone" if name not in now else "is not bound to a node")
            return f"{name}, to be evicted from {m.source}, {where}"
    for key, node in sorted(expected.items()):
        if seen.get(key) != node:
            where = f"is on {seen[key]} now" if key in seen else "is gone"
            return f"{key}, expected on {node}, {where}"
    strangers = sorted(set(seen) - set(expected))
    if strangers:
        return f"a pod the plan does not expect appeared on {seen[strangers[0]]}: {strangers[0]}"
    return None
