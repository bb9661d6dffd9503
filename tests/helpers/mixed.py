"""Small random clusters where every rule meets every other across priorities.

``optisched generate`` keeps a workload's pods at one priority and its affinity terms on its own app,
so a preemptor never evicts a pod its (anti-)affinity or spread constraints count. These clusters do:
a few shared labels, bound pods of mixed priorities carrying required anti-affinity towards them,
pending pods with required affinity, anti-affinity and spread constraints over the same labels, PDBs,
host ports, equal start times and tight pod limits.
"""
from __future__ import annotations

import copy
import random
from typing import Any

from builders import node, pod

TIERS = ("web", "db", "cache")
KEYS = ("kubernetes.io/hostname", "topology.kubernetes.io/zone")


def _term(rng: random.Random) -> dict[str, Any]:
    return {"topologyKey": rng.choice(KEYS), "labelSelector": {"matchLabels": {"tier": rng.choice(TIERS)}}}


def _affinity(rng: random.Random, chance: float) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if rng.random() < chance:
        out["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [_term(rng)]}
    if rng.random() < chance / 2:
        out["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [_term(rng)]}
    return out


def _pod(rng: random.Random, name: str, stamp: str, pending: bool) -> dict:
    p = pod(name).req(cpu=f"{rng.choice([200, 400, 700, 1000])}m", memory=f"{rng.choice([256, 512, 1024])}Mi")
    p.label(tier=rng.choice(TIERS), team=rng.choice("ab")).priority(rng.choice([0, 5, 10, 20] if pending else [0, 5, 10]))
    p.set("metadata.creationTimestamp", stamp)
    aff = _affinity(rng, 0.35 if pending else 0.25)
    if aff:
        p.set("spec.affinity", aff)
    if pending and rng.random() < 0.3:
        c = {"maxSkew": 1, "topologyKey": rng.choice(KEYS), "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchLabels": {"tier": rng.choice(TIERS)}}}
        if rng.random() < 0.3:
            c["minDomains"] = 3
        p.set("spec.topologySpreadConstraints", [c])
    if rng.random() < 0.08:
        p.set("spec.containers", [{**p["spec"]["containers"][0], "ports": [{"containerPort": 80, "hostPort": 8080}]}])
    if pending and rng.random() < 0.1:
        p.set("spec.preemptionPolicy", "Never")
    return p


def mixed_cluster(seed: int, twins: bool = False) -> list[dict]:
    """Nodes in three zones (one without a zone label), bound and pending pods, PDBs on the tiers.
    With ``twins``, every pending pod has a copy under another name (the same shape, queued next to it)."""
    rng = random.Random(seed)
    nodes = []
    for i in range(rng.randint(5, 12)):
        n = node(f"n{i:02d}", cpu=rng.choice(["2", "4"]), memory="8Gi", pods=rng.choice(["4", "6", "110"]))
        if i % 7 != 6:
            n.zone("abc"[i % 3])
        nodes.append(n)
    stamps = ["2025-01-01T00:00:00Z", "2025-01-01T00:00:01Z"]  # few distinct times: start-time ties
    objs: list[dict] = [*nodes]
    for i in range(rng.randint(10, 30)):
        p = _pod(rng, f"b{i:02d}", rng.choice(stamps), pending=False).on(rng.choice(nodes)["metadata"]["name"])
        p["status"]["startTime"] = p["metadata"]["creationTimestamp"]
        objs.append(p)
    for i in range(rng.randint(8, 25)):
        objs.append(_pod(rng, f"p{i:02d}", rng.choice(stamps), pending=True))
        if twins:
            twin = copy.deepcopy(objs[-1])
            twin["metadata"]["name"] = f"p{i:02d}-twin"
            objs.append(twin)
    for tier in TIERS:
        if rng.random() < 0.6:
            objs.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                         "metadata": {"name": tier, "namespace": "default"},
                         "spec": {"maxUnavailable": rng.choice([0, 1]), "selector": {"matchLabels": {"tier": tier}}}})
    return [dict(o) for o in objs]
