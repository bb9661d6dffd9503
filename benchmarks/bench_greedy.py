"""Greedy mode throughput on generated clusters (default profile, kube's percentageOfNodesToScore).

Reports pods/s (best of ``--repeat`` runs, each on a freshly compiled state, with the median and every
run: the machine is shared, and noise only ever adds time) and peak memory at each size, and a ratio
against a baseline measured in the same run (best of as many):
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


def run(nodes: int, pending: int, load: float, repeat: int) -> None:
    total = int(pending * 2)
    objs = generate(GenerateSpec(nodes=nodes, pods=total, pending_fraction=pending / total, seed=1, load=load))
    cluster = cluster_from_objects(objs)
    greedy, base, outcome = [], [], set()
    for _ in range(repeat):  # a fresh state each time: nothing cached by one run helps the next
        state = compile_cluster(cluster)
        base.append(baseline(state))
        sched = GreedyScheduler(compile_cluster(cluster), default_config(), GreedyOptions(record=False, requeue=False))
        t = time.perf_counter()
        result = sched.run()
        greedy.append(time.perf_counter() - t)
        outcome.add((len(result.unschedulable), len(result.preempted)))
    n = len(state.pending)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    unsched, preempted = outcome.pop() if len(outcome) == 1 else ("differs between runs", "?")
    print(f"{nodes} nodes, {n} pending: greedy {n / min(greedy):.0f} pods/s best of {repeat} "
          f"(median {n / float(np.median(greedy)):.0f}; runs {', '.join(f'{n / d:.0f}' for d in greedy)}), "
          f"baseline {n / min(base):.0f} pods/s best, ratio greedy/baseline time {min(greedy) / min(base):.1f}x (best "
          f"of each), unschedulable {unsched}, preempted {preempted}, peak RSS {peak:.0f} MiB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, nargs="*", default=[1000, 5000])
    ap.add_argument("--pending", type=int, default=10000)
    ap.add_argument("--load", type=float, default=0.8)
    ap.add_argument("--repeat", type=int, default=3, help="greedy runs per size (best and median reported)")
    args = ap.parse_args()
    for nodes in args.nodes:
        run(nodes, args.pending, args.load, args.repeat)


if __name__ == "__main__":
    main()
