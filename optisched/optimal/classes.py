"""Pod classes: identical pods become one class with a count per node.

Pods are identical for every rule when they share namespace, labels, controller and spec (all but
``nodeName``): the replicas of one ReplicaSet. A batch model then needs one integer per (class, node)
instead of one boolean per (pod, node), which is what lets CP-SAT reach thousands of nodes.

A class holds the batch's *pending* pods (placed by the model) and its *running* pods that may leave
their node: all of them with ``movable``, otherwise those a pending pod may preempt (lower priority
than some pending pod whose ``preemptionPolicy`` is not ``Never``). Every other bound pod is fixed and
lives in the model's snapshot, where the greedy rules see it as usual.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..greedy.queue import sort_key
from ..model.objects import Pod, PreemptionPolicy
from ..model.state import ClusterState
from ..profile import SchedulerConfig

__all__ = ["Batch", "PodClass", "build_batch", "signature"]


def signature(pod: Pod) -> tuple:
    """What makes two pods interchangeable for every scheduling rule."""
    owner = next(((o.kind, o.name) for o in pod.metadata.owner_references if o.controller), None)
    # an ephemeral volume's claim is named after the pod, so such a pod is a class of its own
    own = pod.metadata.name if any(v.ephemeral is not None for v in pod.spec.volumes) else None
    return (pod.metadata.namespace or "default", tuple(sorted(pod.metadata.labels.items())), owner,
            pod.metadata.deletion_timestamp is not None,
            pod.spec.model_dump_json(exclude={"node_name"}), own)


@dataclass
class PodClass:
    """Interchangeable pods: ``pending`` rows in queue order, ``running`` rows per node row."""

    index: int
    rep: int  # a representative pod row (rules are evaluated for it)
    priority: int
    preempts: bool  # preemptionPolicy is not Never
    scheduler_name: str
    pending: list[int] = field(default_factory=list)
    running: dict[int, list[int]] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return len(self.pending) + sum(len(v) for v in self.running.values())

    @property
    def running_count(self) -> int:
        return sum(len(v) for v in self.running.values())


@dataclass
class Batch:
    """The pods a batch model places, grouped into classes, and the bound pods that stay put."""

    state: ClusterState
    classes: list[PodClass]
    fixed: np.ndarray  # bool [P]: bound pods that cannot leave their node
    skipped: dict[int, str]  # pending pods no profile handles, and why
    movable: bool  # every running pod may move (not only the ones a preemptor may evict)
    class_of: np.ndarray  # int64 [P]: class index of each batch pod, -1 otherwise

    @property
    def levels(self) -> list[int]:
        """Distinct priorities of the classes, highest first."""
        return sorted({c.priority for c in self.classes}, reverse=True)


def build_batch(state: ClusterState, config: SchedulerConfig, *, movable: bool = False,
                preemption: bool = True, only: list[int] | None = None,
                running_on: np.ndarray | None = None) -> Batch:
    """Group the pending pods (and the running pods that may leave their node) into classes.
    ``only``: the pending pods the batch places (default: all); the others are left out of the model.
    ``running_on``: a bool mask over nodes; running pods elsewhere stay fixed."""
    profiles = {p.scheduler_name for p in config.profiles}
    pending, skipped = [], {}
    for p in state.pending if only is None else only:
        pod = state.pods[p]
        if pod.spec.scheduler_name not in profiles:
            skipped[p] = f"schedulerName {pod.spec.scheduler_name!r} matches no profile"
        elif pod.spec.scheduling_gates:
            skipped[p] = "SchedulingGated"
        else:
            pending.append(p)
    pending.sort(key=lambda p: sort_key(state, p))
    preemptor_prio = max((int(state.pod_priority[p]) for p in pending
                          if state.pods[p].spec.preemption_policy != PreemptionPolicy.NEVER), default=None)
    if not preemption:
        preemptor_prio = None
    running = []
    for p in np.flatnonzero(state.pod_node >= 0):
        pod = state.pods[p]
        if pod.metadata.deletion_timestamp is not None:
            continue
        if running_on is not None and not running_on[state.pod_node[p]]:
            continue
        if movable or (preemptor_prio is not None and state.pod_priority[p] < preemptor_prio):
            running.append(int(p))
    by_sig: dict[tuple, PodClass] = {}
    class_of = np.full(len(state.pods), -1, dtype=np.int64)
    for p in pending + running:
        pod = state.pods[p]
        sig = signature(pod)
        c = by_sig.get(sig)
        if c is None:
            c = by_sig[sig] = PodClass(len(by_sig), p, int(state.pod_priority[p]),
                                       pod.spec.preemption_policy != PreemptionPolicy.NEVER, pod.spec.scheduler_name)
        if state.pod_node[p] >= 0:
            c.running.setdefault(int(state.pod_node[p]), []).append(p)
        else:
            c.pending.append(p)
        class_of[p] = c.index
    fixed = state.pod_node >= 0
    fixed[running] = False
    return Batch(state, list(by_sig.values()), fixed, skipped, movable, class_of)
