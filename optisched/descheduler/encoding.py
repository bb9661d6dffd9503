"""The descheduler's violations as CP-SAT objective terms: what ``reschedule --goal repair`` minimizes.

Each term counts, on the end state of a batch model (:class:`optisched.optimal.model.BatchModel`), the pods
one of the descheduler's strategies would evict, with the predicate that strategy uses on a placement:

* :func:`encode_anti_affinity`: pods whose required (``preferred``: preferred) anti-affinity terms match
  another pod of their topology domain, :func:`.violations.anti_affinity_violated`
  (``RemovePodsViolatingInterPodAntiAffinity``);
* :func:`encode_duplicates`: pods of one owner and images above ``upperAvg`` on a node,
  :func:`.duplicates.over_average` (``RemoveDuplicates``);
* :func:`encode_preferred_affinity`: pods on a node whose preferred node affinity weighs less than the
  best node they could use, :func:`.violations.preferred_affinity_violated`
  (``RemovePodsViolatingNodeAffinity`` with ``preferredDuringSchedulingIgnoredDuringExecution``).

kubernetes-sigs/descheduler v0.34.0, ``pkg/framework/plugins/``. The batch's classes are the pods the
eviction policy lets move (and the pending ones): those the descheduler's evictor counts. A pod the
batch places passes kube-scheduler's filters (required anti-affinity included), so the violations left
are among pods that stay. Every term is exact on the batch's pods (fixed pods, which cannot move, are
not counted; duplicates take ``upperAvg`` over every pod of the owner in the batch, placed or not): its
``derived`` values make :meth:`Linear.value` the predicate's count on a placement
(tests/test_reschedule_repair.py holds the two to each other).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from ortools.sat.python.cp_model import IntVar

from .duplicates import owner_keys, upper_average
from .violations import anti_terms, matched_by, preferred_weights

if TYPE_CHECKING:
    from ..optimal.classes import PodClass
    from ..optimal.model import BatchModel
    from ..optimal.tiers import Linear

__all__ = ["encode_anti_affinity", "encode_duplicates", "encode_preferred_affinity"]


Values = dict[int, int]  # variable index -> value (absent = 0)


def _sum_of(terms: list[tuple], values: Values) -> int:
    return sum(values.get(v.Index(), 0) for v, _ in terms)


def _any_violated(live: list[tuple[list[tuple], int]]) -> Callable[[Values], int]:
    """``z``'s value: 1 when some term's count of other matching pods is at least one."""
    return lambda values: int(any(_sum_of(t, values) + k >= 1 for t, k in live))


def _kept_if(kept: IntVar, z: IntVar) -> Callable[[Values], int]:
    """``v``'s value: the pods kept on the node when a term is violated there, else 0."""
    return lambda values: values.get(kept.Index(), 0) if values.get(z.Index()) else 0


def _above(terms: list[tuple], upper: int) -> Callable[[Values], int]:
    """``e``'s value: the pods of ``terms`` above ``upper``."""
    return lambda values: max(0, _sum_of(terms, values) - upper)


def _fixed_per_domain(model: BatchModel, term, owner, codes: np.ndarray) -> np.ndarray:  # type: ignore[no-untyped-def]
    """Per topology value: the fixed pods (on a node, never moving) that ``term`` of ``owner`` matches."""
    state = model.state
    rows = np.flatnonzero(model.batch.fixed & (state.pod_node >= 0) & matched_by(state, term, owner))
    doms = codes[state.pod_node[rows]]
    return np.bincount(doms[doms >= 0], minlength=int(codes.max(initial=-1)) + 1)


def _class_anti(model: BatchModel, lin: Linear, c: PodClass, terms: list) -> None:
    """``c``'s pods that stay on a node where some term sees a matching pod in its domain: per kept node,
    ``z`` (a term is violated there) and ``v ≥ kept − ub·(1 − z)``."""
    state, cv = model.state, model.vars[c.index]
    rep = state.pods[c.rep]
    checks: dict[int, list[tuple[list[tuple], int]]] = {}  # kept node -> [(terms, constant)] per term
    for term in terms:
        codes = state.label(term.topology_key).codes
        hits = matched_by(state, term, rep)
        matched = [d for d in model.classes if hits[d.rep]]
        found = model.domain_terms(matched, codes)
        fixed = _fixed_per_domain(model, term, rep, codes)
        me = int(any(d.index == c.index for d in matched))  # the pod itself is not "another" pod
        for n in cv.keep_nodes.tolist():
            dom = int(codes[n])
            if dom >= 0:
                checks.setdefault(n, []).append((found.get(dom, []), int(fixed[dom]) - me))
    for n, kv, ku in zip(cv.keep_nodes.tolist(), cv.keep_vars, cv.keep_ub.tolist()):
        live = [(t, k) for t, k in checks.get(n, []) if sum(u for _, u in t) + k > 0]
        if not live:
            continue
        z = model.cp.new_bool_var(f"anti{c.index}_{n}")
        for t, k in live:
            expr, ub = model.total(t)
            model.cp.add(expr + k <= (ub + k) * z)
        v = model.cp.new_int_var(0, ku, f"antiv{c.index}_{n}")
        model.cp.add(v >= kv - ku * (1 - z))
        lin.add(v, 1, ku)
        lin.derived.append((z, _any_violated(live)))
        lin.derived.append((v, _kept_if(kv, z)))


def encode_anti_affinity(model: BatchModel, lin: Linear, preferred: bool = False) -> None:
    """Add to ``lin`` (minimized) the pods that stay where their anti-affinity terms are violated."""
    for c in model.classes:
        terms = anti_terms(model.state.pods[c.rep], preferred)
        if terms and len(model.vars[c.index].keep_nodes):
            _class_anti(model, lin, c, terms)


def encode_duplicates(model: BatchModel, lin: Linear) -> None:
    """Add to ``lin`` (minimized), per owner and node, the owner's pods there above ``upperAvg``."""
    state = model.state
    groups: dict[tuple, list[PodClass]] = {}
    for c in model.classes:
        if (k := owner_keys(state.pods[c.rep])) is not None:
            for o in k[0]:
                groups.setdefault(o, []).append(c)
    for o, classes in groups.items():
        upper = upper_average(state, classes[0].rep, sum(c.size for c in classes))
        if upper is None:
            continue
        per_node: dict[int, list[tuple]] = {}
        for c in classes:
            for n, v, u in model.vars[c.index].terms():
                per_node.setdefault(n, []).append((v, u))
        for n, terms in per_node.items():
            expr, ub = model.total(terms)
            if ub <= upper:
                continue
            e = model.cp.new_int_var(0, ub - upper, f"dup{classes[0].index}_{n}")
            model.cp.add(e >= expr - upper)
            lin.add(e, 1, ub - upper)
            lin.derived.append((e, _above(terms, upper)))


def encode_preferred_affinity(model: BatchModel, lin: Linear) -> None:
    """Add to ``lin`` (minimized) the pods on a node whose preferred node affinity weighs less than the
    best node they could use."""
    for c in model.classes:
        found = preferred_weights(model.state, c.rep)
        if found is None:
            continue
        weight, best = found
        for n, v, u in model.vars[c.index].terms():
            if weight[n] < best:
                lin.add(v, 1, u)
