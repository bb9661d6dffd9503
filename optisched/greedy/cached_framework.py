"""A :class:`Framework` that computes the placement-independent part of a cycle once per pod shape.

The *static* filters (:class:`optisched.framework.Plugin`: NodeUnschedulable, NodeName, TaintToleration,
NodeAffinity and NodeDeclaredFeatures) filter on the pod's spec and the nodes' fixed labels, taints,
flags and declared features; the scores with a ``score_key`` (TaintToleration, NodeAffinity and
ImageLocality) score on them too. Their answer for every node is computed once per distinct
(tolerations, nodeName, nodeSelector, node affinity, features the pod may require, images) and read
back for the nodes a cycle evaluates: the leading run of these filters in
the profile's order becomes one lookup, with each node's first failing plugin, code and reasons as
the plugins themselves gave them, so FitError histograms and traces are unchanged. Their PreFilter
statuses (NodeAffinity's node-name restriction and required-affinity mask) are kept the same way.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..framework import CycleState, FilterResult, Status
from ..model.objects import Pod
from ..model.snapshot import Snapshot
from ..plugins.node_declared_features import scheduling_key
from ..profile import Profile
from .framework_runner import FilterPass, Framework

__all__ = ["CachedFramework"]

_ABSENT = object()
_FILTER_KEY = "__static_filter_key__"
MAX_ENTRIES = 512  # per cache: distinct pod shapes are few; a bound keeps memory flat on odd inputs


def filter_key(pod: Pod) -> tuple:
    """What the static filters read of a pod."""
    spec = pod.spec
    aff = spec.affinity.node_affinity if spec.affinity else None
    return (spec.node_name, tuple(spec.tolerations), frozenset(spec.node_selector.items()),
            aff.model_dump_json() if aff is not None else None, scheduling_key(spec))


@dataclass
class _StaticPass:
    """The static filter prefix over all nodes: first failing plugin (-1: passes), its code, results."""

    first: np.ndarray  # int16 [N]
    code: np.ndarray  # int8 [N]
    results: list[tuple[str, FilterResult]]


def _put(cache: dict, key: tuple, value: object) -> None:
    if len(cache) >= MAX_ENTRIES:
        cache.clear()
    cache[key] = value


class CachedFramework(Framework):
    """:class:`Framework` with the static filters and scores cached per pod shape."""

    def __init__(self, snapshot: Snapshot, profile: Profile) -> None:
        super().__init__(snapshot, profile)
        prefix = 0
        while prefix < len(self.filter_names) and self.filter_rules[self.filter_names[prefix]].static:
            prefix += 1
        self.static_prefix = prefix
        self.all_nodes = np.arange(snapshot.state.num_nodes, dtype=np.int64)
        self._filters: dict[tuple, _StaticPass] = {}
        self._scores: dict[tuple, np.ndarray] = {}
        self._pre_filters: dict[tuple, tuple[Status, object]] = {}

    def _filter_key(self, cycle: CycleState) -> tuple:
        """``filter_key`` of the cycle's pod, computed once per cycle."""
        key = cycle.data.get(_FILTER_KEY)
        if key is None:
            key = cycle.data[_FILTER_KEY] = filter_key(cycle.pod_obj)
        return key

    def _pre_filter_one(self, name: str, cycle: CycleState) -> Status:
        """A static plugin's PreFilter status, and what it keeps in the cycle state, once per pod shape."""
        if not self.filter_rules[name].static:
            return super()._pre_filter_one(name, cycle)
        key = (name, self._filter_key(cycle))
        hit = self._pre_filters.get(key)
        if hit is None:
            status = super()._pre_filter_one(name, cycle)
            hit = (status, cycle.data.get(name, _ABSENT))
            _put(self._pre_filters, key, hit)
        elif hit[1] is not _ABSENT:
            cycle.data[name] = hit[1]
        return hit[0]

    def _static_pass(self, cycle: CycleState, skipped: set[str]) -> _StaticPass:
        names = self.filter_names[:self.static_prefix]
        key = (self._filter_key(cycle), frozenset(skipped.intersection(names)))
        hit = self._filters.get(key)
        if hit is None:
            fp = super().filter(cycle, self.all_nodes, skipped | set(self.filter_names[self.static_prefix:]))
            hit = _StaticPass(fp.fail_plugin, fp.fail_code,
                              [(name, self._spread(res, positions)) for name, positions, res in fp.results])
            _put(self._filters, key, hit)
        return hit

    def _spread(self, res: FilterResult, positions: np.ndarray) -> FilterResult:
        """A result over ``positions`` as one over all nodes (elsewhere: passes, no reason)."""
        n = len(self.all_nodes)
        code = np.zeros(n, dtype=np.int8)
        code[positions] = res.code
        reasons = []
        for mask, text in res.reasons:
            full = np.zeros(n, dtype=bool)
            full[positions] = mask
            reasons.append((full, text))
        return FilterResult(code, reasons)

    def filter(self, cycle: CycleState, nodes: np.ndarray, skipped: set[str]) -> FilterPass:
        if self.static_prefix == 0:
            return super().filter(cycle, nodes, skipped)
        st = self._static_pass(cycle, skipped)
        first = st.first[nodes]
        fp = FilterPass(nodes, first < 0, first, st.code[nodes], [], self.filter_names)
        if len(st.results):
            everywhere = np.arange(len(nodes))
            for name, res in st.results:
                code = res.code[nodes]
                if np.count_nonzero(code):
                    fp.results.append((name, everywhere, FilterResult(code, [(m[nodes], t) for m, t in res.reasons])))
        return self._filter_from(cycle, fp, self.static_prefix, skipped)

    def _raw_score(self, name: str, cycle: CycleState, nodes: np.ndarray) -> np.ndarray:
        shape = self.score_rules[name].score_key(cycle.pod_obj)
        if shape is None:
            return super()._raw_score(name, cycle, nodes)
        key = (name, *shape)
        raw = self._scores.get(key)
        if raw is None:
            raw = np.asarray(super()._raw_score(name, cycle, self.all_nodes), dtype=np.int64)
            _put(self._scores, key, raw)
        return raw[nodes]
