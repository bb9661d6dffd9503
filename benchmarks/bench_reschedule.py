"""Rescheduling plans on a generated cluster of running pods: ``consolidate`` and ``repair``.

The cluster (:mod:`reschedule_cluster`): ``--pods`` running pods (20 per node by default) where
kube-scheduler put them, none pending; half were bound by the generator at random nodes, so the
cluster breaks node affinity and spread rules ``repair`` fixes. Per goal: the whole plan's time, the
target's (optimal mode, ``--time-limit``), the staging's (waves, one kube-scheduler replay per wave and
per re-plan), moves, waves (and whether the count is proven minimal), dropped moves, the nodes the plan
empties and the violations before and after it, the goal tier's value, bound and gap, whether the plan
reaches the goal against its target (the summary's reach line), and the peak memory of the process.
Baseline in the same run: one replay of the cluster with no eviction (what each wave costs at least).
``--cache DIR`` keeps the generated cluster.
``--staging-both`` stages each plan's target twice more, with greedy mode's setup kept live across the
replays and with each replay built afresh: the target differs from run to run on a loaded machine and
the staging's cost with it, so the two are compared on one target.

    python benchmarks/bench_reschedule.py --nodes 100
    python benchmarks/bench_reschedule.py --nodes 1000 --time-limit 120 --cache /tmp/bench
    python benchmarks/bench_reschedule.py --nodes 5000 --pods 50000 --time-limit 300 --cache /tmp/bench
    python benchmarks/bench_reschedule.py --nodes 100 --plans consolidate,repair repair,consolidate
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import time
from pathlib import Path

from reschedule_cluster import running_cluster

from optisched.model.loader import cluster_from_objects
from optisched.model.state import compile_cluster
from optisched.plans.landing import predict_landing
from optisched.profile import default_config
from optisched.reschedule import plan_reschedule, rounds
from optisched.reschedule.waves import stage


def row(state, config, goal: str, limit: float, seed: int, calls: list | None = None) -> dict:  # type: ignore[no-untyped-def]
    """One plan and what the table and the plot show of it; ``calls`` collects the staging's arguments."""
    spent = []

    def captured(*a, **kw):  # type: ignore[no-untyped-def]
        if calls is not None:
            calls.append((a, kw))
        t = time.perf_counter()
        try:
            return stage(*a, **kw)
        finally:
            spent.append(time.perf_counter() - t)

    rounds.stage = captured  # type: ignore[assignment]
    t0 = time.perf_counter()
    try:
        plan = plan_reschedule(state, config, goal, time_limit=limit, seed=seed)
    finally:
        rounds.stage = stage  # type: ignore[assignment]
    total = time.perf_counter() - t0
    tier = next((t for t in plan.certificate.tiers if t.key.objective is not None), None)
    return {"nodes": state.num_nodes, "pods": int((state.pod_node >= 0).sum()), "goal": goal, "limit": limit,
            "total": total, "target": plan.certificate.seconds, "staging": sum(spent),
            "replays": plan.staging.replays, "moves": plan.moves, "waves": len(plan.staging.waves),
            "minimal": plan.staging.minimal, "dropped": len(plan.staging.dropped),
            "goal_value": tier.objective if tier else None, "bound": tier.bound if tier else None,
            "gap": tier.gap if tier else None, "status": tier.status if tier else None,
            "emptied": len(plan.removable), "violations_before": sum(plan.before.violations.values()),
            "violations_after": sum(plan.after.violations.values()),
            "tiers": [[t.name, t.objective, t.bound] for t in plan.certificate.tiers if t.key.objective is not None],
            "starts": [n for n in plan.staging.notes if n.startswith("start")],
            "stagings": len(calls) if calls is not None else None, "reached": plan.reached,
            "reach": [r.line() for r in plan.reach],
            "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def staging_both(goal: str, call: tuple) -> list[str]:
    """The plan's staging again, on the same target: greedy mode's setup kept live across the replays,
    then each replay built afresh (the reference); replays run (answered again), wall and CPU seconds."""
    out = {}
    for name, incremental in (("live", True), ("afresh", False)):
        c0, t0 = time.perf_counter(), time.process_time()
        staging = stage(*call[0], **{**call[1], "incremental": incremental})
        out[name] = (staging, time.perf_counter() - c0, time.process_time() - t0)
    waves = {k: [[(m.key, m.target, m.predicted) for m in w.moves] for w in s.waves] for k, (s, _, _) in out.items()}
    return [f"| {goal} | {name} | {len(s.waves)} | {s.replays} ({s.reused}) | {wall:.1f} s | {cpu:.1f} s | "
            f"{waves['live'] == waves['afresh']} |" for name, (s, wall, cpu) in out.items()]


def line(r: dict) -> str:
    value = f"{r['goal_value']}, bound {r['bound']}, gap {100 * r['gap']:.1f} %, {r['status']}" \
        if r["goal_value"] is not None else "-"
    value += "".join(f"; {name[len('objective:'):]} {v} (bound {b})" for name, v, b in r.get("tiers", [])[1:])
    proven = {True: "minimal", False: "not proven minimal", None: "-"}[r["minimal"]]
    outcome = f"{r['emptied']} emptied, violations {r['violations_before']} -> {r['violations_after']}"
    reach = "; ".join(x.split(": ", 1)[1] for x in r.get("reach", []))
    return (f"| {r['goal']} | {r['total']:.1f} s | {r['target']:.1f} s | {r['staging']:.1f} s ({r['replays']}) | "
            f"{r['moves']} | {r['waves']} ({proven}) | {r['dropped']} | {outcome} | {value} | {reach} | "
            f"{r['peak_mib']:.0f} MiB |")


def plot(rows: list[dict], path: Path) -> None:
    """Per run, the plan's time split into the target, the staging (waves and replays) and the rest
    (violations and metrics before and after), against the time limit asked for."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = sorted(rows, key=lambda r: (r["nodes"], r["goal"]))
    fig, ax = plt.subplots(figsize=(8, 0.6 * len(rows) + 1.6))
    labels = [f"{r['nodes']} nodes / {r['pods']} pods, {r['goal']}" for r in rows]
    left = [0.0] * len(rows)
    for key, color in (("target", "tab:blue"), ("staging", "tab:orange"), ("rest", "tab:gray")):
        widths = [r["total"] - r["target"] - r["staging"] if key == "rest" else r[key] for r in rows]
        ax.barh(labels, widths, left=left, color=color, label=key)
        left = [a + b for a, b in zip(left, widths)]
    ax.scatter([r["limit"] for r in rows], labels, marker="|", s=400, color="black", label="time limit", zorder=3)
    ax.set_xlabel("seconds (2 cores)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=4, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--pods", type=int, default=None, help="running pods (default 20 per node)")
    ap.add_argument("--time-limit", type=float, default=30.0)
    ap.add_argument("--goals", default="consolidate,repair", help="one plan per goal named")
    ap.add_argument("--plans", nargs="+", default=None, metavar="GOAL[,GOAL]",
                    help="one plan per argument, each with its goals in the order given (lexicographic): "
                         "e.g. --plans consolidate repair consolidate,repair; instead of --goals")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cache", type=Path, default=None, help="keep the generated cluster here")
    ap.add_argument("--record", type=Path, default=None, help="append each row to this JSON-lines file")
    ap.add_argument("--plot", type=Path, default=None, help="draw every row of --record into this PNG")
    ap.add_argument("--staging-both", action="store_true",
                    help="stage each plan's target again, replays kept live and built afresh, and compare")
    args = ap.parse_args()
    objs = running_cluster(args.nodes, args.pods or 20 * args.nodes, args.seed, args.cache)
    state = compile_cluster(cluster_from_objects(objs))
    config = default_config()
    t0 = time.perf_counter()
    predict_landing(state, config, state.pod_node)
    base = time.perf_counter() - t0
    print(f"{args.nodes} nodes, {int((state.pod_node >= 0).sum())} running pods, time limit {args.time_limit:.0f} s; "
          f"one replay without evictions {base:.2f} s; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("| goal | total | target | waves (replays) | moves | waves | dropped | nodes emptied, violations | goal tier "
          "| goal reached against the target | peak RSS |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    both: list[str] = []
    for goal in args.plans or args.goals.split(","):
        calls: list = []
        r = row(state, config, goal, args.time_limit, args.seed, calls)
        print(line(r), flush=True)
        if args.record is not None:
            with args.record.open("a") as f:
                f.write(json.dumps(r) + "\n")
        if args.staging_both:
            both += staging_both(goal, calls[0])
    if both:
        print("\n| goal | replays | waves | replays run (answered again) | wall | CPU | same waves |\n"
              "|---|---|---|---|---|---|---|\n" + "\n".join(both))
        print(f"load average {os.getloadavg()[0]:.1f} at the end")
    if args.plot is not None and args.record is not None:
        plot([json.loads(x) for x in args.record.read_text().splitlines() if x.strip()], args.plot)


if __name__ == "__main__":
    main()
