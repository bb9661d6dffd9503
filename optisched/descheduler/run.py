"""One descheduling cycle, its replay through kube-scheduler, and the cycle after it.

As the descheduler's ``runProfiles`` (kubernetes-sigs/descheduler v0.34.0 ``pkg/descheduler/descheduler.go``)
does: every profile's deschedule plugins run, then every profile's balance plugins, on the same snapshot,
with the policy's limits counted over the whole cycle. The evicted pods' replacements are then placed by
greedy mode (:func:`optisched.plans.landing.predict_landing`), and the same policy runs once more on
the result to count the evictions a second cycle would make.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime

import numpy as np

from ..greedy.scheduler import GreedyResult
from ..model.objects import PodStatus
from ..model.state import ClusterState, compile_cluster
from ..plans.landing import predict_landing
from ..profile import SchedulerConfig
from .context import Context
from .evictor import Evictor
from .policy import DeschedulerPolicy

__all__ = ["DeschedulerOutcome", "Eviction", "evictions_of", "replayed_cluster", "run_descheduler"]


@dataclass(frozen=True)
class Eviction:
    pod: str
    node: str
    strategy: str
    landed: str | None = None  # where its replacement lands (None: pending, or a bare pod that is gone)


@dataclass(frozen=True)
class DeschedulerOutcome:
    evictions: tuple[Eviction, ...]
    loops: tuple[str, ...]  # replacements that landed back on the node their pod left
    pending: tuple[str, ...]  # replacements the replay leaves pending
    gone: tuple[str, ...]  # bare pods: nothing re-creates them
    emptied: tuple[str, ...]  # nodes that had pods and have none after the replay
    second_cycle: tuple[Eviction, ...]  # what the same policy evicts from the replayed cluster
    placements: dict[str, str | None] = field(default_factory=dict)  # every pod's node after the replay

    def to_dict(self) -> dict:
        ev = [{"pod": e.pod, "from": e.node, "strategy": e.strategy, "landed": e.landed} for e in self.evictions]
        return {"evictions": ev, "loops": list(self.loops), "pending": list(self.pending), "gone": list(self.gone),
                "nodesEmptied": list(self.emptied),
                "secondCycle": [{"pod": e.pod, "from": e.node, "strategy": e.strategy} for e in self.second_cycle]}


def evictions_of(state: ClusterState, config: SchedulerConfig, policy: DeschedulerPolicy,
                 now: datetime | None = None) -> list[Eviction]:
    """The pods one descheduling cycle evicts, in eviction order (``now``: minPodAge's clock, default the
    wall clock)."""
    evicted: list[tuple[int, str]] = []
    per_node: dict[int, int] = {}
    per_ns: dict[str, int] = {}
    rows: set[int] = set()
    ctxs = [(prof, Context(state, config, Evictor(state, config, prof.evictor, policy.limits, evicted, per_node,
                                                   per_ns, rows, now))) for prof in policy.profiles]
    for point in ("deschedule", "balance"):
        for prof, ctx in ctxs:
            for strategy in prof.strategies:
                if strategy.point == point:
                    strategy.run(ctx)
    names = state.node_names
    return [Eviction(state.pods[p].key, names[int(state.pod_node[p])], s) for p, s in evicted]


def replayed_cluster(result: GreedyResult) -> ClusterState:
    """The cluster once the replay's placements are bound."""
    placed = result.placements()
    pods = []
    for pod in result.state.pods:
        node = placed.get(pod.key)
        if node is not None and pod.spec.node_name != node:
            pod = pod.model_copy(update={"spec": pod.spec.model_copy(update={"node_name": node}),
                                         "status": PodStatus(phase="Running")})
        pods.append(pod)
    return compile_cluster(replace(result.state.cluster, pods=pods))


def run_descheduler(state: ClusterState, config: SchedulerConfig, policy: DeschedulerPolicy,
                    now: datetime | None = None) -> DeschedulerOutcome:
    """Evict as the policy does, replay kube-scheduler on the replacements, and count a second cycle."""
    first = evictions_of(state, config, policy, now)
    node_of = state.pod_node.copy()
    for e in first:
        node_of[state.pod_index[e.pod]] = -1
    landing = predict_landing(state, config, node_of)
    owned = {e.pod for e in first if state.pods[state.pod_index[e.pod]].metadata.owner_references}
    evictions = tuple(replace(e, landed=landing.landed.get(e.pod)) for e in first)
    after = replayed_cluster(landing.replay)
    placed = landing.replay.placements()
    before = np.bincount(state.pod_node[state.pod_node >= 0], minlength=state.num_nodes)
    left = np.bincount(after.pod_node[after.pod_node >= 0], minlength=after.num_nodes)
    return DeschedulerOutcome(
        evictions=evictions,
        loops=tuple(e.pod for e in evictions if e.landed == e.node),
        pending=tuple(e.pod for e in evictions if e.pod in owned and e.landed is None),
        gone=tuple(e.pod for e in evictions if e.pod not in owned),
        emptied=tuple(state.node_names[n] for n in np.nonzero((before > 0) & (left == 0))[0].tolist()),
        second_cycle=tuple(evictions_of(after, config, policy, now)),
        placements={p.key: placed.get(p.key) for p in state.pods},
    )
