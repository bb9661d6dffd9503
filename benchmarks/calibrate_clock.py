"""Fit the clock's work costs (``optisched.optimal.clock.WORK_COST``) to CPU time on generated clusters.

Optimal mode charges its deterministic clock for the work it does outside the solvers by counting it:
pods put in snapshots and classes, pods put through the greedy filters, (class, node) cells restricted,
variables, constraints and terms written to CP-SAT models, LP nonzeros built. This script runs optimal
mode on generated clusters, reads the run's ledger (per phase: the units of each kind counted, the CPU
seconds it took, the nominal seconds charged) and fits one cost per kind by non-negative least squares
on CPU time (``time.process_time()``: it barely depends on the machine's load, unlike wall time). Solver
calls are reported apart: their CPU time beside the CP-SAT deterministic time they were charged by.

    python benchmarks/calibrate_clock.py                          # 40-2,000 nodes
    python benchmarks/calibrate_clock.py --sizes 40:0 200:2000    # NODES:PENDING[:LIMIT] (0: the generator's mix)
    python benchmarks/calibrate_clock.py --sizes 5000:50000:600 --build-only   # the build phases and the check
    python benchmarks/calibrate_clock.py --cache /tmp/cal ...     # keep each cluster and greedy run

``--build-only`` skips the tiers: every phase before them and the answer's check (of the repaired greedy
placement) run their whole course, at any size, in minutes (a large limit keeps the deterministic budget
from stopping the build).

Record the fitted costs and the table in docs/optimal_trust.md ("How much a unit of built work costs").
"""
from __future__ import annotations

import argparse
import dataclasses
import gc
import os
import pickle
import time
import types

import numpy as np

from optisched.datasets.generate import GenerateSpec, generate
from optisched.greedy.scheduler import GreedyOptions, GreedyScheduler
from optisched.model.loader import cluster_from_objects
from optisched.model.state import compile_cluster
from optisched.optimal import solve
from optisched.optimal.clock import WORK_COST, Clock
from optisched.optimal.solve import OptimalOptions, solve_optimal
from optisched.profile import default_config

SIZES = ["40:0", "100:0", "150:0", "200:2000", "500:3000:30", "1000:5000:60", "2000:10000:60"]
KINDS = [k for k in WORK_COST if k != "call"]  # a call's own work is measured with the solver's


def nnls(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Least squares with non-negative coefficients (few columns: drop the most negative until none is)."""
    keep = list(range(a.shape[1]))
    while True:
        x = np.zeros(a.shape[1])
        if keep:
            x[keep] = np.linalg.lstsq(a[:, keep], b, rcond=None)[0]
        if (x >= 0).all():
            return x
        keep.remove(int(np.argmin(x)))


def spec_of(size: str, seed: int) -> GenerateSpec:
    nodes, pending = (int(x) for x in size.split(":")[:2])
    if not pending:
        return GenerateSpec(nodes=nodes, seed=seed)
    return GenerateSpec(nodes=nodes, pods=2 * pending, pending_fraction=0.5, seed=seed)


def _cluster(size: str, seed: int, cache: str | None):  # type: ignore[no-untyped-def]
    """(state, config, greedy result, greedy mode's CPU seconds), from ``cache`` (a folder) when a
    previous run saved them there (greedy mode takes minutes at 5,000 nodes)."""
    path = os.path.join(cache, f"calibrate-{'_'.join(size.split(':')[:2])}-{seed}.pkl") if cache else None
    if path and os.path.exists(path):
        with open(path, "rb") as f:
            state, config, greedy, cpu = pickle.load(f)
        gc.collect()
        gc.freeze()  # as loading a cluster does (optisched.model.loader)
        return state, config, greedy, cpu
    cluster = cluster_from_objects(generate(spec_of(size, seed)))
    state = compile_cluster(cluster)
    config = cluster.config or default_config()
    cpu = time.process_time()
    greedy = GreedyScheduler(state, config, GreedyOptions(record=False)).run()
    cpu = time.process_time() - cpu
    if path:
        # optimal mode reads only greedy's placement (its snapshot's listeners do not pickle)
        lite = dataclasses.replace(greedy, snapshot=types.SimpleNamespace(node_of=greedy.snapshot.node_of), cycles=[])
        with open(path, "wb") as f:
            pickle.dump((state, config, lite, cpu), f, protocol=5)
    return state, config, greedy, cpu


def ledger_of(size: str, seed: int, limit: float, build_only: bool = False,
              cache: str | None = None) -> dict[str, dict[str, float]]:
    """One run's ledger, greedy mode's CPU time counted beside it as its own phase. The wall-clock safety
    net is off (a loaded machine would stop phases early): every phase runs its deterministic course."""
    state, config, greedy, cpu = _cluster(size, seed, cache)
    Clock.wall_left = lambda self: 1e9  # type: ignore[method-assign]
    r = solve_optimal(state, config, OptimalOptions(time_limit=limit, seed=seed), greedy=greedy, explain=not build_only)
    return {"greedy": {"cpu": cpu, "check": len(state.pending)}, **r.ledger}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", nargs="*", default=SIZES)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--limit", type=float, default=10.0)
    ap.add_argument("--build-only", action="store_true", help="skip the tiers (see above)")
    ap.add_argument("--cache", help="a folder keeping each size's cluster and greedy run between runs")
    a = ap.parse_args()
    if a.build_only:
        solve.solve_tiers = lambda *args, **kwargs: None  # type: ignore[assignment]
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    rows, cpu = [], []
    for size in a.sizes:
        parts = size.split(":")
        ledger = ledger_of(size, a.seed, float(parts[2]) if len(parts) > 2 else a.limit, a.build_only,
                           a.cache)
        totals = np.zeros(3)
        print(f"\n## {size} (nodes:pending)")
        print(f"{'phase':16s} {'cpu s':>7s} {'charged':>8s} {'solver cpu':>10s} {'solver det':>10s}  units")
        for phase, row in ledger.items():
            own = row.get("cpu", 0.0) - row.get("solver cpu", 0.0)
            units = {k: row[k] for k in KINDS if row.get(k)}
            print(f"{phase:16s} {row.get('cpu', 0):7.3f} {row.get('nominal', 0):8.3f} {row.get('solver cpu', 0):10.3f} "
                  f"{row.get('solver det', 0):10.3f}  " + ", ".join(f"{k} {int(v):,}" for k, v in units.items()),
                  flush=True)
            if phase != "greedy":
                totals += [row.get("nominal", 0.0), own, row.get("solver cpu", 0.0)]
            if units and own > 0.005:
                rows.append([units.get(k, 0.0) for k in KINDS])
                cpu.append(own)
        print(f"whole run (greedy aside): charged {totals[0]:.2f} nominal s; CPU {totals[1]:.2f} s outside the "
              f"solvers, {totals[2]:.2f} s in them")
    matrix, target = np.array(rows), np.array(cpu)
    weight = 1 / np.sqrt(target)  # each phase's relative error counts, not only the largest phases'
    costs = nnls(matrix * weight[:, None], target * weight)
    print("\nfitted costs (CPU seconds per unit):")
    for k, c in zip(KINDS, costs):
        print(f"    {k!r}: {c:.3g},  (now {WORK_COST[k]:.3g})")
    fit = matrix @ costs
    print("per phase, fitted / measured CPU: " + ", ".join(f"{f / t:.2f}" for f, t in zip(fit, target)))


if __name__ == "__main__":
    main()
