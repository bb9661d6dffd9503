"""GpuClustering: keep pods of the same GPU kind (sharing, 1, 2, 4, 8 GPUs) together, fuller nodes first.

Upstream: hkust-adsl/kubernetes-scheduler-simulator (commit 8f3d641)
``pkg/simulator/plugin/gpu_clustering_score.go``: with ``b = 25 × (8000 − free GPU milli) / 8000`` (Go
integer division), a node holding only this kind scores ``b + 75``, this kind among others ``b + 50``, no
GPU pod yet ``b + 25``, only other kinds ``b``. CPU-only pods score 0. Devices: best fit.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...framework import MAX_NODE_SCORE
from .. import names
from .policies import MAX_SPEC_GPU, BestFitDevices

if TYPE_CHECKING:
    from .share import GpuNodes, GpuPod

__all__ = ["GpuClustering"]


class GpuClustering(BestFitDevices):
    name = names.GPU_CLUSTERING

    def score(self, nodes: GpuNodes, pod: GpuPod, cand: np.ndarray) -> np.ndarray:
        if pod.num_gpu == 0:
            return np.zeros(len(cand), dtype=np.int64)
        quarter = MAX_NODE_SCORE // 4
        base = quarter * (MAX_SPEC_GPU - nodes.gpu_free[cand]) // MAX_SPEC_GPU
        kinds = nodes.kinds[cand]
        mine = kinds[:, 0 if pod.sharing else pod.num_gpu] > 0
        distinct = (kinds > 0).sum(axis=1)
        tier = np.where(mine, np.where(distinct == 1, 3, 2), np.where(distinct == 0, 1, 0))
        return (base + tier * quarter).astype(np.int64)
