"""The scheduling queue on a simulated clock (``pkg/scheduler/backend/queue``).

activeQ is ordered by PrioritySort (higher ``spec.priority`` first, then earlier
``creationTimestamp``; ties keep input order, a missing timestamp counts as
earliest). ``shuffle`` (a seed) replaces the timestamps by a seeded random order
within each priority: any such order is one PrioritySort can meet, since creation
times are the user's (tests use it to reach other valid outcomes). A pod that
fails is parked among the unschedulable pods together with the plugins that
rejected it; a cluster event that one of those plugins registers for (its
``events``, :class:`optisched.framework.Plugin`) moves it back, to backoffQ while its backoff (1 s doubling per attempt, at
most 10 s) runs, else to activeQ. When activeQ is empty the clock jumps to the
next backoff expiry. The run ends when activeQ and backoffQ are both empty.
"""
from __future__ import annotations

import heapq
import random
from datetime import UTC, datetime, timedelta
from functools import cache

from ..framework import ClusterEvent
from ..model.state import ClusterState
from ..registry import REGISTRY, rule_class

__all__ = ["INITIAL_BACKOFF", "MAX_BACKOFF", "ClusterEvent", "SchedulingQueue", "event_interest", "split_handled"]

INITIAL_BACKOFF = 1.0
MAX_BACKOFF = 10.0
_EPOCH = datetime.min.replace(tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def event_interest(event: ClusterEvent) -> frozenset[str]:
    """The plugins whose rejection ``event`` may undo (each registered filter's ``events``)."""
    return _interest()[event]


@cache
def _interest() -> dict[ClusterEvent, frozenset[str]]:
    classes = {name: rule_class(sides["filter"]) for name, sides in REGISTRY.items() if "filter" in sides}
    return {e: frozenset(name for name, cls in classes.items() if e in cls.events) for e in ClusterEvent}


def split_handled(state: ClusterState, rows: list[int], scheduler_names: set[str]) -> tuple[list[int], dict[int, str]]:
    """The pending pods a run schedules, and the others with why it does not handle them: a pod whose
    ``schedulerName`` names no profile is never seen by this scheduler (``responsibleForPod``,
    pkg/scheduler/eventhandlers.go, v1.35.4), and a pod with ``schedulingGates`` never leaves the queue's
    PreEnqueue check (plugins/schedulinggates). Every mode and every command reports these as
    "not handled", never as unschedulable."""
    handled, skipped = [], {}
    for p in rows:
        pod = state.pods[p]
        if pod.spec.scheduler_name not in scheduler_names:
            skipped[p] = f"schedulerName {pod.spec.scheduler_name!r} matches no profile"
        elif pod.spec.scheduling_gates:
            skipped[p] = "SchedulingGated"
        else:
            handled.append(p)
    return handled, skipped


def sort_key(state: ClusterState, pod: int) -> tuple:
    """PrioritySort's ``Less`` as a key: priority descending, creation time ascending, then input order
    (the time as integer microseconds from the earliest, so heap comparisons stay on ints)."""
    ts = state.pods[pod].metadata.creation_timestamp
    if ts is not None and ts.tzinfo is None:
        ts = ts.replace(tzinfo=UTC)
    return (-int(state.pod_priority[pod]), ((ts or _EPOCH) - _EPOCH) // _MICROSECOND, pod)


_POD_BITS = 64
_TIME_BITS = 60  # microseconds from datetime.min to the year 9999 stay below 2**59


def int_key(state: ClusterState, pod: int) -> int:
    """:func:`sort_key` packed into one integer with the same order (the time and the row are below
    2**60 and 2**64, so each field ranks before the next): a heap of ints compares in one step."""
    neg_prio, micros, _ = sort_key(state, pod)
    return (neg_prio << (_TIME_BITS + _POD_BITS)) + (micros << _POD_BITS) + pod


_POD_MASK = (1 << _POD_BITS) - 1


class SchedulingQueue:
    """activeQ, backoffQ and the unschedulable pods, with a simulated clock in seconds."""

    def __init__(self, state: ClusterState, pods: list[int], *, requeue: bool = True,
                 shuffle: int | None = None) -> None:
        self.state = state
        self.requeue = requeue
        self._rank: dict[int, int] | None = None
        if shuffle is not None:
            drawn = random.Random(shuffle).sample(range(len(pods)), len(pods))
            self._rank = dict(zip(pods, drawn))
        self.clock = 0.0
        self.attempts: dict[int, int] = {}
        self._last_try: dict[int, float] = {}
        self._keys: dict[int, int] = {}
        self._active: list[int] = [self._key(p) for p in pods]  # int_key per pod; the row is its low bits
        heapq.heapify(self._active)
        self._backoff: list[tuple[float, int]] = []
        self.unschedulable: dict[int, frozenset[str]] = {}

    def initial_order(self) -> list[int]:
        """The activeQ order at the start of the run."""
        return [k & _POD_MASK for k in sorted(self._active)]

    def backoff_duration(self, pod: int) -> float:
        n = self.attempts.get(pod, 0)
        return min(INITIAL_BACKOFF * 2 ** max(n - 1, 0), MAX_BACKOFF)

    def pop(self) -> int | None:
        """Next pod to schedule, advancing the clock to a backoff expiry when activeQ is empty."""
        if not self._active and self._backoff:
            self.clock = max(self.clock, self._backoff[0][0])
        while self._backoff and self._backoff[0][0] <= self.clock:
            heapq.heappush(self._active, heapq.heappop(self._backoff)[1])
        if not self._active:
            return None
        p = heapq.heappop(self._active) & _POD_MASK
        self.attempts[p] = self.attempts.get(p, 0) + 1
        self._last_try[p] = self.clock
        return p

    def push_active(self, pod: int) -> None:
        """Requeue at once (a preemptor after nominating, as upstream's nominated-pod path)."""
        heapq.heappush(self._active, self._key(pod))

    def _key(self, pod: int) -> int:
        key = self._keys.get(pod)
        if key is None:
            if self._rank is None:
                key = int_key(self.state, pod)
            else:  # the drawn rank stands for the creation time
                key = (-int(self.state.pod_priority[pod]) << (_TIME_BITS + _POD_BITS)) + (self._rank[pod] << _POD_BITS) + pod
            self._keys[pod] = key
        return key

    def park(self, pod: int, plugins: frozenset[str]) -> None:
        """The pod failed: keep it among the unschedulable pods with the plugins that rejected it."""
        if self.requeue:
            self.unschedulable[pod] = plugins

    def on_event(self, event: ClusterEvent) -> int:
        """Move unschedulable pods an event may help to backoffQ/activeQ; returns how many moved."""
        interest = event_interest(event)
        moved = [p for p, plugins in self.unschedulable.items() if plugins & interest]
        for p in moved:
            del self.unschedulable[p]
            expiry = self._last_try.get(p, 0.0) + self.backoff_duration(p)
            key = self._key(p)
            if expiry > self.clock:
                heapq.heappush(self._backoff, (expiry, key))
            else:
                heapq.heappush(self._active, key)
        return len(moved)
