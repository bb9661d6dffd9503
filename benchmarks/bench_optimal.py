"""Optimal mode on generated clusters: time, certificate and gap per placement tier, peak memory.

Each size runs greedy mode first (the in-run baseline: its pods placed per priority level and its
time), then optimal mode with the time limit of the issue's target, 2 CP-SAT workers. Reported:
placed per level (greedy → optimal), the bound and gap of each level, the *tier-1 gap* (the gap at the
highest priority level not proven optimal: lexicographic order is decided there), wall time against
the limit, and peak RSS.

    python benchmarks/bench_optimal.py                       # the three sizes, load 0.8 and 1.2
    python benchmarks/bench_optimal.py --sizes 200:2000:10 --loads 1.2
    python benchmarks/bench_optimal.py --sizes 200:2000:10 --curve 10 30 60 120 --plot curve.png

``--curve`` runs each size at several time limits instead of its own and plots, per size and load, the
pods placed at the tier-1 level against the limit, beside its bound and the value a given gap needs.
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


NO_BOUND = "no tier solved, no bound"


def tier1_gap(tiers) -> tuple[str, float | None]:  # type: ignore[no-untyped-def]
    """(the highest placement level not proven optimal, its gap); every level closed: gap 0; no placement
    tier at all (the run ended before one was solved, kube-scheduler's placement returned): gap None."""
    levels = [t for t in tiers if t.key.is_level]
    if not levels:
        return NO_BOUND, None
    for t in levels:
        if t.objective != t.bound:
            return t.name, t.gap
    return "all levels closed", 0.0


def gap_text(name: str, gap: float | None) -> str:
    return name if gap is None else f"{100 * gap:.2f}% ({name})"


def _cluster(nodes: int, pending: int, load: float, seed: int):  # type: ignore[no-untyped-def]
    objs = generate(GenerateSpec(nodes=nodes, pods=2 * pending, pending_fraction=0.5, load=load, seed=seed))
    state = compile_cluster(cluster_from_objects(objs))
    config = default_config()
    t = time.perf_counter()
    greedy = GreedyScheduler(state, config, GreedyOptions(record=False)).run()
    return state, config, greedy, time.perf_counter() - t


def run(nodes: int, pending: int, limit: float, load: float, seed: int) -> None:
    state, config, greedy, t_greedy = _cluster(nodes, pending, load, seed)
    t = time.perf_counter()
    r = solve_optimal(state, config, OptimalOptions(time_limit=limit, workers=2, seed=seed), greedy=greedy)
    t_opt = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    name, gap = tier1_gap(r.certificate.tiers)
    print(f"## {nodes} nodes, {len(state.pending)} pending, load {load}: optimal {t_opt:.1f} s of {limit:.0f} s "
          f"({t_opt / limit:.2f}x the limit; greedy {t_greedy:.1f} s), status {r.certificate.status}, "
          f"answer from the {r.certificate.source}, tier-1 gap {gap_text(name, gap)}, "
          f"violations {len(r.violations)}, peak RSS {peak:.0f} MiB")
    for tier in r.certificate.tiers:
        print(f"   {tier.name:26s} greedy {tier.greedy!s:>7} -> {tier.objective:>7} bound {tier.bound:>7} "
              f"gap {100 * tier.gap:6.2f}% {tier.status}")
    for note in r.certificate.notes:
        print(f"   note: {note}")


def curve(nodes: int, pending: int, load: float, seed: int, limits: list[float]) -> dict:
    """At each time limit (the same cluster and greedy run), the pods placed and the bound of one level:
    the tier-1 level of the longest run (shorter runs may not have closed the levels above it yet)."""
    state, config, greedy, _ = _cluster(nodes, pending, load, seed)
    runs = []
    for limit in sorted(limits):
        tiers = solve_optimal(state, config, OptimalOptions(time_limit=limit, workers=2, seed=seed),
                              greedy=greedy).certificate.tiers
        name, gap = tier1_gap(tiers)
        print(f"## {nodes} nodes, load {load}, {limit:g} s: tier-1 gap {gap_text(name, gap)}; " +
              ", ".join(f"{t.name} {t.objective}/{t.bound}" for t in tiers if t.key.is_level),
              flush=True)
        runs.append((limit, {t.name: t for t in tiers}))
    level = tier1_gap(runs[-1][1].values())[0]  # (no tier solved: no level, nothing plotted)
    got = [(limit, tiers[level]) for limit, tiers in runs if level in tiers]
    return {"title": f"{nodes} nodes, load {load}", "level": level, "limits": [lim for lim, _ in got],
            "placed": [t.objective for _, t in got], "bound": [t.bound for _, t in got],
            "greedy": got[0][1].greedy if got else None}


def plot_curves(curves: list[dict], path: str, gap: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(curves), figsize=(5.5 * len(curves), 4), squeeze=False)
    for ax, c in zip(axes[0], curves):
        if not c["limits"]:  # every level closed at the longest limit, or no tier solved
            ax.set_title(f"{c['title']}: {NO_BOUND if c['level'] == NO_BOUND else 'every level closed'}")
            continue
        ax.plot(c["limits"], c["placed"], "o-", label="placed (optimal mode)")
        ax.plot(c["limits"], c["bound"], "s--", color="black", label="bound (certificate)")
        ax.plot(c["limits"], [b * (1 - gap) for b in c["bound"]], ":", color="red",
                label=f"placed needed for a {100 * gap:g} % gap")
        ax.axhline(c["greedy"], color="grey", lw=1, label="greedy mode")
        ax.set_xscale("log")
        ax.minorticks_off()
        ax.set_xticks(c["limits"], [f"{v:g}" for v in c["limits"]])
        ax.set_xlabel("time limit (s)")
        ax.set_ylabel(f"pods placed, {c['level']}")
        ax.set_title(c["title"])
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"plot: {path}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", nargs="*", default=SIZES, help="nodes:pending:seconds")
    ap.add_argument("--loads", type=float, nargs="*", default=[0.8, 1.2])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--curve", type=float, nargs="*", help="time limits to run each size at (instead of its own)")
    ap.add_argument("--plot", default="optimal_curve.png", help="with --curve: where the plot goes")
    ap.add_argument("--gap", type=float, default=0.005, help="with --curve: the gap whose line is drawn")
    args = ap.parse_args()
    sizes = [(int(n), int(p), float(lim)) for n, p, lim in (size.split(":") for size in args.sizes)]
    if args.curve:
        curves = [curve(nodes, pending, load, args.seed, args.curve) for nodes, pending, _ in sizes
                  for load in args.loads]
        plot_curves(curves, args.plot, args.gap)
        return
    for nodes, pending, limit in sizes:
        for load in args.loads:
            run(nodes, pending, limit, load, args.seed)


if __name__ == "__main__":
    main()
