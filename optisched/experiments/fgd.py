"""The FGD paper's experiment protocol (Weng et al., USENIX ATC 2023, Sec. 6), on the openb trace.

One run = (workload, policy, seed): shuffle the pod list by the seed; top it up by drawing pods at random
with replacement until the GPU request reaches 130 % of the cluster's GPUs (or drop random pods until it
is at most 130 %); schedule the pods one at a time with no departures (a pod that fits nowhere fails);
after each pod record the allocated GPU milli and the fragmentation. The recorded curve is the paper's:
column *k* averages the samples whose arrived GPU request rounds to *k* % of capacity (*k* ± 1 if none).

Follows hkust-adsl/kubernetes-scheduler-simulator (commit 8f3d641): ``scripts/generate_run_scripts.py``
(tune 1.3, seeds 42-51), ``pkg/simulator/simulator.go`` (``SchedulePods``) and ``pkg/utils/frag.go``.
The filter is :mod:`optisched.plugins.gpu.share`, the policies are those of
:mod:`optisched.plugins.gpu.policies`, the fragmentation is :class:`optisched.plugins.gpu.fgd.FragCache`.
The shuffle uses numpy's generator, not Go's, so single runs differ from the published ones; the
comparison is over the mean of seeds.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..datasets.openb import PodTable, load_nodes, load_pods
from ..plugins.gpu.fgd import FragCache, typical_pods
from ..plugins.gpu.policies import PolicyContext, policy_class, select_host
from ..plugins.gpu.share import MILLI, GpuNodes, GpuPod, feasible, model_access
from .go_draws import simulator_draws

__all__ = ["ARRIVED_STEPS", "COLUMNS", "TUNE_RATIO", "RunResult", "arrival_order", "curve", "run_fgd",
           "run_workload"]

TUNE_RATIO = 1.3
ARRIVED_STEPS = np.arange(0, 131)
COLUMNS = ["workload", "policy", "seed", "arrived_pct", "gpu_alloc_pct", "frag_amount_pct", "frag_ratio_pct"]


@dataclass
class RunResult:
    """Per arrived pod (and the empty start): cumulative arrived and allocated GPU milli, fragmented and
    idle GPU milli; the node and devices of each pod (``-1``/``()`` when it failed)."""

    arrived: np.ndarray
    allocated: np.ndarray
    frag: np.ndarray
    idle: np.ndarray
    order: np.ndarray
    node: np.ndarray
    devices: list[tuple[int, ...]]
    capacity: int


def arrival_order(pods: PodTable, capacity_milli: int, seed: int, ratio: float = TUNE_RATIO) -> np.ndarray:
    """Row indices in arrival order: shuffled, then topped up with random draws (with replacement) until
    the GPU request reaches ``ratio`` × capacity, or with random rows dropped until it is at most that."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(pods))
    need = ratio * capacity_milli
    gpu = pods.total_milli
    total = int(gpu.sum())
    if total < need:
        extra: list[np.ndarray] = []
        while total < need:
            draw = rng.integers(len(pods), size=max(64, len(pods) // 8))
            cum = total + np.cumsum(gpu[draw])
            stop = int(np.searchsorted(cum, need))  # first draw reaching the target
            extra.append(draw[: stop + 1])
            total = int(cum[min(stop, len(draw) - 1)])
        order = np.concatenate([order, *extra])
    elif total > need:
        drop = rng.permutation(len(order))
        cum = total - np.cumsum(gpu[order[drop]])
        k = int(np.argmax(cum <= need)) + 1
        keep = np.ones(len(order), dtype=bool)
        keep[drop[:k]] = False
        order = order[keep]
    return order


def run_fgd(nodes: GpuNodes, pods: PodTable, policy: str, seed: int, order: np.ndarray | None = None,
            ties: str = "order") -> RunResult:
    """Schedule ``pods`` in arrival order on a copy of ``nodes`` with ``policy``. Equal scores go to the
    first node of an order drawn once per run (``ties="order"``, what the published runs match), to a
    random node each time (``"random"``, kube-scheduler's ``selectHost``) or to the first node in file
    order (``"first"``). ``"simulator"`` takes both the arrival order and that node order from the
    paper's simulator's own draws for ``seed`` (:mod:`optisched.experiments.go_draws`), so the run sees
    what the authors' run with the same seed saw."""
    nodes = nodes.copy()
    capacity = int(nodes.gpu_count.sum()) * MILLI
    tie_rng = np.random.default_rng([seed, 2])
    drawn, rank = _draws(nodes, pods, seed, ties, tie_rng)
    order = drawn if order is None else order
    cache = FragCache(nodes, typical_pods(pods.cpu, pods.gpu_milli, pods.num_gpu, pods.spec))
    rule = policy_class(policy)(PolicyContext(cache, np.random.default_rng([seed, 1])))
    k = len(order)
    arrived, allocated = np.zeros(k + 1, dtype=np.int64), np.zeros(k + 1, dtype=np.int64)
    frag, idle = np.zeros(k + 1), np.zeros(k + 1)
    where = np.full(k, -1, dtype=np.int64)
    devices: list[tuple[int, ...]] = [()] * k
    frag[0], idle[0] = cache.total(), capacity
    kinds: dict[int, tuple[GpuPod, np.ndarray]] = {}
    for i, row in enumerate(order):
        pod, access = kinds.get(row) or kinds.setdefault(row, _pod_and_access(nodes, pods, int(row)))
        arrived[i + 1] = arrived[i] + pod.total_milli
        allocated[i + 1] = allocated[i]
        cand = np.flatnonzero(feasible(nodes, pod, access))
        if len(cand):
            tb = tie_rng if ties == "random" else None if rank is None else rank[cand]
            node = int(cand[select_host(rule.score(nodes, pod, cand), tb)])
            devs = rule.devices(nodes, pod, node)
            nodes.bind(pod, node, devs)
            where[i], devices[i] = node, devs
            allocated[i + 1] += pod.total_milli
        frag[i + 1], idle[i + 1] = cache.total(), capacity - allocated[i + 1]
    return RunResult(arrived, allocated, frag, idle, order, where, devices, capacity)


def _draws(nodes: GpuNodes, pods: PodTable, seed: int, ties: str,
           tie_rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray | None]:
    """The arrival order and the node tie order (a rank per node, or none) of a run."""
    capacity = int(nodes.gpu_count.sum()) * MILLI
    if ties == "simulator":
        return simulator_draws(pods.names, pods.total_milli, pods.gpu_milli, nodes.names, capacity, seed, TUNE_RATIO)
    rank = tie_rng.permutation(len(nodes.names)) if ties == "order" else None
    return arrival_order(pods, capacity, seed), rank


def _pod_and_access(nodes: GpuNodes, pods: PodTable, row: int) -> tuple[GpuPod, np.ndarray]:
    pod = pods.pod(row)
    return pod, model_access(nodes.models, pod.spec)


def curve(result: RunResult) -> pd.DataFrame:
    """The run at arrived = 0..130 % of GPU capacity: GPU allocation, fragmentation amount (both % of
    capacity) and fragmentation ratio (% of idle GPU milli), averaged over samples rounding to each step
    (or k ± 1; with none, the state when the arrived request last stood below k)."""
    cap = result.capacity
    pct = np.floor(result.arrived / cap * 100 + 0.5).astype(np.int64)
    values = np.stack([result.allocated / cap * 100, result.frag / cap * 100,
                       np.divide(result.frag, result.idle, out=np.zeros_like(result.frag),
                                 where=result.idle > 0) * 100])
    top = int(max(pct.max(), ARRIVED_STEPS[-1])) + 2
    counts = np.bincount(pct, minlength=top)
    sums = np.stack([np.bincount(pct, weights=v, minlength=top) for v in values])
    out = np.empty((3, len(ARRIVED_STEPS)))
    exact = result.arrived / cap * 100
    for j, k in enumerate(ARRIVED_STEPS):
        near = [kk for kk in (k, k - 1, k + 1) if 0 <= kk < top and counts[kk]]
        if near:
            out[:, j] = sums[:, near[0]] / counts[near[0]]
        else:  # a small cluster jumps past k: the state after the last pod arrived below k
            out[:, j] = values[:, max(int(np.searchsorted(exact, k, side="right")) - 1, 0)]
    return pd.DataFrame({"arrived_pct": ARRIVED_STEPS, "gpu_alloc_pct": out[0], "frag_amount_pct": out[1],
                         "frag_ratio_pct": out[2]})


def run_workload(nodes_path: str | Path, pods_path: str | Path, policy: str, seed: int,
                 workload: str | None = None) -> pd.DataFrame:
    """One cell of the grid as rows with :data:`COLUMNS`."""
    pods_path = Path(pods_path)
    name = workload or pods_path.stem.removeprefix("openb_pod_list_")
    df = curve(run_fgd(load_nodes(nodes_path), load_pods(pods_path), policy, seed))
    df.insert(0, "seed", seed)
    df.insert(0, "policy", policy)
    df.insert(0, "workload", name)
    return df[COLUMNS]
