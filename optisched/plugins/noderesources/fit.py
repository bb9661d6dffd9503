"""NodeResourcesFit, PreFilter and Filter: the node must have room for the pod's requests.

Upstream (v1.35): ``pkg/scheduler/framework/plugins/noderesources/fit.go`` (``PreFilter``,
``computePodResourceRequest``, ``Filter``, ``fitsRequest``), the resource-name helpers of
``pkg/apis/core/v1/helper/helpers.go`` and ``pkg/scheduler/util/utils.go`` (``IsScalarResourceName``).

* PreFilter computes ``resource.PodRequests`` (the compiled ``ClusterState.pod_requests``). It rejects
  nothing in v1.35: its only rejection needs the SidecarContainers gate off.
* Filter, in ``fitsRequest``'s order: ``Too many pods`` when the pods already on the node plus this one
  exceed the allocatable pod count; then ``Insufficient cpu``, ``memory``, ``ephemeral-storage`` and
  ``Insufficient <name>`` for each scalar resource (extended, hugepages-*, ``*kubernetes.io/*``,
  attachable-volumes-*), each only when the pod requests a non-zero amount that exceeds
  allocatable − requested. A node without the resource at all has allocatable 0. Extended resources
  listed in ``ignoredResources``, or whose name prefix (before ``/``) is in ``ignoredResourceGroups``,
  are not checked; hugepages and native resources cannot be ignored. A node may get several reasons.
* Code: Unschedulable, or UnschedulableAndUnresolvable when any insufficient resource is requested
  beyond the node's whole allocatable (preemption cannot help). ``Too many pods`` is never unresolvable.
* Upstream walks the scalar resources in Go map order (random); they are checked here in name order.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from ortools.sat.python import cp_model

from ...framework import ClusterEvent, Code, CycleState, Fidelity, FilterResult, Plugin, Status
from ...model.snapshot import Snapshot
from .. import names

if TYPE_CHECKING:
    from ...model.pod_index import PodIndex
    from ...optimal.classes import PodClass
    from ...optimal.model import BatchModel

__all__ = [
    "TOO_MANY_PODS",
    "NodeResourcesFit",
    "ResourceWorld",
    "is_attachable_volume",
    "is_extended_resource",
    "is_hugepages",
    "is_prefixed_native_resource",
    "is_scalar_resource_name",
]

TOO_MANY_PODS = "Too many pods"
_CHECKED_NATIVE = ("cpu", "memory", "ephemeral-storage")


def is_prefixed_native_resource(name: str) -> bool:
    """``v1helper.IsPrefixedNativeResource``: the name contains ``kubernetes.io/``."""
    return "kubernetes.io/" in name


def is_hugepages(name: str) -> bool:
    """``v1helper.IsHugePageResourceName``."""
    return name.startswith("hugepages-")


def is_attachable_volume(name: str) -> bool:
    """``v1helper.IsAttachableVolumeResourceName``."""
    return name.startswith("attachable-volumes-")


def is_extended_resource(name: str) -> bool:
    """``v1helper.IsExtendedResourceName``: not native (has a ``/`` and no ``kubernetes.io/``) and not
    ``requests.``-prefixed. (Upstream also requires ``requests.<name>`` to be a qualified name, which API
    validation already guarantees for names that reach the scheduler.)"""
    if "/" not in name or is_prefixed_native_resource(name):
        return False
    return not name.startswith("requests.")


def is_scalar_resource_name(name: str) -> bool:
    """``schedutil.IsScalarResourceName``: the names ``framework.Resource`` keeps in ``ScalarResources``."""
    return (is_extended_resource(name) or is_hugepages(name) or is_prefixed_native_resource(name)
            or is_attachable_volume(name))


class NodeResourcesFit(Plugin):
    """PreFilter + Filter of ``NodeResourcesFit``; ``fits`` is ``fitsRequest`` for any "used" matrix
    (preemption calls it with the lower-priority pods taken away)."""

    name = names.NODE_RESOURCES_FIT
    points = frozenset({"preFilter", "filter"})
    events = frozenset({ClusterEvent.ASSIGNED_POD_DELETE})

    def __init__(self, snapshot: Snapshot, profile: object) -> None:
        self.snapshot = snapshot
        state = snapshot.state
        fit = getattr(profile, "fit", None)
        ignored = set(getattr(fit, "ignored_resources", ()))
        groups = set(getattr(fit, "ignored_resource_groups", ()))
        self.pods_col = state.resource_col("pods")
        # Columns checked, in fitsRequest's order: cpu, memory, ephemeral-storage, then the scalar
        # resources (ClusterState sorts the extra columns by name).
        cols: list[int] = [state.resource_col(r) for r in _CHECKED_NATIVE]
        for j, r in enumerate(state.resources):
            if r in _CHECKED_NATIVE or r == "pods" or not is_scalar_resource_name(r):
                continue
            if is_extended_resource(r) and (r in ignored or r.split("/")[0] in groups):
                continue
            cols.append(j)
        self.check_cols = np.array(cols, dtype=np.int64)
        self.reasons = [f"Insufficient {state.resources[j]}" for j in cols]
        self._per_pod: dict[int, tuple[np.ndarray, np.ndarray, list[str]]] = {}
        self._per_request: dict[bytes, tuple[np.ndarray, np.ndarray, list[str]]] = {}
        self._rows: dict[int, tuple] = {}  # id(checks) -> the snapshot path's rows, thresholds, texts
        self._alloc_cols = np.ascontiguousarray(state.allocatable.T)  # one row per resource: column reads
        # every pod's requests summed per resource stay below 2**52: float64 sums of them are exact
        self.sums_exact = bool((np.abs(state.pod_requests.astype(np.float64)).sum(axis=0) < 2.0 ** 52).all())
        # allocatable − requested per resource and node, recomputed after the snapshot changed
        self._free = np.empty_like(self._alloc_cols)
        self._stale = True
        self._touched: list[int] = []  # nodes changed since the last refresh (when not all are stale)
        snapshot.subscribe(self)

    def dry_run(self, cycle: CycleState, nodes: np.ndarray, index: PodIndex) -> ResourceWorld:
        """What is requested on each node."""
        return ResourceWorld(self, cycle, nodes)

    def on_add(self, pod: int, node: int) -> None:
        self._touched.append(node)

    def on_remove(self, pod: int, node: int) -> None:
        self._touched.append(node)

    def _checks(self, pod: int) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """(columns, requested amounts, reasons) of the checked resources the pod requests (> 0)."""
        hit = self._per_pod.get(pod)
        if hit is None:
            need = self.snapshot.state.pod_requests[pod, self.check_cols]
            key = need.tobytes()  # pods with the same requests share one entry
            hit = self._per_request.get(key)
            if hit is None:
                keep = np.flatnonzero(need > 0)
                hit = self._per_request[key] = (self.check_cols[keep], need[keep], [self.reasons[k] for k in keep])
            self._per_pod[pod] = hit
        return hit

    def pre_filter(self, cycle: CycleState) -> Status:
        self._checks(cycle.pod)
        return Status()

    def filter(self, cycle: CycleState, nodes: np.ndarray) -> FilterResult:
        return self.fits(cycle.pod, nodes, None)

    def _free_now(self) -> np.ndarray:
        touched = self._touched
        if self._stale or len(touched) > 64:
            np.subtract(self._alloc_cols, self.snapshot.requested.T, out=self._free)
            self._stale = False
        elif touched:  # a few nodes changed (a cycle binds one): refresh only their columns
            nodes = np.array(touched, dtype=np.int64)
            self._free[:, nodes] = self._alloc_cols[:, nodes] - self.snapshot.requested[nodes].T
        touched.clear()
        return self._free

    def _rows_of(self, checks: tuple[np.ndarray, np.ndarray, list[str]]) -> tuple:
        """The "pods" column then the checked ones, each one's threshold (room below it fails), texts,
        and per checked column the nodes whose whole allocatable is short (None when there are none:
        nothing can be unresolvable)."""
        hit = self._rows.get(id(checks))
        if hit is None or hit[0] is not checks:
            cols, need, texts = checks
            rows = np.concatenate(([self.pods_col], cols)).astype(np.int64)
            thr = np.concatenate(([1], need)).astype(self._alloc_cols.dtype)[:, None]
            over = self._alloc_cols[cols] < need[:, None]
            hit = self._rows[id(checks)] = (checks, rows, thr, [TOO_MANY_PODS, *texts],
                                            over if over.any() else None)
        return hit

    def fits(self, pod: int, nodes: np.ndarray, used: np.ndarray | None) -> FilterResult:
        """``fitsRequest`` of pod row ``pod`` on ``nodes``, given ``used[i]`` = what is requested on
        ``nodes[i]`` (the "pods" column counts the pods there); None: what the snapshot holds.
        Every checked row is gathered and compared at once: "pods" fails below one free slot (taken + 1
        > allocatable), a checked resource below the requested amount."""
        _, rows, thr, texts, over = self._rows_of(self._checks(pod))
        if used is None:
            room = self._free_now()[rows].take(nodes, axis=1)
        else:
            room = self._alloc_cols[rows].take(nodes, axis=1) - used.T[rows]
        short = room < thr
        hit = np.logical_or.reduce(short, axis=1).nonzero()[0]
        if len(hit) == 0:
            return FilterResult(np.zeros(len(nodes), dtype=np.int8))
        reasons = [(short[i], texts[i]) for i in hit.tolist()]
        code = np.logical_or.reduce(short, axis=0).view(np.int8) * np.int8(Code.UNSCHEDULABLE)
        if over is not None:  # requested beyond the whole allocatable (always short there too)
            beyond = np.logical_or.reduce(short[1:] & over.take(nodes, axis=1), axis=0)
            code[beyond] = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        return FilterResult(code, reasons)

    def fits_rows(self, pod: int, allocatable: np.ndarray, used: np.ndarray) -> np.ndarray:
        """Whether ``fits`` passes, without codes or reasons, for rows of ``allocatable`` and ``used``
        (one node each): a free pod slot and ``need ≤ allocatable − used`` on every checked column."""
        room = allocatable - used
        ok = room[:, self.pods_col] >= 1
        cols, need, _ = self._checks(pod)
        if len(cols):
            ok &= (room[:, cols] >= need).all(axis=1)
        return ok

    # ------------------------------------------------------------------ CP-SAT side
    filter_fidelity = Fidelity.EXACT

    def fit_count(self, pod: int, nodes: np.ndarray, used: np.ndarray) -> np.ndarray:
        """How many copies of the pod fit on each of ``nodes`` given ``used`` (every checked resource
        and the pod count): the most a batch can put there."""
        alloc = self.snapshot.state.allocatable[nodes]
        most = alloc[:, self.pods_col] - used[:, self.pods_col]
        cols, need, _ = self._checks(pod)
        if len(cols):
            most = np.minimum(most, ((alloc[:, cols] - used[:, cols]) // need).min(axis=1))
        return np.maximum(most, 0)

    def shortfall(self, pod: int, nodes: np.ndarray, used: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """What must leave ``nodes`` for one copy of the pod to fit given ``used``: (checked columns,
        the pod count first; amount per node and column, ≤ 0 where nothing must). Preemption reads it
        as a lower bound on the victims a node needs."""
        cols, need, _ = self._checks(pod)
        cols = np.concatenate([[self.pods_col], cols]).astype(np.int64)
        need = np.concatenate([[1], need])
        return cols, used[:, cols] + need - self.snapshot.state.allocatable[nodes][:, cols]

    def restrict(self, model: BatchModel, classes: list[PodClass]) -> None:
        """A node where even one pod does not fit next to the fixed pods is out (the greedy verdict),
        and no more pods than fit there alone may go to a node."""
        model.restrict_by_filter(self, classes)
        nodes = np.arange(self.snapshot.state.num_nodes)
        fits: dict[bytes, np.ndarray] = {}  # classes with the same checked requests fit the same counts
        for c in model.each(classes, model.LIGHT_EVERY):
            key = self.snapshot.state.pod_requests[c.rep, self.check_cols].tobytes()
            most = fits.get(key)
            if most is None:
                most = fits[key] = self.fit_count(c.rep, nodes, self.snapshot.requested)
            model.limit(c, most)

    def encode_filter(self, model: BatchModel, classes: list[PodClass]) -> None:
        """Per node and checked resource (and the pod count): Σ request · x ≤ allocatable − fixed pods'
        requests, as ``fitsRequest`` checks for each placed pod that requests the resource. Running pods
        that stay count too; on a node the input already overcommits, the bound only holds when the
        batch places a pod requesting the resource there (kept pods are bound, never re-checked)."""
        state = self.snapshot.state
        mine = {c.index for c in classes}
        cols = [self.pods_col, *self.check_cols.tolist()]
        arrivals = model.node_arrivals()
        for n, terms in model.each(enumerate(model.node_terms()), model.CHECK_EVERY):
            terms = [t for t in terms if t[0].index in mine]
            if not terms or not arrivals[n]:
                continue
            free = state.allocatable[n] - self.snapshot.requested[n]
            for j in cols:
                coeffs = [(v, int(state.pod_requests[c.rep, j]), u) for c, v, u in terms]
                coeffs = [t for t in coeffs if t[1] > 0]
                if not coeffs or sum(a * u for _, a, u in coeffs) <= free[j]:
                    continue  # cannot bind
                kept = sum(len(c.running.get(n, ())) * int(state.pod_requests[c.rep, j]) for c in
                           {t[0].index: t[0] for t in terms}.values())
                ct = model.cp.add(cp_model.LinearExpr.weighted_sum([v for v, _, _ in coeffs],
                                                                   [a for _, a, _ in coeffs]) <= int(free[j]))
                if kept > free[j]:
                    ct.only_enforce_if(model.any_arrival(n, j))


_MANY = 512  # pods moved at once from which ResourceWorld sums them with bincount


class ResourceWorld:
    """NodeResourcesFit (``fitsRequest``) against each node's own requested amounts."""

    local = True  # it reads only its own node

    def __init__(self, rule, cycle: CycleState, nodes: np.ndarray) -> None:  # type: ignore[no-untyped-def]
        self.rule, self.pod, self.nodes = rule, cycle.pod, nodes
        self.used = rule.snapshot.requested[nodes]
        self.requests = rule.snapshot.state.pod_requests
        self.allocatable = rule.snapshot.state.allocatable[nodes]

    def move(self, pos: np.ndarray, pods: np.ndarray, sign: int) -> None:
        if len(pos) < _MANY or not self.rule.sums_exact:
            np.add.at(self.used, pos, sign * self.requests[pods])
            return
        # many pods (taking every lower-priority pod off): one bincount per requested column, about
        # four times faster than np.add.at; its float64 sums are exact below 2**53
        req = self.requests[pods]
        for j in np.flatnonzero(req.any(axis=0)).tolist():
            self.used[:, j] += sign * np.bincount(pos, weights=req[:, j], minlength=len(self.used)).astype(np.int64)

    def check(self, qs: np.ndarray) -> FilterResult:
        return self.rule.fits(self.pod, self.nodes[qs], self.used[qs])

    def put_back(self, pos: np.ndarray, pods: np.ndarray) -> np.ndarray:
        """``move(pos, pods, 1)`` for the pods that then pass :meth:`check` (positions do not repeat);
        which did. The reprieve step when this is the only dynamic filter."""
        used = self.used[pos] + self.requests[pods]
        ok = self.rule.fits_rows(self.pod, self.allocatable[pos], used)
        self.used[pos[ok]] = used[ok]
        return ok
