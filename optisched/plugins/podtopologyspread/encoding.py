"""PodTopologySpread's hard constraints in the CP-SAT batch model: the nodes a constraint rules out, and
per domain ``count + selfMatch - min <= maxSkew`` over the batch's arrivals (EXACT, with the arrival
order's interactions where the queue order matters)."""
from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np
from ortools.sat.python import cp_model

from ...model.objects import Pod
from ...model.pod_counts import MatchCounter
from ...model.state import ClusterState
from ...optimal.order import Interaction
from .common import (
    DO_NOT_SCHEDULE,
    NodeEligibility,
    SpreadConstraint,
    _namespace,
    constraints_error,
    domain_counts,
    matching_pods_per_node,
    resolve_constraints,
)

if TYPE_CHECKING:
    from ...optimal.classes import PodClass
    from ...optimal.model import BatchModel

__all__ = ["SpreadEncoding"]


class SpreadEncoding:
    """The CP-SAT side of :class:`.filtering.PodTopologySpread` (it reads the rule's ``state``,
    ``defaults``, ``match_label_keys`` and ``counter``)."""

    state: ClusterState
    defaults: tuple[dict, ...]
    match_label_keys: bool
    counter: MatchCounter

    def _hard_of(self, model: BatchModel, c: PodClass) -> list[SpreadConstraint]:
        return resolve_constraints(model.snapshot, model.state.pods[c.rep], self.defaults, DO_NOT_SCHEDULE,
                                   self.match_label_keys)

    def restrict(self, model: BatchModel, classes: list[PodClass]) -> None:
        """A node without every constraint's topology key is out (``missing required label``); a pod
        whose hard constraints cannot be parsed goes nowhere (PreFilter's Error)."""
        for c in model.each(classes, model.LIGHT_EVERY):
            if constraints_error(self.state.pods[c.rep], DO_NOT_SCHEDULE) is not None:
                model.forbid(c, np.ones(self.state.num_nodes, dtype=bool))
                continue
            cons = self._hard_of(model, c)
            if cons:
                model.forbid(c, ~NodeEligibility(self.state, self.state.pods[c.rep], cons).all_keys)

    def encode_filter(self, model: BatchModel, classes: list[PodClass]) -> None:
        """Per hard constraint of a class and domain D where the batch places one of its pods:
        ``count(D) + selfMatch·[node not counted] − min ≤ maxSkew``, counts over the constraint's counted
        nodes at the end (fixed pods + every class matching the selector in the pod's namespace), min
        over the constraint's domains (0 with fewer than minDomains). This is the Filter's check for
        each placed pod against the final cluster with the pod removed: removing it lowers its own
        domain by selfMatch, and when that domain was the minimum the check holds anyway."""
        for c, pod, i, h, counted in model.each(self._hard_constraints(model, classes)):
            self._encode_one(model, c, pod, h, counted, i)

    def _hard_constraints(self, model: BatchModel, classes: list[PodClass]) -> Iterator[tuple]:
        """(class, its pod, index, constraint, counted nodes) of every hard constraint of ``classes``."""
        for c in classes:
            cons = self._hard_of(model, c)
            if not cons:
                continue
            pod = self.state.pods[c.rep]
            elig = NodeEligibility(self.state, pod, cons)
            for i, h in enumerate(cons):
                yield c, pod, i, h, elig.counted(h)

    def arrival_interactions(self, model: BatchModel, classes: list[PodClass]) -> list[Interaction]:
        """Each hard constraint counts the classes its selector matches: their pods skew it when they
        come before the carrier (:mod:`optisched.optimal.order`)."""
        out = []
        for c, pod, _, h, counted in self._hard_constraints(model, classes):
            matching = self._matching(model, pod, h)
            if any(d.index != c.index for d in matching):
                out.append(Interaction(c, tuple(matching), self.state.label(h.topology_key).codes, counted))
        return out

    @staticmethod
    def _matching(model: BatchModel, pod: Pod, h: SpreadConstraint) -> list[PodClass]:
        """The classes a constraint counts: same namespace, not terminating, matched by the selector."""
        if h.selector.empty or h.selector.nothing:
            return []
        ns = _namespace(pod)
        return model.classes_where(("spread", ns, h.selector), lambda p: _namespace(p) == ns and
                                   p.metadata.deletion_timestamp is None and
                                   h.selector.matches(p.metadata.labels), h.selector.labels or ())

    def _encode_one(self, model: BatchModel, c: PodClass, pod: Pod, h: SpreadConstraint,
                    counted: np.ndarray, i: int) -> None:
        """One constraint against the final cluster; with an arrival order, also (one literal choosing)
        against the cluster as the carrier's block ends (:meth:`ArrivalOrder.prefix_terms`)."""
        col = self.state.label(h.topology_key)
        fixed, present = domain_counts(col.codes, counted, matching_pods_per_node(self.counter, pod, h.selector),
                                       len(col.values))
        matching = self._matching(model, pod, h)
        order = model.order
        if not order.active(c):
            self._encode_counts(model, c, pod, h, i, counted, model.domain_terms(matching, col.codes, counted),
                                fixed, present, [], "")
            return
        self._encode_counts(model, c, pod, h, i, counted, model.domain_terms(matching, col.codes, counted),
                            fixed, present, order.when(False), "")
        early = order.prefix_terms(c, matching, col.codes, counted, f"spread{i}")
        self._encode_counts(model, c, pod, h, i, counted, early, fixed, present, order.when(True), "o")

    def _encode_counts(self, model: BatchModel, c: PodClass, pod: Pod, h: SpreadConstraint, i: int,
                       counted: np.ndarray, terms: dict, fixed: np.ndarray, present: np.ndarray,
                       enforce: list, tag: str) -> None:
        """``count(D) + selfMatch·[node not counted] − min ≤ maxSkew`` wherever the class places a pod,
        with the counts ``terms`` (value code -> variables) plus the fixed pods, under ``enforce``."""
        col = self.state.label(h.topology_key)
        domains = np.flatnonzero(present).tolist()
        count = {d: model.total(terms.get(d, [])) for d in set(terms) | set(domains)}
        minimum: cp_model.IntVar | int = 0
        if len(domains) >= h.min_domains:
            hi = max(int(fixed[d]) + count[d][1] for d in domains)
            const_min = min((int(fixed[d]) for d in domains if d not in terms), default=hi)
            minimum = model.cp.new_int_var(0, min(hi, const_min), f"min{tag}{c.index}_{i}")
            for d in domains:
                if d in terms:
                    model.cp.add(minimum <= count[d][0] + int(fixed[d]))
        self_match = int(h.selector.matches(pod.metadata.labels))
        for mask, extra, side in ((counted, 0, f"spread{i}+"), (~counted, self_match, f"spread{i}-")):
            for d, y in model.presence(c, h.topology_key, col.codes, mask, side).items():
                expr, ub = count.get(d, (0, 0))
                if int(fixed[d]) + ub + extra <= h.max_skew:
                    continue  # holds even against a minimum of 0
                model.cp.add(expr + int(fixed[d]) + extra - minimum <= h.max_skew).only_enforce_if([y, *enforce])
