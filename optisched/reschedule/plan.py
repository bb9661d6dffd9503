"""The rescheduling answer: target, waves and prediction, as DataFrames, ``plan.json`` and Eviction YAML."""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..optimal.result import Certificate
from ..plans.plan import eviction_document
from .goals import Goal, Metrics
from .pareto import ParetoCurve
from .reach import Reach
from .waves import Move, Staging

__all__ = ["ReschedulePlan", "new_plan_id"]


def new_plan_id() -> str:
    """A plan's id: the first 12 hex digits of a random uuid4 (48 bits: two plans of one cluster share
    one with odds below one in ten billion over a thousand plans). ``--apply`` marks the nodes it cordons
    with it (docs/reschedule.md); lowercase hex, so it is also a valid label value."""
    return uuid.uuid4().hex[:12]


@dataclass
class ReschedulePlan:
    goals: list[Goal]
    target: dict[str, str | None]  # the optimizer's end state, every pod
    staging: Staging
    before: Metrics
    after: Metrics  # of the predicted end state
    certificate: Certificate
    removable: list[str] = field(default_factory=list)  # nodes the predicted end state empties
    saving: float | None = None  # hourly cost of those nodes
    versus: Any = None  # :class:`.versus.Versus` with --compare-descheduler: the descheduler beside the plan
    pareto: ParetoCurve | None = None  # --pareto: the goal at move budgets 0, 1, 2, 4, ... up to this plan
    plan_id: str = field(default_factory=new_plan_id)  # marks the nodes --apply cordons
    reach: list[Reach] = field(default_factory=list)  # per goal: how much of it the plan reaches (.reach)
    final_certificate: Certificate | None = None  # the solve of the re-plan whose staging was kept, if not the first
    side_effects: list[str] = field(default_factory=list)  # worse than left alone on what no goal is about
    kubernetes_version: str = "v1.35.4"  # the kube-scheduler release the replays followed
    requests: str = "1.35"  # how the pods' requests were counted (model.requests.requests_key), for --apply

    @property
    def reached(self) -> bool:
        """Every goal is reached against the first target (``--fail-on-unreached`` exits 1 otherwise)."""
        return all(r.reached for r in self.reach)

    @property
    def moves(self) -> int:
        return sum(len(w.moves) for w in self.staging.waves)

    @property
    def consistent(self) -> bool:
        """Every emitted replacement is predicted on its target (a pod evicted without a target, to make
        room, may land anywhere but back on its node)."""
        return all(on_target(m) for w in self.staging.waves for m in w.moves)

    def waves_frame(self) -> pd.DataFrame:
        rows = [{"wave": i + 1, "pod": m.key, "from": m.source, "to": m.target, "predicted": m.predicted,
                 "reason": m.reason} for i, w in enumerate(self.staging.waves) for m in w.moves]
        return pd.DataFrame(rows, columns=["wave", "pod", "from", "to", "predicted", "reason"])

    def target_frame(self) -> pd.DataFrame:
        return pd.DataFrame(sorted(self.target.items()), columns=["pod", "node"])

    def prediction_frame(self) -> pd.DataFrame:
        return pd.DataFrame(sorted(self.staging.final.items()), columns=["pod", "node"])

    def pareto_frame(self) -> pd.DataFrame:
        """``--pareto``'s points (:meth:`.pareto.ParetoCurve.frame`); empty without it."""
        return self.pareto.frame() if self.pareto is not None else pd.DataFrame()

    def to_dict(self) -> dict:
        """``plan.json``: the shape other tools read (docs/reschedule.md)."""
        return {
            "planId": self.plan_id,
            "kubernetesVersion": self.kubernetes_version,
            "goal": [str(g) for g in self.goals],
            "cordon": self.staging.cordoned,
            "cordonDuringPlan": self.staging.held,
            "waves": [{"evictions": [{"pod": m.key, "from": m.source, "to": m.target, "predicted": m.predicted,
                                      "reason": m.reason} for m in w.moves], "budgets": w.budgets}
                      for w in self.staging.waves],
            "wavesMinimal": self.staging.minimal,
            "placements": self.staging.final,
            "before": self.before.to_dict(), "after": self.after.to_dict(),
            "removableNodes": self.removable, "hourlySaving": self.saving,
            "reach": [r.to_dict() for r in self.reach], "goalReached": self.reached,
            "sideEffects": self.side_effects,
            "dropped": [{"pod": m.key, "from": m.source, "to": m.target, "why": why} for m, why in self.staging.dropped],
            "cycles": [c.to_dict() for c in self.staging.cycles],
            "notes": self.staging.notes,
            "certificate": self.certificate.to_dict(),
            **({"replanCertificate": self.final_certificate.to_dict()} if self.final_certificate else {}),
            **({"pareto": self.pareto.to_dict()} if self.pareto is not None else {}),
        } | ({"compareDescheduler": self.versus.to_dict()} if self.versus is not None else {})

    def eviction_objects(self) -> list[dict]:
        """Per wave, ``policy/v1`` Evictions annotated with the wave, the predicted node and the reason."""
        return [eviction_document(m.key, {"optisched.io/plan-id": self.plan_id, "optisched.io/wave": str(i + 1), "optisched.io/target": m.target or "",
                                          "optisched.io/predicted-node": m.predicted or "",
                                          "optisched.io/reason": m.reason})
                for i, w in enumerate(self.staging.waves) for m in w.moves]

    def summary(self) -> list[str]:
        """Terminal lines: before -> after per metric, moves and waves, budgets per wave, consistency."""
        b, a = self.before.to_dict(), self.after.to_dict()
        lines = [f"plan: {self.plan_id}", f"goal: {', '.join(self.goals)}"]
        for k in b:
            if isinstance(b[k], dict):
                lines += [f"  {k}[{r}]: {_fmt(b[k][r])} -> {_fmt(a[k].get(r))}" for r in b[k]]
            elif b[k] is not None:
                lines.append(f"  {k}: {b[k]} -> {a[k]}")
        if self.staging.cordoned:
            lines.append(f"cordon first: {', '.join(self.staging.cordoned)}")
        if self.staging.held:
            lines.append(f"cordon during the plan, uncordon after its last wave (empty already): {_some(self.staging.held)}")
        proven = {True: ", the fewest for the budgets", False: ", not proven the fewest", None: ""}[self.staging.minimal]
        lines.append(f"moves: {self.moves} in {len(self.staging.waves)} wave(s){proven}")
        for i, w in enumerate(self.staging.waves):
            used = ", ".join(f"{k} {n}" for k, n in sorted(w.budgets.items())) or "no budget"
            lines.append(f"  wave {i + 1}: {len(w.moves)} eviction(s); PodDisruptionBudgets used: {used}")
        total = self.moves
        on = sum(1 for w in self.staging.waves for m in w.moves if on_target(m))
        lines.append(f"replacements predicted on target: {on}/{total}")
        if self.removable:
            saving = f", saving {self.saving:.3f}/h" if self.saving is not None else ""
            lines.append(f"removable nodes: {', '.join(self.removable)}{saving}")
        lines += [r.line() for r in self.reach]
        if self.side_effects:
            lines.append(f"worse on what no goal of the plan is about: {'; '.join(self.side_effects)}")
        lines += [f"dropped {m.key} ({m.source} -> {m.target}): {why}" for m, why in self.staging.dropped]
        lines += [c.line() for c in self.staging.cycles]
        lines += self.staging.notes
        c = self.certificate
        lines.append(f"certificate: {c.status}; " + "; ".join(
            f"{t.name} {t.objective} (bound {t.bound})" for t in c.tiers))
        return lines + (self.pareto.lines() if self.pareto is not None else [])


def on_target(m: Move) -> bool:
    return m.predicted == m.target or (m.target is None and m.predicted != m.source)


def _some(names: list[str], shown: int = 10) -> str:
    """The first ``shown`` names, then how many more (the whole list is in ``plan.json``)."""
    more = f" and {len(names) - shown} more ({len(names)} nodes)" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def _fmt(x: object) -> str:
    return f"{x:.3f}" if isinstance(x, float) else str(x)


def node_saving(costs: np.ndarray | None, rows: list[int]) -> float | None:
    return None if costs is None else int(costs[rows].sum()) / 1000
