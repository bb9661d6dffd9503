"""Whole-cluster replay: how far is the current placement from what greedy and optimal mode would do?

The running pods (all, or those a label selector and namespaces pick) are taken off their nodes and
placed again as one batch, together with the pods pending in the input. Greedy mode places them in
kube-scheduler's queue order (PrioritySort: priority, then creation time; :mod:`optisched.greedy.queue`);
optimal mode solves the batch. The placement found in the input is a third run, ``current``, judged by
the same metrics against the same workload.

Pods that no rescheduling would move stay where they are, as the descheduler leaves them
(kubernetes-sigs/descheduler v0.34 ``pkg/utils/pod.go``: ``IsDaemonsetPod``, ``IsMirrorPod``,
``IsStaticPod``): DaemonSet pods, mirror and static pods, terminating pods, and pods of a scheduler no
profile of the configuration names. Finished pods hold nothing and are not replayed either.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from ..model.cluster import Cluster
from ..model.objects import Pod
from ..model.selectors import Selector, parse_label_selector
from ..model.state import ClusterState, compile_cluster
from ..policy.eviction import node_bound
from .runs import PlacementRun

__all__ = ["CURRENT", "Replay", "prepare_replay", "stays_reason"]

CURRENT = "current"
FINISHED = ("Succeeded", "Failed")


def stays_reason(pod: Pod, schedulers: set[str]) -> str | None:
    """Why a bound pod keeps its node in a replay; None when it is placed again. Terminating,
    mirror/static and DaemonSet pods are the eviction policy's rule (:func:`~optisched.policy.eviction.node_bound`)."""
    why = node_bound(pod)
    if why is not None:
        return why.value
    if pod.spec.scheduler_name not in schedulers:
        return f"schedulerName {pod.spec.scheduler_name!r} matches no profile"
    return None


@dataclass(frozen=True)
class Replay:
    """The batch of a replay. ``state``: the input with the replayed pods unbound (same pod rows as the
    input's state); ``current``: the input's placement as a run; ``replayed``: the pod rows taken off
    their nodes; ``kept``: bound pods that stay, with why (only those the selection would have taken)."""

    state: ClusterState
    current: PlacementRun
    replayed: list[int]
    kept: dict[int, str]


def _unbound(pod: Pod) -> Pod:
    """The pod as it was before binding: no node, phase Pending, not started, no container status (so no
    resize in progress)."""
    spec = pod.spec.model_copy(update={"node_name": None})
    status = pod.status.without_resize().model_copy(update={"phase": "Pending", "nominated_node_name": None,
                                                            "start_time": None})
    return pod.model_copy(update={"spec": spec, "status": status})


def _selected(pod: Pod, selector: Selector, namespaces: set[str]) -> bool:
    ns = pod.metadata.namespace or "default"
    return (not namespaces or ns in namespaces) and selector.matches(pod.metadata.labels)


def prepare_replay(cluster: Cluster, schedulers: Iterable[str], selector: str | Selector = "",
                   namespaces: Iterable[str] = ()) -> Replay:
    """Take the running pods that ``selector`` (kubectl's ``-l`` syntax) and ``namespaces`` pick (every
    pod when both are empty) off their nodes; pods of the ``schedulers`` (the profiles' schedulerNames)
    only. Pods already pending stay in the batch whatever the selection; a pod bound to a node the input
    lacks is left as it is, for the loader's rule to treat."""
    sel = parse_label_selector(selector) if isinstance(selector, str) else selector
    wanted, names = set(namespaces), set(schedulers)
    pods: list[Pod] = []
    replayed: dict[str, str] = {}  # pod key -> its node in the input
    kept: dict[str, str] = {}
    nodes = {n.metadata.name for n in cluster.nodes}
    for pod in cluster.pods:
        if pod.spec.node_name not in nodes or pod.status.phase in FINISHED or not _selected(pod, sel, wanted):
            pods.append(pod)
            continue
        why = stays_reason(pod, names)
        if why is None:
            replayed[pod.key] = pod.spec.node_name
            pod = _unbound(pod)
        else:
            kept[pod.key] = why
        pods.append(pod)
    state = compile_cluster(dataclasses.replace(cluster, pods=pods))
    rows = [state.pod_index[k] for k in replayed]
    input_nodes = state.pod_node.copy()
    input_nodes[rows] = [state.node_index[n] for n in replayed.values()]
    current = PlacementRun(CURRENT, CURRENT, input_nodes, math.nan,
                           {p: "pending in the input" for p in np.flatnonzero(input_nodes < 0).tolist()})
    return Replay(state, current, rows, {state.pod_index[k]: why for k, why in kept.items()})
