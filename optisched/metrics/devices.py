"""DRA devices of a placement: per node the devices its ResourceSlices publish, how many some claim holds,
how many are free, and how many of the free ones no pending pod with claims can use (stranded).

A placement's devices are the ids (``driver/pool/device``) every claim's allocation holds after it: for a
greedy run the run's own ClaimBook (``claim_book(result.snapshot).allocated_devices``), for any other
answer what :func:`optisched.optimal.check.settled_devices` allocates pod by pod on the final cluster.
Devices count on a node when a slice of the node's own (``spec.nodeName``) publishes them, in the newest
generation of its pool; slices for a node selector or all nodes are left out of the per-node counts.

**Stranded.** Like :func:`~optisched.metrics.fragmentation.fragmented_free` for a resource: the
*device workload* is the input's pending pods, grouped by request vector, static node mask and the claims
they still need devices for (each group weighted by its share of the pending pods). A group *can use* a
node when it claims new devices, may use the node at all (schedulable, taints, nodeSelector and required
affinity), fits in the node's free cpu, memory and other resources, and the structured allocator
(DynamicResources' own, v1.35.4) allocates its claims there against the placement's devices in use. A
node's free devices are *stranded* when the placement leaves some pending pod with such claims unplaced
and none of those pods' groups can use the node; a placement that leaves no such pod strands nothing
(free devices nobody asks for are idle). The FGD expectation (:func:`device_fragmentation`) is measured
against the whole device workload, the same for every run: a node's free devices times the weight of the
pending pods that cannot use them (those without claims included), as
:func:`~optisched.metrics.fragmentation.gpu_fragmentation` counts idle GPUs. A node's free devices count as
one pool: a group that can use some of them (a NIC) makes all of them usable (its GPUs too).
"""
from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..model.dra import device_id
from ..model.state import ClusterState
from .fragmentation import GpuFragmentation, Workload, _static_mask, fits
from .resources import free_capacity

if TYPE_CHECKING:
    from ..model.dra import ResourceClaim

__all__ = ["DeviceUsage", "DeviceWorkload", "device_fragmentation", "device_usage", "device_workload",
           "published_devices"]


def published_devices(state: ClusterState) -> dict[str, int]:
    """Device id -> node row, for the devices of node-local slices in the newest generation of their pool."""
    newest: dict[str, int] = {}
    for sl in state.cluster.resource_slices:
        pool = f"{sl.spec.driver}/{sl.spec.pool.name}"
        newest[pool] = max(newest.get(pool, sl.spec.pool.generation), sl.spec.pool.generation)
    out: dict[str, int] = {}
    for sl in state.cluster.resource_slices:
        row = state.node_index.get(sl.spec.node_name) if sl.spec.node_name else None
        if row is None or sl.spec.pool.generation != newest[f"{sl.spec.driver}/{sl.spec.pool.name}"]:
            continue
        for d in sl.spec.devices:
            out[device_id(sl.spec.driver, sl.spec.pool.name, d.name)] = row
    return out


@dataclass(frozen=True)
class DeviceWorkload:
    """The pending pods grouped as the device metrics see them; ``claims[g]`` empty: needs no new device."""

    shapes: Workload  # request vectors, weights (over all pending pods) and static masks, per group
    claims: list[list[ResourceClaim]]
    group_of: dict[int, int]  # pending pod row -> its group


def device_workload(state: ClusterState) -> DeviceWorkload:
    """The input's pending pods by (requests, static mask, claims to allocate); a pod whose claims are not
    ready (PreEnqueue holds it) or already allocated needs no new device."""
    from ..model.snapshot import Snapshot
    from ..plugins.dynamicresources.claims import ClaimNotReady, claim_book

    book = claim_book(Snapshot(state))
    groups: dict[tuple[bytes, bytes, str], list] = {}
    masks: dict[str, np.ndarray] = {}
    group_of: dict[int, int] = {}
    for p in state.pending:
        try:
            claims = [c.obj for _, c in book.claims_of(p) if c is not None and c.allocation is None]
        except ClaimNotReady:
            claims = []
        spec = state.pods[p].spec
        affinity = spec.affinity.node_affinity if spec.affinity else None
        mkey = repr((spec.tolerations, spec.node_selector, affinity))
        mask = masks.get(mkey)
        if mask is None:
            mask = masks[mkey] = _static_mask(state, state.pods[p])
        ckey = "\0".join(c.spec.model_dump_json() for c in claims)
        entry = groups.setdefault((state.pod_requests[p].tobytes(), mask.tobytes(), ckey),
                                  [state.pod_requests[p], mask, claims, 0, len(groups)])
        entry[3] += 1
        group_of[p] = entry[4]
    r, n = len(state.resources), state.num_nodes
    if not groups:
        empty = Workload(np.zeros((0, r), np.int64), np.zeros(0), np.zeros((0, n), bool))
        return DeviceWorkload(empty, [], {})
    counts = np.array([g[3] for g in groups.values()], dtype=np.float64)
    shapes = Workload(np.array([g[0] for g in groups.values()], dtype=np.int64), counts / counts.sum(),
                      np.array([g[1] for g in groups.values()], dtype=bool))
    return DeviceWorkload(shapes, [g[2] for g in groups.values()], group_of)


@dataclass(frozen=True)
class DeviceUsage:
    """Per node (int64 [N]): devices published, held by some claim, free, and stranded (free, and no pod
    the placement leaves pending can have its claims allocated there: see the module)."""

    published: np.ndarray
    allocated: np.ndarray
    stranded: np.ndarray
    usable: np.ndarray  # bool [G, N]: workload group g can use node n (False for groups without claims)

    @property
    def free(self) -> np.ndarray:
        return self.published - self.allocated


def _usable(state: ClusterState, node_of: np.ndarray, in_use: AbstractSet[str], work: DeviceWorkload,
            free_devices: np.ndarray) -> np.ndarray:
    """bool [G, N]: the group's claims can be allocated on the node, where its pods may go and fit."""
    from ..plugins.dynamicresources.allocator import AllocationError
    from ..plugins.dynamicresources.plugin import new_allocator

    out = fits(free_capacity(state, node_of), work.shapes) & (free_devices > 0)[None, :]
    cluster = state.cluster
    allocator = None
    for g, claims in enumerate(work.claims):
        if not claims:
            out[g] = False
            continue
        for n in np.flatnonzero(out[g]).tolist():
            if allocator is None:
                allocator = new_allocator({c.metadata.name: c for c in cluster.device_classes},
                                          cluster.resource_slices)
            try:
                result = allocator.allocate(state.nodes[n], claims, in_use)
            except (AllocationError, NotImplementedError):
                result = None
            out[g, n] = result is not None and len(result) == len(claims)
    return out


def device_usage(state: ClusterState, node_of: np.ndarray, in_use: AbstractSet[str],
                 work: DeviceWorkload | None = None) -> DeviceUsage:
    """The devices of a placement whose claims hold ``in_use`` (device ids); ``work`` defaults to the
    input's pending pods (:func:`device_workload`)."""
    n = state.num_nodes
    published = np.zeros(n, dtype=np.int64)
    allocated = np.zeros(n, dtype=np.int64)
    for dev, row in published_devices(state).items():
        published[row] += 1
        allocated[row] += dev in in_use
    work = work if work is not None else device_workload(state)
    usable = _usable(state, node_of, in_use, work, published - allocated)
    free = np.where(state.unschedulable, 0, published - allocated)
    left = sorted({g for p, g in work.group_of.items() if node_of[p] < 0 and work.claims[g]})
    stranded = np.where(usable[left].any(axis=0), 0, free) if left else np.zeros(n, dtype=np.int64)
    return DeviceUsage(published, allocated, stranded.astype(np.int64), usable)


def device_fragmentation(state: ClusterState, usage: DeviceUsage, work: DeviceWorkload) -> GpuFragmentation:
    """FGD's ``F_n = free_n * sum_m p_m [m claims no new device or cannot use n]`` over schedulable nodes, in
    devices (:class:`~optisched.metrics.fragmentation.GpuFragmentation` with devices for GPUs)."""
    idle = np.where(state.unschedulable, 0, usage.free).astype(np.int64)
    weights = work.shapes.weights
    served = weights @ usage.usable.astype(np.float64) if len(weights) else np.zeros(state.num_nodes)
    per_node = idle * np.clip(1.0 - served, 0.0, 1.0)
    return GpuFragmentation(per_node, idle, int(usage.published[~state.unschedulable].sum()))
