"""CP-SAT building blocks the volume filters share: presence of a class on a node, pairwise exclusion
of conflicting disk mounts, one holder per ReadWriteOncePod claim, and unique volumes per node under a
driver's attach limit. Each rule module calls these from its ``encode_filter``."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from ortools.sat.python import cp_model

if TYPE_CHECKING:
    from ...optimal.classes import PodClass
    from ...optimal.model import BatchModel

__all__ = ["claim_at_most_one", "claim_matching", "disk_pairs_exclusive", "node_presence", "unique_within_limit"]

MAX_MATCHING_VARS = 200_000  # past this, the matching is left out (the re-check still holds)


def node_presence(model: BatchModel, c: PodClass) -> dict[int, tuple[cp_model.IntVar, bool]]:
    """Per node where class ``c`` may be at the end: (a boolean true whenever it is, the class may
    arrive there). Cached on the model."""
    cache = model.__dict__.setdefault("_volume_presence", {})
    hit = cache.get(c.index)
    if hit is not None:
        return hit
    cv = model.vars[c.index]
    arriving = set(cv.arr_nodes.tolist())
    terms: dict[int, list[tuple[cp_model.IntVar, int]]] = defaultdict(list)
    for n, v, u in cv.terms():
        terms[n].append((v, u))
    out = {}
    for n, ts in terms.items():
        b = model.cp.new_bool_var(f"vol{c.index}_{n}")
        expr, ub = model.total(ts)
        model.cp.add(expr <= ub * b)
        model.cp.add(expr >= b)
        out[n] = (b, n in arriving)
    cache[c.index] = out
    return out


def disk_pairs_exclusive(model: BatchModel, classes: list[PodClass], disks: list) -> None:
    """Two classes mounting one disk key, not both read-only, share no node the batch changes."""
    by_key: dict[tuple, list[tuple[PodClass, bool]]] = defaultdict(list)
    for c in classes:
        for key, ro in dict.fromkeys(disks[c.rep]):
            by_key[key].append((c, ro))
    for users in by_key.values():
        for i, (a, ro_a) in enumerate(users):
            for b, ro_b in users[i + 1:]:
                if a.index == b.index or (ro_a and ro_b):
                    continue
                pa, pb = node_presence(model, a), node_presence(model, b)
                for n in pa.keys() & pb.keys():
                    if pa[n][1] or pb[n][1]:
                        model.cp.add(pa[n][0] + pb[n][0] <= 1)


def claim_at_most_one(model: BatchModel, classes: list[PodClass], claims_of: Callable[[PodClass], list[str]]) -> None:
    """The pods using one ReadWriteOncePod claim hold at most one pod slot in the cluster (or as many as
    the input already ran)."""
    users: dict[str, list[PodClass]] = defaultdict(list)
    for c in classes:
        for k in dict.fromkeys(claims_of(c)):
            users[k].append(c)
    for group in users.values():
        terms = [v for c in group for _, v, _ in model.vars[c.index].terms()]
        if terms:
            model.cp.add(cp_model.LinearExpr.sum(terms) <= max(1, sum(c.running_count for c in group)))


def unique_within_limit(model: BatchModel, node: int, handles: dict[str, list[PodClass]], room: int,
                        when: cp_model.IntVar) -> None:
    """On ``node``: each volume handle used by a present class counts once; at most ``room`` of them
    once ``when`` holds (a pod arrives there: pods already running are not re-checked)."""
    used = []
    for h, group in handles.items():
        present = [node_presence(model, c).get(node) for c in group]
        flags = [p[0] for p in present if p is not None]
        if not flags:
            continue
        u = model.cp.new_bool_var(f"h{node}_{h}")
        for b in flags:
            model.cp.add_implication(b, u)
        used.append(u)
    if len(used) > room:
        model.cp.add(cp_model.LinearExpr.sum(used) <= max(room, 0)).only_enforce_if(when)


def claim_matching(model: BatchModel, claims: list) -> None:
    """``claims``: [class, [(PV name, node mask)], provisioning node mask] per delayed claim of a class.
    One PV or provisioning per claim, one claim per PV, arrivals only on nodes the choice admits."""
    if sum(len(cands) for _, cands, _ in claims) > MAX_MATCHING_VARS:
        return
    takers: dict[str, list[cp_model.IntVar]] = defaultdict(list)
    for i, (c, cands, prov) in enumerate(claims):
        cv = model.vars[c.index]
        if len(cv.arr_nodes) == 0:
            continue
        zs = [model.cp.new_bool_var(f"pv{i}_{j}") for j in range(len(cands))]
        p = model.cp.new_bool_var(f"prov{i}")
        model.cp.add(cp_model.LinearExpr.sum([*zs, p]) <= 1)
        for (name, _), z in zip(cands, zs):
            takers[name].append(z)
        fits = np.array([m[cv.arr_nodes] for _, m in cands], dtype=bool).reshape(len(cands), len(cv.arr_nodes))
        provisionable = prov[cv.arr_nodes]
        for k, (v, u) in enumerate(zip(cv.arr_vars, cv.arr_ub.tolist())):
            admit = [zs[j] for j in np.flatnonzero(fits[:, k]).tolist()] + ([p] if provisionable[k] else [])
            if not admit:
                model.cp.add(v == 0)
            else:
                model.cp.add(v <= u * cp_model.LinearExpr.sum(admit))
    for zs in takers.values():
        if len(zs) > 1:
            model.cp.add(cp_model.LinearExpr.sum(zs) <= 1)
