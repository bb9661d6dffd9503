"""How much of each goal a plan reaches: the cluster left alone, the predicted end state, the target the
optimizer found first and the bound it proved, and why the moves that were not carried out were dropped.

One number per goal, in the unit a user counts: ``consolidate`` the nodes in use (the hourly cost with
``optisched.io/hourly-cost``), ``repair`` the pods breaking a repaired rule, ``balance`` the nodes over
the target thresholds (without thresholds the most utilized node's share), ``fit-pending`` the pending
pods placed. A goal is *reached* when the predicted end state is as good as the first target on it.
The bound is the certificate's, moved into that unit where the tier's own unit differs only by what the
plan cannot change (the nodes held by pods that stay, the running pods of a priority); None otherwise.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from ..optimal.result import Certificate
from ..optimal.tier_key import TierKey
from .goals import Goal, Metrics
from .monotone import Measures, goal_value
from .waves import Move

__all__ = ["Reach", "drop_kind", "reach", "side_effects"]

UNIT = {"nodesUsed": "nodes used", "hourlyCost": "hourly cost", "violations": "violations",
        "nodesOverTarget": "nodes over the target thresholds", "utilizationMax": "most utilized node",
        "pendingPlaced": "pending pods placed"}


@dataclass(frozen=True)
class Reach:
    goal: str
    measure: str
    before: float
    after: float
    target: float
    bound: float | None
    reached: bool
    dropped: dict[str, int]  # why the target's moves not carried out were dropped -> how many (and, for
    # fit-pending, "left pending by kube-scheduler": pending pods the target places that stay pending)

    def line(self) -> str:
        """``goal: before -> after UNIT (target T, bound B): reached``, or ``not reached`` and why."""
        bound = "" if self.bound is None else f", bound {_fmt(self.bound)}"
        head = (f"{self.goal}: {_fmt(self.before)} -> {_fmt(self.after)} {UNIT[self.measure]} "
                f"(target {_fmt(self.target)}{bound}): ")
        if self.reached:
            return head + "reached"
        moves = {k: v for k, v in self.dropped.items() if k != "left pending by kube-scheduler"}
        n = sum(moves.values())
        why = [f"{n} move(s) dropped: " + ", ".join(f"{k} {v}" for k, v in sorted(moves.items(),
                                                                                key=lambda kv: -kv[1]))] if n else []
        if left := self.dropped.get("left pending by kube-scheduler"):
            why.append(f"{left} pending pod(s) the target places left pending by kube-scheduler")
        return head + "not reached" + (" - " + "; ".join(why) if why else "")

    def to_dict(self) -> dict:
        return {"goal": self.goal, "measure": self.measure, "before": self.before, "after": self.after,
                "target": self.target, "bound": self.bound, "reached": self.reached, "dropped": self.dropped}


def drop_kind(why: str) -> str:
    """The kind of a drop's reason, as the summary counts them."""
    for needle, kind in (("time limit", "deadline"), ("not carried out", "worse than left alone"),
                         ("--max-moves", "move limits"), ("within the budgets", "budgets"), ("cycle", "cycles"),
                         ("preempted on arrival of", "preempted"), ("without a node", "no node in the target")):
        if needle in why:
            return kind
    return "refused landings"


def _bound(goal: Goal, measure: str, target: float, certificate: Certificate) -> float | None:
    """The certificate's bound in the goal's unit, where only a constant separates the two."""
    tiers = {t.key: t for t in certificate.tiers}
    if goal == Goal.CONSOLIDATE and (t := tiers.get(TierKey.user("pack"))) is not None and t.bound is not None:
        scale = 1000 if measure == "hourlyCost" else 1
        return target - (t.objective - t.bound) / scale
    if goal == Goal.FIT_PENDING:
        placed = [t for key, t in tiers.items() if key.is_level]
        if placed and all(t.bound is not None for t in placed):
            return target + sum(t.bound - t.objective for t in placed)
    if goal == Goal.REPAIR and (t := tiers.get(TierKey.user("repair"))) is not None and t.bound == 0:
        return target - t.objective  # the violations of pods the model keeps in place (it counts the rest)
    if goal == Goal.BALANCE and measure == "nodesOverTarget":
        t = next((t for key, t in tiers.items() if (key.objective or "").startswith("excess")), None)
        return 0 if t is not None and t.bound == 0 else None
    return None


def reach(measures: Measures, target: np.ndarray, final: np.ndarray, certificate: Certificate,
          dropped: list[tuple[Move, str]]) -> list[Reach]:
    """Per goal (see the module docstring): ``target`` the first target, ``certificate`` its solve's,
    ``dropped`` every move of the plan's rounds that was not carried out, with why."""
    start, end, aim = measures.start, measures.of(final), measures.of(target)
    kinds = dict(Counter(drop_kind(why) for _, why in dropped))
    pending = measures.state.pod_node < 0
    if Goal.FIT_PENDING in measures.goals and (left := int(np.count_nonzero(pending & (target >= 0) & (final < 0)))):
        kinds["left pending by kube-scheduler"] = left
    out = []
    for goal in measures.goals:
        k, before = goal_value(goal, start)
        _, after = goal_value(goal, end)
        _, planned = goal_value(goal, aim)
        better = after >= planned if k == "pendingPlaced" else after <= planned + 1e-9
        out.append(Reach(str(goal), k, before, after, planned, _bound(goal, k, planned, certificate), better,
                         kinds))
    return out


def side_effects(goals: list[Goal], before: Metrics, after: Metrics) -> list[str]:
    """The measures no goal of the plan is about that the plan makes worse than ``before`` (the cluster
    left alone: its pending pods placed), as ``name: a -> b``."""
    b, a = before.to_dict(), after.to_dict()
    worse = []
    if Goal.CONSOLIDATE not in goals and a["nodesUsed"] > b["nodesUsed"]:
        worse.append(f"nodesUsed: {b['nodesUsed']} -> {a['nodesUsed']}")
    if Goal.REPAIR not in goals:
        worse += [f"violations[{k}]: {v} -> {a['violations'].get(k, 0)}" for k, v in b["violations"].items()
                  if a["violations"].get(k, 0) > v]
    if Goal.FIT_PENDING not in goals and a["pendingPlaced"] < b["pendingPlaced"]:
        worse.append(f"pendingPlaced: {b['pendingPlaced']} -> {a['pendingPlaced']}")
    return worse


def _fmt(x: float) -> str:
    return f"{x:.3f}".rstrip("0").rstrip(".") if isinstance(x, float) else str(x)
