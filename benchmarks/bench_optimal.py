"""Optimal mode on generated clusters: time, certificate and gap per placement tier, peak memory.

Each size runs greedy mode first (the in-run baseline: its pods placed per priority level and its
time), then optimal mode with the time limit of the issue's target, 2 CP-SAT workers. Reported:
placed per level (greedy → optimal), the bound and gap of each level, the *tier-1 gap* (the gap at the
highest priority level not proven optimal: lexicographic order is decided there), wall time against
the limit, and peak RSS.

    python benchmarks/bench_optimal.py                       # the three sizes, load 0.8 and 1.2
    python benchmarks/bench_optimal.py --sizes 200:2000:10 --loads 1.2
"""
from __future__ import annotations

import argparse
import resource
import time

from optisched.datasets.generate import GenerateSpec, generate
from optisched.greedy.scheduler import GreedyOptions, GreedyScheduler
from optisched.model.loader import cluster_from_objects
from optisched.model.state import compile_cluster
from optisched.optimal.solve import OptimalOptions, solve_optimal
from optisched.profile import default_config

SIZES = ["200:2000:10", "1000:10000:60", "5000:50000:120"]


def tier1_gap(tiers) -> tuple[str, float]:  # type: ignore[no-untyped-def]
    for t in tiers:
        if t.name.startswith("placed[") and t.objective != t.bound:
            return t.name, t.gap
    return "all levels closed", 0.0


def run(nodes: int, pending: int, limit: float, load: float, seed: int) -> None:
    objs = generate(GenerateSpec(nodes=nodes, pods=2 * pending, pending_fraction=0.5, load=load, seed=seed))
    state = compile_cluster(cluster_from_objects(objs))
    config = default_config()
    t = time.perf_counter()
    greedy = GreedyScheduler(state, config, GreedyOptions(record=False)).run()
    t_greedy = time.perf_counter() - t
    t = time.perf_counter()
    r = solve_optimal(state, config, OptimalOptions(time_limit=limit, workers=2, seed=seed), greedy=greedy)
    t_opt = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    name, gap = tier1_gap(r.certificate.tiers)
    print(f"## {nodes} nodes, {len(state.pending)} pending, load {load}: optimal {t_opt:.1f} s of {limit:.0f} s "
          f"({t_opt / limit:.2f}x the limit; greedy {t_greedy:.1f} s), status {r.certificate.status}, "
          f"answer from the {r.certificate.source}, tier-1 gap {100 * gap:.2f}% ({name}), "
          f"violations {len(r.violations)}, peak RSS {peak:.0f} MiB")
    for tier in r.certificate.tiers:
        print(f"   {tier.name:26s} greedy {tier.greedy!s:>7} -> {tier.objective:>7} bound {tier.bound:>7} "
              f"gap {100 * tier.gap:6.2f}% {tier.status}")
    for note in r.certificate.notes:
        print(f"   note: {note}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", nargs="*", default=SIZES, help="nodes:pending:seconds")
    ap.add_argument("--loads", type=float, nargs="*", default=[0.8, 1.2])
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    for size in args.sizes:
        nodes, pending, limit = size.split(":")
        for load in args.loads:
            run(int(nodes), int(pending), float(limit), load, args.seed)


if __name__ == "__main__":
    main()
