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
from ..model.state import ClusterState, resized, without_resize
from ..profile import SchedulerConfig

__all__ = ["Landing", "latest_created", "owned", "predict_landing", "replacement"]


@dataclass(frozen=True)
class Landing:
    """Per pod key the plan relies on: its target node and where the replay puts it (None: pending)."""

    target: dict[str, str | None]
    landed: dict[str, str | None]
    preempted: tuple[str, ...]  # running pods the replay's own preemptions evict, beyond the plan's
    replay: GreedyResult
    origin: np.ndarray | None = None  # per pod row of the replay's state, its row in the state given

    @property
    def differs(self) -> dict[str, tuple[str | None, str | None]]:
        """Pods that land elsewhere than the target: key -> (target, landed)."""
        return {k: (t, self.landed.get(k)) for k, t in self.target.items() if self.landed.get(k) != t}

    def to_dict(self) -> dict:
        return {"target": self.target, "landing": self.landed,
                "differs": [{"pod": k, "target": t, "landing": got} for k, (t, got) in self.differs.items()],
                "furtherPreemptions": list(self.preempted)}


def _after_evictions(state: ClusterState, node_of: np.ndarray, current: np.ndarray, gone: np.ndarray | None = None,
                     evicted: Sequence[str] = (),
                     requeued: Sequence[int] = ()) -> tuple[ClusterState, list[str], np.ndarray]:
    """The cluster with the pods at ``current`` (node row per pod row, -1 pending) once the pods that
    leave their node for ``node_of`` are evicted (re-created pending when owned), without the ``gone``
    rows (bare pods evicted or preempted before); the keys of the pods to be placed (every pending pod,
    then every re-created one, in eviction order: ``evicted``, keys in the order the evictions are issued,
    the others after them in row order) and, per row of the new state, its row in ``state``. ``requeued``:
    pending rows whose controller re-created them before these evictions (owned pods an earlier replay's
    preemption deleted), in the order created: each is a replacement too, created before this call's.

    A delta on the compiled arrays, not a recompile: the rows kept stay in order and the replacements
    follow in eviction order, exactly as compiling the pod list would order them, so the replay (the
    snapshot's per-node pod order, PrioritySort's last tie-break) is the same."""
    moved = (current >= 0) & (node_of != current)
    owned = _owned(state)
    keep = ~moved if gone is None else ~moved & ~gone
    keep[list(requeued)] = False
    rank = {k: i for i, k in enumerate(evicted)}
    again = list(requeued) + sorted(np.flatnonzero(moved & owned).tolist(),
                                    key=lambda p: (rank.get(state.pods[p].key, len(rank)), p))
    rows = np.concatenate([np.flatnonzero(keep), np.asarray(again, dtype=np.int64)])
    evicted_at, keys = _stamp_and_keys(state)
    pods = [state.pods[p] for p in rows[:int(keep.sum())].tolist()]
    for k, p in enumerate(rows[len(pods):].tolist()):
        pods.append(replacement(state.pods[p], evicted_at, k))
    pod_node = current[rows].copy()
    pod_node[int(keep.sum()):] = -1
    requests, nonzero = state.pod_requests[rows], state.pod_nonzero[rows]
    fresh = [i for i in range(int(keep.sum()), len(rows)) if resized(state.pods[int(rows[i])])]
    if fresh:  # a replacement of a pod being resized requests its spec
        requests[fresh], nonzero[fresh] = without_resize(state, [pods[i] for i in fresh])
    after = replace(state, cluster=replace(state.cluster, pods=pods), pods=pods,
                    pod_index=dict(zip(keys[rows].tolist(), range(len(rows)))), pod_requests=requests,
                    pod_nonzero=nonzero, pod_node=pod_node, pod_priority=state.pod_priority[rows],
                    memo={})
    placed = [pods[i].key for i in np.flatnonzero(pod_node < 0).tolist()]
    return after, placed, rows


def replacement(pod: Pod, evicted_at: datetime, k: int) -> Pod:
    """The pod its controller re-creates for ``pod``, the ``k``-th (from 0) of a wave's evictions: the same
    spec, unbound, no status, created ``k`` + 1 seconds after ``evicted_at`` (the input's latest creation
    time, :func:`latest_created`)."""
    meta = pod.metadata.model_copy(update={"creation_timestamp": evicted_at + timedelta(seconds=k + 1)})
    return pod.model_copy(update={
        "metadata": meta, "spec": pod.spec.model_copy(update={"node_name": None}), "status": PodStatus()})


def latest_created(state: ClusterState) -> datetime:
    """The latest creation time of the input: a wave's replacements are created after it."""
    return _stamp_and_keys(state)[0]


def owned(state: ClusterState) -> np.ndarray:
    """bool [P]: pods with an ownerReference (their controller re-creates them once evicted)."""
    return _owned(state)


def _stamp_and_keys(state: ClusterState) -> tuple[datetime, np.ndarray]:
    """The latest creation time of the input (replacements are created after it) and the pods' keys
    (a replacement keeps its original's), once per state (``state.memo``)."""
    hit = state.memo.get(("stamp-and-keys",))
    if hit is None:
        stamps = [p.metadata.creation_timestamp for p in state.pods if p.metadata.creation_timestamp is not None]
        latest = max([_aware(t) for t in stamps], default=datetime(2000, 1, 1, tzinfo=UTC))
        hit = state.memo[("stamp-and-keys",)] = (latest, np.array([p.key for p in state.pods], dtype=object))  # type: ignore[assignment]
    return hit  # type: ignore[return-value]


def _owned(state: ClusterState) -> np.ndarray:
    """bool [P]: pods with an ownerReference (their controller re-creates them); kept in ``state.memo``."""
    hit = state.memo.get(("owned",))
    if hit is None:
        hit = state.memo[("owned",)] = np.array([bool(p.metadata.owner_references) for p in state.pods], dtype=bool)
    return hit


def _aware(t: datetime) -> datetime:
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)


def predict_landing(state: ClusterState, config: SchedulerConfig, node_of: np.ndarray,
                    evicted: Sequence[str] = (), current: np.ndarray | None = None,
                    gone: np.ndarray | None = None, requeued: Sequence[int] = ()) -> Landing:
    """Replay ``node_of``'s evictions and let greedy mode place the rest (see the module docstring).
    ``evicted``: the order the evictions are issued in (pod keys), which is the replacements' queue order
    within a priority; by default, row order. ``current``: where the pods are now (default: as ``state``
    has them), ``gone``: rows no longer in the cluster, ``requeued``: pending rows re-created by their
    controller before these evictions, in that order (a plan's later waves replay on the same compiled
    ``state``: the pods an earlier wave's preemption deleted)."""
    node_of = np.asarray(node_of)
    current = state.pod_node if current is None else np.asarray(current)
    after, keys, origin = _after_evictions(state, node_of, current, gone, evicted, requeued)
    names = state.node_names
    target = {k: (names[n] if (n := int(node_of[state.pod_index[k]])) >= 0 else None) for k in keys}
    result = GreedyScheduler(after, config, GreedyOptions(record=False)).run()
    final = result.placements()
    landed = {k: final.get(k) for k in keys}
    preempted = tuple(after.pods[v].key for v in sorted(result.preempted))
    return Landing(target, landed, preempted, result, origin)
