"""Rescheduling plans on a generated cluster of running pods: ``consolidate`` and ``repair``.

The cluster (:mod:`reschedule_cluster`): ``--pods`` running pods (20 per node by default) where
kube-scheduler put them, none pending; half were bound by the generator at random nodes, so the
cluster breaks node affinity and spread rules ``repair`` fixes. Per goal: the whole plan's time, the
target's (optimal mode, ``--time-limit``), the staging's (waves, one kube-scheduler replay per wave and
per re-plan), moves, waves (and whether the count is proven minimal), dropped moves, the goal tier's
value, bound and gap, and the peak memory of the process. Baseline in the same run: one replay of the
cluster with no eviction (what each wave costs at least). ``--cache DIR`` keeps the generated cluster.

    python benchmarks/bench_reschedule.py --nodes 100
    python benchmarks/bench_reschedule.py --nodes 1000 --time-limit 120 --cache /tmp/bench
    python benchmarks/bench_reschedule.py --nodes 5000 --pods 50000 --time-limit 300 --cache /tmp/bench
"""
from __future__ import annotations

import argparse
import os
import resource
import time
from pathlib import Path

from reschedule_cluster import running_cluster

from optisched.model.loader import cluster_from_objects
from optisched.model.state import compile_cluster
from optisched.preemption.landing import predict_landing
from optisched.profile import default_config
from optisched.reschedule import plan_reschedule


def row(state, config, goal: str, limit: float, seed: int) -> str:  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    plan = plan_reschedule(state, config, goal, time_limit=limit, seed=seed)
    total = time.perf_counter() - t0
    target = plan.certificate.seconds
    tier = next((t for t in plan.certificate.tiers if t.name.startswith("objective:")), None)
    value = f"{tier.objective}, bound {tier.bound}, gap {100 * tier.gap:.1f} %, {tier.status}" if tier else "-"
    proven = {True: "minimal", False: "not proven minimal", None: "-"}[plan.staging.minimal]
    return (f"| {goal} | {total:.1f} s | {target:.1f} s | {total - target:.1f} s ({plan.staging.replays}) | "
            f"{plan.moves} | {len(plan.staging.waves)} ({proven}) | {len(plan.staging.dropped)} | {value} | "
            f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--pods", type=int, default=None, help="running pods (default 20 per node)")
    ap.add_argument("--time-limit", type=float, default=30.0)
    ap.add_argument("--goals", default="consolidate,repair")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cache", type=Path, default=None, help="keep the generated cluster here")
    args = ap.parse_args()
    objs = running_cluster(args.nodes, args.pods or 20 * args.nodes, args.seed, args.cache)
    state = compile_cluster(cluster_from_objects(objs))
    config = default_config()
    t0 = time.perf_counter()
    predict_landing(state, config, state.pod_node)
    base = time.perf_counter() - t0
    print(f"{args.nodes} nodes, {int((state.pod_node >= 0).sum())} running pods, time limit {args.time_limit:.0f} s; "
          f"one replay without evictions {base:.2f} s; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("| goal | total | target | waves (replays) | moves | waves | dropped | goal tier | peak RSS |")
    print("|---|---|---|---|---|---|---|---|---|")
    for goal in args.goals.split(","):
        print(row(state, config, goal, args.time_limit, args.seed), flush=True)


if __name__ == "__main__":
    main()
