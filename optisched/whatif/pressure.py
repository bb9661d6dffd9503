"""Node-pressure eviction: which pods the kubelet fails on a node short of memory or disk, and where
kube-scheduler puts their replacements.

The signal is ``memory.available`` (``nodefs.available``) = the node's capacity (``status.capacity``, else
allocatable) minus the pods' usage; system daemons' own usage is not known and counts as 0. When the signal
is below its threshold, the kubelet (Kubernetes v1.35 ``pkg/kubelet/eviction/helpers.go``
``rankMemoryPressure`` / ``rankDiskPressureFunc``) ranks the node's pods: first those whose usage exceeds
their request, then by priority (lowest first), then by usage above the request (largest first); it never
evicts critical pods (static, mirror, or system-critical priority, ``kubelettypes.IsCriticalPod``). Pods leave
in that order until the signal reaches the threshold plus ``evictionMinimumReclaim``. The node then carries
the ``node.kubernetes.io/memory-pressure`` (``disk-pressure``) NoSchedule taint while the replacements are
placed by greedy mode (:func:`optisched.plans.landing.predict_landing`).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..errors import InputError
from ..model.objects import Taint, TaintEffect
from ..model.state import ClusterState, compile_cluster
from ..plans.landing import predict_landing
from ..policy.eviction import CRITICAL_PRIORITY, MIRROR, SOURCE
from ..profile import SchedulerConfig
from .kubelet import SIGNALS, EvictionThresholds
from .usage import Usage

__all__ = ["NodePressure", "PressureOutcome", "rank_pods", "run_pressure"]

TAINTS = {"memory.available": "node.kubernetes.io/memory-pressure",
          "nodefs.available": "node.kubernetes.io/disk-pressure"}


@dataclass(frozen=True)
class NodePressure:
    node: str
    signal: str
    capacity: int
    available: int  # before any eviction
    threshold: int
    goal: int  # threshold + minimum reclaim
    evicted: tuple[str, ...]
    available_after: int


@dataclass(frozen=True)
class PressureOutcome:
    nodes: tuple[NodePressure, ...]
    landed: dict[str, str | None]  # evicted pod -> where its replacement lands (None: pending or no controller)

    def to_dict(self) -> dict:
        return {"nodes": [{"node": n.node, "signal": n.signal, "capacity": n.capacity, "available": n.available,
                           "threshold": n.threshold, "goal": n.goal, "evicted": list(n.evicted),
                           "availableAfter": n.available_after} for n in self.nodes],
                "landing": self.landed}


def _critical(state: ClusterState, p: int) -> bool:
    ann = state.pods[p].metadata.annotations
    return MIRROR in ann or ann.get(SOURCE, "api") != "api" or int(state.pod_priority[p]) >= CRITICAL_PRIORITY


def rank_pods(state: ClusterState, usage: Usage, rows: list[int], resource: str) -> list[int]:
    """The kubelet's eviction order for ``rows`` under pressure on ``resource``."""
    col = state.resource_col(resource) if resource in state.resources else -1

    def key(p: int) -> tuple[bool, int, int]:
        used = usage.of(state.pods[p].key, resource)
        req = int(state.pod_requests[p, col]) if col >= 0 else 0
        return (not used > req, int(state.pod_priority[p]), -(used - req))

    return sorted(rows, key=key)


def _capacity(state: ClusterState, n: int, resource: str) -> int:
    node = state.nodes[n]
    nanos = node.status.capacity.get(resource, node.allocatable.get(resource, 0))
    return nanos // 10**9


def _node_pressure(state: ClusterState, usage: Usage, th: EvictionThresholds, n: int,
                   signal: str) -> NodePressure | None:
    resource = SIGNALS[signal]
    cap = _capacity(state, n, resource)
    if cap == 0:  # the node reports no capacity for this resource: nothing to measure the signal against
        return None
    rows = np.nonzero(state.pod_node == n)[0].tolist()
    available = cap - sum(usage.of(state.pods[p].key, resource) for p in rows)
    threshold = th.threshold[signal].of(cap)
    if available >= threshold:
        return None
    goal = threshold + (th.reclaim[signal].of(cap) if signal in th.reclaim else 0)
    now, evicted = available, []
    for p in rank_pods(state, usage, [p for p in rows if not _critical(state, p)], resource):
        if now >= goal:
            break
        evicted.append(state.pods[p].key)
        now += usage.of(state.pods[p].key, resource)
    return NodePressure(state.node_names[n], signal, cap, available, threshold, goal, tuple(evicted), now)


def _tainted(state: ClusterState, pressured: list[NodePressure]) -> ClusterState:
    """The cluster with each pressured node carrying its pressure taint, as the node lifecycle controller sets."""
    extra: dict[str, list[Taint]] = {}
    for np_ in pressured:
        extra.setdefault(np_.node, []).append(Taint(key=TAINTS[np_.signal], effect=TaintEffect.NO_SCHEDULE))
    nodes = [nd if nd.metadata.name not in extra else
             nd.model_copy(update={"spec": nd.spec.model_copy(update={"taints": [*nd.spec.taints,
                                                                                 *extra[nd.metadata.name]]})})
             for nd in state.cluster.nodes]
    return compile_cluster(replace(state.cluster, nodes=nodes))


def run_pressure(state: ClusterState, config: SchedulerConfig, usage: Usage, th: EvictionThresholds,
                 only: list[str] | None = None) -> PressureOutcome:
    """Every node (or those of ``only``) under a modelled signal: the kubelet's evictions, then the replay."""
    for name in only or []:
        if name not in state.node_index:
            raise InputError(f"no node {name!r} in the cluster", obj=f"Node/{name}", path="--node")
    nodes = [state.node_index[n] for n in only] if only else list(range(state.num_nodes))
    pressured = [r for n in nodes for sig in SIGNALS if sig in th.threshold
                 if (r := _node_pressure(state, usage, th, n, sig)) is not None]
    gone = {k for r in pressured for k in r.evicted}
    if not gone:
        return PressureOutcome(tuple(pressured), {})
    tainted = _tainted(state, pressured)
    node_of = tainted.pod_node.copy()
    node_of[[tainted.pod_index[k] for k in gone]] = -1
    landing = predict_landing(tainted, config, node_of)
    return PressureOutcome(tuple(pressured), {k: landing.landed.get(k) for k in sorted(gone)})
