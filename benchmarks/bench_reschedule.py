"""Rescheduling plans on a generated cluster of running pods: ``consolidate`` and ``repair``.

The cluster: an ``optisched generate`` cluster (load 0.6, 20 pods per node) after greedy mode has placed
it (``bench_preempt.full_cluster``), so the running pods are where kube-scheduler put them: a generated
cluster's own ``nodeName``s break rules a real cluster keeps. Per goal:
the target's time (optimal mode, ``--time-limit``), the staging's time (waves and one kube-scheduler
replay per wave), moves, waves, dropped moves, the goal tier's value, bound and status, and the peak
memory of the process. Baseline in the same run: one replay of the cluster with no eviction (what each
wave costs at least).

    python benchmarks/bench_reschedule.py --nodes 100
    python benchmarks/bench_reschedule.py --nodes 1000 --time-limit 120
"""
from __future__ import annotations

import argparse
import resource
import time

from bench_preempt import full_cluster

from optisched.model.loader import cluster_from_objects
from optisched.model.state import compile_cluster
from optisched.preemption.landing import predict_landing
from optisched.profile import default_config
from optisched.reschedule import plan_reschedule


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--time-limit", type=float, default=30.0)
    ap.add_argument("--goals", default="consolidate,repair")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    objs = full_cluster(args.nodes, args.seed, load=0.6)
    state = compile_cluster(cluster_from_objects(objs))
    config = default_config()
    t0 = time.perf_counter()
    predict_landing(state, config, state.pod_node)
    base = time.perf_counter() - t0
    print(f"{args.nodes} nodes, {len(state.pods)} pods; baseline replay without evictions {base:.2f} s")
    for goal in args.goals.split(","):
        t0 = time.perf_counter()
        plan = plan_reschedule(state, config, goal, time_limit=args.time_limit, seed=args.seed)
        total = time.perf_counter() - t0
        target = plan.certificate.seconds
        tier = next((t for t in plan.certificate.tiers if t.name.startswith("objective:")), None)
        value = f"{tier.objective} (bound {tier.bound}, {tier.status})" if tier else "-"
        print(f"{goal}: total {total:.1f} s (target {target:.1f} s, waves {total - target:.1f} s = "
              f"{(total - target) / base:.1f}x baseline); moves {plan.moves} in {len(plan.staging.waves)} wave(s), "
              f"{len(plan.staging.dropped)} dropped; goal {value}; "
              f"peak {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
