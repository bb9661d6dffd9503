"""Optimal preemption on a full 1,000-node cluster of mixed-priority pods.

The cluster: an ``optisched generate`` cluster (seed 1, load 1.1) after greedy mode has placed what it
could, so every node is as full as kube-scheduler leaves it, with pods of all four priority classes.

* **Single pod**: ``--preemptors`` pending pods promoted to the ``critical`` class, each answered alone
  by :func:`optisched.optimal.eviction.minimal.minimal_victims` (CP-SAT over every node; target under 2 s;
  the time includes kube-scheduler's own answer, which it starts from). Baseline in the same run:
  kube-scheduler's DefaultPreemption for the same pod on the same cluster (one greedy cycle with its
  PostFilter). Reported: both times, both victim keys, the tiers' status.
* **Batch**: ``--batch`` pending pods (the rest of the queue left out; a quarter of them promoted to
  ``critical``) placed by optimal mode with preemption (target under 60 s, gap reported). Baseline:
  greedy mode on the same batch.

    python benchmarks/bench_preempt.py
    python benchmarks/bench_preempt.py --nodes 200 --batch 50
"""
from __future__ import annotations

import argparse
import copy
import resource
import time

import numpy as np

from optisched.datasets.generate import GenerateSpec, generate
from optisched.greedy.scheduler import GreedyOptions, GreedyScheduler
from optisched.model.loader import cluster_from_objects
from optisched.model.state import compile_cluster
from optisched.optimal.eviction.minimal import SHIFT, minimal_victims, single_pod_state
from optisched.optimal.solve import OptimalOptions, solve_optimal
from optisched.plans.plan import batch_preemptions
from optisched.preemption.made import preemptions
from optisched.profile import default_config


def full_cluster(nodes: int, seed: int, load: float = 1.1, pods: int | None = None, memory: int = 1) -> list[dict]:
    """Generated objects (``pods`` pods, 20 per node by default; node memory times ``memory``) with greedy
    mode's placement applied: placed pods bound, the rest pending."""
    objs = generate(GenerateSpec(nodes=nodes, pods=pods or 20 * nodes, pending_fraction=0.5, load=load, seed=seed))
    for o in objs:
        if o.get("kind") == "Node" and memory != 1:
            for part in ("capacity", "allocatable"):
                value = o["status"][part]["memory"]
                unit = value.lstrip("0123456789")
                o["status"][part]["memory"] = f"{int(value[:len(value) - len(unit)]) * memory}{unit}"
    state = compile_cluster(cluster_from_objects(objs))
    node_of = GreedyScheduler(state, default_config(), GreedyOptions(record=False)).run().snapshot.node_of
    out = []
    for o in objs:
        if o.get("kind") != "Pod":
            out.append(o)
            continue
        row = state.pod_index[f"{o['metadata'].get('namespace', 'default')}/{o['metadata']['name']}"]
        o = copy.deepcopy(o)
        if node_of[row] >= 0:
            o["spec"]["nodeName"] = state.node_names[int(node_of[row])]
            o["status"] = {"phase": "Running", "startTime": o["metadata"]["creationTimestamp"]}
        else:
            o["spec"].pop("nodeName", None)
            o["status"] = {"phase": "Pending"}
        out.append(o)
    return out


def key_text(key: tuple | None) -> str:
    if key is None:
        return "none"
    return f"pdb {key[0]}, highest {key[1] if key[3] else '-'}, sum {key[2] - key[3] * SHIFT}, victims {key[3]}"


def single(objs: list[dict], count: int, limit: float) -> None:
    pending = [i for i, o in enumerate(objs) if o.get("kind") == "Pod" and "nodeName" not in o["spec"]
               and o["spec"].get("priorityClassName") != "critical"]
    rng = np.random.default_rng(0)
    chosen = sorted(rng.choice(pending, size=min(count, len(pending)), replace=False).tolist())
    objs = copy.deepcopy(objs)
    for i in chosen:
        objs[i]["spec"]["priorityClassName"] = "critical"
        objs[i]["spec"].pop("priority", None)
    state = compile_cluster(cluster_from_objects(objs))
    config = default_config()
    bound = int((state.pod_node >= 0).sum())
    print(f"## single pod: {state.num_nodes} nodes, {bound} bound pods, {count} preemptors (priority 100000), "
          f"limit {limit:.0f} s")
    times, base_times = [], []
    for i in chosen:
        key = f"{objs[i]['metadata'].get('namespace', 'default')}/{objs[i]['metadata']['name']}"
        t = time.perf_counter()
        sub = single_pod_state(state, key)
        sched = GreedyScheduler(sub, config, GreedyOptions(requeue=False))
        result = sched.run()
        plan = preemptions(result, sched.pdbs, key)
        t_greedy = time.perf_counter() - t
        t = time.perf_counter()
        m = minimal_victims(state, config, key, time_limit=limit)
        t_opt = time.perf_counter() - t
        times.append(t_opt)
        base_times.append(t_greedy)
        greedy_victims = len(plan[0].victims) if plan else 0
        print(f"   {key:32s} optimal {t_opt:5.2f} s ({m.status}, {m.node}, {key_text(m.key)}, "
              f"{len(m.violations)} violations) | kube {t_greedy:5.2f} s "
              f"({plan[0].node if plan else '-'}, {greedy_victims} victims, {key_text(m.greedy_key)}) "
              f"| ratio {t_opt / t_greedy:.1f}x")
    print(f"   max optimal {max(times):.2f} s, mean {np.mean(times):.2f} s; mean kube {np.mean(base_times):.2f} s")


def batch(objs: list[dict], size: int, limit: float) -> None:
    pending = [i for i, o in enumerate(objs) if o.get("kind") == "Pod" and "nodeName" not in o["spec"]]
    rng = np.random.default_rng(1)
    keep = sorted(rng.choice(pending, size=min(size, len(pending)), replace=False).tolist())
    objs = copy.deepcopy(objs)
    for i in keep[::4]:  # a quarter of the batch may preempt everyone else
        objs[i]["spec"]["priorityClassName"] = "critical"
        objs[i]["spec"].pop("priority", None)
    wanted = set(keep)
    objs = [o for i, o in enumerate(objs) if i not in pending or i in wanted]
    state = compile_cluster(cluster_from_objects(objs))
    config = default_config()
    t = time.perf_counter()
    greedy = GreedyScheduler(state, config, GreedyOptions(record=False)).run()
    t_greedy = time.perf_counter() - t
    t = time.perf_counter()
    r = solve_optimal(state, config, OptimalOptions(time_limit=limit, workers=2), greedy=greedy)
    t_opt = time.perf_counter() - t
    plan = batch_preemptions(r)
    ev, mv = sum(b.evictions for b in plan), sum(b.moves for b in plan)
    greedy_evicted = int(((state.pod_node >= 0) & (greedy.snapshot.node_of < 0)).sum())
    print(f"## batch: {len(state.pending)} pending on {state.num_nodes} nodes: optimal {t_opt:.1f} s of {limit:.0f} s "
          f"(greedy {t_greedy:.1f} s), status {r.certificate.status}, {ev} evictions + {mv} moves "
          f"(greedy: {greedy_evicted} evictions), violations {len(r.violations)}")
    for tier in r.certificate.tiers:
        print(f"   {tier.name:26s} greedy {tier.greedy!s:>10} -> {tier.objective:>10} bound {tier.bound:>10} "
              f"gap {100 * tier.gap:6.2f}% {tier.status}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--preemptors", type=int, default=5, help="single-pod preemptors (0: skip)")
    ap.add_argument("--batch", type=int, default=200, help="pending pods of the batch (0: skip)")
    ap.add_argument("--single-limit", type=float, default=10.0)
    ap.add_argument("--batch-limit", type=float, default=50.0, help="optimal mode time limit (target: answer in 60 s)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    t = time.perf_counter()
    objs = full_cluster(args.nodes, args.seed)
    print(f"cluster built in {time.perf_counter() - t:.1f} s")
    if args.preemptors:
        single(objs, args.preemptors, args.single_limit)
    if args.batch:
        batch(objs, args.batch, args.batch_limit)
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
