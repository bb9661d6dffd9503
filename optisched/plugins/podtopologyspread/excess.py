"""PodTopologySpread, the repair side: how far an end state breaks its DoNotSchedule constraints.

kube-scheduler checks a constraint only when a pod arrives (``podtopologyspread/filtering.go``), so a
cluster drifts: a scale-down or a node loss leaves a domain ``maxSkew`` above the smallest one, and the
pods already running stay. The descheduler's ``RemovePodsViolatingTopologySpreadConstraint``
(kubernetes-sigs/descheduler v0.34.0, ``pkg/framework/plugins/removepodsviolatingtopologyspreadconstraint``)
evicts to fix it. Here the measure is, per hard constraint (counted once per namespace, selector,
topology key and maxSkew) and domain, ``max(0, count − min − maxSkew)`` over the end state: the same
counts, eligible nodes and minimum as the Filter's encoding in :mod:`.pod_topology_spread`, as a CP-SAT
objective (:func:`encode_excess`). On a placement, the greedy Filter itself, run for each pod against the
end state without it, says which pods break a constraint (:func:`optisched.reschedule.goals.violating`).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from .common import (
    DO_NOT_SCHEDULE,
    NodeEligibility,
    _namespace,
    domain_counts,
    matching_pods_per_node,
    resolve_constraints,
)

if TYPE_CHECKING:
    from ...optimal.classes import PodClass
    from ...optimal.model import BatchModel
    from ...optimal.tiers import Linear
    from .filtering import PodTopologySpread

__all__ = ["encode_excess"]


def encode_excess(rule: PodTopologySpread, model: BatchModel, classes: list[PodClass], lin: Linear,
                  action: str = DO_NOT_SCHEDULE) -> None:
    """Add to ``lin`` (minimized) each hard constraint of ``classes`` its excess per domain at the end;
    ``action`` ``ScheduleAnyway``: the soft constraints instead (``reschedule --goal repair --soft``, the
    descheduler's strategy with ``constraints: [ScheduleAnyway]``)."""
    seen: set[tuple] = set()
    for c in classes:
        pod = model.state.pods[c.rep]
        cons = resolve_constraints(model.snapshot, pod, rule.defaults, action, rule.match_label_keys)
        if not c.running or not cons:
            continue
        elig = NodeEligibility(model.state, pod, cons)
        for i, h in enumerate(cons):
            ns = _namespace(pod)
            key = (ns, repr(h.selector), h.topology_key, h.max_skew)
            if key in seen or h.selector.empty or h.selector.nothing:
                continue
            seen.add(key)
            counted = elig.counted(h)
            col = model.state.label(h.topology_key)
            fixed, present = domain_counts(col.codes, counted, matching_pods_per_node(rule.counter, pod, h.selector),
                                           len(col.values))
            matching = model.classes_where(("spread", ns, h.selector), lambda p, ns=ns, h=h: _namespace(p) == ns and
                                           p.metadata.deletion_timestamp is None and h.selector.matches(p.metadata.labels),
                                           h.selector.labels or ())
            terms = model.domain_terms(matching, col.codes, counted)
            domains = np.flatnonzero(present).tolist()
            _encode_domains(model, lin, terms, fixed, domains, h.max_skew, len(domains) >= h.min_domains,
                            f"excess{c.index}_{i}")


def _encode_domains(model: BatchModel, lin: Linear, terms: dict, fixed: np.ndarray, domains: list[int],
                    skew: int, has_min: bool, tag: str) -> None:
    """``min ≤ count(d)`` for every domain (so the objective drives it to the true minimum) and
    ``excess(d) ≥ count(d) − min − maxSkew``; the minimum is 0 below minDomains."""
    counts = {d: model.total(terms.get(d, [])) for d in domains}
    if not domains:
        return
    top = min(int(fixed[d]) + counts[d][1] for d in domains)
    low = model.cp.new_int_var(0, top if has_min else 0, f"{tag}_min")
    for d in domains:
        model.cp.add(low <= counts[d][0] + int(fixed[d]))

    def value_of(d: int, values: dict[int, int]) -> int:
        return int(fixed[d]) + sum(values.get(v.Index(), 0) for v, _ in terms.get(d, []))

    def lowest(values: dict[int, int]) -> int:
        return min(value_of(d, values) for d in domains) if has_min else 0

    def excess(d: int) -> Callable[[dict[int, int]], int]:
        return lambda values: max(0, value_of(d, values) - skew - lowest(values))

    lin.derived.append((low, lowest))
    for d in domains:
        hi = int(fixed[d]) + counts[d][1] - skew
        if hi <= 0:
            continue
        e = model.cp.new_int_var(0, hi, f"{tag}_{d}")
        model.cp.add(e >= counts[d][0] + int(fixed[d]) - low - skew)
        lin.add(e, 1, hi)
        lin.derived.append((e, excess(d)))
