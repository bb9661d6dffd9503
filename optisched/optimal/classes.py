"""Pod classes: identical pods become one class with a count per node.

Pods are identical for every rule when they share namespace, labels, controller, spec (all but
``nodeName``) and the annotations a rule reads (the GPU demand of GPU sharing): the replicas of one
ReplicaSet. A batch model then needs one integer per (class, node) instead of one boolean per (pod,
node), which is what lets CP-SAT reach thousands of nodes.

A class holds the batch's *pending* pods (placed by the model) and its *running* pods that may leave
their node: all of them with ``movable``, otherwise those a pending pod may preempt (lower priority
than some pending pod whose ``preemptionPolicy`` is not ``Never``). Every other bound pod is fixed and
lives in the model's snapshot, where the greedy rules see it as usual.

Who may leave is the eviction policy's call (:mod:`optisched.policy.eviction`): with ``movable``, the
running pods it lets leave are *voluntary* classes (they leave through the Eviction API, for any reason,
within their PodDisruptionBudgets); the others stay, unless a pending pod may preempt them. A preemption
victim the policy would not let leave (a bare pod, a pod with a claim) is removed by the scheduler all the
same, but is not re-placed elsewhere: nothing re-creates a bare pod, and a claimed volume keeps its zone.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..greedy.queue import sort_key, split_handled
from ..model.objects import Pod, PreemptionPolicy
from ..model.state import ClusterState, resized
from ..plugins.gpu.share import DEMAND_ANNOTATIONS
from ..policy.eviction import EvictionPolicy, Keep, Verdicts
from ..profile import SchedulerConfig

__all__ = ["Batch", "PodClass", "build_batch", "signature"]


def signature(pod: Pod) -> tuple:
    """What makes two pods interchangeable for every scheduling rule."""
    owner = next(((o.kind, o.name) for o in pod.metadata.owner_references if o.controller), None)
    # an ephemeral volume's claim is named after the pod, so such a pod is a class of its own
    own = pod.metadata.name if any(v.ephemeral is not None for v in pod.spec.volumes) else None
    # a pod being resized in place requests more than its spec says: a class of its own too
    own = pod.metadata.name if resized(pod) else own
    demand = tuple(pod.metadata.annotations.get(k) for k in DEMAND_ANNOTATIONS)  # GPU sharing reads these
    return (pod.metadata.namespace or "default", tuple(sorted(pod.metadata.labels.items())), owner,
            pod.metadata.deletion_timestamp is not None,
            pod.spec.model_dump_json(exclude={"node_name"}), own, demand)


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
    may_move: bool = True  # running pods that leave may land on another node (the eviction policy allows it)
    voluntary: bool = False  # running pods leave by the Eviction API for any reason (else only as victims)

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
    kept: dict[int, Keep] = field(default_factory=dict)  # running pods the eviction policy keeps, and why

    @property
    def levels(self) -> list[int]:
        """Distinct priorities of the classes, highest first."""
        return sorted({c.priority for c in self.classes}, reverse=True)


def _leaving(verdicts: Verdicts, movable: bool, preemptor_prio: int | None,
             running_on: np.ndarray | None) -> tuple[list[int], dict[int, Keep]]:
    """The running pods that may leave their node (movable ones, and preemption victims whatever the
    policy says), and the ones the policy keeps from leaving or from being re-placed, with why."""
    state = verdicts.state
    running, kept = [], {}
    for p in np.flatnonzero(state.pod_node >= 0).tolist():
        if state.pods[p].metadata.deletion_timestamp is not None:
            continue
        if running_on is not None and not running_on[state.pod_node[p]]:
            continue
        victim = preemptor_prio is not None and state.pod_priority[p] < preemptor_prio
        if (movable and verdicts.may_leave[p]) or victim:
            running.append(p)
        why = verdicts.why(p)
        if (movable or victim) and why is not None:
            kept[p] = why
    return running, kept


def build_batch(state: ClusterState, config: SchedulerConfig, *, movable: bool = False,
                preemption: bool = True, only: list[int] | None = None,
                running_on: np.ndarray | None = None, policy: EvictionPolicy | None = None,
                grouped: bool = True, tick: Callable[[], None] | None = None) -> Batch:
    """Group the pending pods (and the running pods that may leave their node) into classes.
    ``only``: the pending pods the batch places (default: all); the others are left out of the model.
    ``running_on``: a bool mask over nodes; running pods elsewhere stay fixed.
    ``policy``: who may leave (default: :class:`EvictionPolicy` with every protection on).
    ``grouped=False``: a class per pod (no signatures to compute: the same pods in the same roles, for
    an answer that needs no model). ``tick``: called between pods, may raise to stop part-way."""
    profiles = {p.scheduler_name for p in config.profiles}
    pending, skipped = split_handled(state, list(state.pending if only is None else only), profiles)
    pending.sort(key=lambda p: sort_key(state, p))
    preemptor_prio = max((int(state.pod_priority[p]) for p in pending
                          if state.pods[p].spec.preemption_policy != PreemptionPolicy.NEVER), default=None)
    if not preemption:
        preemptor_prio = None
    verdicts = (policy or EvictionPolicy()).verdicts(state)
    running, kept = _leaving(verdicts, movable, preemptor_prio, running_on)
    by_sig: dict[tuple, PodClass] = {}
    class_of = np.full(len(state.pods), -1, dtype=np.int64)
    for k, p in enumerate(pending + running):
        if tick is not None and k % 64 == 0:
            tick()
        pod = state.pods[p]
        leaves = bool(verdicts.may_leave[p])
        # annotations are not in the signature: the verdict splits classes
        sig = (*signature(pod), leaves) if grouped else (p,)
        c = by_sig.get(sig)
        if c is None:
            c = by_sig[sig] = PodClass(len(by_sig), p, int(state.pod_priority[p]),
                                       pod.spec.preemption_policy != PreemptionPolicy.NEVER, pod.spec.scheduler_name,
                                       may_move=leaves, voluntary=movable and leaves)
        if state.pod_node[p] >= 0:
            c.running.setdefault(int(state.pod_node[p]), []).append(p)
        else:
            c.pending.append(p)
        class_of[p] = c.index
    fixed = state.pod_node >= 0
    fixed[running] = False
    return Batch(state, list(by_sig.values()), fixed, skipped, movable, class_of, kept)
