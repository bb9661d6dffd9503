"""Optimal mode's promises on generated clusters: inside the time limit, never below kube-scheduler, the same
answer twice.

    python benchmarks/bench_trust.py --limit 10                  # wall time against the limit, every feature mix
    python benchmarks/bench_trust.py --floor 2000:10000:60       # one large case: greedy vs optimal per level
    python benchmarks/bench_trust.py --limit 5 --twice           # and each case run twice: identical placements?

Per case: pods placed per priority level by greedy mode (kube-scheduler's final placement, the floor) and by
optimal mode, whether the answer is lexicographically at least greedy's, wall time of ``solve_optimal``
against the limit (the promise: at most ``limit + SLACK``), and the certificate's notes about the LP share and
the wall-clock safety net. Timings depend on the machine's load: record it beside the numbers.
"""
from __future__ import annotations

import argparse
import os
import time

from optisched.datasets.generate import GenerateSpec, generate
from optisched.greedy.scheduler import GreedyOptions, GreedyScheduler
from optisched.model.loader import cluster_from_objects
from optisched.model.state import compile_cluster
from optisched.optimal.solve import OptimalOptions, placed_per_level, solve_optimal
from optisched.profile import default_config

# seconds past the limit a run may end: decoding, re-checking and explaining after the last solver call
# that the wall-clock safety net stopped (docs/optimal_trust.md)
SLACK = 2.0
# the generator's feature mixes: (name, spec fields)
MIXES = [
    ("cpu only, load 0.8", {"nodes": 40, "load": 0.8, "gpu_fraction": 0.0}),
    ("gpus, overloaded 1.2 (preemption)", {"nodes": 60, "load": 1.2, "gpu_fraction": 0.2}),
    ("one zone, mostly pending", {"nodes": 60, "load": 1.0, "zones": 1, "pending_fraction": 0.9}),
    ("100 nodes, load 1.1", {"nodes": 100, "load": 1.1}),
    ("150 nodes / 1,000 pods, bound pods and PDBs", {"nodes": 150, "pods": 1000, "load": 1.0,
                                                      "pending_fraction": 0.4}),
]


def print_ledger(ledger: dict[str, dict[str, float]]) -> None:
    """Per phase of the run's clock: wall and CPU seconds, nominal seconds charged (where long wall time hid)."""
    rows = sorted(ledger.items(), key=lambda kv: -kv[1].get("wall", 0.0))
    for phase, row in rows:
        solver = f", CP-SAT CPU {row['solver cpu']:.2f}" if "solver cpu" in row else ""
        print(f"    {phase:>15}: wall {row.get('wall', 0.0):6.2f} s  CPU {row.get('cpu', 0.0):6.2f} s  "
              f"charged {row.get('nominal', 0.0):6.2f}{solver}")


def run_case(name: str, spec: GenerateSpec, limit: float, twice: bool, verbose: bool = False,
             ledger: bool = False) -> bool:
    cluster = cluster_from_objects(generate(spec))
    state = compile_cluster(cluster)
    config = cluster.config or default_config()
    greedy = GreedyScheduler(state, config, GreedyOptions(record=False)).run()
    answers = []
    seen: list[str] = []

    def phases(name: str, incumbent: float | None, bound: float | None, elapsed: float) -> None:
        if verbose and incumbent is None and name not in seen[-1:]:
            seen.append(name)
            print(f"    {elapsed:7.1f} s  {name}", flush=True)

    for _ in range(2 if twice else 1):
        t = time.perf_counter()
        r = solve_optimal(state, config, OptimalOptions(time_limit=limit), greedy=greedy, progress=phases)
        wall = time.perf_counter() - t
        answers.append(r.node_of.tolist())
    levels = r.batch.levels
    mine, kube = placed_per_level(r.batch, r.node_of), placed_per_level(r.batch, greedy.snapshot.node_of)
    floor = [mine[lv] for lv in levels] >= [kube[lv] for lv in levels]
    inside = wall <= limit + SLACK
    per = "  ".join(f"{lv}: {kube[lv]}→{mine[lv]}" for lv in levels)
    same = "" if not twice else f"  same twice: {answers[0] == answers[1]}"
    print(f"{name}: {state.num_nodes} nodes, {len(state.pending)} pending | {per} | floor held: {floor} | "
          f"wall {wall:.1f} s of {limit:g} (+{SLACK:g}): {'ok' if inside else 'OVER'}{same}")
    for note in r.certificate.notes:
        print(f"    note: {note}")
    if ledger or not inside:
        print_ledger(r.ledger)
    return floor and inside


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=float, default=10.0)
    ap.add_argument("--floor", help="NODES:PENDING:LIMIT, one generated case instead of the mixes")
    ap.add_argument("--twice", action="store_true", help="run each case twice and compare the placements")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--phases", action="store_true", help="print when each phase and tier starts")
    ap.add_argument("--case", default="", help="only the mixes whose name contains this")
    ap.add_argument("--repeat", type=int, default=1, help="run the mixes this many times")
    ap.add_argument("--ledger", action="store_true",
                    help="print each run's wall and CPU seconds per phase (always printed for a run past the slack)")
    a = ap.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    ok = True
    if a.floor:
        nodes, pending, limit = (int(x) for x in a.floor.split(":"))
        spec = GenerateSpec(nodes=nodes, pods=2 * pending, pending_fraction=0.5, seed=a.seed)
        ok = run_case(f"{nodes} nodes / {pending} pending", spec, limit, a.twice, a.phases, a.ledger)
    else:
        for _ in range(a.repeat):
            for name, fields in MIXES:
                if a.case in name:
                    ok = run_case(name, GenerateSpec(seed=a.seed, **fields), a.limit, a.twice, a.phases, a.ledger) \
                        and ok
    print("all promises held" if ok else "SOME PROMISE BROKEN")


if __name__ == "__main__":
    main()
