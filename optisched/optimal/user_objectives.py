"""Objectives an operator asks for (``--objective``), solved as one tier after the placement and
disruption tiers and before the profile's score: what the user asks for outranks the score surrogate.

* ``pack``: fewest nodes the batch uses among those no fixed pod holds (DaemonSet and mirror/static pods
  aside: a node holding only those is empty for an autoscaler, as cluster-autoscaler's scale-down and the
  descheduler count it); when nodes carry an hourly
  cost (label or annotation :data:`COST_KEY`, a decimal number such as ``"0.192"``), the lowest total
  cost of those nodes instead (cost in thousandths; a node without one costs the highest cost found,
  so an unpriced node is never the cheap choice).
* ``spread``: per resource (cpu, memory), the highest per-mille utilization of the nodes the batch may
  use, weighted by their number, plus the sum over those nodes of utilization²/1000 so the nodes below
  the maximum spread too.
* ``balance``: the sum over the nodes the batch may use of |cpu − memory| per-mille fractions.
* ``repair`` (with movable running pods): running pods left on a node whose required node affinity they
  no longer match, or whose NoSchedule/NoExecute taints they do not tolerate (read from the model's own
  phase-1 domains, so the filters are not written again), plus each DoNotSchedule topology spread
  constraint's excess over maxSkew (:mod:`optisched.constraints.pod_topology_spread_excess`), plus the
  pods whose required anti-affinity is violated and the duplicates of one owner on a node
  (:mod:`optisched.descheduler.encoding`): the intents of the descheduler's
  ``RemovePodsViolatingNodeAffinity``, ``RemovePodsViolatingNodeTaints``,
  ``RemovePodsViolatingTopologySpreadConstraint``, ``RemovePodsViolatingInterPodAntiAffinity`` and
  ``RemoveDuplicates`` (kubernetes-sigs/descheduler v0.34.0, ``pkg/framework/plugins/``).
* ``repair-soft``: the same for the preferences: pods off the best node of their preferred node
  affinity, ScheduleAnyway spread over maxSkew, pods whose preferred anti-affinity is violated.

Utilization here counts actual requests (no scoring defaults), fixed pods included.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..constraints.pod_topology_spread import DO_NOT_SCHEDULE, SCHEDULE_ANYWAY
from ..constraints.pod_topology_spread_excess import encode_excess
from ..descheduler.encoding import encode_anti_affinity, encode_duplicates, encode_preferred_affinity
from ..errors import InputError
from ..metrics.cost import COST_KEY, node_costs
from ..policy.eviction import KINDS, Keep, pod_kinds
from .score_terms import abs_var, add_var, convex_load, node_fractions, node_utilization, upper_var, used_flag
from .tiers import Linear

if TYPE_CHECKING:
    from .model import BatchModel

__all__ = ["COST_KEY", "OBJECTIVES", "check_objective", "node_costs", "objective_names", "user_objective"]

OBJECTIVES = ("pack", "spread", "balance", "repair", "repair-soft")
NODE_RULES = ("NodeAffinity", "TaintToleration")  # a running pod's own node breaks them
REPAIRED_RULES = (*NODE_RULES, "PodTopologySpread")
RESOURCES = ("cpu", "memory")


def objective_names(objective: str | tuple[str, ...] | None) -> tuple[str, ...]:
    """The objectives asked for, in order: none, one name, or several (one tier each, lexicographic)."""
    if objective is None:
        return ()
    return (objective,) if isinstance(objective, str) else tuple(objective)


def check_objective(name: str | tuple[str, ...] | None) -> None:
    """Refuse an objective that is not one of :data:`OBJECTIVES`."""
    for one in objective_names(name):
        if one not in OBJECTIVES:
            raise InputError(f"--objective: {one!r} is not one of {', '.join(OBJECTIVES)}")


def _var_nodes(model: BatchModel) -> np.ndarray:
    return np.array([n for n, terms in enumerate(model.node_terms()) if terms], dtype=np.int64)


def _pack(model: BatchModel, lin: Linear) -> None:
    costs = node_costs(model.state)
    kinds = pod_kinds(model.state)
    stays = kinds[:, KINDS.index(Keep.STATIC)] | kinds[:, KINDS.index(Keep.DAEMONSET)]
    for n in _var_nodes(model).tolist():
        if not any(not stays[p] for p in model.snapshot.pods_on[n]):
            add_var(lin, used_flag(model, lin, n, f"pack{n}"), 1 if costs is None else int(costs[n]))


def _spread(model: BatchModel, lin: Linear) -> None:
    nodes = _var_nodes(model)
    for r in RESOURCES:
        utils = node_utilization(model, r, True, nodes)
        if not utils:
            continue
        add_var(lin, upper_var(model, lin, list(utils.values()), f"spread_max_{r}"), len(utils))
        for n, u in utils.items():
            add_var(lin, convex_load(model, lin, u, f"spread{n}_{r}"), 1)


def _balance(model: BatchModel, lin: Linear) -> None:
    for n, row in node_fractions(model, list(RESOURCES), True, _var_nodes(model)).items():
        if len(row) == len(RESOURCES):
            add_var(lin, abs_var(model, lin, row["cpu"].minus(row["memory"]), f"balance{n}"), 1)


def _spread_excess(model: BatchModel, lin: Linear, action: str) -> None:
    for sched, classes in model.by_profile.items():
        fw = model.frameworks[sched]
        if "PodTopologySpread" in fw.filter_names:
            encode_excess(fw.filter_rules["PodTopologySpread"], model, classes, lin, action)


def _repair_soft(model: BatchModel, lin: Linear) -> None:
    _spread_excess(model, lin, SCHEDULE_ANYWAY)
    encode_anti_affinity(model, lin, preferred=True)
    encode_preferred_affinity(model, lin)


def _repair(model: BatchModel, lin: Linear) -> None:
    _spread_excess(model, lin, DO_NOT_SCHEDULE)
    encode_anti_affinity(model, lin)
    encode_duplicates(model, lin)
    for c in model.classes:
        cv = model.vars[c.index]
        masks = [m for r in NODE_RULES if (m := model.forbidden_by.get((c.index, r))) is not None]
        if not masks or not len(cv.keep_nodes):
            continue
        bad = np.logical_or.reduce(masks)[cv.keep_nodes]
        for v, u, b in zip(cv.keep_vars, cv.keep_ub.tolist(), bad.tolist()):
            if b:
                lin.add(v, 1, u)


def user_objective(model: BatchModel, name: str) -> Linear:
    """The user objective ``name``, to be minimized (the tier ``objective:NAME``)."""
    check_objective(name)
    lin = Linear()
    {"pack": _pack, "spread": _spread, "balance": _balance, "repair": _repair,
     "repair-soft": _repair_soft}[name](model, lin)
    return lin
