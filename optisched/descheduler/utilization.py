"""LowNodeUtilization and HighNodeUtilization, from requests as the descheduler computes them.

kubernetes-sigs/descheduler v0.34.0 ``pkg/framework/plugins/nodeutilization/`` (``lownodeutilization.go``,
``highnodeutilization.go``, ``nodeutilization.go``): usage is the sum of the requests of the pods bound to a
node, as a percentage of its allocatable; a node is underutilized when no resource is above ``thresholds``
(unschedulable nodes never are), overutilized when any resource is above ``targetThresholds``. With
``useDeviationThresholds`` both are offsets from the mean usage over all nodes, clamped to [0, 100]. Nothing
runs when the underutilized nodes are at most ``numberOfNodes``, are all nodes, or there is no source.
Pods leave a source node, lowest priority first, while it stays above its target and every resource
still has room left under the destinations' targets (``continueEvictionCond``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.objects import TaintEffect
from ..model.state import ClusterState
from ..plugins.taint_toleration import untolerated
from .args import Args
from .context import Context
from .evictor import sort_low_to_high

__all__ = ["HighNodeUtilization", "LowNodeUtilization", "above_any", "below_all", "percent", "usage"]

BASIC = ("cpu", "memory", "pods")
ALL_EFFECTS = set(TaintEffect)


@dataclass(frozen=True)
class UtilizationArgs:
    thresholds: dict[str, float]
    target: dict[str, float]
    number_of_nodes: int
    deviation: bool


def _read(args: Args, low: bool) -> UtilizationArgs:
    """LowNodeUtilizationArgs / HighNodeUtilizationArgs, validated as ``validation.go`` does."""
    args.only("thresholds", "targetThresholds", "numberOfNodes", "useDeviationThresholds", "evictableNamespaces",
              "metricsUtilization", "evictionLimits") if low else \
        args.only("thresholds", "numberOfNodes", "evictableNamespaces")
    th, target = args.percentages("thresholds"), args.percentages("targetThresholds") if low else {}
    if not th:
        raise args.error("thresholds", "no resource thresholds given")
    if low:
        if set(th) != set(target):
            raise args.error("targetThresholds", "must name the same resources as thresholds")
        for r in th:
            if th[r] > target[r]:
                raise args.error(f"thresholds.{r}", f"{th[r]:g} is above targetThresholds.{r} {target[r]:g}")
    else:  # setDefaultForThresholds: unset basic resources never keep a node from being underutilized
        for r in BASIC:
            th.setdefault(r, 100.0)
        target = {r: 100.0 for r in th}
    return UtilizationArgs(th, target, args.count("numberOfNodes") or 0,
                           bool(args.get("useDeviationThresholds", bool, False)))


def usage(s: ClusterState, names: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(requested, allocatable) int64 [N, R] for ``names`` (a node without a resource has 0 of it): the
    requests of the pods bound to each node (``pods`` counts them)."""
    bound = s.pod_node >= 0
    used = np.zeros((s.num_nodes, len(names)), dtype=np.int64)
    cap = np.zeros_like(used)
    for j, r in enumerate(names):
        if r in s.resources:
            c = s.resource_col(r)
            used[:, j] = np.bincount(s.pod_node[bound], weights=s.pod_requests[bound, c],
                                     minlength=s.num_nodes).astype(np.int64)
            cap[:, j] = s.allocatable[:, c]
    return used, cap


def percent(used: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """``ResourceUsageToResourceThreshold``: used / capacity * 100, 0 where the capacity is 0."""
    return np.where(cap > 0, used * 100.0 / np.maximum(cap, 1), 0.0)


def _bounds(a: UtilizationArgs, pct: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Low and high thresholds per node and threshold resource (percent); deviations from the mean
    (``assessNodesUsagesAndRelativeThresholds``) clamped to [0, 100]."""
    low, high = np.array(list(a.thresholds.values())), np.array([a.target[r] for r in a.thresholds])
    if a.deviation:
        mean = pct.mean(axis=0)
        low, high = np.clip(mean - low, 0, 100), np.clip(mean + high, 0, 100)
    return np.broadcast_to(low, pct.shape), np.broadcast_to(high, pct.shape)


def below_all(pct: np.ndarray, low: np.ndarray) -> np.ndarray:
    """Per node: every resource at or below its threshold (``isNodeWithLowUtilization``: a value above the
    threshold, ``Cmp == 1``, disqualifies). ``pct`` [N, R] percent, ``low`` broadcastable to it."""
    return np.asarray((pct <= low).all(axis=1))


def above_any(pct: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Per node: some resource strictly above its target (``isNodeAboveTargetUtilization``)."""
    return np.asarray((pct > high).any(axis=1))


def _capped(a: UtilizationArgs, names: list[str], cap: np.ndarray, high: np.ndarray) -> np.ndarray:
    """``capNodeCapacitiesToThreshold``: int64(threshold * 0.01 * capacity) for threshold resources, the
    full capacity for the others."""
    out = cap.copy()
    for k, r in enumerate(a.thresholds):
        j = names.index(r)
        out[:, j] = (high[:, k] * 0.01 * cap[:, j]).astype(np.int64)
    return out


@dataclass
class _Pool:
    """The state ``evictPodsFromSourceNodes`` keeps while it evicts."""

    names: list[str]
    used: np.ndarray  # [N, R], lowered as pods leave
    available: np.ndarray  # [N, R] capped capacity
    room: np.ndarray  # [R] left on the destinations
    taints_ok: np.ndarray  # [P]
    check_node: bool  # LowNodeUtilization: stop once the source is no longer above its target

    def go_on(self, node: int) -> bool:
        above = bool((self.used[node] > self.available[node]).any())
        return (above or not self.check_node) and bool((self.room > 0).all())


def _evict_from(ctx: Context, node: int, name: str, pool: _Pool, excluded: set[str]) -> bool:
    """``evictPods`` on one source node. Returns False once the total limit stops the strategy."""
    s, ev = ctx.state, ctx.evictor
    if not pool.go_on(node):
        return True
    cols = [s.resource_col(r) if r in s.resources else -1 for r in pool.names]
    rows = [p for p in np.nonzero(s.pod_node == node)[0].tolist() if ev.filter(p)]
    for p in sort_low_to_high(s, rows):
        if not pool.taints_ok[p] or s.pods[p].metadata.namespace in excluded or not ev.pre_eviction_filter(p):
            continue
        if not ev.evict(p, name):
            if ev.limit_reached():
                return False
            if ev.limit_reached(node=node):
                return True
            continue
        req = np.array([1 if r == "pods" else (s.pod_requests[p, c] if c >= 0 else 0)
                        for r, c in zip(pool.names, cols)], dtype=np.int64)
        pool.used[node] -= req
        pool.room -= req
        if not pool.go_on(node):
            break
    return True


def _tolerates_some(ctx: Context, dest: np.ndarray) -> np.ndarray:
    """bool [P]: the pod tolerates every taint of at least one destination (``utils.PodToleratesTaints``)."""
    s = ctx.state
    nodes = np.nonzero(dest)[0].tolist()
    return np.array([any(not untolerated(pod.spec.tolerations, list(s.taints[n]), ALL_EFFECTS).any() for n in nodes)
                     for pod in s.pods], dtype=bool)


def _excluded(args: Args) -> set[str]:
    ns = args.get("evictableNamespaces", dict, {})
    if ns.get("include"):
        raise args.error("evictableNamespaces.include", "only exclude is supported by this strategy")
    return set(ns.get("exclude") or [])


def _run(ctx: Context, name: str, a: UtilizationArgs, excluded: set[str], low_util: bool) -> None:
    """Classify the nodes, then evict from the sources (shared by both strategies)."""
    s = ctx.state
    names = list(dict.fromkeys([*a.thresholds, *BASIC]))
    used, cap = usage(s, names)
    cols = [names.index(r) for r in a.thresholds]
    pct = percent(used[:, cols], cap[:, cols])
    lo_b, hi_b = _bounds(a, pct)
    under = below_all(pct, lo_b)
    if low_util:
        under &= ~s.unschedulable
        sources, dest = above_any(pct, hi_b), under
    else:
        sources, dest = under, ~under & ~s.unschedulable
    n_src = int((dest if low_util else sources).sum())
    if n_src == 0 or n_src <= a.number_of_nodes or n_src == s.num_nodes or not (sources if low_util else dest).any():
        return
    available = _capped(a, names, cap, hi_b)
    room = (available[dest] - used[dest]).sum(axis=0)
    pool = _Pool(names, used, available, room, _tolerates_some(ctx, dest), low_util)
    total = used.sum(axis=1)
    src = np.nonzero(sources)[0]
    order = src[np.argsort(-total[src] if low_util else total[src], kind="stable")]
    for n in order.tolist():
        if not _evict_from(ctx, n, name, pool, excluded):
            return


class LowNodeUtilization:
    """Balance plugin: move pods off overutilized nodes while underutilized nodes have room."""

    name = "LowNodeUtilization"
    point = "balance"

    def __init__(self, args: Args) -> None:
        self.args, self.excluded = _read(args, low=True), _excluded(args)

    def run(self, ctx: Context) -> None:
        _run(ctx, self.name, self.args, self.excluded, low_util=True)


class HighNodeUtilization:
    """Balance plugin: empty underutilized nodes onto the others, for a cluster autoscaler to remove."""

    name = "HighNodeUtilization"
    point = "balance"

    def __init__(self, args: Args) -> None:
        self.args, self.excluded = _read(args, low=False), _excluded(args)

    def run(self, ctx: Context) -> None:
        _run(ctx, self.name, self.args, self.excluded, low_util=False)
