"""A NoExecute taint added to nodes (taint-based eviction, or a node failing): who leaves and when.

Kubernetes v1.35 ``pkg/controller/tainteviction/taint_eviction.go``: a pod on a node with a NoExecute taint
it does not tolerate is deleted at once; a pod whose matching tolerations all carry ``tolerationSeconds`` is
deleted after the smallest of them (``getMinTolerationTime``); one tolerating it without a limit stays.
Taint-based eviction deletes pods directly, so PodDisruptionBudgets are not honoured: the outcome lists the
budgets the deletions break. The replacements are placed by greedy mode on the tainted cluster.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..errors import InputError
from ..model.objects import Taint, TaintEffect
from ..model.state import ClusterState, compile_cluster
from ..optimal.solve import OptimalOptions, solve_optimal
from ..plans.landing import Landing, predict_landing
from ..preemption.pdb import PDBLedger
from ..profile import SchedulerConfig

__all__ = ["TaintOutcome", "TaintReplay", "optimal_replacements", "parse_taint", "run_taint", "taint_replay"]


def parse_taint(text: str) -> Taint:
    """``key[=value]:NoExecute`` as kubectl taint writes it."""
    head, sep, effect = text.rpartition(":")
    key, _, value = head.partition("=")
    if not sep or not key or effect != "NoExecute":
        raise InputError(f"--taint: {text!r} is not key[=value]:NoExecute")
    return Taint(key=key, value=value, effect=TaintEffect.NO_EXECUTE)


@dataclass(frozen=True)
class TaintOutcome:
    timeline: dict[int, list[str]]  # seconds after the taint -> pods deleted then
    landed: dict[str, str | None]
    broken_budgets: dict[str, int]  # PDB -> disruptions beyond what it allows
    optimal: dict[str, str | None] = field(default_factory=dict)  # optimal mode's best re-placement

    def to_dict(self) -> dict:
        return {"timeline": [{"afterSeconds": s, "evicted": pods} for s, pods in sorted(self.timeline.items())],
                "landing": self.landed, "brokenBudgets": self.broken_budgets, "optimal": self.optimal}


def _eviction_time(state: ClusterState, p: int, taint: Taint) -> int | None:
    """Seconds until the pod is deleted, None if it stays."""
    matching = [t for t in state.pods[p].spec.tolerations if t.tolerates(taint)]
    if not matching:
        return 0
    if any(t.toleration_seconds is None for t in matching):
        return None
    return max(0, min(int(t.toleration_seconds or 0) for t in matching))


@dataclass(frozen=True)
class TaintReplay:
    """What :func:`taint_replay` found: the deleted pods (rows), when, and the replay after."""

    gone: list[int]
    timeline: dict[int, list[str]]
    broken_budgets: dict[str, int]
    landing: Landing | None  # None when nothing was deleted
    tainted: ClusterState


def taint_replay(state: ClusterState, config: SchedulerConfig, nodes: list[str], taint: Taint,
                 also: tuple[Taint, ...] = ()) -> TaintReplay:
    """Taint ``nodes`` with ``taint`` (and ``also``, taints that evict nothing), delete the pods the
    NoExecute taint evicts, and replay kube-scheduler on the tainted cluster."""
    for n in nodes:
        if n not in state.node_index:
            raise InputError(f"no node {n!r} in the cluster", obj=f"Node/{n}", path="--node")
    timeline: dict[int, list[str]] = {}
    gone = []
    for n in nodes:
        for p in np.nonzero(state.pod_node == state.node_index[n])[0].tolist():
            when = _eviction_time(state, p, taint)
            if when is not None:
                timeline.setdefault(when, []).append(state.pods[p].key)
                gone.append(p)
    ledger = PDBLedger(state, (state.pod_node >= 0).tolist())
    spent = [0] * len(ledger.allowed)
    for p in gone:
        for b in ledger.budgets_of(p):
            spent[b] += 1
    broken = {ledger.names[b]: spent[b] - a for b, a in enumerate(ledger.allowed) if spent[b] > a}
    added = [taint, *also]
    cluster = replace(state.cluster, nodes=[
        nd.model_copy(update={"spec": nd.spec.model_copy(update={"taints": [*nd.spec.taints, *added]})})
        if nd.metadata.name in nodes else nd for nd in state.cluster.nodes])
    tainted = compile_cluster(cluster)
    node_of = tainted.pod_node.copy()
    node_of[gone] = -1
    landing = predict_landing(tainted, config, node_of) if gone else None
    return TaintReplay(gone, timeline, broken, landing, tainted)


def optimal_replacements(r: TaintReplay, config: SchedulerConfig, time_limit: float = 10.0) -> dict[str, str | None]:
    """Optimal mode's best placement of the deleted pods' replacements on the tainted cluster (bare pods are
    gone; every other pod stays): what the best re-placement would be, beside the replay's."""
    gone = {r.tainted.pods[p].key for p in r.gone}
    pods = [p.model_copy(update={"spec": p.spec.model_copy(update={"node_name": None}),
                                 "status": p.status.without_resize()}) if p.key in gone else p
            for p in r.tainted.pods if p.key not in gone or p.metadata.owner_references]
    sub = compile_cluster(replace(r.tainted.cluster, pods=pods))
    placed = solve_optimal(sub, config, OptimalOptions(time_limit=time_limit)).placements()
    return {k: placed.get(k) for k in sorted(gone) if k in sub.pod_index}


def run_taint(state: ClusterState, config: SchedulerConfig, nodes: list[str], taint: Taint,
              optimal: bool = False) -> TaintOutcome:
    """Taint ``nodes`` and follow the deletions, then replay kube-scheduler on the tainted cluster (and,
    with ``optimal``, optimal mode's best re-placement)."""
    r = taint_replay(state, config, nodes, taint)
    landed = {state.pods[p].key: (r.landing.landed.get(state.pods[p].key) if r.landing else None) for p in r.gone}
    best = optimal_replacements(r, config) if optimal and r.gone else {}
    return TaintOutcome(r.timeline, landed, r.broken_budgets, best)
