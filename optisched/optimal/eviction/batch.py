"""Preemption in a batch model: which running pods may leave their node, and for whom.

kube-scheduler evicts lower-priority pods one preemptor at a time (:mod:`.default_preemption`). A batch
model decides every eviction at once. Per node, a running pod of priority q may leave only when the
batch places there a pod of priority > q whose ``preemptionPolicy`` is not ``Never`` — the preemptor kube
would have evicted it for. The room freed is then everyone's, as in kube, where pods of any priority
fill what a preemption left over. Voluntary classes (``movable``: running pods the eviction policy lets
leave, :mod:`optisched.optimal.classes`) may move for any reason: this rule does not apply to them, their
PodDisruptionBudgets do (:mod:`.pdb_model`), and the disruption tier prices every move.

Not encoded: kube's reprieve (a victim stays when the preemptor fits without it). A batch may evict a
pod the preemptor did not strictly need when that lets more pods of the victim's priority or higher
in; the lexicographic tiers only do so when it places more pods, and the disruption tier prefers to
keep pods that need not leave.

Which running pods are in the batch at all is decided by :func:`optisched.optimal.classes.build_batch`:
only those of lower priority than some pending pod that may preempt.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ortools.sat.python import cp_model

from .pdb_model import encode_budgets
from .preemptors import preemptors_of

if TYPE_CHECKING:
    from ..model import BatchModel

__all__ = ["encode_eviction_rules", "encode_move_cap"]


def encode_eviction_rules(model: BatchModel, budgets: bool = True) -> int:
    """Add the rule above for every running batch pod group, and keep moves within their
    PodDisruptionBudgets (:func:`.pdb_model.encode_budgets`) unless ``budgets`` is false (a staged plan
    holds each budget per wave instead, :mod:`optisched.reschedule.waves`); returns how many constraints
    were added."""
    added = encode_budgets(model) if budgets else 0
    for c in model.each(model.classes, model.LIGHT_EVERY):
        if c.voluntary:
            continue
        for n, pods in c.running.items():
            keep = model.keep_var(c, n)
            preemptors = preemptors_of(model, c, n)
            if not preemptors:
                model.cp.add(keep == len(pods))
            else:
                flag = model.cp.new_bool_var(f"preempt{c.index}_{n}")
                model.cp.add(cp_model.LinearExpr.sum(preemptors) >= 1).only_enforce_if(flag)
                model.cp.add(keep == len(pods)).only_enforce_if(flag.Not())
            added += 1
    return added


def encode_move_cap(model: BatchModel, cap: int) -> None:
    """At most ``cap`` running pods leave their node, whatever the reason (``reschedule --max-moves``: a
    move is one Eviction). Linear, so the node-neighbourhood search keeps it (:mod:`optisched.optimal.neighbourhood`)."""
    left = [(int(u), v) for c in model.classes for v, u in zip(model.vars[c.index].keep_vars,
                                                               model.vars[c.index].keep_ub.tolist())]
    if left:
        model.cp.add(sum(u for u, _ in left) - cp_model.LinearExpr.sum([v for _, v in left]) <= cap)
