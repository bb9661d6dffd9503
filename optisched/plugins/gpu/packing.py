"""GpuPacking: prefer, in this order, a partly used GPU, then idle GPUs on a node already in use, then an
idle node (the fewer its GPUs the better).

Upstream: hkust-adsl/kubernetes-scheduler-simulator (commit 8f3d641)
``pkg/simulator/plugin/gpu_packing_score.go`` (``getPackingScore``), Go integer arithmetic:
idle node: ``max(33 − free GPUs, free GPUs)``; idle devices on a used node: ``max(50 − devices used, 33)``;
a shared device: ``max(100 − (free milli × 100 / 1000) / 10, 50)``. CPU-only pods score 0 everywhere.
The device taken is the least-free one that fits (``SortedMilliGpuLeftIndexList``), as best fit picks.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...framework import MAX_NODE_SCORE
from .. import names
from .policies import BestFitDevices
from .share import MILLI

if TYPE_CHECKING:
    from .share import GpuNodes, GpuPod

__all__ = ["GpuPacking"]


class GpuPacking(BestFitDevices):
    name = names.GPU_PACKING

    def score(self, nodes: GpuNodes, pod: GpuPod, cand: np.ndarray) -> np.ndarray:
        if pod.gpu_milli <= 0:
            return np.zeros(len(cand), dtype=np.int64)
        dev = nodes.dev_free[cand]
        idle = (dev == MILLI).sum(axis=1)
        idle_node = np.maximum(MAX_NODE_SCORE // 3 - idle, idle)
        if pod.sharing:
            least = np.where(dev >= pod.gpu_milli, dev, MILLI + 1).min(axis=1)
            shared = np.maximum(MAX_NODE_SCORE - (least * 100 // MILLI) // 10, MAX_NODE_SCORE // 2)
            used = np.where(least == MILLI, max(MAX_NODE_SCORE // 2 - 1, MAX_NODE_SCORE // 3), shared)
        else:
            used = np.full(len(cand), max(MAX_NODE_SCORE // 2 - pod.num_gpu, MAX_NODE_SCORE // 3))
        return np.where(idle == nodes.gpu_count[cand], idle_node, used).astype(np.int64)
