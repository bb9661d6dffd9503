"""``optisched.reschedule``: the target placement for the goals, then the waves that reach it.

Target: optimal mode (:func:`optisched.optimal.solve.solve_optimal`) with the running pods the eviction
policy lets leave movable (``movable=True``), the goal as the tier after the placement tiers and before
disruption (``goal_first``): no running pod is left homeless and no pending pod greedy mode places is
left out (placement tiers, which count running pods too), then the goal, then the fewest moves weighted
by priority. Waves and the kube-scheduler replay: :mod:`.waves`.
"""
from __future__ import annotations

import numpy as np

from ..metrics.cost import node_costs
from ..model.state import ClusterState
from ..optimal.solve import OptimalOptions, solve_optimal
from ..policy.eviction import EvictionPolicy
from ..profile import SchedulerConfig
from .goals import Goal, empty_nodes, goal_objective, metrics, parse_goals, violating
from .plan import ReschedulePlan, node_saving
from .waves import Budgets, stage

__all__ = ["plan_reschedule"]


def _reasons(state: ClusterState, target: np.ndarray, goals: list[Goal], emptied: set[str],
             bad: dict[int, str]) -> dict[int, str]:
    """Why each moved pod moves, in the goal's words; ``bad``: pods whose node a repaired rule rejects."""
    names = state.node_names
    out = {}
    for p in np.flatnonzero((state.pod_node >= 0) & (target != state.pod_node)).tolist():
        src = names[int(state.pod_node[p])]
        if target[p] < 0:
            out[p] = "fit-pending: evicted to make room"
        elif Goal.REPAIR in goals and p in bad:
            out[p] = f"repair: {bad[p]} rejects {src}"
        elif Goal.CONSOLIDATE in goals and src in emptied:
            out[p] = f"consolidate: empties {src}"
        elif Goal.FIT_PENDING in goals:
            out[p] = "fit-pending: makes room for pending pods"
        else:
            out[p] = f"{goals[0]}: moves off {src}"
    return out


def plan_reschedule(state: ClusterState, config: SchedulerConfig, goals: str | list[str],
                    budgets: Budgets | None = None, policy: EvictionPolicy | None = None,
                    time_limit: float = 30.0, seed: int = 0) -> ReschedulePlan:
    """The plan for ``goals`` (see the module docstring)."""
    budgets = budgets or Budgets()
    policy = policy or EvictionPolicy()
    parsed = parse_goals(goals)
    options = OptimalOptions(time_limit=time_limit, seed=seed, movable=True, objective=goal_objective(parsed),
                             goal_first=True, staged=True, eviction=policy)
    result = solve_optimal(state, config, options)
    target = result.node_of.copy()
    names = state.node_names
    was_empty = empty_nodes(state, state.pod_node)
    emptied = {names[n] for n in np.flatnonzero(empty_nodes(state, target) & ~was_empty).tolist()}
    staging = stage(state, config, target, _reasons(state, target, parsed, emptied, violating(state, config, state.pod_node)), budgets, frozenset(emptied))
    final = np.array([state.node_index[n] if (n := staging.final.get(p.key)) is not None else -1
                      for p in state.pods], dtype=np.int64)
    pending = np.flatnonzero(state.pod_node < 0)
    removable = np.flatnonzero(empty_nodes(state, final) & ~was_empty).tolist()
    return ReschedulePlan(parsed, result.placements(), staging, metrics(state, state.pod_node, pending, config),
                          metrics(state, final, pending, config), result.certificate, [names[n] for n in removable],
                          node_saving(node_costs(state), removable))
