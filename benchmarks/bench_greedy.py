"""Greedy mode throughput on generated clusters (default profile, kube's percentageOfNodesToScore).

Reports pods/s and peak memory at each size, and a ratio against a baseline measured in the same run:
a bare resource-fit loop (one numpy pass per pod: fit mask + LeastAllocated, first max) over the same
cluster, the least any scheduler has to do per pod.
"""
from __future__ import annotations

import argparse
import resource
import time

import numpy as np

from optisched.datasets.generate import GenerateSpec, generate
from optisched.greedy.scheduler import GreedyOptions, GreedyScheduler
from optisched.model.loader import cluster_from_objects
from optisched.model.snapshot import Snapshot
from optisched.model.state import compile_cluster
from optisched.profile import default_config


def baseline(state) -> float:  # type: ignore[no-untyped-def]
    snap = Snapshot(state)
    cpu, mem = state.resource_col("cpu"), state.resource_col("memory")
    t = time.perf_counter()
    for p in state.pending:
        free = state.allocatable - snap.requested
        fits = (state.pod_requests[p] <= free).all(axis=1)
        if not fits.any():
            continue
        a = np.maximum(state.allocatable[:, [cpu, mem]], 1)
        score = ((a - snap.requested[:, [cpu, mem]] - state.pod_requests[p, [cpu, mem]]) * 100 // a).sum(axis=1)
        score[~fits] = -1
        snap.add(p, int(np.argmax(score)))
    return time.perf_counter() - t


def run(nodes: int, pending: int, load: float) -> None:
    total = int(pending * 2)
    objs = generate(GenerateSpec(nodes=nodes, pods=total, pending_fraction=pending / total, seed=1, load=load))
    state = compile_cluster(cluster_from_objects(objs))
    n = len(state.pending)
    t_base = baseline(state)
    sched = GreedyScheduler(state, default_config(), GreedyOptions(record=False, requeue=False))
    t = time.perf_counter()
    result = sched.run()
    dt = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{nodes} nodes, {n} pending: greedy {n / dt:.0f} pods/s ({dt:.1f} s), "
          f"baseline {n / t_base:.0f} pods/s, ratio greedy/baseline time {dt / t_base:.1f}x, "
          f"unschedulable {len(result.unschedulable)}, preempted {len(result.preempted)}, peak RSS {peak:.0f} MiB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, nargs="*", default=[1000, 5000])
    ap.add_argument("--pending", type=int, default=10000)
    ap.add_argument("--load", type=float, default=0.8)
    args = ap.parse_args()
    for nodes in args.nodes:
        run(nodes, args.pending, args.load)


if __name__ == "__main__":
    main()
