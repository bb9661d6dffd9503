"""Fragmentation: free capacity the workload cannot use, per resource and for GPUs as FGD measures it.

The *workload* is the distribution of pod shapes a placement should leave room for: by default the
distinct effective request vectors of the input's pending pods (all its pods when none is pending),
each weighted by its share of those pods, together with the nodes each shape may use at all
(schedulable, taints tolerated, nodeSelector and required node affinity matched: the filters that do
not depend on other pods). Fixing the workload from the input keeps it the same for every run
compared.

**Fragmentation per resource.** A node's free amount of resource ``r`` is *usable* when at least one
workload shape that requests some ``r`` may use the node and fits in the node's whole free vector
(every resource); otherwise it is *fragmented*. The fragmentation of ``r`` is the fragmented free
amount over all free amount, on schedulable nodes. Free CPU on a node whose memory is exhausted, or
two free GPUs where every GPU pod asks for four, are fragmented. A resource no workload shape
requests has no fragmentation share (NaN): free capacity nobody asks for is idle, not fragmented.

**GPU fragmentation (FGD).** Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads
with Fragmentation Gradient Descent", USENIX ATC 2023, Sec. 3: a node's fragmentation for one task
is the idle GPU capacity that task cannot use: all of it when the task requests no GPU or cannot run
on the node (short of GPU or CPU, or not allowed there), otherwise the idle capacity of the GPUs
individually too small for the task's per-GPU share; the node's fragmentation is its expectation
over the workload, ``F_n = sum_m p_m F_n(m)``, and the cluster's the sum over nodes. The model only
has whole GPUs (the ``nvidia.com/gpu`` extended resource), so every idle GPU is a whole idle GPU and
the per-GPU case never fragments: ``F_n(m)`` is either 0 (the task fits) or the node's idle GPU
count. "Fits" checks every resource of the request, where the paper's simulator checks CPU and GPU.

**Expected fragmentation per resource** applies the same expectation to any resource ``r``:
``F_n,r = free_n,r * sum_m p_m [m requests no r, or cannot run on n]``. Unlike the plain
fragmentation above, free capacity that only some shapes can use counts in proportion to the shapes
that cannot: two free cpu where half of the workload asks for four are half fragmented.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.objects import Pod, TaintEffect
from ..model.state import ClusterState
from .resources import free_capacity

__all__ = [
    "GPU",
    "GpuFragmentation",
    "Workload",
    "copies_that_fit",
    "expected_fragmentation",
    "expected_fragmented_free",
    "fits",
    "fragmentation",
    "fragmented_free",
    "gpu_fragmentation",
    "largest_fitting_shape",
    "workload_of",
]

GPU = "nvidia.com/gpu"


@dataclass(frozen=True)
class Workload:
    """Distinct pod shapes with their weights (summing to 1) and the nodes each may use."""

    shapes: np.ndarray  # int64 [S, R], columns as state.resources
    weights: np.ndarray  # float [S]
    eligible: np.ndarray  # bool [S, N]

    @classmethod
    def of_shapes(cls, shapes: np.ndarray, counts: np.ndarray, num_nodes: int) -> Workload:
        """Shapes with pod counts, every shape allowed on every node."""
        counts = np.asarray(counts, dtype=np.float64)
        return cls(np.asarray(shapes, dtype=np.int64).reshape(len(counts), -1), counts / counts.sum(),
                   np.ones((len(counts), num_nodes), dtype=bool))


def _static_mask(state: ClusterState, pod: Pod) -> np.ndarray:
    """Nodes the pod may use whatever else runs: schedulable, NoSchedule/NoExecute taints tolerated,
    nodeSelector and required node affinity matched."""
    from ..plugins.node_affinity import required_mask
    from ..plugins.taint_toleration import untolerated

    mask = ~state.unschedulable & required_mask(state, pod)
    taints, matrix = state.distinct_taints
    if taints:
        bad = untolerated(pod.spec.tolerations, taints, {TaintEffect.NO_SCHEDULE, TaintEffect.NO_EXECUTE})
        mask &= ~matrix[:, bad].any(axis=1)
    return mask


def workload_of(state: ClusterState, pods: list[int] | np.ndarray | None = None) -> Workload:
    """The workload of ``pods`` (rows; default: the pending pods of the input, else every pod)."""
    rows = list(pods) if pods is not None else (state.pending or list(range(len(state.pods))))
    masks: dict[str, np.ndarray] = {}
    groups: dict[tuple[bytes, bytes], list] = {}
    for p in rows:
        spec = state.pods[p].spec
        key = repr((spec.tolerations, spec.node_selector, spec.affinity.node_affinity if spec.affinity else None))
        mask = masks.get(key)
        if mask is None:
            mask = masks[key] = _static_mask(state, state.pods[p])
        shape = state.pod_requests[p]
        entry = groups.setdefault((shape.tobytes(), mask.tobytes()), [shape, mask, 0])
        entry[2] += 1
    if not groups:
        r = len(state.resources)
        return Workload(np.zeros((0, r), np.int64), np.zeros(0), np.zeros((0, state.num_nodes), bool))
    shapes = np.array([g[0] for g in groups.values()], dtype=np.int64)
    eligible = np.array([g[1] for g in groups.values()], dtype=bool)
    counts = np.array([g[2] for g in groups.values()], dtype=np.float64)
    return Workload(shapes, counts / counts.sum(), eligible)


def fits(free: np.ndarray, workload: Workload) -> np.ndarray:
    """bool [S, N]: shape ``s`` may use node ``n`` and fits in its free vector."""
    room = (workload.shapes[:, None, :] <= free[None, :, :]).all(axis=2)
    return room & workload.eligible


def fragmented_free(state: ClusterState, node_of: np.ndarray, workload: Workload) -> np.ndarray:
    """int64 [N, R]: the free amount of each resource on each node that no workload shape requesting it
    can use (zero on unschedulable nodes, which no shape may use and which are left out)."""
    free = free_capacity(state, node_of)
    fit = fits(free, workload)  # [S, N]
    wants = workload.shapes > 0  # [S, R]
    usable = (fit[:, :, None] & wants[:, None, :]).any(axis=0)  # [N, R]
    out = np.where(usable, 0, free)
    out[state.unschedulable] = 0
    return out


def _share(state: ClusterState, node_of: np.ndarray, workload: Workload, frag: np.ndarray) -> np.ndarray:
    """Fragmented / free per resource; NaN where nothing is free or no workload shape requests the
    resource (free capacity nobody asks for is idle, not fragmented: the workload gives no measure)."""
    free = free_capacity(state, node_of)[~state.unschedulable].sum(axis=0)
    wanted = (workload.shapes > 0).any(axis=0)
    ok = (free > 0) & wanted
    return np.where(ok, frag.sum(axis=0) / np.where(ok, free, 1), np.nan)


def fragmentation(state: ClusterState, node_of: np.ndarray, workload: Workload) -> np.ndarray:
    """float [R]: fragmented free / free per resource over schedulable nodes; NaN where nothing is free
    or no workload shape requests the resource."""
    return _share(state, node_of, workload, fragmented_free(state, node_of, workload))


@dataclass(frozen=True)
class GpuFragmentation:
    """FGD's fragmentation with whole GPUs: expected idle GPUs the workload cannot use."""

    per_node: np.ndarray  # float [N]: F_n, in GPUs
    idle: np.ndarray  # int64 [N]: idle GPUs per node
    total_gpus: int

    @property
    def amount(self) -> float:
        """Sum over nodes of F_n, in GPUs."""
        return float(self.per_node.sum())

    @property
    def ratio(self) -> float:
        """Fragmented share of the idle GPUs (the paper's fragmentation ratio); NaN when none is idle."""
        idle = int(self.idle.sum())
        return self.amount / idle if idle else float("nan")

    @property
    def share_of_total(self) -> float:
        """Fragmented GPUs as a share of all GPUs (the paper's fragmentation amount in %/100)."""
        return self.amount / self.total_gpus if self.total_gpus else float("nan")


def expected_fragmented_free(state: ClusterState, node_of: np.ndarray, workload: Workload) -> np.ndarray:
    """float [N, R]: FGD's expectation per resource, ``free_n,r * sum_m p_m [m requests no r or does not
    fit on n]`` (zero on unschedulable nodes)."""
    free = free_capacity(state, node_of)
    fit = fits(free, workload)  # [S, N]
    wants = workload.shapes > 0  # [S, R]
    served = fit[:, :, None] & wants[:, None, :]  # [S, N, R]: F_n,r(m) = 0
    if len(workload.weights):
        share = np.einsum("s,snr->nr", workload.weights, (~served).astype(np.float64))
    else:
        share = np.ones(free.shape)
    out = free * share
    out[state.unschedulable] = 0.0
    return out


def expected_fragmentation(state: ClusterState, node_of: np.ndarray, workload: Workload) -> np.ndarray:
    """float [R]: expected fragmented free / free per resource over schedulable nodes; NaN where nothing
    is free or no workload shape requests the resource."""
    return _share(state, node_of, workload, expected_fragmented_free(state, node_of, workload))


def gpu_fragmentation(state: ClusterState, node_of: np.ndarray, workload: Workload,
                      resource: str = GPU) -> GpuFragmentation:
    """FGD's ``F_n = idle_n * sum_m p_m [m requests no GPU or does not fit on n]`` over schedulable nodes."""
    n = state.num_nodes
    if resource not in state.resources:
        return GpuFragmentation(np.zeros(n), np.zeros(n, np.int64), 0)
    col = state.resource_col(resource)
    idle = np.where(state.unschedulable, 0, free_capacity(state, node_of)[:, col])
    per_node = expected_fragmented_free(state, node_of, workload)[:, col]
    total = int(state.allocatable[~state.unschedulable, col].sum())
    return GpuFragmentation(per_node, idle.astype(np.int64), total)


def _size(workload: Workload, state: ClusterState) -> np.ndarray:
    """float [S]: a shape's dominant share of the mean schedulable node (what "larger" means here)."""
    ok = ~state.unschedulable
    mean = state.allocatable[ok].mean(axis=0) if ok.any() else state.allocatable.mean(axis=0)
    pods_col = state.resource_col("pods")
    share = np.where(mean > 0, workload.shapes / np.where(mean > 0, mean, 1), 0.0)
    share[:, pods_col] = 0.0  # every shape counts one pod
    return share.max(axis=1) if share.size else np.zeros(len(workload.shapes))


def largest_fitting_shape(state: ClusterState, node_of: np.ndarray, workload: Workload) -> np.ndarray:
    """int64 [N]: the index of the largest workload shape (by dominant share of the mean node) that may
    use each node and fits in its free capacity, -1 when none does."""
    fit = fits(free_capacity(state, node_of), workload)
    if not len(fit):
        return np.full(state.num_nodes, -1, dtype=np.int64)
    size = _size(workload, state)
    ranked = np.where(fit, size[:, None], -np.inf)
    best = ranked.argmax(axis=0)
    return np.where(fit.any(axis=0), best, -1).astype(np.int64)


def copies_that_fit(free: np.ndarray, shape: np.ndarray) -> np.ndarray:
    """int64 [N]: how many copies of ``shape`` each node's free vector holds, over the resources the shape
    requests (0 for a shape that requests nothing, which a state never has: every pod counts one pod)."""
    wants = shape > 0
    if not wants.any():
        return np.zeros(len(free), dtype=np.int64)
    return (free[:, wants] // shape[wants]).min(axis=1).astype(np.int64)
