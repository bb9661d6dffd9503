"""Topology-spread skew of a placement, per workload constraint.

For every distinct ``topologySpreadConstraint`` the input's pods carry (both ``DoNotSchedule`` and
``ScheduleAnyway``; the profile's system defaults are not counted, they are a scoring preference),
the matching pods a placement puts in each domain, and the skew ``max - min`` over the constraint's
eligible domains, as PodTopologySpread defines them (``podtopologyspread/common.go``): the values of
the topology key on nodes that carry every key of the pod's constraints and pass the constraint's
node inclusion policies, judged for the first pod that carries the constraint. Matching pods are the
placed, non-terminating pods of the constraint's namespace whose labels its selector matches. With
fewer domains than ``minDomains`` the minimum counts as 0, as the filter takes it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.snapshot import Snapshot
from ..model.state import ClusterState
from ..plugins.podtopologyspread.common import (
    DO_NOT_SCHEDULE,
    SCHEDULE_ANYWAY,
    NodeEligibility,
    SpreadConstraint,
    resolve_constraints,
)

__all__ = ["SpreadDomains", "domain_counts", "spread_constraints", "spread_skew"]


@dataclass(frozen=True)
class SpreadDomains:
    """One workload constraint: who carries it, which nodes count, how its domains are named."""

    name: str  # "namespace/app=web zone maxSkew=1 DoNotSchedule"
    namespace: str
    constraint: SpreadConstraint
    action: str
    pods: tuple[int, ...]  # rows of the pods that carry it
    codes: np.ndarray  # int32 [N]: domain code of each node (-1 = no value)
    counted: np.ndarray  # bool [N]: nodes whose pods count
    domains: tuple[str, ...]  # code -> domain value
    matching: np.ndarray  # bool [P]: pods the constraint counts wherever they are placed


def _selector_text(c: SpreadConstraint) -> str:
    if c.selector.labels is None:
        return "<none>"
    parts = [f"{k}={v}" for k, v in sorted(c.selector.labels)]
    parts += [f"{k} {op} ({','.join(sorted(vals))})" for k, op, vals in c.selector.exprs]
    return ",".join(parts) or "<all>"


def _short_key(key: str) -> str:
    return {"topology.kubernetes.io/zone": "zone", "kubernetes.io/hostname": "hostname",
            "topology.kubernetes.io/region": "region"}.get(key, key)


def spread_constraints(state: ClusterState) -> list[SpreadDomains]:
    """The distinct spread constraints of the input's pods, in the order pods first carry them."""
    snapshot = Snapshot(state, with_bound=False)
    found: dict[tuple, SpreadDomains] = {}
    carriers: dict[tuple, list[int]] = {}
    for row, pod in enumerate(state.pods):
        if not pod.spec.topology_spread_constraints:
            continue
        ns = pod.metadata.namespace or "default"
        parsed = [(c, a) for a in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY) for c in resolve_constraints(snapshot, pod, (), a)]
        elig: NodeEligibility | None = None
        for c, action in parsed:
            key = (ns, c, action)
            if key not in found:
                if elig is None:
                    elig = NodeEligibility(state, pod, [c for c, _ in parsed])
                col = state.label(c.topology_key)
                name = f"{ns}/{_selector_text(c)} {_short_key(c.topology_key)} maxSkew={c.max_skew} {action}"
                taken = sum(1 for d in found.values() if d.name == name or d.name.startswith(name + " #"))
                if taken:  # same text, other minDomains or inclusion policies: names stay unique
                    name = f"{name} #{taken + 1}"
                found[key] = SpreadDomains(name, ns, c, action, (), col.codes, elig.counted(c), col.values,
                                           np.zeros(0, dtype=bool))
                carriers[key] = []
            carriers[key].append(row)
    return [SpreadDomains(d.name, d.namespace, d.constraint, d.action, tuple(carriers[k]), d.codes, d.counted,
                          d.domains, _matching(state, d.namespace, d.constraint)) for k, d in found.items()]


def _matching(state: ClusterState, namespace: str, c: SpreadConstraint) -> np.ndarray:
    out = np.zeros(len(state.pods), dtype=bool)
    if c.selector.empty or c.selector.nothing:  # countPodsMatchSelector: an empty selector counts nothing
        return out
    by_ns, by_pair = _label_index(state)
    pool = by_ns.get(namespace, []) if not c.selector.labels else \
        by_pair.get((namespace, *min(c.selector.labels)), [])  # a match carries every matchLabels pair
    pods = state.pods
    for p in pool:
        out[p] = c.selector.matches(pods[p].metadata.labels)
    return out


def _label_index(state: ClusterState) -> tuple[dict[str, list[int]], dict[tuple[str, str, str], list[int]]]:
    """Live pods by namespace and by (namespace, label key, value); built once per cluster state."""
    hit = state.__dict__.get("_spread_label_index")
    if hit is None:
        by_ns: dict[str, list[int]] = {}
        by_pair: dict[tuple[str, str, str], list[int]] = {}
        for i, p in enumerate(state.pods):
            if p.metadata.deletion_timestamp is not None:
                continue
            ns = p.metadata.namespace or "default"
            by_ns.setdefault(ns, []).append(i)
            for k, v in p.metadata.labels.items():
                by_pair.setdefault((ns, k, v), []).append(i)
        hit = state.__dict__["_spread_label_index"] = (by_ns, by_pair)
    return hit


def domain_counts(state: ClusterState, node_of: np.ndarray, sd: SpreadDomains) -> tuple[list[str], np.ndarray]:
    """The constraint's eligible domains (sorted by name) and the matching placed pods in each."""
    node_of = np.asarray(node_of, dtype=np.int64)
    present = np.unique(sd.codes[sd.counted & (sd.codes >= 0)])
    counted_pods = sd.matching & (node_of >= 0)
    per_node = np.bincount(node_of[counted_pods], minlength=state.num_nodes)
    ok = sd.counted & (sd.codes >= 0)
    totals = np.bincount(sd.codes[ok], weights=per_node[ok], minlength=len(sd.domains)).astype(np.int64)
    order = sorted(present.tolist(), key=lambda c: sd.domains[c])
    return [sd.domains[c] for c in order], totals[order]


def spread_skew(state: ClusterState, node_of: np.ndarray, sd: SpreadDomains) -> int:
    """``max - min`` matching pods over the eligible domains (min 0 below ``minDomains``); 0 without domains."""
    _, counts = domain_counts(state, node_of, sd)
    if not len(counts):
        return 0
    low = 0 if len(counts) < sd.constraint.min_domains else int(counts.min())
    return int(counts.max()) - low
