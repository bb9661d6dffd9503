"""GPU sharing: per-device GPU accounting, its filter, the device choice and its CP-SAT encoding.

Follows the FGD paper's simulator (hkust-adsl/kubernetes-scheduler-simulator, commit 8f3d641):
``pkg/simulator/plugin/open_gpu_share.go`` (``Open-Gpu-Share`` Filter and Reserve),
``pkg/type/resource.go`` (``AllocateExclusiveGpuId``, ``NodeResource.Sub``) and ``pkg/utils/utils.go``
(``IsNodeAccessibleToPodByType``). A node has ``gpu_count`` devices of one model, each 1000 milli;
a pod asks for ``num_gpu`` devices with ``gpu_milli`` each: a sharing pod (1 device, < 1000) takes a
share of one device, a whole-GPU pod takes idle devices. ``gpu_spec`` (``|``-separated models) restricts
the node's GPU model. The pod's CPU and memory requests and the node's 1001-pod allocatable are checked as
``NodeResourcesFit`` does (the simulator runs kube-scheduler's default filters beside Open-Gpu-Share).

The device a pod lands on is part of the placement (``alibabacloud.com/gpu-index``, e.g. ``2-3``).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike
from ortools.sat.python import cp_model

__all__ = [
    "GPU_COUNT",
    "GPU_INDEX",
    "GPU_MILLI",
    "GPU_MODEL",
    "MAX_DEVICES",
    "MILLI",
    "GpuNodes",
    "GpuPod",
    "best_fit_device",
    "encode_gpu_share",
    "exclusive_devices",
    "feasible",
    "gpu_fits",
    "model_access",
]

MILLI = 1000
MAX_DEVICES = 8
MAX_PODS = 1001
GPU_COUNT = "alibabacloud.com/gpu-count"
GPU_MILLI = "alibabacloud.com/gpu-milli"
GPU_MODEL = "alibabacloud.com/gpu-card-model"
GPU_INDEX = "alibabacloud.com/gpu-index"


@dataclass(frozen=True)
class GpuPod:
    """A pod's demand: CPU in millicores, memory in MiB, ``num_gpu`` devices of ``gpu_milli`` each, and
    the allowed GPU models (empty: any)."""

    cpu: int
    mem: int
    num_gpu: int = 0
    gpu_milli: int = 0
    spec: tuple[str, ...] = ()

    @property
    def total_milli(self) -> int:
        return self.num_gpu * self.gpu_milli

    @property
    def sharing(self) -> bool:
        return self.num_gpu == 1 and 0 < self.gpu_milli < MILLI


@dataclass
class GpuNodes:
    """Cluster state as arrays over nodes: free CPU/memory/pod slots, the free milli of each device
    (``dev_free[n, d]``, 0 past the node's ``gpu_count``), the GPU model code, and per node the number of
    pods of each GPU kind (index 0: sharing, k: k whole GPUs), which GpuClustering reads."""

    names: list[str]
    models: list[str]  # code -> model name; code 0 is "" (no GPU)
    cpu_cap: np.ndarray
    mem_cap: np.ndarray
    gpu_count: np.ndarray
    model: np.ndarray
    cpu_free: np.ndarray = field(init=False)
    mem_free: np.ndarray = field(init=False)
    pods_free: np.ndarray = field(init=False)
    dev_free: np.ndarray = field(init=False)
    kinds: np.ndarray = field(init=False)
    listeners: list[Callable[[int], None]] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        n = len(self.names)
        self.cpu_free = self.cpu_cap.astype(np.int64).copy()
        self.mem_free = self.mem_cap.astype(np.int64).copy()
        self.pods_free = np.full(n, MAX_PODS, dtype=np.int64)
        dev = np.arange(MAX_DEVICES)[None, :] < self.gpu_count[:, None]
        self.dev_free = np.where(dev, MILLI, 0).astype(np.int64)
        self.kinds = np.zeros((n, MAX_DEVICES + 1), dtype=np.int64)

    @classmethod
    def build(cls, names: Sequence[str], cpu: ArrayLike, mem: ArrayLike, gpus: ArrayLike,
              models: Sequence[str]) -> GpuNodes:
        codes = [""] + sorted({m for m in models if m})
        index = {m: i for i, m in enumerate(codes)}
        return cls(list(names), codes, np.asarray(cpu, dtype=np.int64), np.asarray(mem, dtype=np.int64),
                   np.asarray(gpus, dtype=np.int64), np.array([index[m] for m in models], dtype=np.int64))

    def copy(self) -> GpuNodes:
        out = GpuNodes(self.names, self.models, self.cpu_cap, self.mem_cap, self.gpu_count, self.model)
        for name in ("cpu_free", "mem_free", "pods_free", "dev_free", "kinds"):
            setattr(out, name, getattr(self, name).copy())
        return out

    @property
    def gpu_free(self) -> np.ndarray:
        """Free GPU milli per node (``GetGpuMilliLeftTotal``)."""
        return self.dev_free.sum(axis=1)

    def bind(self, pod: GpuPod, node: int, devices: Sequence[int]) -> None:
        """Reserve: take the pod's requests on ``node`` and ``gpu_milli`` on each chosen device."""
        if len(devices) != pod.num_gpu or len(set(devices)) != len(devices):
            raise ValueError(f"pod needs {pod.num_gpu} distinct devices, got {list(devices)}")
        self.cpu_free[node] -= pod.cpu
        self.mem_free[node] -= pod.mem
        self.pods_free[node] -= 1
        for d in devices:
            self.dev_free[node, d] -= pod.gpu_milli
        if pod.num_gpu:
            self.kinds[node, 0 if pod.sharing else pod.num_gpu] += 1
        for listener in self.listeners:
            listener(node)

    def unbind(self, pod: GpuPod, node: int, devices: Sequence[int]) -> None:
        """Give back what :meth:`bind` took."""
        self.cpu_free[node] += pod.cpu
        self.mem_free[node] += pod.mem
        self.pods_free[node] += 1
        for d in devices:
            self.dev_free[node, d] += pod.gpu_milli
        if pod.num_gpu:
            self.kinds[node, 0 if pod.sharing else pod.num_gpu] -= 1
        for listener in self.listeners:
            listener(node)


def model_access(models: Sequence[str], spec: Sequence[str]) -> np.ndarray:
    """``IsNodeAccessibleToPodByType`` per model code: no spec allows every model, a spec allows only
    the listed models (the CPU-only code 0 never matches a spec)."""
    wanted = {s for s in spec if s}
    if not wanted:
        return np.ones(len(models), dtype=bool)
    return np.array([bool(m) and m in wanted for m in models], dtype=bool)


def feasible(nodes: GpuNodes, pod: GpuPod, access: np.ndarray | None = None) -> np.ndarray:
    """Bool mask over nodes where the pod fits: CPU, memory and a pod slot free, and for a GPU pod a node
    of an allowed model with ``num_gpu`` devices each holding at least ``gpu_milli`` free."""
    ok = (nodes.cpu_free >= pod.cpu) & (nodes.mem_free >= pod.mem) & (nodes.pods_free > 0)
    return ok & gpu_fits(nodes, pod, access)


def gpu_fits(nodes: GpuNodes, pod: GpuPod, access: np.ndarray | None = None) -> np.ndarray:
    """The Open-Gpu-Share part of :func:`feasible` alone (kube-scheduler's NodeResourcesFit checks CPU,
    memory and pod slots when the rule runs inside a profile)."""
    if pod.num_gpu == 0 or pod.gpu_milli <= 0:
        return np.ones(len(nodes.names), dtype=bool)
    if access is None:
        access = model_access(nodes.models, pod.spec)
    ok = access[nodes.model] & (nodes.gpu_count > 0)
    return ok & ((nodes.dev_free >= pod.gpu_milli).sum(axis=1) >= pod.num_gpu)


def exclusive_devices(dev_free: np.ndarray, num: int) -> tuple[int, ...]:
    """``AllocateExclusiveGpuId``: the first ``num`` idle devices in index order."""
    idle = np.flatnonzero(dev_free == MILLI)[:num]
    if len(idle) < num:
        raise ValueError("not enough idle GPUs")
    return tuple(int(d) for d in idle)


def best_fit_device(dev_free: np.ndarray, pod: GpuPod) -> tuple[int, ...]:
    """``allocateGpuIdBasedOnBestFit``: a sharing pod goes to the device with the least free milli that
    still fits it (the lowest index on ties); a whole-GPU pod takes idle devices."""
    if pod.num_gpu == 0:
        return ()
    if not pod.sharing:
        return exclusive_devices(dev_free, pod.num_gpu)
    fits = dev_free >= pod.gpu_milli
    if not fits.any():
        raise ValueError("no device fits")
    return (int(np.argmin(np.where(fits, dev_free, MILLI + 1))),)


def encode_gpu_share(model: cp_model.CpModel, nodes: GpuNodes, pods: Sequence[GpuPod],
                     place: dict[tuple[int, int], cp_model.IntVar]) -> dict[tuple[int, int, int], cp_model.IntVar]:
    """CP-SAT side of the rule, EXACT: ``place[p, n]`` (a Boolean, absent = the pod cannot go there) gets
    device literals ``use[p, n, d]``: a GPU pod on ``n`` uses exactly ``num_gpu`` devices; each device's
    free milli covers the ``gpu_milli`` of its pods; CPU, memory and pod slots hold per node. Nodes whose
    model the pod's spec excludes, or without enough devices, get no variable at all (the caller builds
    ``place`` from :func:`feasible` on the starting state). Returns the device literals for decoding."""
    use: dict[tuple[int, int, int], cp_model.IntVar] = {}
    per_node: dict[int, list[int]] = {}
    for (p, n), x in place.items():
        per_node.setdefault(n, []).append(p)
        pod = pods[p]
        if pod.num_gpu == 0:
            continue
        devs = [d for d in range(int(nodes.gpu_count[n])) if nodes.dev_free[n, d] >= pod.gpu_milli]
        lits = [model.new_bool_var(f"use_{p}_{n}_{d}") for d in devs]
        for d, lit in zip(devs, lits):
            use[p, n, d] = lit
            model.add_implication(lit, x)
        model.add(sum(lits) == pod.num_gpu * x)
    for n, ps in per_node.items():
        model.add(sum(pods[p].cpu * place[p, n] for p in ps) <= int(nodes.cpu_free[n]))
        model.add(sum(pods[p].mem * place[p, n] for p in ps) <= int(nodes.mem_free[n]))
        model.add(sum(place[p, n] for p in ps) <= int(nodes.pods_free[n]))
        for d in range(int(nodes.gpu_count[n])):
            terms = [pods[p].gpu_milli * use[p, n, d] for p in ps if (p, n, d) in use]
            if terms:
                model.add(sum(terms) <= int(nodes.dev_free[n, d]))
    return use
