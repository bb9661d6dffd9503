"""``optisched.reschedule``: the target placement for the goals, then the waves that reach it.

Target: optimal mode (:func:`optisched.optimal.solve.solve_optimal`) with the running pods the eviction
policy lets leave movable (``movable=True``), the goal as the tier after the placement tiers and before
disruption (``goal_first``): no running pod is left homeless and no pending pod greedy mode places is
left out (placement tiers, which count running pods too), then the goal, then the fewest moves weighted
by priority. Waves and the kube-scheduler replay: :mod:`.waves`.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..errors import InputError
from ..metrics.cost import node_costs
from ..model.state import ClusterState, compile_cluster
from ..optimal.solve import OptimalOptions, OptimalResult, solve_optimal
from ..policy.eviction import EvictionPolicy
from ..profile import SchedulerConfig
from .goals import Goal, empty_nodes, goal_objective, metrics, parse_goals, utilization_classes, violating
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


def _gang_target(state: ClusterState, config: SchedulerConfig, options: OptimalOptions,
                 gang: list[str]) -> tuple[np.ndarray, OptimalResult, list[str]]:
    """The target when only the pods of ``gang`` are to be fitted (``--for``): the other pending pods
    are left out of the batch (they keep no node in the target), and unless every gang pod gets a node
    the target moves nothing (a gang is all or none)."""
    missing = [k for k in gang if k not in state.pod_index]
    if missing:
        raise InputError(f"--for: no pod {missing[0]!r} in the input", obj=f"Pod/{missing[0]}")
    bound = [k for k in gang if state.pod_node[state.pod_index[k]] >= 0]
    if bound:
        raise InputError(f"--for: pod {bound[0]!r} is not pending", obj=f"Pod/{bound[0]}")
    wanted = set(gang)
    pods = [p for p in state.pods if p.spec.node_name or p.key in wanted]
    sub = compile_cluster(replace(state.cluster, pods=pods))
    result = solve_optimal(sub, config, options)
    target = np.full(len(state.pods), -1, dtype=np.int64)
    for i, pod in enumerate(sub.pods):
        target[state.pod_index[pod.key]] = result.node_of[i]
    notes = []
    if any(target[state.pod_index[k]] < 0 for k in gang):
        notes.append(f"--for: the {len(gang)} pod(s) do not all fit, even with moves; nothing is moved")
        target = state.pod_node.copy()
    return target, result, notes


def _low_node_utilization(state: ClusterState, policy: EvictionPolicy, thresholds: tuple[dict[str, int], dict[str, int]],
                          notes: list[str]) -> EvictionPolicy:
    """The policy narrowed to pods on over-utilized nodes (none when no node is under-utilized: upstream
    then does nothing), with a note naming them."""
    under, over = utilization_classes(state, *thresholds)
    notes.append(f"LowNodeUtilization: {len(under)} under-utilized node(s), {len(over)} over the target "
                 f"thresholds{': ' + ', '.join(over) if over else ''}")
    return replace(policy, only_nodes=frozenset(over if under else ()))


def plan_reschedule(state: ClusterState, config: SchedulerConfig, goals: str | list[str],
                    budgets: Budgets | None = None, policy: EvictionPolicy | None = None,
                    time_limit: float = 30.0, seed: int = 0, gang: list[str] | None = None,
                    thresholds: tuple[dict[str, int], dict[str, int]] | None = None) -> ReschedulePlan:
    """The plan for ``goals`` (see the module docstring); ``gang``: the pending pods ``fit-pending`` is
    for (``--for``; all or none), instead of every pending pod; ``thresholds``: ``balance``'s
    (thresholds, targetThresholds) in percent, LowNodeUtilization's arguments."""
    budgets = budgets or Budgets()
    policy = policy or EvictionPolicy()
    parsed = parse_goals(goals)
    notes: list[str] = []
    if thresholds is not None and Goal.BALANCE in parsed:
        policy = _low_node_utilization(state, policy, thresholds, notes)
    # the target is a state the descheduler leaves alone: every pod valid against it (batch semantics)
    options = OptimalOptions(time_limit=time_limit, seed=seed, movable=True, objective=goal_objective(parsed),
                             goal_first=True, staged=True, eviction=policy, arrival_order=False)
    if gang:
        target, result, gang_notes = _gang_target(state, config, options, gang)
        notes += gang_notes
    else:
        result = solve_optimal(state, config, options)
        target = result.node_of.copy()
    names = state.node_names
    was_empty = empty_nodes(state, state.pod_node)
    emptied = {names[n] for n in np.flatnonzero(empty_nodes(state, target) & ~was_empty).tolist()}
    reasons = _reasons(state, target, parsed, emptied, violating(state, config, state.pod_node))
    staging = stage(state, config, target, reasons, budgets, frozenset(emptied), Goal.FIT_PENDING in parsed)
    staging.notes = notes + staging.notes
    if gang and not any(n.startswith("--for") for n in notes) and any(staging.final.get(k) is None for k in gang):
        staging.notes.append("--for: kube-scheduler is predicted to leave some of the pods pending")
    final = np.array([state.node_index[n] if (n := staging.final.get(p.key)) is not None else -1
                      for p in state.pods], dtype=np.int64)
    pending = np.flatnonzero(state.pod_node < 0)
    removable = np.flatnonzero(empty_nodes(state, final) & ~was_empty).tolist()
    placements = {p.key: (names[int(t)] if t >= 0 else None) for p, t in zip(state.pods, target)}
    return ReschedulePlan(parsed, placements, staging, metrics(state, state.pod_node, pending, config),
                          metrics(state, final, pending, config), result.certificate, [names[n] for n in removable],
                          node_saving(node_costs(state), removable))
