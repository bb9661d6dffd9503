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
* ``excess[cpu=50,memory=60]``: the sum over the nodes the batch may use and the resources named of the
  per-mille utilization above the percent given (0 at or below it): the descheduler's LowNodeUtilization
  intent with its ``targetThresholds`` (kubernetes-sigs/descheduler v0.34.0
  ``pkg/framework/plugins/nodeutilization/lownodeutilization.go``), every over-utilized node brought
  down, not only the most utilized one.
* ``repair`` (with movable running pods): running pods left on a node whose required node affinity they
  no longer match, or whose NoSchedule/NoExecute taints they do not tolerate (read from the model's own
  phase-1 domains, so the filters are not written again), plus each DoNotSchedule topology spread
  constraint's excess over maxSkew (:mod:`optisched.plugins.podtopologyspread.excess`), plus the
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

from ..descheduler.encoding import encode_anti_affinity, encode_duplicates, encode_preferred_affinity
from ..errors import InputError
from ..metrics.cost import COST_KEY, node_costs
from ..plugins.podtopologyspread.common import DO_NOT_SCHEDULE, SCHEDULE_ANYWAY
from ..plugins.podtopologyspread.excess import encode_excess
from ..policy.eviction import KINDS, Keep, pod_kinds
from .score_terms import (
    Affine,
    abs_var,
    add_var,
    convex_load,
    node_fractions,
    node_utilization,
    upper_var,
    used_flag,
)
from .tiers import Linear

if TYPE_CHECKING:
    from .model import BatchModel

__all__ = ["COST_KEY", "OBJECTIVES", "check_objective", "excess_name", "node_costs", "objective_names", "pack_floor",
           "user_objective"]

OBJECTIVES = ("pack", "spread", "balance", "repair", "repair-soft")
NODE_RULES = ("NodeAffinity", "TaintToleration")  # a running pod's own node breaks them
REPAIRED_RULES = (*NODE_RULES, "PodTopologySpread")
RESOURCES = ("cpu", "memory")


def objective_names(objective: str | tuple[str, ...] | None) -> tuple[str, ...]:
    """The objectives asked for, in order: none, one name, or several (one tier each, lexicographic)."""
    if objective is None:
        return ()
    return (objective,) if isinstance(objective, str) else tuple(objective)


def excess_name(targets: dict[str, int]) -> str:
    """The ``excess`` objective's name for per-resource target percents: ``excess[cpu=50,memory=60]``."""
    return "excess[" + ",".join(f"{r}={int(v)}" for r, v in targets.items()) + "]"


def _excess_targets(name: str) -> dict[str, int] | None:
    """The targets of an ``excess[...]`` name, or None when ``name`` is not one."""
    if not (name.startswith("excess[") and name.endswith("]")):
        return None
    out: dict[str, int] = {}
    for part in name[len("excess["):-1].split(","):
        r, _, v = part.partition("=")
        if not r or not v.isdigit():
            return None
        out[r] = int(v)
    return out or None


def check_objective(name: str | tuple[str, ...] | None) -> None:
    """Refuse an objective that is not one of :data:`OBJECTIVES` (or ``excess[RESOURCE=PERCENT,...]``)."""
    for one in objective_names(name):
        if one not in OBJECTIVES and _excess_targets(one) is None:
            raise InputError(f"--objective: {one!r} is not one of {', '.join(OBJECTIVES)}")


def _var_nodes(model: BatchModel) -> np.ndarray:
    return np.array([n for n, terms in enumerate(model.node_terms()) if terms], dtype=np.int64)


def _pack_nodes(model: BatchModel) -> tuple[np.ndarray, np.ndarray]:
    """(counted, other): the nodes with a variable that ``pack`` counts (no fixed pod other than
    DaemonSet and mirror/static pods holds them) and the rest of the nodes with a variable."""
    kinds = pod_kinds(model.state)
    stays = kinds[:, KINDS.index(Keep.STATIC)] | kinds[:, KINDS.index(Keep.DAEMONSET)]
    nodes = _var_nodes(model)
    free = np.array([not any(not stays[p] for p in model.snapshot.pods_on[n]) for n in nodes.tolist()], dtype=bool)
    return nodes[free], nodes[~free]


def _pack(model: BatchModel, lin: Linear) -> None:
    costs = node_costs(model.state)
    for n in _pack_nodes(model)[0].tolist():
        add_var(lin, used_flag(model, lin, n, f"pack{n}"), 1 if costs is None else int(costs[n]))


def pack_floor(model: BatchModel, placed: dict[int, int]) -> int:
    """A lower bound of ``pack`` once the placement tiers hold ``placed`` (priority -> batch pods on a
    node): per resource (every column, the pod count included), the requests of the ``placed[L]``
    smallest batch pods of each level, less all the room the uncounted nodes have, must fit on counted
    nodes; the cheapest fractional cover of that by the counted nodes' room (cost per unit of room,
    cheapest first; with unit costs, the roomiest first) rounded up. A relaxation of bin packing (every
    filter but capacity dropped, pods divisible), so it holds for any placement the tiers allow."""
    state = model.state
    counted, other = _pack_nodes(model)
    costs = node_costs(state)
    cost = np.ones(len(counted), dtype=np.float64) if costs is None else costs[counted].astype(np.float64)
    room = np.maximum(state.allocatable - model.snapshot.requested, 0)
    demand = np.zeros(len(state.resources), dtype=np.int64)
    for level, count in placed.items():
        rows = [p for c in model.classes if c.priority == level for p in c.pending + [q for pods in c.running.values() for q in pods]]
        if rows and count > 0:
            demand += np.sort(state.pod_requests[rows], axis=0)[:min(count, len(rows))].sum(axis=0)
    residual = demand - room[other].sum(axis=0)
    floor = 0.0
    for r in np.flatnonzero(residual > 0).tolist():
        have = room[counted, r].astype(np.float64)
        order = np.argsort(np.divide(cost, have, out=np.full(len(have), np.inf), where=have > 0), kind="stable")
        need, paid = float(residual[r]), 0.0
        for k in order.tolist():
            if need <= 0 or have[k] <= 0:
                break
            take = min(1.0, need / have[k])
            paid, need = paid + take * cost[k], need - take * have[k]
        floor = max(floor, paid)
    return int(np.ceil(floor - 1e-9))


def _spread(model: BatchModel, lin: Linear) -> None:
    nodes = _var_nodes(model)
    for r in RESOURCES:
        utils = node_utilization(model, r, True, nodes)
        if not utils:
            continue
        add_var(lin, upper_var(model, lin, list(utils.values()), f"spread_max_{r}"), len(utils))
        for n, u in utils.items():
            add_var(lin, convex_load(model, lin, u, f"spread{n}_{r}"), 1)


def _excess(model: BatchModel, lin: Linear, targets: dict[str, int]) -> None:
    nodes = _var_nodes(model)
    for r, pct in targets.items():
        for n, u in node_utilization(model, r, True, nodes).items():
            over = Affine(u.terms, u.const - 10 * pct)  # per mille above the target
            if over.bounds()[1] > 0:
                add_var(lin, upper_var(model, lin, [over], f"excess{n}_{r}"), 1)


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
    targets = _excess_targets(name)
    if targets is not None:
        _excess(model, lin, targets)
        return lin
    {"pack": _pack, "spread": _spread, "balance": _balance, "repair": _repair,
     "repair-soft": _repair_soft}[name](model, lin)
    return lin
