"""The shared scorer of NodeResourcesFit and NodeResourcesBalancedAllocation.

Upstream: ``pkg/scheduler/framework/plugins/noderesources/resource_allocation.go``: for each configured
resource, (allocatable, requested-with-the-pod) per node; cpu and memory use the non-zero requests
(100m / 200 MiB defaults) unless ``useRequested``; a scalar resource the pod does not request, or one
the node does not have, is left out (allocatable 0).
"""
from __future__ import annotations

import numpy as np

from ...framework import CycleState
from ...model.snapshot import Snapshot

__all__ = ["allocation_matrix", "is_scalar_resource", "pod_request_list"]


def is_scalar_resource(name: str) -> bool:
    """``schedutil.IsScalarResourceName``: extended, hugepages, or otherwise non-native."""
    return name not in ("cpu", "memory", "ephemeral-storage", "pods")


def pod_request_list(snapshot: Snapshot, pod: int, resources: list[str], use_requested: bool) -> np.ndarray:
    """The pod's request per configured resource (``calculatePodResourceRequestList``)."""
    state = snapshot.state
    out = np.zeros(len(resources), dtype=np.int64)
    for i, r in enumerate(resources):
        if not use_requested and r in ("cpu", "memory"):
            out[i] = state.pod_nonzero[pod, 0 if r == "cpu" else 1]
        elif r in state.resources:
            out[i] = state.pod_requests[pod, state.resource_col(r)]
    return out


def allocation_matrix(snapshot: Snapshot, nodes: np.ndarray, resources: list[str], pod_req: np.ndarray,
                      use_requested: bool) -> tuple[np.ndarray, np.ndarray]:
    """(requested [n, k], allocatable [n, k]) per node and configured resource, 0/0 where skipped."""
    state = snapshot.state
    req = np.zeros((len(nodes), len(resources)), dtype=np.int64)
    alloc = np.zeros((len(nodes), len(resources)), dtype=np.int64)
    for i, r in enumerate(resources):
        if pod_req[i] == 0 and is_scalar_resource(r):
            continue
        if r not in state.resources:
            continue
        j = state.resource_col(r)
        a = state.allocatable[nodes, j]
        if not use_requested and r in ("cpu", "memory"):
            used = snapshot.nonzero[nodes, 0 if r == "cpu" else 1]
        else:
            used = snapshot.requested[nodes, j]
        present = a != 0
        alloc[:, i] = a
        req[:, i] = np.where(present, used + pod_req[i], 0)
    return req, alloc


def cycle_allocation(snapshot: Snapshot, cycle: CycleState, key: str, nodes: np.ndarray, resources: list[str],
                     use_requested: bool) -> tuple[np.ndarray, np.ndarray]:
    """(requested, allocatable) for the cycle's pod, reusing the request list its PreScore stored under ``key``."""
    pod_req = cycle.data.get(key)
    if pod_req is None:
        pod_req = pod_request_list(snapshot, cycle.pod, resources, use_requested)
    return allocation_matrix(snapshot, nodes, resources, pod_req, use_requested)
