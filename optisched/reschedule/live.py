"""Greedy mode's setup kept alive across a staging's replays: built once, each trial undone, each wave kept.

A replay's cost is mostly greedy mode's setup for the cluster it starts from: the snapshot of every
bound pod with each rule's incremental index, the PodDisruptionBudget views, the start times. Every
replay of a plan starts from the cluster the previous waves left, which differs from the input by those
waves' evictions and replacements only. :class:`LiveCluster` builds the setup once, for the input, and
keeps it: a trial evicts its pods from the live snapshot (each rule's index follows, pod by pod), lets
greedy mode place the replacements and the pending pods, reads the answer, and is undone (the
snapshot's journal, :meth:`optisched.model.snapshot.Snapshot.rollback`); the trial a wave keeps stays.

What the cluster looks like after a wave is kube-scheduler v1.35.4's view of it
(``pkg/scheduler/framework/types.go``): an evicted pod leaves its node's ``NodeInfo.Pods`` as
``RemovePod`` takes it out (the last pod moves into its slot); its replacement is a new pod, appended to
the list of the node it is bound to (``AddPod``), started when it was bound, so younger than every pod
of the input, and created when its original was evicted, after every replacement of the waves before.
The replay built afresh per wave (:func:`.replays.full_replay`) instead holds a pod replaced in an
earlier wave as its original (its place in the node's list by input order, its original start time,
and, when its replacement was left pending, its original object: bound to the node it left, created
with the input). Both give the same landings unless preemption reads the difference (its victims and
node choice go by start time and list order), a replacement is left pending by a wave (``fit-pending``
evicting a pod to make room), or an evicted pod frees a host port another pod on its node holds too
(``HostPortInfo.Remove`` deletes the entry, as the live snapshot's NodePorts index does): see
``docs/reschedule.md``. A pod a kept wave's replay preempts is deleted by kube-scheduler: both paths
re-create an owned victim as a new pod created then, and count a bare one gone (:func:`preempted`).

A replacement takes its original's row (same key, same spec): the rows of the live state are the
input's, so placements read in the input's rows directly.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from ..greedy.scheduler import GreedyOptions, GreedyScheduler
from ..model.objects import Pod
from ..model.state import ClusterState
from ..plans.landing import latest_created, owned, replacement
from ..profile import SchedulerConfig

__all__ = ["LiveCluster", "Trial"]


class Evicted(Protocol):
    pod: int
    key: str
    target: str | None


@dataclass(frozen=True)
class Trial:
    """One replay's answer: where each pod placed lands (key -> node, None: pending), per pod that
    preempts on arrival one pod it evicts, and the placement after it in the input's rows (-1: pending or
    gone) with the rows gone from the cluster (bare pods evicted or preempted: nothing re-creates them)
    and the pods preempted so far that their controllers re-created, pending, in the order created."""

    landed: dict[str, str | None]
    preempts: dict[str, str]
    after: np.ndarray
    gone: np.ndarray
    requeued: tuple[int, ...] = ()


def preempted(trial: Trial, victims: Sequence[int], owned: np.ndarray) -> Trial:
    """``trial`` once its preemptions' ``victims`` (rows, in the order deleted) are gone from the API:
    kube-scheduler deletes each victim (kubernetes v1.35.4
    ``pkg/scheduler/framework/preemption/preemption.go``, ``Evaluator.prepareCandidate``), so a bare
    victim is gone for good, and an owned one comes back as a new pod its controller creates then, after
    the replacements created before it. The next wave queues it with the pending pods by priority, then
    the time it was queued (``pkg/scheduler/framework/plugins/queuesort/priority_sort.go``, ``Less``): after
    the older pods of its priority. Pods re-created earlier (``trial.requeued``) and still pending keep
    their place before it."""
    gone = trial.gone.copy()
    gone[[v for v in victims if not owned[v]]] = True
    hit = set(victims)
    again = tuple(r for r in trial.requeued if trial.after[r] < 0 and r not in hit)
    return replace(trial, gone=gone, requeued=again + tuple(v for v in victims if owned[v]))


@dataclass
class _Undo:
    mark: int  # the snapshot's journal length before the trial
    start_time: np.ndarray
    cycle_no: int
    objects: dict[int, Pod]  # rows whose object the trial replaced, as they were
    made: int = 0  # replacements the trial created (evicted pods, then preempted ones)


class LiveCluster:
    """One greedy scheduler over ``base`` (the input, its nodes cordoned), replayed trial by trial."""

    def __init__(self, base: ClusterState, config: SchedulerConfig) -> None:
        pods = list(base.pods)  # this state's own list: a replacement's object takes its row
        self.state = replace(base, cluster=replace(base.cluster, pods=pods), pods=pods,
                             pod_node=base.pod_node.copy(), memo={})
        self.sched = GreedyScheduler(self.state, config, GreedyOptions(record=False))
        for profile in config.profiles:  # every rule's index follows each eviction from the first one on
            self.sched.framework(profile)
        self.snapshot = self.sched.snapshot
        self.snapshot.journal = []
        self.original = base.pods
        self.latest = latest_created(base)
        self.owned = owned(base)
        self.created = 0  # replacements created by the waves kept: the next wave's are created after them
        self.applied: tuple[int, ...] | None = None  # the eviction order of the trial in place, if any
        self._undo: _Undo | None = None

    def trial(self, wave: Sequence[Evicted], current: np.ndarray, gone: np.ndarray,
              requeued: Sequence[int] = ()) -> Trial:
        """Evict ``wave`` (in that order) from the placement ``current`` (``gone``: rows no longer in the
        cluster; ``requeued``: pending rows re-created after a preemption, their objects already new ones)
        and replay; the trial stays in place until the next one or :meth:`keep`."""
        self.undo()
        snap, sched = self.snapshot, self.sched
        assert snap.journal is not None and np.array_equal(snap.node_of, current), "the live cluster drifted"
        undo = _Undo(len(snap.journal), sched.start_time.copy(), sched.cycle_no, {})
        for m in wave:  # the evictions, in the order issued (NodeInfo.RemovePod)
            snap.remove(m.pod)
        again = [m.pod for m in wave if self.owned[m.pod]]
        self._recreate(undo, again)  # re-created in eviction order, after every pod of the input
        queue = np.flatnonzero((current < 0) & ~gone).tolist() + again
        sched.restart()
        self.state.pod_node[:] = snap.node_of
        self._undo, self.applied = undo, tuple(m.pod for m in wave)
        result = sched.run(pods=queue)
        names, node_of, rows = self.state.node_names, snap.node_of, self.state.pods
        landed = {rows[p].key: (names[n] if (n := int(node_of[p])) >= 0 else None) for p in queue}
        preempts = {rows[by].key: rows[v].key for v, (by, _) in result.preempted.items()}
        victims = list(result.preempted)
        self._recreate(undo, [v for v in victims if self.owned[v]])  # deleted by preemption, created after
        after_gone = gone.copy()
        after_gone[[m.pod for m in wave if not self.owned[m.pod]]] = True
        trial = Trial(landed, preempts, node_of.copy(), after_gone, tuple(requeued))
        return preempted(trial, victims, self.owned)

    def _recreate(self, undo: _Undo, rows: list[int]) -> None:
        """Give each of ``rows`` its replacement's object, created in that order after those made so far."""
        for p in rows:
            undo.objects.setdefault(p, self.state.pods[p])
            self.state.pods[p] = replacement(self.original[p], self.latest, self.created + undo.made)
            undo.made += 1

    def undo(self) -> None:
        """Take the trial in place back (the snapshot, its rules' indexes, start times, pod objects)."""
        u = self._undo
        if u is None:
            return
        self.snapshot.rollback(u.mark)
        self.sched.start_time[:] = u.start_time
        self.sched.cycle_no = u.cycle_no
        for p, obj in u.objects.items():
            self.state.pods[p] = obj
        self.state.pod_node[:] = self.snapshot.node_of
        self._undo, self.applied = None, None

    def keep(self) -> None:
        """The trial in place is the wave carried out: the next trials start from it."""
        assert self.snapshot.journal is not None
        del self.snapshot.journal[:]
        if self._undo is not None:
            self.created += self._undo.made
        self._undo, self.applied = None, None
