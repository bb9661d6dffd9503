"""Incremental counts of placed pods matching a (namespaces, label selector) pair, per node.

PodTopologySpread and InterPodAffinity both count "pods on this node in these namespaces whose labels
match this selector". Each distinct pair gets a count vector over nodes, built once from the snapshot
and then kept current by the snapshot's add/remove events, so a cycle reads counts instead of
rescanning every pod. Terminating pods (``deletionTimestamp`` set) never count, as upstream skips them.
"""
from __future__ import annotations

import numpy as np

from .selectors import NOTHING, Selector, selector_of
from .snapshot import Snapshot

__all__ = ["NOTHING", "MatchCounter", "Selector", "selector_of"]


class MatchCounter:
    """Per (namespaces, selector): how many placed pods on each node match. ``namespaces=None`` = all."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        state = snapshot.state
        self._labels, self._ns, self._alive = state.pod_meta
        self._counts: dict[tuple[frozenset[str] | None, Selector], np.ndarray] = {}
        # keys bucketed by one required label pair, so an added pod only checks keys it could match
        self._by_pair: dict[tuple[str, str], list[tuple]] = {}
        self._unbucketed: list[tuple] = []
        self._placed_by_pair: dict[tuple[str, str], set[int]] = {}  # label pair -> placed pods carrying it
        self._pod_keys: dict[int, list[tuple]] = {}  # pod -> registered keys it matches (labels are static)
        self._memo_by_pair: dict[tuple[str, str], list[int]] = {}  # label pair -> pods in _pod_keys carrying it
        snapshot.subscribe(self)

    def counts(self, namespaces: frozenset[str] | None, selector: Selector) -> np.ndarray:
        """Count vector over all nodes (do not modify)."""
        key = (namespaces, selector)
        vec = self._counts.get(key)
        if vec is None:
            vec = np.zeros(self.snapshot.state.num_nodes, dtype=np.int64)
            if not selector.nothing:
                node_of = self.snapshot.node_of
                if selector.labels:  # only pods carrying every required pair can match: scan the rarest
                    pool = min((self._placed_by_pair.get(pair, set()) for pair in selector.labels), key=len)
                    candidates = sorted(pool)
                else:
                    candidates = np.flatnonzero(node_of >= 0).tolist()
                for p in candidates:
                    if self._match(int(p), namespaces, selector):
                        vec[node_of[p]] += 1
            self._counts[key] = vec
            if selector.labels:
                self._by_pair.setdefault(min(selector.labels), []).append(key)
            elif not selector.nothing:
                self._unbucketed.append(key)
            # keep the per-pod memo complete: a pod matching the key carries its bucket pair
            memo = self._memo_by_pair.get(min(selector.labels), ()) if selector.labels else \
                () if selector.nothing else self._pod_keys
            for p in memo:
                if self._match(p, namespaces, selector):
                    self._pod_keys[p].append(key)
        return vec

    def _keys_of(self, pod: int) -> list[tuple]:
        keys = self._pod_keys.get(pod)
        if keys is None:
            keys = [key for pair in self._labels[pod].items() for key in self._by_pair.get(pair, ())
                    if self._match(pod, key[0], key[1])]
            keys += [key for key in self._unbucketed if self._match(pod, key[0], key[1])]
            self._pod_keys[pod] = keys
            for pair in self._labels[pod].items():
                self._memo_by_pair.setdefault(pair, []).append(pod)
        return keys

    def _match(self, p: int, namespaces: frozenset[str] | None, selector: Selector) -> bool:
        return self._alive[p] and (namespaces is None or self._ns[p] in namespaces) and selector.matches(self._labels[p])

    def _update(self, pod: int, node: int, sign: int) -> None:
        labels = self._labels[pod]
        for pair in labels.items():
            bucket = self._placed_by_pair.setdefault(pair, set())
            if sign > 0:
                bucket.add(pod)
            else:
                bucket.discard(pod)
        if not self._counts:
            return
        for key in self._keys_of(pod):
            self._counts[key][node] += sign

    def on_add(self, pod: int, node: int) -> None:
        self._update(pod, node, 1)

    def on_remove(self, pod: int, node: int) -> None:
        self._update(pod, node, -1)
