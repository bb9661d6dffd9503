"""``Snapshot``: what is on each node now, updated pod by pod (assume, bind, evict).

The engines own one snapshot each. Rules keep their own incremental counts
(spread domains, affinity terms, host ports) by subscribing to ``add``/``remove``,
so assume/forget and preemption dry runs cost O(change), not O(cluster).
"""
from __future__ import annotations

from typing import Protocol

import numpy as np

from .state import ClusterState

__all__ = ["Snapshot", "SnapshotListener"]


class SnapshotListener(Protocol):
    def on_add(self, pod: int, node: int) -> None: ...
    def on_remove(self, pod: int, node: int) -> None: ...


class Snapshot:
    """Mutable placement over a read-only :class:`ClusterState`.

    ``requested[n]`` sums the effective requests of the pods on node ``n`` (the "pods" column counts
    them), ``nonzero[n]`` their non-zero (cpu, memory) used by scoring, ``node_of[p]`` is pod ``p``'s
    node or -1, ``pods_on[n]`` the pods on node ``n`` in the order they were added (``NodeInfo.Pods``,
    whose removal moves the last pod into the gap) and ``slot[p]`` pod ``p``'s index in that list.
    """

    def __init__(self, state: ClusterState, *, with_bound: bool = True) -> None:
        self.state = state
        n, r = state.allocatable.shape
        self.requested = np.zeros((n, r), dtype=np.int64)
        self.nonzero = np.zeros((n, 2), dtype=np.int64)
        self.node_of = np.full(len(state.pods), -1, dtype=np.int64)
        self.pods_on: list[list[int]] = [[] for _ in range(n)]
        self.slot = np.full(len(state.pods), -1, dtype=np.int64)
        self._listeners: list[SnapshotListener] = []
        self._shared: dict[object, object] = {}
        # when a list, every change is logged for :meth:`rollback`: an add as (pod, node, -1, None), a remove
        # as (pod, node, its slot, what the listeners that add/remove cannot invert held of the node)
        self.journal: list[tuple[int, int, int, list | None]] | None = None
        if with_bound:
            for p in np.flatnonzero(state.pod_node >= 0):
                self.add(int(p), int(state.pod_node[p]))

    def subscribe(self, listener: SnapshotListener) -> None:
        """Register a listener and replay the pods already placed into it."""
        self._listeners.append(listener)
        for node, pods in enumerate(self.pods_on):
            for p in pods:
                listener.on_add(p, node)

    def shared(self, factory):  # type: ignore[no-untyped-def]
        """One instance of ``factory(self)`` per snapshot: incremental indexes several rules read. A
        factory with ``per_state = True`` reads only the state (a listing per pod row, fixed for a run):
        one instance per :class:`ClusterState`, kept in its ``memo``, serves every snapshot of it."""
        obj = self._shared.get(factory)
        if obj is None:
            if getattr(factory, "per_state", False):
                key = ("snapshot.shared", factory)
                obj = self.state.memo.get(key)
                if obj is None:
                    obj = self.state.memo[key] = factory(self)
            else:
                obj = factory(self)
            self._shared[factory] = obj
        return obj

    def save_node(self, node: int) -> list:
        """State of one node that add/remove cannot invert (listeners with ``save_node``), for a dry run."""
        saved = [(listener, listener.save_node(node)) for listener in self._listeners if hasattr(listener, "save_node")]
        return [list(self.pods_on[node]), saved]

    def restore_node(self, node: int, token: list) -> None:
        """Put back what :meth:`save_node` saved (after the same pods were re-added)."""
        pods, saved = token
        self.pods_on[node][:] = pods
        for i, p in enumerate(pods):
            self.slot[p] = i
        for listener, state in saved:
            listener.restore_node(node, state)

    def add(self, pod: int, node: int) -> None:
        if self.node_of[pod] >= 0:
            raise ValueError(f"pod {self.state.pods[pod].key} is already on a node")
        self.node_of[pod] = node
        self.requested[node] += self.state.pod_requests[pod]
        self.nonzero[node] += self.state.pod_nonzero[pod]
        self.slot[pod] = len(self.pods_on[node])
        self.pods_on[node].append(pod)
        if self.journal is not None:
            self.journal.append((pod, node, -1, None))
        for listener in self._listeners:
            listener.on_add(pod, node)

    def remove(self, pod: int) -> int:
        node = int(self.node_of[pod])
        if node < 0:
            raise ValueError(f"pod {self.state.pods[pod].key} is not on a node")
        saved = None if self.journal is None else self.save_node(node)[1]
        self.node_of[pod] = -1
        self.requested[node] -= self.state.pod_requests[pod]
        self.nonzero[node] -= self.state.pod_nonzero[pod]
        # NodeInfo.RemovePod: the last pod takes the removed one's place
        lst = self.pods_on[node]
        i = int(self.slot[pod])
        last = lst.pop()
        if last != pod:
            lst[i] = last
            self.slot[last] = i
        self.slot[pod] = -1
        if self.journal is not None:
            self.journal.append((pod, node, i, saved))
        for listener in self._listeners:
            listener.on_remove(pod, node)
        return node

    def rollback(self, mark: int) -> None:
        """Undo the changes :attr:`journal` logged after its first ``mark`` entries, last first, each
        node's pod order included (a removed pod back in its slot, the pod that took it back last) and what
        a removal does not undo by an add (NodePorts: a removal frees a port as a set, as
        ``HostPortInfo.Remove`` does, even where another pod on the node holds it)."""
        assert self.journal is not None
        log, self.journal = self.journal, None
        try:
            for pod, node, i, saved in reversed(log[mark:]):
                if i < 0:
                    self.remove(pod)
                    continue
                self.add(pod, node)
                lst = self.pods_on[node]
                if i < len(lst) - 1:
                    lst[i], lst[-1] = pod, lst[i]
                    self.slot[lst[-1]] = len(lst) - 1
                    self.slot[pod] = i
                for listener, state in saved or ():
                    listener.restore_node(node, state)
        finally:
            del log[mark:]
            self.journal = log
