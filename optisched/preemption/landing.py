"""Where kube-scheduler will put the pods once a plan's evictions are made: a greedy replay.

A plan (a target node per pod) is carried out by evicting the running pods that leave their node; the
pending pods, and the replacements a controller re-creates for the pods that left, are then placed by
kube-scheduler one at a time, in its queue order, not by the plan. The replay runs greedy mode (the
profile's own kube-scheduler v1.35.4 cycle, PrioritySort queue, preemption included) on the cluster
after the evictions, and compares where each pod lands with the target. Used by batch preemption plans
and by anything else that tells a user to evict (reschedule, drain).

Re-created pods: a pod that leaves its node and has an ownerReference comes back pending (its
controller re-creates it, here with the same name and spec); a bare pod is gone. A replacement is a new
object: its ``creationTimestamp`` is the moment of its eviction, after every pod of the input, so
PrioritySort (priority, then creation time) queues it after the pods already pending of its priority,
and the replacements among themselves in eviction order (the order given, else pod row order).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

import numpy as np

from ..greedy.scheduler import GreedyOptions, GreedyResult, GreedyScheduler
from ..model.objects import Pod, PodStatus
from ..model.state import ClusterState, compile_cluster
from ..profile import SchedulerConfig

__all__ = ["Landing", "predict_landing"]


@dataclass(frozen=True)
class Landing:
    """Per pod key the plan relies on: its target node and where the replay puts it (None: pending)."""

    target: dict[str, str | None]
    landed: dict[str, str | None]
    preempted: tuple[str, ...]  # running pods the replay's own preemptions evict, beyond the plan's
    replay: GreedyResult

    @property
    def differs(self) -> dict[str, tuple[str | None, str | None]]:
        """Pods that land elsewhere than the target: key -> (target, landed)."""
        return {k: (t, self.landed.get(k)) for k, t in self.target.items() if self.landed.get(k) != t}

    def to_dict(self) -> dict:
        return {"target": self.target, "landing": self.landed,
                "differs": [{"pod": k, "target": t, "landing": got} for k, (t, got) in self.differs.items()],
                "furtherPreemptions": list(self.preempted)}


def _after_evictions(state: ClusterState, node_of: np.ndarray,
                     evicted: Sequence[str] = ()) -> tuple[ClusterState, list[str]]:
    """The cluster once the pods that leave their node are evicted (re-created pending when owned), and
    the keys of the pods to be placed: every pending pod, then every re-created one, in eviction order
    (``evicted``: keys in the order the evictions are issued; the others after them, in row order)."""
    gone = (state.pod_node >= 0) & (node_of != state.pod_node)
    pods: list[Pod] = []
    placed: list[str] = []
    stamps = [p.metadata.creation_timestamp for p in state.pods if p.metadata.creation_timestamp is not None]
    evicted_at = max([_aware(t) for t in stamps], default=datetime(2000, 1, 1, tzinfo=UTC))
    for p, pod in enumerate(state.pods):
        if not gone[p]:
            pods.append(pod)
            if state.pod_node[p] < 0:
                placed.append(pod.key)
    rank = {k: i for i, k in enumerate(evicted)}
    order = sorted(np.flatnonzero(gone).tolist(), key=lambda p: (rank.get(state.pods[p].key, len(rank)), p))
    replacements = []
    for pod in (state.pods[p] for p in order if state.pods[p].metadata.owner_references):
        evicted_at += timedelta(seconds=1)
        meta = pod.metadata.model_copy(update={"creation_timestamp": evicted_at})
        replacements.append(pod.model_copy(update={
            "metadata": meta, "spec": pod.spec.model_copy(update={"node_name": None}), "status": PodStatus()}))
        placed.append(pod.key)
    return compile_cluster(replace(state.cluster, pods=pods + replacements)), placed


def _aware(t: datetime) -> datetime:
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)


def predict_landing(state: ClusterState, config: SchedulerConfig, node_of: np.ndarray,
                    evicted: Sequence[str] = ()) -> Landing:
    """Replay ``node_of``'s evictions and let greedy mode place the rest (see the module docstring);
    ``evicted``: the order the evictions are issued in (pod keys), which is the replacements' queue order
    within a priority; by default, row order."""
    after, keys = _after_evictions(state, np.asarray(node_of), evicted)
    names = state.node_names
    target = {k: (names[n] if (n := int(node_of[state.pod_index[k]])) >= 0 else None) for k in keys}
    result = GreedyScheduler(after, config, GreedyOptions(record=False)).run()
    final = result.placements()
    landed = {k: final.get(k) for k in keys}
    preempted = tuple(after.pods[v].key for v in sorted(result.preempted))
    return Landing(target, landed, preempted, result)
