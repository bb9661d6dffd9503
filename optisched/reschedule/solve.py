"""``optisched.reschedule``: the target placement for the goals, then the waves that reach it.

Target: optimal mode (:func:`optisched.optimal.solve.solve_optimal`) with the running pods the eviction
policy lets leave movable (``movable=True``), the goal as the tier after the placement tiers and before
disruption (``goal_first``): no running pod is left homeless and no pending pod greedy mode places is
left out (placement tiers, which count running pods too), then the goal, then the fewest moves weighted
by priority. Waves and the kube-scheduler replay: :mod:`.waves`.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from ..errors import InputError
from ..metrics.cost import node_costs
from ..model.state import ClusterState, compile_cluster
from ..optimal.solve import OptimalOptions, OptimalResult, solve_optimal
from ..policy.eviction import EvictionPolicy
from ..profile import SchedulerConfig
from ..profile.releases import release
from .goals import Goal, empty_nodes, goal_objectives, metrics, parse_goals, utilization_classes
from .monotone import Measures, left_alone
from .pareto import sweep
from .plan import ReschedulePlan, node_saving
from .reach import reach, side_effects
from .rounds import Realized, Rounds, final_rows, realize
from .scope import narrowed, unbudgeted
from .tier_start import GoalStarts
from .violations import violating
from .waves import Budgets

__all__ = ["plan_reschedule"]

# the share of ``--time-limit`` kept for the staging (waves and kube-scheduler replays) and the re-plans
# when it drops moves (:mod:`.rounds`), which the first target's solve does not count (the staging's
# share at each size: docs/performance.md, "Reschedule")
STAGING_RESERVE = 0.4
# a re-plan is solved only while this share of the limit is left
REPLAN_LEAST = 0.1
# and the share kept after the staging's deadline for the summary's metrics of the predicted end state
SUMMARY_RESERVE = 0.05


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


def solve_target(state: ClusterState, config: SchedulerConfig, goals: list[Goal], budgets: Budgets,
                 policy: EvictionPolicy, time_limit: float, seed: int, gang: list[str] | None,
                 notes: list[str], soft: bool = False, start: GoalStarts | np.ndarray | None = None,
                 targets: dict[str, int] | None = None) -> tuple[np.ndarray, OptimalResult]:
    """The target placement (a node row per pod row, -1: none) and the solve's answer, with
    ``--max-moves`` a constraint of the model: the best goal within that many moves (the Pareto sweep,
    :mod:`.pareto`, calls this once per budget). ``start``: where each goal's tier starts
    (:mod:`.tier_start`); ``targets``: balance's target thresholds (percent per resource)."""
    options = OptimalOptions(time_limit=time_limit, seed=seed, movable=True,
                             objective=goal_objectives(goals, soft, targets) or None,
                             goal_first=True, staged=True, eviction=policy, max_moves=budgets.max_moves,
                             arrival_order=False,  # the target is a state the descheduler checks as it stands
                             start=start)
    if gang:
        target, result, gang_notes = _gang_target(state, config, options, gang)
        notes += gang_notes
        return target, result
    result = solve_optimal(state, config, options)
    return result.node_of.copy(), result


def plan_reschedule(state: ClusterState, config: SchedulerConfig, goals: str | Sequence[str],
                    budgets: Budgets | None = None, policy: EvictionPolicy | None = None,
                    time_limit: float = 30.0, seed: int = 0, gang: list[str] | None = None,
                    thresholds: tuple[dict[str, int], dict[str, int]] | None = None,
                    soft: bool = False, pareto: bool = False) -> ReschedulePlan:
    """The plan for ``goals`` (see the module docstring); ``gang``: the pending pods ``fit-pending`` is
    for (``--for``; all or none), instead of every pending pod; ``thresholds``: ``balance``'s
    (thresholds, targetThresholds) in percent, LowNodeUtilization's arguments; ``soft``: ``repair``
    repairs the preferences too, as a tier after the required rules. ``pareto``: also the goal at move
    budgets 0, 1, 2, 4, ... (:mod:`.pareto`; the plan's solve then has half of its share, the sweep the
    rest). The target's solve has ``time_limit`` less :data:`STAGING_RESERVE`, the staging the rest."""
    if pareto and gang:
        raise InputError("--pareto and --for do not go together (a gang is all or none: compare budgets with "
                         "--max-moves instead)")
    budgets = budgets or Budgets()
    policy = policy or EvictionPolicy()
    parsed = parse_goals(goals)
    notes: list[str] = []
    counted = policy.verdicts(state).may_leave  # the pods the descheduler's evictor would count
    if thresholds is not None and Goal.BALANCE in parsed:
        policy = _low_node_utilization(state, policy, thresholds, notes)
    bad = violating(state, config, state.pod_node, counted, soft)
    policy, closed = unbudgeted(state, policy)
    notes += closed
    policy = narrowed(state, policy, parsed, bad)
    started = time.perf_counter()
    balance = thresholds if thresholds is not None and Goal.BALANCE in parsed else None
    start = GoalStarts(state, config, parsed, policy, counted, soft, balance) if not gang else None
    targets = balance[1] if balance is not None else None
    solving = time_limit * (1 - STAGING_RESERVE)
    target, result = solve_target(state, config, parsed, budgets, policy,
                                  solving / 2 if pareto else solving, seed, gang, notes, soft, start, targets)
    notes += start.lines() if start is not None else []
    spent = time.perf_counter() - started
    names = state.node_names
    measures = Measures(state, config, parsed, counted, soft, targets, left_alone(state, config))
    rounds = Rounds(state, config, parsed, budgets, counted, soft, targets, bad, measures)

    def again(pinned: frozenset[str], warm: np.ndarray, seconds: float) -> tuple[np.ndarray, OptimalResult]:
        return solve_target(state, config, parsed, budgets, replace(policy, stay=pinned), seconds, seed, gang, [],
                            soft, None if gang else warm, targets)

    first = target
    done = realize(rounds, target, result, again, started + (1 - SUMMARY_RESERVE) * time_limit,
                   REPLAN_LEAST * time_limit)
    staging = done.staging
    staging.notes = notes + _round_notes(done) + staging.notes
    if gang and not any(n.startswith("--for") for n in notes) and any(staging.final.get(k) is None for k in gang):
        staging.notes.append("--for: kube-scheduler is predicted to leave some of the pods pending")
    final = final_rows(state, staging)
    pending = np.flatnonzero(state.pod_node < 0)
    was_empty = empty_nodes(state, state.pod_node)
    removable = np.flatnonzero(empty_nodes(state, final) & ~was_empty).tolist()
    placements = {p.key: (names[int(t)] if t >= 0 else None) for p, t in zip(state.pods, done.target)}
    dropped = [(m, f"{why}; solved again with it on its node") for m, why in done.pinned]
    staging.dropped = dropped + staging.dropped
    plan = ReschedulePlan(parsed, placements, staging, metrics(state, state.pod_node, pending, config, counted, soft),
                          metrics(state, final, pending, config, counted, soft), result.certificate,
                          [names[n] for n in removable],
                          node_saving(node_costs(state), removable))
    plan.reach = reach(measures, first, final, result.certificate, staging.dropped)
    plan.kubernetes_version = release(config.kubernetes_version).patch
    plan.requests = state.release
    alone = plan.before if np.array_equal(measures.baseline, state.pod_node) else \
        metrics(state, measures.baseline, pending, config, counted, soft)
    plan.side_effects = side_effects(parsed, alone, plan.after)
    plan.final_certificate = done.result.certificate if done.kept > 1 else None
    if pareto:
        plan.pareto = sweep(state, parsed, target, result.certificate, lambda k, seconds: solve_target(
            state, config, parsed, replace(budgets, max_moves=k), policy, seconds, seed, None, [], soft, start, targets),
            max(time_limit - spent, time_limit / 2))
    return plan


def _round_notes(done: Realized) -> list[str]:
    """The summary's line on the re-plans (:mod:`.rounds`), when there were any."""
    if done.solves == 1 and not done.restages:
        return []
    parts = [f"solved {done.solves - 1} more time(s) with the dropped pods pinned"] if done.solves > 1 else []
    parts += [f"its end state staged as its own target {done.restages} time(s)"] if done.restages else []
    which = "the first target's" if done.kept == 1 else f"those of solve {done.kept}"
    line = (f"re-planned: the staging dropped moves; {', '.join(parts)}; the waves are {which}, "
            f"{len(done.pinned)} pod(s) of earlier stagings left on their node")
    return [line]
