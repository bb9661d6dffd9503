"""Nodes failing, one by one or a whole zone: what survives, what cannot be placed again, which budgets break.

A node that stops reporting gets the node lifecycle controller's ``node.kubernetes.io/unreachable`` taints,
NoSchedule and NoExecute (Kubernetes v1.35 ``pkg/controller/nodelifecycle/node_lifecycle_controller.go``);
taint-based eviction then deletes its pods (at once, or after their ``tolerationSeconds``, 300 s by the
DefaultTolerationSeconds admission plugin) — :mod:`.taint`. Pods that tolerate it for ever (DaemonSet
pods) stay bound to the dead node; bare pods are lost; each other pod's controller creates a replacement
that kube-scheduler places on what is left (greedy replay).

The failed nodes keep existing as Node objects, so topology spread still counts their domain: with
``nodeTaintsPolicy: Ignore`` (the default) the failed zone is a domain holding none of the replacements,
and a ``DoNotSchedule`` constraint whose other domains are already ``maxSkew`` above it keeps them pending.
The outcome names those constraints, from the scheduler's own FitError message for each pending pod.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..descheduler.run import replayed_cluster
from ..errors import InputError
from ..model.objects import Taint, TaintEffect
from ..model.state import ClusterState
from ..profile import SchedulerConfig
from .taint import optimal_replacements, taint_replay

__all__ = ["ZONE", "FailureOutcome", "run_failure", "zone_nodes"]

ZONE = "topology.kubernetes.io/zone"
UNREACHABLE = "node.kubernetes.io/unreachable"
SPREAD = "topology spread constraints"


@dataclass(frozen=True)
class FailureOutcome:
    failed: list[str]  # node names
    timeline: dict[int, list[str]]  # seconds after the failure -> pods deleted then
    landed: dict[str, str | None]  # replacement -> node (None: pending)
    lost: list[str]  # deleted pods nothing re-creates (no controller)
    pending: dict[str, str]  # replacement -> why kube-scheduler cannot place it
    blocking_spread: dict[str, list[str]]  # pending replacement -> its DoNotSchedule spread constraints
    broken_budgets: dict[str, int]
    capacity: dict[str, dict[str, int]]  # resource -> {allocatable, requested, free} on the surviving nodes
    optimal: dict[str, str | None] = field(default_factory=dict)  # optimal mode's best re-placement

    def to_dict(self) -> dict:
        return {"failed": self.failed,
                "timeline": [{"afterSeconds": s, "deleted": pods} for s, pods in sorted(self.timeline.items())],
                "landing": self.landed, "lost": self.lost, "pending": self.pending,
                "blockingSpread": self.blocking_spread, "brokenBudgets": self.broken_budgets,
                "capacityLeft": self.capacity, "optimal": self.optimal}


def zone_nodes(state: ClusterState, zone: str, key: str = ZONE) -> list[str]:
    """The nodes whose ``key`` label is ``zone``; an error when there are none."""
    col = state.label(key)
    hit = col.isin([zone])
    if not hit.any():
        known = sorted({str(v) for v in (state.nodes[n].metadata.labels.get(key) for n in range(state.num_nodes))
                        if v is not None})
        raise InputError(f"no node has {key}={zone}; zones: {', '.join(known) or '(none)'}", path="--fail-zone")
    return [state.node_names[n] for n in np.flatnonzero(hit).tolist()]


def _capacity(state: ClusterState, alive: np.ndarray) -> dict[str, dict[str, int]]:
    bound = (state.pod_node >= 0)
    on_alive = bound.copy()
    on_alive[bound] = alive[state.pod_node[bound]]
    out = {}
    for j, r in enumerate(state.resources):
        cap = int(state.allocatable[alive, j].sum())
        used = int(state.pod_requests[on_alive, j].sum())
        out[r] = {"allocatable": cap, "requested": used, "free": cap - used}
    return out


def _constraints(state: ClusterState, key: str) -> list[str]:
    pod = state.pods[state.pod_index[key]]
    return [f"{c.topology_key} maxSkew {c.max_skew}" for c in pod.spec.topology_spread_constraints
            if c.when_unsatisfiable == "DoNotSchedule"]


def run_failure(state: ClusterState, config: SchedulerConfig, nodes: list[str],
                optimal: bool = False) -> FailureOutcome:
    """``nodes`` fail together (see the module docstring); with ``optimal``, optimal mode's best
    re-placement of the replacements beside the replay's."""
    taints = (Taint(key=UNREACHABLE, effect=TaintEffect.NO_EXECUTE), Taint(key=UNREACHABLE, effect=TaintEffect.NO_SCHEDULE))
    r = taint_replay(state, config, nodes, taints[0], taints[1:])
    keys = [state.pods[p].key for p in r.gone]
    lost = [k for p, k in zip(r.gone, keys) if not state.pods[p].metadata.owner_references]
    landed = {k: (r.landing.landed.get(k) if r.landing else None) for k in keys if k not in set(lost)}
    pending: dict[str, str] = {}
    if r.landing is not None:
        replay = r.landing.replay
        for row, why in replay.unschedulable.items():
            k = replay.state.pods[row].key
            if k in landed and landed[k] is None:
                pending[k] = why
    blocking = {k: _constraints(state, k) for k, why in pending.items() if SPREAD in why}
    after = replayed_cluster(r.landing.replay) if r.landing is not None else r.tainted
    alive = np.ones(after.num_nodes, dtype=bool)
    alive[[after.node_index[n] for n in nodes]] = False
    best = optimal_replacements(r, config) if optimal and r.gone else {}
    return FailureOutcome(list(nodes), r.timeline, landed, lost, pending, blocking, r.broken_budgets,
                          _capacity(after, alive), best)
