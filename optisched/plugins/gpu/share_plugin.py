"""``Open-Gpu-Share`` in a kube-scheduler profile: the GPU sharing rule on Kubernetes objects.

The objects are those the FGD simulator builds (hkust-adsl/kubernetes-scheduler-simulator, commit 8f3d641,
``pkg/type/open-gpu-share/utils/{const,pod,node}.go``): a node's GPUs are ``alibabacloud.com/gpu-count`` in
its allocatable, its model the label ``alibabacloud.com/gpu-card-model``; a pod's GPU demand is in its
annotations ``alibabacloud.com/gpu-count``, ``alibabacloud.com/gpu-milli`` (per GPU) and optionally
``alibabacloud.com/gpu-card-model`` (``|``-separated models). A bound pod keeps the devices in
``alibabacloud.com/gpu-index`` (``2-3``); the devices chosen here are in :attr:`GpuShareState.devices`.
Filter: ``GpuSharePlugin.Filter`` (CPU, memory and pod slots stay NodeResourcesFit's). In optimal mode the
batch's pods share devices through the rule's CP-SAT encoding, and a batch's re-check packs each node's
devices for all its pods together (:meth:`GpuShareState._repack`). Running pods a batch keeps on their node
are packed like arrivals: a ``gpu-index`` recorded on them is held by the re-check, not by the model.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

import numpy as np

from ...errors import InputError
from ...framework import CycleState, Fidelity, FilterResult, Plugin, Status
from ...model.objects import Pod
from ...model.snapshot import Snapshot
from .. import names
from .share import (
    GPU_COUNT,
    GPU_INDEX,
    GPU_MILLI,
    GPU_MODEL,
    MAX_DEVICES,
    GpuNodes,
    GpuPod,
    best_fit_device,
    encode_gpu_share,
    gpu_fits,
    pack_node,
)

if TYPE_CHECKING:
    from ...optimal.classes import PodClass
    from ...optimal.model import BatchModel

__all__ = ["GpuShare", "GpuShareState", "pod_gpu_demand"]

NANO = 10**9


def _annotation_int(pod: Pod, key: str) -> int:
    raw = pod.metadata.annotations.get(key, "0")
    try:
        return int(raw)
    except ValueError:
        raise InputError(f"{raw!r} is not an integer", obj=f"Pod/{pod.key}",
                         path=f".metadata.annotations[{key}]") from None


def pod_gpu_demand(pod: Pod, cpu_milli: int = 0, mem_mib: int = 0) -> GpuPod:
    """A pod's GPU demand from its annotations (``GetGpuCountFromPodAnnotation`` and friends)."""
    num, milli = _annotation_int(pod, GPU_COUNT), _annotation_int(pod, GPU_MILLI)
    spec = tuple(s for s in pod.metadata.annotations.get(GPU_MODEL, "").split("|") if s)
    return GpuPod(cpu_milli, mem_mib, num if milli > 0 else 0, milli if num > 0 else 0, spec)


class GpuShareState:
    """Per-device GPU state of a snapshot, kept in step with it (one per snapshot, ``Snapshot.shared``)."""

    def __init__(self, snapshot: Snapshot) -> None:
        state = snapshot.state
        cpu, mem = state.resource_col("cpu"), state.resource_col("memory")
        nodes = state.nodes
        counts = [min(MAX_DEVICES, n.allocatable.get(GPU_COUNT, 0) // NANO) for n in nodes]
        self.nodes = GpuNodes.build(state.node_names, state.allocatable[:, cpu] // 10**6,
                                    state.allocatable[:, mem] // (NANO * 2**20), counts,
                                    [n.metadata.labels.get(GPU_MODEL, "") if c else "" for n, c in zip(nodes, counts)])
        req = state.pod_requests
        self.pods = [pod_gpu_demand(p, int(req[i, cpu] // 10**6), int(req[i, mem] // (NANO * 2**20)))
                     for i, p in enumerate(state.pods)]
        self.objs = state.pods
        self.devices: dict[int, tuple[int, ...]] = {}
        self.node_of: dict[int, int] = {}
        self.choose: Callable[[GpuNodes, GpuPod, int], tuple[int, ...]] | None = None
        snapshot.subscribe(self)

    def _given(self, pod: int) -> tuple[int, ...] | None:
        raw = self.objs[pod].metadata.annotations.get(GPU_INDEX, "")
        return tuple(int(d) for d in raw.split("-")) if raw else None

    def on_add(self, pod: int, node: int) -> None:
        gp = self.pods[pod]
        devs = self._given(pod) if gp.num_gpu else ()
        self.node_of[pod] = node
        if devs is None:
            choose = self.choose or (lambda nodes, p, n: best_fit_device(nodes.dev_free[n], p))
            try:
                devs = choose(self.nodes, gp, node)
            except ValueError:  # a batch placed at once (optimal mode, its re-check): pack the node anew
                if self._repack(pod, node):
                    return
                # no packing holds them all: the freest devices, left below zero so the filter reports it
                devs = tuple(int(d) for d in np.argsort(-self.nodes.dev_free[node], kind="stable")[: gp.num_gpu])
        self.nodes.bind(gp, node, devs)
        self.devices[pod] = devs

    def on_remove(self, pod: int, node: int) -> None:
        self.node_of.pop(pod, None)
        self.nodes.unbind(self.pods[pod], node, self.devices.pop(pod, ()))

    def _repack(self, pod: int, node: int) -> bool:
        """Devices for ``pod`` and every pod on ``node`` without a recorded ``gpu-index``, chosen together
        by the rule's CP-SAT encoding (best fit one pod at a time depends on the order pods arrive in;
        a batch has no order). Binds them and returns True, or leaves the node as it was."""
        movable = [q for q, n in self.node_of.items() if n == node and q != pod and self.pods[q].num_gpu
                   and self._given(q) is None]
        for q in movable:
            self.nodes.unbind(self.pods[q], node, self.devices[q])
        rows = [*movable, pod]
        found = pack_node(self.nodes, node, [self.pods[q] for q in rows])
        for i, q in enumerate(rows):
            devs = found[i] if found is not None else self.devices.get(q)
            if devs is not None:
                self.nodes.bind(self.pods[q], node, devs)
                self.devices[q] = devs
        return found is not None


class GpuShare(Plugin):
    """Filter of ``Open-Gpu-Share``: a GPU pod needs a node of an allowed model with ``gpu-count``
    devices each holding ``gpu-milli`` free."""

    name = names.GPU_SHARE
    points = frozenset({"filter"})
    REASON = "Insufficient GPU share"
    filter_fidelity = Fidelity.EXACT

    def __init__(self, snapshot: Snapshot, profile: object) -> None:
        self.state = snapshot.shared(GpuShareState)

    def pre_filter(self, cycle: CycleState) -> Status:
        return Status()

    def filter(self, cycle: CycleState, nodes: np.ndarray) -> FilterResult:
        ok = gpu_fits(self.state.nodes, self.state.pods[cycle.pod])[nodes]
        return FilterResult.from_mask(~ok, self.REASON)

    def restrict(self, model: BatchModel, classes: list[PodClass]) -> None:
        """Phase 1: the greedy verdict against the fixed pods (model, device count, free devices)."""
        model.restrict_by_filter(self, classes)

    def encode_filter(self, model: BatchModel, classes: list[PodClass]) -> None:
        """Phase 3: the batch's GPU pods share each node's devices (:func:`encode_gpu_share`, per-device
        packing beside the fixed pods; CPU, memory and pod slots stay NodeResourcesFit's). Encoded once per
        model, for the classes of every profile that runs the rule, since they share the devices."""
        if _ENCODED.get(model) is model.vars:
            return
        _ENCODED[model] = model.vars
        ruled = [c for sched, cs in model.by_profile.items() if self.name in model.frameworks[sched].filter_rules
                 for c in cs]
        demand = {c.index: self.state.pods[c.rep] for c in ruled}
        place = {(c.index, n): v for c in ruled if demand[c.index].num_gpu
                 for n, v, _ in model.vars[c.index].terms()}
        if place:
            encode_gpu_share(model.cp, self.state.nodes, demand, place, resources=False)


# model -> the variables its devices were encoded for (one encoding for all profiles; again after a rebuild)
_ENCODED: WeakKeyDictionary[BatchModel, list] = WeakKeyDictionary()
