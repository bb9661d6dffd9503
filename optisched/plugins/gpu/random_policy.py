"""Random: one feasible node, drawn uniformly, scores 100 and the others 0.

Upstream: hkust-adsl/kubernetes-scheduler-simulator (commit 8f3d641)
``pkg/simulator/plugin/random_score.go`` (PreScore draws the node among those that passed the filters).
Devices: a sharing pod gets a device drawn uniformly among those that fit (``gpuSelMethod: random``,
``allocateGpuIdBasedOnRandomFit`` in ``open_gpu_share.go``); whole-GPU pods take the first idle devices.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...framework import MAX_NODE_SCORE
from .. import names
from .policies import PolicyContext
from .share import exclusive_devices

if TYPE_CHECKING:
    from .share import GpuNodes, GpuPod

__all__ = ["Random"]


class Random:
    name = names.RANDOM

    def __init__(self, ctx: PolicyContext) -> None:
        self.rng = ctx.rng

    def score(self, nodes: GpuNodes, pod: GpuPod, cand: np.ndarray) -> np.ndarray:
        out = np.zeros(len(cand), dtype=np.int64)
        if len(cand):
            out[self.rng.integers(len(cand))] = MAX_NODE_SCORE
        return out

    def devices(self, nodes: GpuNodes, pod: GpuPod, node: int) -> tuple[int, ...]:
        if not pod.sharing:
            return exclusive_devices(nodes.dev_free[node], pod.num_gpu) if pod.num_gpu else ()
        fits = np.flatnonzero(nodes.dev_free[node] >= pod.gpu_milli)
        return (int(fits[self.rng.integers(len(fits))]),)
