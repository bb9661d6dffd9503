"""BestFit: prefer the node left with the least free CPU and GPU after the pod, each scaled by the largest
node spec (128 cores, 8 GPUs) and weighted one half.

Upstream: hkust-adsl/kubernetes-scheduler-simulator (commit 8f3d641)
``pkg/simulator/plugin/best_fit_score.go`` (``getBestFitScore``), then ``NormalizeScore`` (min-max to
0..100) from ``plugin_utils.go``. Devices: best fit (``gpuSelMethod: best``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...framework import MAX_NODE_SCORE
from .. import names
from .policies import MAX_SPEC_CPU, MAX_SPEC_GPU, BestFitDevices, min_max_normalize

if TYPE_CHECKING:
    from .share import GpuNodes, GpuPod

__all__ = ["BestFit"]


class BestFit(BestFitDevices):
    name = names.BEST_FIT

    def score(self, nodes: GpuNodes, pod: GpuPod, cand: np.ndarray) -> np.ndarray:
        left = (nodes.cpu_free[cand] - pod.cpu) / MAX_SPEC_CPU * 0.5
        left = left + (nodes.gpu_free[cand] - pod.total_milli) / MAX_SPEC_GPU * 0.5
        raw = np.trunc((1.0 - left) * float(MAX_NODE_SCORE)).astype(np.int64)
        return min_max_normalize(raw)
