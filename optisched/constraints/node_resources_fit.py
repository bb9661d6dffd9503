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

import numpy as np

from ..framework import Code, CycleState, FilterResult, Status
from ..model.snapshot import Snapshot

__all__ = [
    "TOO_MANY_PODS",
    "NodeResourcesFit",
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


class NodeResourcesFit:
    """PreFilter + Filter of ``NodeResourcesFit``; ``fits`` is ``fitsRequest`` for any "used" matrix
    (preemption calls it with the lower-priority pods taken away)."""

    name = "NodeResourcesFit"

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
        self._alloc_cols = np.ascontiguousarray(state.allocatable.T)  # one row per resource: column reads

    def _checks(self, pod: int) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """(columns, requested amounts, reasons) of the checked resources the pod requests (> 0)."""
        hit = self._per_pod.get(pod)
        if hit is None:
            need = self.snapshot.state.pod_requests[pod, self.check_cols]
            keep = np.flatnonzero(need > 0)
            hit = (self.check_cols[keep], need[keep], [self.reasons[k] for k in keep])
            self._per_pod[pod] = hit
        return hit

    def pre_filter(self, cycle: CycleState) -> Status:
        self._checks(cycle.pod)
        return Status()

    def filter(self, cycle: CycleState, nodes: np.ndarray) -> FilterResult:
        return self.fits(cycle.pod, nodes, None)

    def fits(self, pod: int, nodes: np.ndarray, used: np.ndarray | None) -> FilterResult:
        """``fitsRequest`` of pod row ``pod`` on ``nodes``, given ``used[i]`` = what is requested on
        ``nodes[i]`` (the "pods" column counts the pods there); None: what the snapshot holds."""
        requested = self.snapshot.requested
        code = np.zeros(len(nodes), dtype=np.int8)
        reasons: list[tuple[np.ndarray, str]] = []
        taken = requested[nodes, self.pods_col] if used is None else used[:, self.pods_col]
        too_many = taken + 1 > self._alloc_cols[self.pods_col][nodes]
        if too_many.any():
            code[too_many] = Code.UNSCHEDULABLE
            reasons.append((too_many, TOO_MANY_PODS))
        cols, need, texts = self._checks(pod)
        for j, amount, text in zip(cols, need, texts):
            alloc = self._alloc_cols[j][nodes]
            short = amount > alloc - (requested[nodes, j] if used is None else used[:, j])
            if not short.any():
                continue
            reasons.append((short, text))
            code[short] = np.maximum(code[short], np.int8(Code.UNSCHEDULABLE))
            code[short & (amount > alloc)] = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        return FilterResult(code, reasons)
