"""FGD: Fragmentation Gradient Descent (Weng et al., USENIX ATC 2023), score and fragmentation measure.

Upstream: hkust-adsl/kubernetes-scheduler-simulator (commit 8f3d641) ``pkg/simulator/plugin/fgd_score.go``
(``calculateGpuShareFragExtendScore``), ``pkg/utils/frag.go`` (``NodeGpuShareFragAmount``,
``GetNodePodFrag``, ``GetTypicalPods``) and ``pkg/type/resource.go`` (``NodeResource.Sub``).

* Typical pods: the pod list's distinct (cpu, gpu milli, gpu count, gpu spec) with their frequencies, most
  popular first, taken 10 at a time until they cover 95 % of the pods, then renormalized.
* A node's fragmentation is, summed over typical pods t with frequency f: f × the node's free GPU milli,
  except when t asks for GPUs, the node's model is allowed, ``num_gpu`` devices hold ``gpu_milli`` and the
  CPU fits (``Q3Satisfied``): then only the devices with less than t's ``gpu_milli`` free count.
  CPU-only typical pods count all free GPU milli (the simulator's ``XLSatisfied``/``XRLackCPU`` are not Q3).
* Score: ``int(sigmoid((frag_before − frag_after) / 1000) × 100)``; a sharing pod tries each device that
  fits and keeps the best (the first such device on ties), which is also the device it gets.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ...framework import MAX_NODE_SCORE
from .. import names
from .share import exclusive_devices, model_access

if TYPE_CHECKING:
    from .share import GpuNodes, GpuPod

__all__ = ["FGD", "FragCache", "TypicalPods", "typical_pods"]


@dataclass(frozen=True)
class TypicalPods:
    """The target workload: per typical pod its CPU, GPU milli per device, GPU count, spec and frequency."""

    cpu: np.ndarray
    milli: np.ndarray
    num: np.ndarray
    spec: tuple[tuple[str, ...], ...]
    freq: np.ndarray


def typical_pods(cpu: Iterable[int], milli: Iterable[int], num: Iterable[int], spec: Iterable[str],
                 threshold: int = 95, step: int = 1) -> TypicalPods:
    """``GetTypicalPods`` with isInvolvedCpuPods=true and gpuResWeight=0: count each distinct request,
    sort by count then by (cpu, milli, num, spec), both descending, and keep whole steps of ``step`` kinds (the
    paper's runs use podIncreaseStep 1, ``scripts/generate_config_and_run.py``)
    until their pods reach ``threshold`` % of all pods."""
    counts = Counter(zip((int(c) for c in cpu), (int(m) for m in milli), (int(n) for n in num), spec))
    kinds = sorted(counts.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
    total = float(sum(counts.values()))
    expected = threshold * total / 100.0
    i = cum = 0
    taken = 0
    while cum < expected and i < len(kinds):
        taken += step
        while i < taken and i < len(kinds):
            cum += kinds[i][1]
            i += 1
    chosen = kinds[:i]
    norm = total if i >= len(kinds) else float(cum)
    return TypicalPods(np.array([k[0] for k, _ in chosen], dtype=np.int64),
                       np.array([k[1] for k, _ in chosen], dtype=np.int64),
                       np.array([k[2] for k, _ in chosen], dtype=np.int64),
                       tuple(tuple(s for s in k[3].split("|") if s) for k, _ in chosen),
                       np.array([c / norm for _, c in chosen], dtype=np.float64))


class FragCache:
    """Per-node fragmentation against the typical pods, kept up to date as pods bind (one node's row is
    recomputed per bind). ``small[n, t]`` is the free milli on devices below t's share, ``fit[n, t]`` the
    devices that hold t's share."""

    def __init__(self, nodes: GpuNodes, typ: TypicalPods) -> None:
        self.typ = typ
        self.access = np.array([model_access(nodes.models, s) for s in typ.spec]).T  # [model, t]
        self.gpu_t = typ.milli > 0
        self.nodes = nodes
        self.small, self.fit = self._counts(nodes.dev_free)
        self.frag = self.node_frag(np.arange(len(nodes.names)), nodes.cpu_free, self.small, self.fit,
                                   nodes.gpu_free)
        nodes.listeners.append(self.refresh)

    def _counts(self, dev: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ge = dev[..., None] >= self.typ.milli  # [..., devices, t]
        return (np.where(ge, 0, dev[..., None]).sum(axis=-2), ge.sum(axis=-2))

    def node_frag(self, rows: np.ndarray, cpu_free: np.ndarray, small: np.ndarray, fit: np.ndarray,
                  total: np.ndarray) -> np.ndarray:
        """``NodeGpuShareFragAmountScore`` for states of the nodes ``rows`` (leading axes broadcast)."""
        q3 = (self.gpu_t & self.access[self.nodes.model[rows]] & (fit >= self.typ.num)
              & (cpu_free[..., None] >= self.typ.cpu))
        return (np.where(q3, small, total[..., None]) * self.typ.freq).sum(axis=-1)

    def refresh(self, node: int) -> None:
        n = self.nodes
        s, f = self._counts(n.dev_free[node])
        self.small[node], self.fit[node] = s, f
        self.frag[node] = self.node_frag(np.array(node), n.cpu_free[node], s, f, n.dev_free[node].sum())

    def total(self) -> float:
        return float(self.frag.sum())


_EARLIER = np.tril(np.ones((8, 8), dtype=bool), -1)  # [d, d']: d' < d


def _sigmoid_score(delta: np.ndarray) -> np.ndarray:
    return (1.0 / (1.0 + np.exp(-delta / 1000.0)) * float(MAX_NODE_SCORE)).astype(np.int64)


class FGD:
    """FGD score (``FGDScore``, gpuSelMethod FGDScore): prefer the node whose fragmentation grows least."""

    name = names.FGD

    def __init__(self, ctx: Any) -> None:  # a gpu_policies.PolicyContext (which holds this cache)
        self.cache = ctx.frag
        self._dev: dict[int, int] = {}

    def score(self, nodes: GpuNodes, pod: GpuPod, cand: np.ndarray) -> np.ndarray:
        c = self.cache
        before = c.frag[cand]
        cpu = nodes.cpu_free[cand] - pod.cpu
        total = nodes.gpu_free[cand]
        if not pod.sharing:  # whole devices go from 1000 to 0: each typical share loses one fitting device
            fit = c.fit[cand] - pod.num_gpu if pod.num_gpu else c.fit[cand]
            after = c.node_frag(cand, cpu, c.small[cand], fit, total - pod.total_milli)
            return _sigmoid_score(before - after)
        v = nodes.dev_free[cand]  # [k, D]
        w = v - pod.gpu_milli
        # a device with the same free milli as a lower-numbered one on the node scores the same: skip it
        dup = ((v[:, None, :] == v[:, :, None]) & _EARLIER).any(axis=2)
        r, d = np.nonzero((w >= 0) & ~dup)
        m = c.typ.milli
        vv, ww = v[r, d][:, None], w[r, d][:, None]
        ge_v, ge_w = vv >= m, ww >= m
        small = c.small[cand[r]] - np.where(ge_v, 0, vv) + np.where(ge_w, 0, ww)
        fit = c.fit[cand[r]] - ge_v + ge_w
        after = c.node_frag(cand[r], cpu[r], small, fit, total[r] - pod.gpu_milli)
        scores = np.full(v.shape, -1, dtype=np.int64)
        scores[r, d] = _sigmoid_score(before[r] - after)
        best = scores.argmax(axis=1)  # first device with the highest score
        self._dev = dict(zip(cand.tolist(), best.tolist()))
        return scores.max(axis=1)

    def devices(self, nodes: GpuNodes, pod: GpuPod, node: int) -> tuple[int, ...]:
        if pod.num_gpu == 0:
            return ()
        if pod.sharing:
            d = self._dev.get(node)
            if d is None:
                self.score(nodes, pod, np.array([node]))
                d = self._dev[node]
            return (int(d),)
        return exclusive_devices(nodes.dev_free[node], pod.num_gpu)

