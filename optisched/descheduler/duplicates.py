"""RemoveDuplicates: spread the pods of one owner (same images) evenly over the nodes they could use.

kubernetes-sigs/descheduler v0.34.0 ``pkg/framework/plugins/removeduplicates/removeduplicates.go``: on each
node, a pod whose (namespace, owner kind, owner name, image) keys equal an earlier pod's on that node is a
duplicate. For each owner, ``upperAvg = ceil(pods of the owner / feasible nodes)`` over the nodes the
owner's first duplicate could use (node selector, affinity, NoSchedule taints, schedulable; at least two);
a node holding more than ``upperAvg`` keeps ``upperAvg`` and its later duplicates are evicted.
"""
from __future__ import annotations

import math

import numpy as np

from ..model.objects import Pod, TaintEffect
from ..model.state import ClusterState
from ..plugins.node_affinity import required_mask
from ..plugins.taint_toleration import untolerated
from .args import Args, pod_scope
from .context import Context

__all__ = ["RemoveDuplicates", "over_average", "owner_keys", "target_nodes", "upper_average"]


Owner = tuple[str, str, str, str]  # (namespace, owner kind, owner name, the pod's images)


def owner_keys(pod: Pod, exclude: frozenset[str] = frozenset()) -> tuple[list[Owner], tuple[str, ...]] | None:
    """A pod's owners and its duplicate keys (``ns/kind/name/image`` per owner and container, sorted); None
    for a pod without an owner or with an owner of an excluded kind (``excludeOwnerKinds``)."""
    owners = pod.metadata.owner_references
    if not owners or any(o.kind in exclude for o in owners):
        return None
    images = "#".join(sorted(c.image or "" for c in pod.spec.containers))
    ns = pod.metadata.namespace or "default"
    keys = sorted(f"{ns}/{o.kind}/{o.name}/{c.image}" for o in owners for c in pod.spec.containers)
    return [(ns, o.kind, o.name, images) for o in owners], tuple(keys)


def target_nodes(state: ClusterState, p: int) -> np.ndarray:
    """bool [N]: the nodes pod ``p`` could use (``getTargetNodes``: node selector and required affinity,
    NoSchedule/NoExecute taints tolerated, schedulable)."""
    ok = required_mask(state, state.pods[p]) & ~state.unschedulable
    taints, carried = state.distinct_taints  # [T], bool [N, T]: each node's taints, as TaintToleration reads them
    if not taints:
        return ok
    bad = untolerated(state.pods[p].spec.tolerations, taints, {TaintEffect.NO_SCHEDULE, TaintEffect.NO_EXECUTE})
    return ok & ~carried[:, bad].any(axis=1)


def upper_average(state: ClusterState, p: int, pods_of_owner: int) -> int | None:
    """``upperAvg``: the owner's pods over the nodes its pod ``p`` could use, rounded up; None when fewer
    than two nodes could take it (nothing is then a duplicate to move)."""
    targets = int(target_nodes(state, p).sum())
    return math.ceil(pods_of_owner / targets) if targets >= 2 else None


def over_average(state: ClusterState, node_of: np.ndarray, counted: np.ndarray,
                 exclude: frozenset[str] = frozenset()) -> list[int]:
    """The pods RemoveDuplicates evicts from the placement ``node_of``, in its order: on each node, a
    ``counted`` pod whose keys equal an earlier pod's there is a duplicate; per owner, a node holding more
    than ``upperAvg`` keeps that many and the later duplicates go."""
    dups: dict[Owner, dict[int, list[int]]] = {}
    count: dict[Owner, int] = {}
    seen: set[tuple[str, ...]] = set()
    last = -1
    # the counted pods grouped by node, in node order and pod order within a node (one pass, no scan per node)
    rows = np.nonzero(counted & (node_of >= 0))[0]
    order = rows[np.argsort(node_of[rows], kind="stable")]
    for p, n in zip(order.tolist(), node_of[order].tolist()):
        if n != last:
            seen, last = set(), n
        if (k := owner_keys(state.pods[p], exclude)) is None:
            continue
        owners, keys = k
        for o in owners:
            count[o] = count.get(o, 0) + 1
        if keys in seen:
            for o in owners:
                dups.setdefault(o, {}).setdefault(n, []).append(p)
        seen.add(keys)
    out: list[int] = []
    for owner, per_node in dups.items():
        upper = upper_average(state, next(iter(per_node.values()))[0], count[owner])
        if upper is None:
            continue
        for pods in per_node.values():
            if len(pods) + 1 > upper:
                out += pods[upper - 1:]
    return out


class RemoveDuplicates:
    name = "RemoveDuplicates"
    point = "balance"

    def __init__(self, args: Args) -> None:
        args.only("excludeOwnerKinds", "namespaces")
        self.scope = pod_scope(args, with_selector=False)
        self.exclude = frozenset(args.get("excludeOwnerKinds", list, []))

    def run(self, ctx: Context) -> None:
        s = ctx.state
        counted = np.array([ctx.evictor.filter(p) and self.scope.admits(s.pods[p]) for p in range(len(s.pods))],
                           dtype=bool)
        for p in over_average(s, s.pod_node, counted, self.exclude):
            if ctx.evictor.pre_eviction_filter(p):
                ctx.evictor.evict(p, self.name)
