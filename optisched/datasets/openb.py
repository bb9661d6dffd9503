"""Loaders for the Alibaba GPU cluster trace v2023 ("openb"), the FGD paper's input.

The data is not shipped: download it (see ``docs/experiments.md``) from
https://github.com/alibaba/clusterdata, folder ``cluster-trace-gpu-v2023/`` (``csv/`` and ``node_yaml/``).

* Nodes: ``openb_node_list_*.csv`` (``sn,cpu_milli,memory_mib,gpu,model``) or the authors' ``Node`` YAML
  (``alibabacloud.com/gpu-count`` in allocatable, ``alibabacloud.com/gpu-card-model`` label).
* Pods: ``openb_pod_list_*.csv`` in the 11-column form (``name,cpu_milli,memory_mib,num_gpu,gpu_milli,
  gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time``) or the 5-column form of the
  multigpu lists (``name,cpu_milli,memory_mib,num_gpu,gpu_milli``).
* ``qos`` is Alibaba's class, not Kubernetes QoS. The simulator ignores it; :data:`QOS_PRIORITY` maps it to
  a priority for experiments that need one (LS high, Guaranteed/Burstable medium, BE low), which is an
  assumption of ours, not the trace's semantics.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from ..errors import InputError
from ..plugins.gpu.share import GPU_COUNT, GPU_MODEL, MILLI, GpuNodes, GpuPod

__all__ = ["NODE_COLUMNS", "POD_COLUMNS", "POD_COLUMNS_SHORT", "QOS_PRIORITY", "PodTable", "load_nodes",
           "load_pods"]

NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase",
               "creation_time", "deletion_time", "scheduled_time")
POD_COLUMNS_SHORT = POD_COLUMNS[:5]
QOS_PRIORITY = {"LS": 1000, "Guaranteed": 500, "Burstable": 500, "BE": 0, "": 0}


@dataclass(frozen=True)
class PodTable:
    """A pod list as arrays (one row per pod, in file order)."""

    names: list[str]
    cpu: np.ndarray
    mem: np.ndarray
    num_gpu: np.ndarray
    gpu_milli: np.ndarray
    spec: list[str]
    qos: list[str]

    def __len__(self) -> int:
        return len(self.names)

    @property
    def total_milli(self) -> np.ndarray:
        return self.num_gpu * self.gpu_milli

    @property
    def priority(self) -> np.ndarray:
        return np.array([QOS_PRIORITY[q] for q in self.qos], dtype=np.int64)

    def pod(self, i: int) -> GpuPod:
        spec = tuple(s for s in self.spec[i].split("|") if s)
        return GpuPod(int(self.cpu[i]), int(self.mem[i]), int(self.num_gpu[i]), int(self.gpu_milli[i]), spec)


def _int(path: Path, obj: str, col: str, value: str) -> int:
    try:
        v = int(value)
    except ValueError:
        raise InputError(f"{value!r} is not an integer", source=str(path), obj=obj, path=col) from None
    if v < 0:
        raise InputError(f"{v} is negative", source=str(path), obj=obj, path=col)
    return v


def _rows(path: Path, forms: tuple[tuple[str, ...], ...]) -> tuple[tuple[str, ...], list[list[str]]]:
    try:
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", source=str(path)) from None
    head = tuple(rows[0]) if rows else ()
    if head not in forms:
        want = " or ".join(",".join(c) for c in forms)
        raise InputError(f"header is {','.join(head)!r}, expected {want}", source=str(path), obj="line 1")
    for i, row in enumerate(rows[1:], start=2):
        if len(row) != len(head):
            raise InputError(f"{len(row)} fields, expected {len(head)}", source=str(path), obj=f"line {i}")
    return head, rows[1:]


def _nodes_csv(path: Path) -> GpuNodes:
    _, rows = _rows(path, (NODE_COLUMNS,))
    cols = list(zip(*rows)) if rows else [()] * 5
    for r in rows:
        for j, col in ((1, "cpu_milli"), (2, "memory_mib"), (3, "gpu")):
            _int(path, r[0], col, r[j])
        if int(r[3]) > 8:
            raise InputError(f"{r[3]} GPUs, at most 8 per node", source=str(path), obj=r[0], path="gpu")
    return GpuNodes.build(cols[0], [int(v) for v in cols[1]], [int(v) for v in cols[2]],
                          [int(v) for v in cols[3]], list(cols[4]))


def _quantity(path: Path, name: str, field: str, v: object, unit: str) -> int:
    s = str(v)
    try:
        if unit == "m":
            return int(s[:-1]) if s.endswith("m") else int(s) * 1000
        if unit == "Mi":
            return int(s[:-2]) if s.endswith("Mi") else int(s[:-2]) * 1024 if s.endswith("Gi") else int(s) // 2**20
        return int(s)
    except ValueError:
        raise InputError(f"{s!r} is not a quantity", source=str(path), obj=f"Node/{name}", path=field) from None


def _nodes_yaml(path: Path) -> GpuNodes:
    try:
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    except (OSError, yaml.YAMLError) as e:
        raise InputError(f"cannot read YAML: {e}", source=str(path)) from None
    names, cpu, mem, gpu, model = [], [], [], [], []
    for d in docs:
        name = str((d.get("metadata") or {}).get("name", "?"))
        alloc = (d.get("status") or {}).get("allocatable") or {}
        names.append(name)
        cpu.append(_quantity(path, name, ".status.allocatable.cpu", alloc.get("cpu", "0"), "m"))
        mem.append(_quantity(path, name, ".status.allocatable.memory", alloc.get("memory", "0Mi"), "Mi"))
        gpu.append(_quantity(path, name, f".status.allocatable.{GPU_COUNT}", alloc.get(GPU_COUNT, 0), ""))
        model.append(str(((d.get("metadata") or {}).get("labels") or {}).get(GPU_MODEL, "")) if gpu[-1] else "")
    return GpuNodes.build(names, cpu, mem, gpu, model)


def load_nodes(path: str | Path) -> GpuNodes:
    """The cluster of an openb node list (CSV, or the authors' Node YAML)."""
    path = Path(path)
    return _nodes_yaml(path) if path.suffix in (".yaml", ".yml") else _nodes_csv(path)


def load_pods(path: str | Path) -> PodTable:
    """An openb pod list (11- or 5-column CSV), checked: integers, ``num_gpu`` 0/1 with ``gpu_milli`` up to
    1000, or ``num_gpu`` > 1 with whole GPUs."""
    path = Path(path)
    head, rows = _rows(path, (POD_COLUMNS, POD_COLUMNS_SHORT))
    ints = np.zeros((len(rows), 4), dtype=np.int64)
    for i, r in enumerate(rows):
        for j, col in enumerate(head[1:5]):
            ints[i, j] = _int(path, r[0], col, r[j + 1])
        num, milli = ints[i, 2], ints[i, 3]
        if num > 8 or milli > MILLI or (num > 1 and milli != MILLI) or (num == 0) != (milli == 0):
            raise InputError(f"num_gpu {num} with gpu_milli {milli}: expected 0 with 0, 1 with 1..1000, "
                             "or 2..8 with 1000", source=str(path), obj=r[0], path="gpu_milli")
    long = len(head) == len(POD_COLUMNS)
    return PodTable([r[0] for r in rows], ints[:, 0], ints[:, 1], ints[:, 2], ints[:, 3],
                    [r[5] if long else "" for r in rows], [r[6] if long else "" for r in rows])
