"""The cluster the rescheduling benchmark plans on: every pod running, where kube-scheduler put it.

An ``optisched generate`` cluster (load 0.35, node memory doubled: the generator's pods ask 2.3 GiB on
average, so 20 per node do not fit its nodes) with 25 % more pods than wanted, the pending ones placed
by greedy mode (``bench_preempt.full_cluster``); the pods greedy mode leaves pending are dropped,
and so are the running pods beyond ``pods`` (the last in input order), so the cluster holds exactly
``pods`` running pods and none pending. The generator binds half of its pods at random nodes, ignoring
affinity and spread, so the cluster has real violations for ``repair``; the dropped pods leave room for
``consolidate``. Building it takes minutes at 5,000 nodes: ``cache`` keeps the objects (pickle).
"""
from __future__ import annotations

import pickle
from pathlib import Path

from bench_preempt import full_cluster


def running_cluster(nodes: int, pods: int, seed: int, cache: Path | None = None) -> list[dict]:
    """The objects (see the module docstring), from ``cache`` when it holds them."""
    path = cache / f"reschedule-{nodes}-{pods}-{seed}.pkl" if cache is not None else None
    if path is not None and path.exists():
        return pickle.loads(path.read_bytes())
    objs = full_cluster(nodes, seed, load=0.35, pods=int(1.25 * pods), memory=2)
    out, running = [], 0
    for o in objs:
        if o.get("kind") == "Pod":
            if "nodeName" not in o["spec"] or running >= pods:
                continue
            running += 1
        out.append(o)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(pickle.dumps(out))
    return out
