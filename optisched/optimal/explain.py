"""Why pods stay pending in optimal mode: impossible for any assignment, or outranked.

For each class with pending pods the answer leaves out:

* **excluded**: no node is left once the rules that depend only on the pod, the node and the pods that
  cannot move have spoken (``BatchModel.forbidden_by`` records which rule ruled out which node). The
  explanation is the *smallest* set of rules that together exclude every node — a minimum set cover,
  solved exactly with CP-SAT — with how many nodes each of them excludes;
* **infeasible**: nodes remain, but the model without the tiers' constraints has no assignment placing
  even one pod of the class (the rules that depend on other pods — spread, affinity — cannot all hold);
* **outranked**: the class could be placed, but the answer's placement tiers (higher priorities first)
  left no room; when that tier is OPTIMAL, no assignment places more pods of that priority.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from ortools.sat.python import cp_model

from .. import cpsat
from .clock import Clock
from .model import BatchModel
from .tier_key import TierKey
from .tiers import Tier

__all__ = ["Explanation", "explain_unplaced", "minimum_cover"]

MAX_PROBES = 20  # feasibility probes per answer (one per class), each short


@dataclass
class Explanation:
    pods: list[str]
    priority: int
    kind: str  # "excluded" | "infeasible" | "outranked" | "weighted"
    detail: str
    rules: dict[str, int] = field(default_factory=dict)  # rule -> nodes it excludes (the minimum cover)

    def to_dict(self) -> dict:
        return {"pods": self.pods, "priority": self.priority, "kind": self.kind, "detail": self.detail,
                "rules": self.rules}


def minimum_cover(masks: dict[str, np.ndarray], seconds: float = 5.0) -> list[str]:
    """The fewest rules whose masks together cover every node (every mask has the same length), searched
    for at most ``seconds`` (then every rule)."""
    names = sorted(masks)
    if not names:
        return []
    cp = cp_model.CpModel()
    pick = {r: cp.new_bool_var(r) for r in names}
    n = len(masks[names[0]])
    stacked = np.array([masks[r] for r in names])
    for i in range(n):
        who = [pick[names[j]] for j in np.flatnonzero(stacked[:, i]).tolist()]
        cp.add_bool_or(who)
    cp.minimize(sum(pick.values()))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(0.01, seconds)
    solver.parameters.num_workers = 1
    if cpsat.solve(solver, cp) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return names
    return [r for r in names if solver.value(pick[r])]


def _can_place_one(model: BatchModel, base: cp_model.CpModel, c_index: int, deadline: float,
                   clock: Clock) -> bool | None:
    """Whether one more pod of the class fits anywhere (None: not decided in 2 s or by ``deadline``,
    copying the model included)."""
    probe = base.clone()
    probe.clear_objective()
    probe.clear_hints()
    vs = [probe.get_int_var_from_proto_index(v.Index()) for v in model.vars[c_index].arr_vars]
    if not vs:
        return False
    probe.add(cp_model.LinearExpr.sum(vs) >= 1)
    seconds = min(2.0, deadline - clock.now())  # after the copy, whose time is the model's size
    if seconds < 0.05:
        return None
    solver = cp_model.CpSolver()
    size = len(probe.proto.variables)
    clock.set_limits(solver.parameters, seconds, variables=size)
    solver.parameters.num_workers = 1
    status = cpsat.solve(solver, probe)
    clock.settle(solver.response_proto, seconds, size)
    if status == cp_model.INFEASIBLE:
        return False
    return True if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) else None


def explain_unplaced(model: BatchModel, node_of: np.ndarray, tiers: list[Tier],
                     base: cp_model.CpModel, deadline: float, clock: Clock) -> list[Explanation]:
    """Explanations for the classes whose pending pods ``node_of`` leaves without a node; ``base`` is
    the model before any tier was fixed. Feasibility probes stop at ``deadline`` (a ``clock`` value)."""
    state = model.state
    status = {t.key: t.status for t in tiers}
    out: list[Explanation] = []
    probes = 0
    copy = 2e-5 * len(base.proto.variables)  # copying and loading the model (about, in seconds)
    cost = copy  # then the last probe's time
    for c in model.classes:
        left = [state.pods[p].key for p in c.pending if node_of[p] < 0]
        if not left:
            continue
        usable = model.allowed[c.index] & (model.cap[c.index] > 0)
        if not usable.any():
            masks = {rule: m for (ci, rule), m in model.forbidden_by.items() if ci == c.index}
            # past the limit (the safety net: noted), every rule that excludes a node, not the fewest
            late = not clock.wall_allows(0.0)
            cover = [r for r in sorted(masks) if masks[r].any()] if late else \
                minimum_cover(masks, min(5.0, clock.wall_left()))
            rules = {r: int(masks[r].sum()) for r in cover}
            detail = "no node passes " + " and ".join(f"{r} (excludes {k})" for r, k in rules.items()) + \
                (" (every rule that excludes a node: the time limit had passed before the fewest were found)"
                 if late else "")
            out.append(Explanation(left, c.priority, "excluded", detail, rules))
            continue
        left_s = deadline - clock.now() - cost
        possible = None
        if probes < MAX_PROBES and left_s > 0.05 and clock.wall_allows(copy):
            clock.charge(cost)
            t0 = clock.now()
            possible = _can_place_one(model, base, c.index, deadline, clock)
            cost = max(cost, clock.now() - t0) if clock.deterministic else clock.now() - t0
        probes += 1
        if possible is False:
            out.append(Explanation(left, c.priority, "infeasible",
                                   f"{int(usable.sum())} node(s) pass the static rules, but no assignment satisfies "
                                   "the topology spread and inter-pod affinity rules for even one of these pods"))
            continue
        tier = status.get(TierKey.placed(c.priority), "")
        proof = "no assignment places more pods of this priority" if tier == "OPTIMAL" else \
            f"the placement tier for this priority ended {tier or 'unsolved'} within the time limit"
        if TierKey.weighted() in status:
            out.append(Explanation(left, c.priority, "weighted",
                                   f"fits alone on {int(usable.sum())} node(s); the weighted objective given "
                                   "scores the answer higher without them"))
            continue
        out.append(Explanation(left, c.priority, "outranked",
                               f"fits alone on {int(usable.sum())} node(s); left out for pods of higher or equal "
                               f"priority: {proof}"))
    return out
