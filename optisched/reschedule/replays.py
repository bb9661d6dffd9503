"""The kube-scheduler replays a staging runs for one wave, each eviction order replayed once.

Every replay of a wave starts from the same cluster (the placement when the wave starts), so what a
replay predicts depends only on which pods are evicted, in which order (the order is the replacements'
queue order within a priority): the target a move names is not read by kube-scheduler. :class:`Replays`
keeps each answer by that eviction order, so a wave re-checked after an accepted landing, or a cycle's
detour leg evicted as its lone trial was, costs no second replay; :attr:`Replays.count` counts the
replays really run (``Staging.replays``).

Each replay either builds greedy mode afresh for the cluster of that moment (:func:`full_replay`, the
reference) or is a trial on the one :class:`.live.LiveCluster` the staging keeps (the default).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import numpy as np

from ..model.state import ClusterState
from ..plans.landing import owned, predict_landing
from ..profile import SchedulerConfig
from .live import Evicted, LiveCluster, Trial, preempted

M = TypeVar("M", bound=Evicted)

__all__ = ["Replays", "Trial", "full_replay", "last_replays", "preempted_moves"]


def full_replay(base: ClusterState, config: SchedulerConfig, current: np.ndarray, gone: np.ndarray,
                wave: Sequence[Evicted], pending: dict[int, int], requeued: Sequence[int] = ()) -> Trial:
    """Evict ``wave`` from the placement ``current`` of ``base`` (the input, its nodes cordoned; ``gone``:
    bare pods evicted or preempted before; ``requeued``: pods preempted before, re-created by their
    controllers in that order) and replay with greedy mode built afresh for it
    (:func:`optisched.plans.landing.predict_landing`, a delta on ``base``'s arrays)."""
    node_of = current.copy()
    for p, t in pending.items():
        if current[p] < 0:  # a pod placed since is not moved by its target
            node_of[p] = t
    for m in wave:
        node_of[m.pod] = base.node_index[m.target] if m.target is not None else -1
    landing = predict_landing(base, config, node_of, [m.key for m in wave], current, gone, requeued)
    result = landing.replay
    pods = result.state.pods
    preempts = {pods[by].key: pods[v].key for v, (by, _) in result.preempted.items()}
    assert landing.origin is not None
    after = np.full(len(current), -1, dtype=np.int64)
    after[landing.origin] = result.snapshot.node_of
    present = np.zeros(len(current), dtype=bool)
    present[landing.origin] = True
    victims = [int(landing.origin[v]) for v in result.preempted]
    return preempted(Trial(landing.landed, preempts, after, ~present, tuple(requeued)), victims, owned(base))


class Replays:
    """The replays of one wave's start (``current``, ``gone``, the ``pending`` pods, the ``requeued``
    ones: :attr:`Trial.requeued` of the wave before), by eviction order; on ``live`` when given (it must
    hold that start), else each built afresh."""

    def __init__(self, base: ClusterState, config: SchedulerConfig, current: np.ndarray, gone: np.ndarray,
                 pending: dict[int, int], live: LiveCluster | None = None,
                 requeued: tuple[int, ...] = ()) -> None:
        self.base, self.config, self.current, self.gone, self.pending = base, config, current, gone, pending
        self.requeued = requeued
        self.live = live
        self.count = 0  # replays run
        self.hits = 0  # answers given again
        self._seen: dict[tuple[int, ...], Trial] = {}

    def __call__(self, wave: Sequence[Evicted]) -> Trial:
        key = tuple(m.pod for m in wave)
        hit = self._seen.get(key)
        if hit is None:
            hit = self._seen[key] = self._run(wave)
        else:
            self.hits += 1
        return hit

    def _run(self, wave: Sequence[Evicted]) -> Trial:
        self.count += 1
        if self.live is not None:
            return self.live.trial(wave, self.current, self.gone, self.requeued)
        return full_replay(self.base, self.config, self.current, self.gone, wave, self.pending, self.requeued)

    def keep(self, wave: Sequence[Evicted]) -> None:
        """``wave`` is carried out: the live cluster moves on to the state after its replay (run again when
        another trial was run since)."""
        if self.live is None:
            return
        if self.live.applied != tuple(m.pod for m in wave):
            self._run(wave)
        self.live.keep()


def preempted_moves(remaining: Sequence[M], current: np.ndarray, gone: np.ndarray,
                    wave: int) -> list[tuple[M, str]]:
    """The moves left, with why each is dropped, of pods the kept ``wave``'s replay preempted (no longer
    on a node at ``current``): kube-scheduler deleted them (DefaultPreemption, kubernetes v1.35.4
    ``pkg/scheduler/framework/preemption/preemption.go``), so there is nothing left to evict; an owned
    one's replacement is placed as a new pod by the next replay."""
    return [(m, f"preempted on arrival of a pod in wave {wave}; "
                + ("gone (no controller)" if gone[m.pod] else "re-created by its controller"))
            for m in remaining if current[m.pod] < 0]


def last_replays(replays: Replays) -> tuple[np.ndarray, int, int]:
    """The placement once kube-scheduler has placed what the waves leave to it, by replays without an
    eviction from ``replays``' start: the pods still pending, and the pods the replay before preempted,
    which their controllers re-create as new pods; again while a replay preempts pods not yet re-created
    (each such chain goes down in priority, so it ends). Also the replays run and answered again."""
    tried: set[int] = set()
    runs = reused = 0
    while True:
        trial = replays([])
        replays.keep([])
        runs, reused = runs + replays.count, reused + replays.hits
        tried.update(replays.requeued)
        if not set(trial.requeued) - tried:
            return trial.after, runs, reused
        pending = {p: t for p, t in replays.pending.items() if trial.after[p] < 0}
        replays = Replays(replays.base, replays.config, trial.after, trial.gone, pending, replays.live,
                          trial.requeued)
