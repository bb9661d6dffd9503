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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike
from ortools.sat.python import cp_model

from ... import cpsat

__all__ = [
    "DEMAND_ANNOTATIONS",
    "GPU_COUNT",
    "GPU_INDEX",
    "GPU_MILLI",
    "GPU_MODEL",
    "MAX_DEVICES",
    "MILLI",
    "DeviceVars",
    "GpuNodes",
    "GpuPod",
    "best_fit_device",
    "encode_gpu_share",
    "exclusive_devices",
    "feasible",
    "gpu_fits",
    "model_access",
    "pack_node",
]

MILLI = 1000
MAX_DEVICES = 8
MAX_PODS = 1001
GPU_COUNT = "alibabacloud.com/gpu-count"
GPU_MILLI = "alibabacloud.com/gpu-milli"
GPU_MODEL = "alibabacloud.com/gpu-card-model"
GPU_INDEX = "alibabacloud.com/gpu-index"
DEMAND_ANNOTATIONS = (GPU_COUNT, GPU_MILLI, GPU_MODEL)  # what a pod asks for: pods differing here differ


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


Demands = Sequence[GpuPod] | Mapping[int, GpuPod]  # a demand per pod kind (class) index


@dataclass
class DeviceVars:
    """The per-device side of :func:`encode_gpu_share`: ``share[m, n, d]`` counts the pods with a share of
    ``m`` milli on device ``d`` of node ``n``; ``whole[n, d]`` is true when whole-GPU pods take the device."""

    share: dict[tuple[int, int, int], cp_model.IntVar] = field(default_factory=dict)
    whole: dict[tuple[int, int], cp_model.IntVar] = field(default_factory=dict)

    def devices(self, value: Callable[[cp_model.IntVar], int], pods: Demands,
                counts: dict[tuple[int, int], int]) -> dict[tuple[int, int], list[tuple[int, ...]]]:
        """The devices of each pod of a solution: ``counts[k, n]`` pods of kind ``k`` on node ``n`` (read
        with ``value``) get one device tuple each, in kind order; shares of one size are interchangeable."""
        slots: dict[tuple[int, int], list[int]] = {}
        for (m, n, d), v in sorted(self.share.items()):
            slots.setdefault((m, n), []).extend([d] * int(value(v)))
        idle: dict[int, list[int]] = {}
        for (n, d), v in sorted(self.whole.items()):
            if value(v):
                idle.setdefault(n, []).append(d)
        out: dict[tuple[int, int], list[tuple[int, ...]]] = {}
        for (k, n), c in sorted(counts.items()):
            pod, devs = pods[k], out.setdefault((k, n), [])
            for _ in range(c):
                if pod.num_gpu == 0:
                    devs.append(())
                elif pod.sharing:
                    devs.append((slots[pod.gpu_milli, n].pop(),))
                else:
                    take, idle[n] = idle[n][: pod.num_gpu], idle[n][pod.num_gpu:]
                    devs.append(tuple(take))
        return out


def encode_gpu_share(model: cp_model.CpModel, nodes: GpuNodes, pods: Demands,
                     place: dict[tuple[int, int], cp_model.IntVar], *, resources: bool = True) -> DeviceVars:
    """CP-SAT side of the rule, EXACT: ``place[k, n]`` counts the pods of kind ``k`` (demand ``pods[k]``)
    on node ``n`` (a Boolean per pod, or an integer per class of identical pods; absent = none there).
    Per node, whole-GPU pods take ``num_gpu`` idle devices each (``whole``), every share goes to one device
    (``share`` counts per share size and device) and each device's free milli covers what it holds; with
    ``resources``, CPU, memory and pod slots too (in a profile they are NodeResourcesFit's). The caller
    builds ``place`` from :func:`feasible` on the starting state (spec and device counts are not
    re-checked). Devices of equal free milli on a node are interchangeable, so their loads are ordered."""
    out = DeviceVars()
    per_node: dict[int, list[tuple[int, cp_model.IntVar]]] = {}
    for (k, n), x in place.items():
        per_node.setdefault(n, []).append((k, x))
    for n, items in per_node.items():
        if resources:
            model.add(sum(pods[k].cpu * x for k, x in items) <= int(nodes.cpu_free[n]))
            model.add(sum(pods[k].mem * x for k, x in items) <= int(nodes.mem_free[n]))
            model.add(sum(x for _, x in items) <= int(nodes.pods_free[n]))
        _encode_devices(model, nodes, pods, n, items, out)
    return out


def _encode_devices(model: cp_model.CpModel, nodes: GpuNodes, pods: Demands, n: int,
                    items: list[tuple[int, cp_model.IntVar]], out: DeviceVars) -> None:
    """One node's devices: whole-GPU pods on idle devices, shares packed per device."""
    free = [int(f) for f in nodes.dev_free[n, : int(nodes.gpu_count[n])]]
    whole_terms = [(pods[k].num_gpu, x) for k, x in items if pods[k].num_gpu and not pods[k].sharing]
    by_milli: dict[int, list[cp_model.IntVar]] = {}
    for k, x in items:
        if pods[k].sharing:
            by_milli.setdefault(pods[k].gpu_milli, []).append(x)
    if not whole_terms and not by_milli:
        return
    load: list[list] = [[] for _ in free]
    if whole_terms:
        flags = [model.new_bool_var(f"whole_{n}_{d}") for d, f in enumerate(free) if f == MILLI]
        for d, flag in zip([d for d, f in enumerate(free) if f == MILLI], flags):
            out.whole[n, d] = flag
            load[d].append(MILLI * flag)
        model.add(sum(g * x for g, x in whole_terms) == sum(flags))
    for m, xs in by_milli.items():
        total = sum(int(list(v.proto.domain)[-1]) for v in xs)  # upper bounds (the proto list has no [-1])
        us = []
        for d, f in enumerate(free):
            if f >= m:
                u = out.share[m, n, d] = model.new_int_var(0, min(f // m, total), f"share_{m}_{n}_{d}")
                load[d].append(m * u)
                us.append(u)
        model.add(sum(us) == sum(xs))
    for d, f in enumerate(free):
        if load[d]:
            model.add(sum(load[d]) <= f)
    for d in range(1, len(free)):  # symmetry: equal devices hold non-increasing loads
        if free[d] == free[d - 1] and load[d]:
            model.add(sum(load[d - 1]) >= sum(load[d]))


def pack_node(nodes: GpuNodes, node: int, pods: Sequence[GpuPod], seconds: float = 10.0) -> list[tuple[int, ...]] | None:
    """Devices for all ``pods`` on ``node`` at once, beside what it holds already, by :func:`encode_gpu_share`
    (the GPU part only); None when no packing holds them all."""
    model = cp_model.CpModel()
    place = {(i, node): model.new_constant(1) for i in range(len(pods))}
    dev = encode_gpu_share(model, nodes, pods, place, resources=False)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = seconds
    if cpsat.solve(solver, model) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    found = dev.devices(solver.value, pods, {key: 1 for key in place})
    return [found[i, node][0] for i in range(len(pods))]
