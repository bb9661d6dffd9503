"""Independent parts of a batch, solved as separate models.

Two classes share a constraint when they may use the same node (resources, host ports, preemption) or
when one's hard topology spread or required (anti-)affinity selector matches the other's pods. The
connected components of that graph (networkx, over class and node vertices) share no hard constraint:
each is solved on its own, and the lexicographic optimum of the placement tiers is the union of the
components' optima. Score terms between components (preferred affinity towards pods of another
component) are left out of the score tier, which is a surrogate anyway. Components are then packed
into a few groups so that many tiny ones do not each pay for a model of their own.
"""
from __future__ import annotations

from dataclasses import replace

import networkx as nx
import numpy as np

from ..model.selectors import selector_of
from ..model.snapshot import Snapshot
from ..plugins.podtopologyspread.common import DO_NOT_SCHEDULE, resolve_constraints
from .classes import Batch, PodClass

__all__ = ["group_components", "sub_batch"]


def _selectors(snapshot: Snapshot, defaults: tuple[dict, ...], c: PodClass) -> list:
    pod = snapshot.state.pods[c.rep]
    # without matchLabelKeys' labels: a selector that matches at least what the rule's does, either gate
    out = [h.selector for h in resolve_constraints(snapshot, pod, defaults, DO_NOT_SCHEDULE, False)]
    aff = pod.spec.affinity
    for group in (aff.pod_affinity, aff.pod_anti_affinity) if aff else ():
        if group is not None:
            out += [selector_of(t.label_selector) for t in group.required_during_scheduling_ignored_during_execution]
    return out


def group_components(batch: Batch, usable: np.ndarray, candidates: dict[int, np.ndarray] | None,
                     snapshot: Snapshot, defaults: tuple[dict, ...], max_groups: int = 4) -> list[list[int]]:
    """Class indices per group; every group is a union of connected components."""
    g = nx.Graph()
    labels = [batch.state.pods[c.rep].metadata.labels for c in batch.classes]
    by_pair: dict[tuple[str, str], list[int]] = {}
    for i, lab in enumerate(labels):
        for pair in lab.items():
            by_pair.setdefault(pair, []).append(i)
    everyone = list(range(len(labels)))
    for c in batch.classes:
        g.add_node(("c", c.index))
        nodes = candidates[c.index] if candidates and c.index in candidates else np.flatnonzero(usable[c.index])
        g.add_edges_from((("c", c.index), ("n", int(n))) for n in nodes.tolist())
        g.add_edges_from((("c", c.index), ("n", int(n))) for n in c.running)
        for sel in _selectors(snapshot, defaults, c):
            if sel.nothing:
                continue
            pool = min((by_pair.get(pair, []) for pair in sel.labels), key=len) if sel.labels else everyone
            g.add_edges_from((("c", c.index), ("c", d)) for d in pool if d != c.index and sel.matches(labels[d]))
    parts = [sorted(i for kind, i in comp if kind == "c") for comp in nx.connected_components(g)]
    parts = [p for p in parts if p]
    weight = {i: int(np.count_nonzero(usable[i])) + 1 for i in range(len(batch.classes))}
    parts.sort(key=lambda p: -sum(weight[i] for i in p))
    groups: list[list[int]] = [[] for _ in range(min(max_groups, len(parts)))]
    loads = [0] * len(groups)
    for p in parts:  # largest first into the lightest group
        k = int(np.argmin(loads))
        groups[k] += p
        loads[k] += sum(weight[i] for i in p)
    return [sorted(grp) for grp in groups if grp]


def sub_batch(batch: Batch, indices: list[int]) -> tuple[Batch, list[int]]:
    """The batch of the classes ``indices`` (re-indexed from 0; the returned list maps back). Running
    pods of the other classes stay on their nodes, as fixed pods."""
    mine = set(indices)
    classes = [replace(batch.classes[i], index=k) for k, i in enumerate(indices)]
    class_of = np.full_like(batch.class_of, -1)
    fixed = batch.fixed.copy()
    for c in batch.classes:
        if c.index in mine:
            continue
        for pods in c.running.values():
            fixed[pods] = True
    for k, c in enumerate(classes):
        class_of[c.pending] = k
        for pods in c.running.values():
            class_of[pods] = k
    return Batch(batch.state, classes, fixed, batch.skipped, batch.movable, class_of), list(indices)
