"""Seeded drifted clusters of the shape a reschedule is tried on: every node with a DaemonSet node agent,
ReplicaSet-owned pods filling each used node to 15-60 % of its cpu, some nodes empty already, one
PodDisruptionBudget, a bare pod and an emptyDir pod; optionally a NoSchedule taint added after the pods
started (pods there no longer tolerated) and required hostname anti-affinity planted on one app whose
replicas already share nodes."""
from __future__ import annotations

import random

from builders import node, pod

APPS = [("web", 500, "1Gi"), ("api", 1000, "2Gi"), ("worker", 1500, "1Gi"), ("cache", 250, "512Mi"),
        ("batch", 2000, "2Gi")] + [(f"svc{i}", (250, 500, 750, 1000)[i % 4], "1Gi") for i in range(12)]
SIZES = [(4, "16Gi"), (8, "32Gi"), (16, "64Gi")]


def _owned(p, kind: str, name: str):  # type: ignore[no-untyped-def]
    return p.set("metadata.ownerReferences", [{"apiVersion": "apps/v1", "kind": kind, "name": name,
                                               "uid": f"{kind}-{name}", "controller": True}])


def drifted(nodes: int, seed: int = 0, empty: int = 0, pdb: str | None = "1", taint: int = 0,
            anti: bool = False, bare: bool = True, pending: int = 0, pdb_all: bool = False,
            small: bool = False) -> list[dict]:
    """The objects (see the module docstring). ``empty``: nodes holding only their agent; ``pdb``: the
    budget's ``maxUnavailable`` over ``web`` (``pdb_all``: over every app; a count or a percent; None: no
    budget); the empty nodes are of the largest size (``small``: the others of the smallest, so the best
    consolidation opens an empty node); ``taint``: nodes
    tainted ``maintenance=soon:NoSchedule``; ``anti``: ``api`` gets required hostname anti-affinity, and
    every other used node two such replicas; ``pending``: pods of 3 to 6 cpu waiting for a node."""
    rng = random.Random(seed)
    objs: list[dict] = []
    free: list[int] = []
    for i in range(nodes):
        cpu, mem = (SIZES[0] if small else SIZES[rng.randrange(len(SIZES))]) if i < nodes - empty else SIZES[-1]
        n = node(f"node-{i:03d}", cpu=str(cpu), memory=mem).zone(f"z{i % 3}")
        if 2 <= i < 2 + taint:
            n = n.taint("maintenance", "soon")
        objs.append(n.build())
        objs.append(_owned(pod(f"agent-{i:03d}", "kube-system").req(cpu="100m", memory="128Mi"),
                           "DaemonSet", "node-agent").label(app="node-agent").on(f"node-{i:03d}").build())
        free.append(cpu * 1000 - 100)
    used = [i for i in range(nodes) if i >= nodes - empty] if empty else []
    count = 0
    for i in range(nodes):
        if i in used:
            continue
        goal = max(int(rng.uniform(0.15, 0.6) * (free[i] + 100)), 250)
        filled = 0
        here: set[str] = set()
        while True:
            app, cpu, mem = APPS[rng.randrange(len(APPS))]
            if app in here:  # a replica beside another of its owner now and then, not everywhere
                app, cpu, mem = APPS[rng.randrange(len(APPS))]
            if filled + cpu > goal:
                break
            here.add(app)
            p = _owned(pod(f"{app}-{count}").req(cpu=f"{cpu}m", memory=mem).label(app=app), "ReplicaSet", app)
            if anti and app == "api":
                p = p.apart("api")
            objs.append(p.on(f"node-{i:03d}").build())
            filled += cpu
            count += 1
        if anti and i % 2 == 0:  # two anti-affine replicas sharing the node: both break the rule
            for _ in range(2):
                p = _owned(pod(f"api-{count}").req(cpu="250m", memory="1Gi").label(app="api"), "ReplicaSet", "api")
                objs.append(p.apart("api").on(f"node-{i:03d}").build())
                count += 1
    for j in range(pending):
        p = _owned(pod(f"big-{j}").req(cpu=f"{rng.randrange(3, 7)}", memory="2Gi").label(app="big"), "ReplicaSet",
                   "big")
        objs.append(p.build())
    every = {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["node-agent"]}]}
    if pdb is not None:
        value: int | str = pdb if pdb.endswith("%") else int(pdb)
        objs.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                     "metadata": {"name": "web", "namespace": "default"},
                     "spec": {"selector": every if pdb_all else {"matchLabels": {"app": "web"}},
                              "maxUnavailable": value}})
    if bare and nodes > 1:
        objs.append(pod("debug-shell").req(cpu="100m").on("node-000").build())
        p = _owned(pod("scratch-0").req(cpu="250m").label(app="scratch"), "ReplicaSet", "scratch")
        p["spec"]["volumes"] = [{"name": "tmp", "emptyDir": {}}]
        objs.append(p.on(f"node-{1:03d}").build())
    return objs
