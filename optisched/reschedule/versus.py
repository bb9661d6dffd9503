"""``reschedule --compare-descheduler``: the descheduler's strategy for the same goal, run on the same
snapshot and replayed through kube-scheduler, beside optisched's plan.

The descheduler side is :func:`optisched.descheduler.run_descheduler` (kubernetes-sigs/descheduler v0.34.0
semantics, then greedy mode places the replacements, then a second cycle on the result). Without a policy
file, the strategy matching the goal runs with the descheduler's defaults:

- ``consolidate``: HighNodeUtilization, ``thresholds`` from ``--thresholds`` or cpu 20, memory 20;
- ``balance``: LowNodeUtilization, ``thresholds`` / ``targetThresholds`` from ``--thresholds`` /
  ``--target-thresholds`` or cpu/memory 20 / 50 (the descheduler README's example);
- ``repair``: RemovePodsViolatingNodeAffinity (required), RemovePodsViolatingNodeTaints and
  RemovePodsViolatingTopologySpreadConstraint;
- ``fit-pending`` has no counterpart (give a policy).

Both sides are measured the same way on their predicted end states (:func:`.goals.metrics`): evictions,
replacements back on the node they left (loops), replacements left pending, violations left, nodes the
end state empties, the goal's value, and the evictions the same descheduler policy makes in a second
cycle on that end state (for optisched's side: would the descheduler undo the plan).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from rich.console import Console
from rich.table import Table

from ..descheduler import DeschedulerPolicy, evictions_of, parse_policy, run_descheduler
from ..errors import InputError
from ..model.state import ClusterState
from ..profile import SchedulerConfig
from ..textsafe import safe_text
from .goals import Goal, Metrics, empty_nodes, metrics
from .plan import ReschedulePlan
from .waves import state_at

__all__ = ["Side", "Versus", "compare_descheduler", "goal_policy", "render_versus"]

ROWS = ("evictions", "loops", "pending", "violations", "nodesEmptied", "goal", "secondCycle")
LABELS = {"evictions": "evictions", "loops": "loops (replacement back on its node)",
          "pending": "replacements left pending", "violations": "violations left",
          "nodesEmptied": "nodes emptied", "goal": "goal value",
          "secondCycle": "evictions by the next descheduler cycle"}


@dataclass(frozen=True)
class Side:
    """One answer to the goal, measured on its predicted end state."""

    name: str
    evictions: int
    loops: int
    pending: int
    violations: int
    emptied: list[str]
    goal: dict[str, float | int | None]
    second_cycle: int

    def to_dict(self) -> dict:
        return {"name": self.name, "evictions": self.evictions, "loops": self.loops, "pending": self.pending,
                "violations": self.violations, "nodesEmptied": self.emptied, "goal": self.goal,
                "secondCycle": self.second_cycle}


@dataclass(frozen=True)
class Versus:
    goal: str
    strategies: list[str]
    before: dict[str, float | int | None]  # the goal's value on the input
    sides: list[Side] = field(default_factory=list)  # optisched first, then the descheduler

    def to_dict(self) -> dict:
        return {"goal": self.goal, "strategies": self.strategies, "goalBefore": self.before,
                "optisched": self.sides[0].to_dict(), "descheduler": self.sides[1].to_dict()}

    def frame(self) -> pd.DataFrame:
        """One row per measure, one column per side (what a report renders)."""
        rows = []
        for key in ROWS:
            row: dict = {"measure": LABELS[key]}
            for s in self.sides:
                v = s.to_dict()[key]
                row[s.name] = _cell(v)
            rows.append(row)
        return pd.DataFrame(rows, columns=["measure", *(s.name for s in self.sides)])


def _cell(v: object) -> str:
    if isinstance(v, list):
        return f"{len(v)}" + (f" ({', '.join(map(str, v))})" if v else "")
    if isinstance(v, dict):
        return ", ".join(f"{k} {_num(x)}" for k, x in v.items())
    return str(v)


def _num(x: object) -> str:
    return f"{x:.3f}" if isinstance(x, float) else str(x)


def goal_policy(goal: Goal, thresholds: tuple[dict[str, int], dict[str, int]] | None = None) -> DeschedulerPolicy:
    """The descheduler policy that pursues ``goal`` (see the module docstring)."""
    low, high = thresholds or ({"cpu": 20, "memory": 20}, {"cpu": 50, "memory": 50})
    plugins: dict[str, list[str]]
    config: list[tuple[str, dict]]
    if goal == Goal.CONSOLIDATE:
        plugins, config = {"balance": ["HighNodeUtilization"]}, [("HighNodeUtilization", {"thresholds": low})]
    elif goal == Goal.BALANCE:
        plugins = {"balance": ["LowNodeUtilization"]}
        config = [("LowNodeUtilization", {"thresholds": low, "targetThresholds": high})]
    elif goal == Goal.REPAIR:
        plugins = {"deschedule": ["RemovePodsViolatingNodeAffinity", "RemovePodsViolatingNodeTaints"],
                   "balance": ["RemovePodsViolatingTopologySpreadConstraint"]}
        config = [("RemovePodsViolatingNodeAffinity",
                   {"nodeAffinityType": ["requiredDuringSchedulingIgnoredDuringExecution"]})]
    else:
        raise InputError(f"--compare-descheduler: the descheduler has no strategy for {goal}; give a "
                         "DeschedulerPolicy file")
    doc = {"apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerPolicy",
           "profiles": [{"name": str(goal), "pluginConfig": [{"name": n, "args": a} for n, a in config],
                         "plugins": {pt: {"enabled": names} for pt, names in plugins.items()}}]}
    return parse_policy(doc, f"<--compare-descheduler {goal}>")


def goal_value(goal: Goal, m: Metrics) -> dict[str, float | int | None]:
    """The measure ``goal`` optimizes, from a state's metrics."""
    if goal == Goal.CONSOLIDATE:
        return {"nodesUsed": m.nodes_used} | ({"hourlyCost": m.hourly_cost} if m.hourly_cost is not None else {})
    if goal == Goal.BALANCE:
        return {f"utilizationMax[{r}]": v for r, v in m.util_max.items()}
    if goal == Goal.REPAIR:
        return {"violations": sum(m.violations.values())}
    return {"pendingPlaced": m.pending_placed}


def _node_of(state: ClusterState, placements: dict[str, str | None]) -> np.ndarray:
    return np.array([state.node_index[n] if (n := placements.get(p.key)) is not None else -1 for p in state.pods],
                    dtype=np.int64)


def _emptied(state: ClusterState, final: np.ndarray) -> list[str]:
    rows = np.flatnonzero(empty_nodes(state, final) & ~empty_nodes(state, state.pod_node)).tolist()
    return [state.node_names[n] for n in rows]


def _measured(name: str, state: ClusterState, config: SchedulerConfig, goal: Goal, final: np.ndarray,
              counts: tuple[int, int, int], second: int) -> Side:
    m = metrics(state, final, np.flatnonzero(state.pod_node < 0), config)
    return Side(name, *counts, sum(m.violations.values()), _emptied(state, final), goal_value(goal, m), second)


def compare_descheduler(state: ClusterState, config: SchedulerConfig, plan: ReschedulePlan,
                        policy: DeschedulerPolicy | None = None,
                        thresholds: tuple[dict[str, int], dict[str, int]] | None = None) -> Versus:
    """optisched's ``plan`` beside the descheduler's ``policy`` (default: :func:`goal_policy` of the plan's
    first goal) on the same snapshot ``state``."""
    goal = plan.goals[0]
    pol = policy or goal_policy(goal, thresholds)
    ours = _node_of(state, plan.staging.final)
    moves = [m for w in plan.staging.waves for m in w.moves]
    second = len(evictions_of(state_at(state, ours), config, pol))
    mine = _measured("optisched", state, config, goal, ours,
                     (len(moves), sum(m.predicted == m.source for m in moves),
                      sum(m.predicted is None for m in moves)), second)
    out = run_descheduler(state, config, pol)
    theirs = _measured("descheduler", state, config, goal, _node_of(state, out.placements),
                       (len(out.evictions), len(out.loops), len(out.pending)), len(out.second_cycle))
    strategies = list(dict.fromkeys(s.name for prof in pol.profiles for s in prof.strategies))
    return Versus(str(goal), strategies, goal_value(goal, plan.before), [mine, theirs])


def render_versus(console: Console, v: Versus) -> None:
    """The terminal table: one row per measure, optisched beside the descheduler."""
    t = Table(title=f"optisched vs the descheduler ({', '.join(v.strategies)}) for {v.goal}", title_justify="left")
    frame = v.frame()
    for col in frame.columns:
        t.add_column(col, overflow="fold")
    for row in frame.itertuples(index=False):
        t.add_row(*(safe_text(x) for x in row))
    console.print(t)
    console.print(safe_text(f"goal value before: {_cell(v.before)}"), highlight=False)
