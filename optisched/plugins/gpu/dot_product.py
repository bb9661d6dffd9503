"""DotProd (Tetris-style alignment, the paper's "DotProd"): prefer the node whose free (CPU, GPU) vector
has the smallest dot product with the pod's request, both scaled by the largest node spec.

Upstream: hkust-adsl/kubernetes-scheduler-simulator (commit 8f3d641)
``pkg/simulator/plugin/dot_product_score.go`` with dimExtMethod ``merge`` and normMethod ``max``
(``GenerateSchedulingMatchGroups`` in ``pkg/utils/utils.go``): node vector (free milli CPU, total free
GPU milli), pod vector (milli CPU, ``num_gpu × gpu_milli``), each divided by (128000, 8000); score
``int(100 × (1 − dot / 2))``, not normalized. Devices: best fit (``gpuSelMethod: best``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...framework import MAX_NODE_SCORE
from .. import names
from .policies import MAX_SPEC_CPU, MAX_SPEC_GPU, BestFitDevices

if TYPE_CHECKING:
    from .share import GpuNodes, GpuPod

__all__ = ["DotProd"]


class DotProd(BestFitDevices):
    name = names.DOT_PROD

    def score(self, nodes: GpuNodes, pod: GpuPod, cand: np.ndarray) -> np.ndarray:
        dot = (nodes.cpu_free[cand] / MAX_SPEC_CPU) * (pod.cpu / MAX_SPEC_CPU)
        dot = dot + (nodes.gpu_free[cand] / MAX_SPEC_GPU) * (pod.total_milli / MAX_SPEC_GPU)
        return (float(MAX_NODE_SCORE) * (1.0 - dot / 2.0)).astype(np.int64)
