"""A feasible starting point for the solver: the greedy placement, repaired where the model refuses it.

Greedy mode can end in a state the batch model does not accept: kube's NodePorts frees a port when any
holder leaves, so two pods may take in turn a port a third still holds; a preemptor may be bound
elsewhere than where its victims were evicted; a spread constraint can be skewed by pods placed after.
CP-SAT throws away an infeasible hint, so the placement is repaired first (:func:`repair_placement`):
pods the greedy filters reject in the final cluster leave it, victims without a preemptor on their node
come back, until both hold. What the model still refuses is found by CP-SAT itself
(:func:`repair_hint`): every variable fixed to its value under an assumption, a small conflicting set
of assumptions reset to the safe side (no arrival; a running pod kept), until the hint is feasible.
"""
from __future__ import annotations

import numpy as np
from ortools.sat.python import cp_model

from .. import cpsat
from ..model.state import ClusterState
from ..plugins.node_ports import host_ports
from ..profile import SchedulerConfig
from .check import check_placement, checked_rows
from .classes import Batch
from .clock import Clock
from .eviction.pdb_model import beyond_budgets
from .eviction.preemptors import preemptor_priority
from .model import BatchModel, stopper

__all__ = ["accept_reached", "accepts", "repair_hint", "repair_placement"]


def _victims_without_preemptor(batch: Batch, node_of: np.ndarray) -> list[int]:
    """Running batch pods that left their node although no higher-priority preempting pod arrived there."""
    best = preemptor_priority(batch, node_of)
    out = []
    for c in batch.classes:
        if c.voluntary:
            continue
        for n, pods in c.running.items():
            out += [p for p in pods if node_of[p] != n and best[n] <= c.priority]
    return out


def fragile(state: ClusterState) -> np.ndarray:
    """Pods whose filter verdict pods placed *after* them can change: hard spread constraints (the
    minimum moves), required pod affinity (its pod may be preempted), host ports (NodePorts frees a
    port when any holder leaves, and a second holder leaving later frees it for a second pod). Every other verdict of a greedy run still holds at its end: later
    pods passed their own checks with the earlier ones in place, and anti-affinity is checked both ways."""
    out = np.zeros(len(state.pods), dtype=bool)
    for i, pod in enumerate(state.pods):
        spec = pod.spec
        aff = spec.affinity.pod_affinity if spec.affinity else None
        out[i] = bool(any(c.when_unsatisfiable == "DoNotSchedule" for c in spec.topology_spread_constraints)
                      or (aff is not None and aff.required_during_scheduling_ignored_during_execution)
                      or bool(host_ports(pod)))
    return out


def repair_placement(batch: Batch, config: SchedulerConfig, node_of: np.ndarray, *, rounds: int = 6,
                     clock: Clock | None = None, deadline: float | None = None) -> np.ndarray:
    """A copy of the greedy placement ``node_of`` that batch semantics and the batch preemption rule
    accept: rejected pods unplaced, unjustified victims and voluntary departures beyond a
    PodDisruptionBudget put back. Only :func:`fragile` pods are re-checked until a victim comes back;
    from then on every pod: a returning pod's required anti-affinity (and an arriving pod's against it)
    reaches over its whole topology domain, a zone as well as its own node.

    Each round's work (a snapshot of every pod, the pods checked: known before it starts) is charged to
    ``clock`` as the round begins; past ``deadline`` (a ``clock`` value) the repair stops there or, by the
    wall clock, between two pods of the round (:class:`.model.BuildTimeout`)."""
    state = batch.state
    node_of = node_of.copy()
    suspects = fragile(state)
    tick = stopper(clock, deadline) if clock is not None and deadline is not None else None
    for _ in range(rounds):
        changed = False
        for p in _victims_without_preemptor(batch, node_of) + beyond_budgets(batch, node_of):
            node_of[p] = state.pod_node[p]
            suspects[:] = True
            changed = True
        if clock is not None:
            clock.work("pod", len(state.pods))
            clock.work("check", checked_rows(state, node_of, batch.class_of, suspects))
        bad = check_placement(state, config, node_of, batch.class_of, only=suspects, tick=tick)
        if bad:
            names = {(v.pod, v.node) for v in bad}
            rejected = {(int(batch.class_of[state.pod_index[pod]]), state.node_index[node]) for pod, node in names}
            for p in np.flatnonzero((node_of >= 0) & (node_of != state.pod_node)).tolist():
                if (int(batch.class_of[p]), int(node_of[p])) in rejected:
                    node_of[p] = -1
            changed = True
        if not changed:
            break
    return node_of


def _fixed_probe(model: BatchModel, values: dict[int, int], seconds: float, clock: Clock) -> list[int] | None:
    """The model's other variables completed for ``values`` as they are (presolve fixes them), or None."""
    clock.work("copy", model.terms + len(values))  # the copy and its hint
    probe = model.cp.clone()
    probe.clear_objective()
    probe.clear_hints()
    hint = probe.proto.solution_hint  # (written whole: a hint per variable through the wrapper took seconds)
    hint.vars.extend(list(values))
    hint.values.extend(list(values.values()))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    size = len(probe.proto.variables)
    clock.set_limits(solver.parameters, seconds, variables=size)
    solver.parameters.fix_variables_to_their_hinted_value = True
    status = cpsat.solve(solver, probe)
    clock.settle(solver.response_proto, seconds, size)
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return list(solver.response_proto.solution)[:len(model.cp.proto.variables)]
    return None


def accepts(model: BatchModel, values: dict[int, int], clock: Clock | None = None,
            seconds: float = 5.0) -> list[int] | None:
    """A complete solution of ``model`` with the arrival/keep ``values`` as they are (the order and every
    auxiliary variable completed by CP-SAT), or None when the model refuses them."""
    return _fixed_probe(model, values, seconds, clock if clock is not None else Clock.wall())


def repair_hint(model: BatchModel, values: dict[int, int], clock: Clock | None = None, *, rounds: int = 8,
                seconds: float = 5.0) -> list[int] | None:
    """A complete solution of ``model`` (a value per variable, proto order) that keeps as many of the
    arrival/keep ``values`` (variable index -> value) as the model allows; None if none is found within
    ``rounds`` rounds and about ``2 · seconds`` in all (the clock's, copying the model included)."""
    values = dict(values)
    safe: dict[int, int] = {}
    for cv in model.vars:
        for v in cv.arr_vars:
            safe[v.Index()] = 0
        for v, u in zip(cv.keep_vars, cv.keep_ub.tolist()):
            safe[v.Index()] = int(u)
    clock = clock if clock is not None else Clock.wall()
    until = clock.now() + 2 * seconds
    full = _fixed_probe(model, values, seconds, clock)
    if full is not None:
        return full
    clock.work("copy", model.terms + 4 * len(safe))  # the copy, a literal and a constraint per variable
    if clock.now() >= until or not clock.affords(len(model.cp.proto.variables)):  # (counted first: not built late)
        return None
    probe, order, first, base = _assumption_probe(model, values, safe)
    for _ in range(rounds):
        if clock.now() >= until or not clock.affords(len(probe.proto.variables)):
            return None
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = 1
        size = len(probe.proto.variables)
        clock.set_limits(solver.parameters, seconds, variables=size)
        status = cpsat.solve(solver, probe)
        clock.settle(solver.response_proto, seconds, size)
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return list(solver.response_proto.solution)[:len(model.cp.proto.variables)]
        core = solver.sufficient_assumptions_for_infeasibility() if status == cp_model.INFEASIBLE else []
        reset = [order[lit - first] for lit in core if values.get(order[lit - first], 0) != safe[order[lit - first]]]
        if not reset:
            if values == safe:
                return None
            reset = list(safe)
        for idx in reset:
            values[idx] = safe[idx]
        _set_targets(probe, order, base, values, reset)
    return None


def _assumption_probe(model: BatchModel, values: dict[int, int],
                      safe: dict[int, int]) -> tuple[cp_model.CpModel, list[int], int, int]:
    """A copy of the model where a literal per variable of ``safe``, assumed true, fixes it at its value
    in ``values``; returns it, the variables in literal order, the first literal's index and the first
    added constraint's (literal ``first + k`` and constraint ``base + k`` belong to ``order[k]``)."""
    probe = model.cp.clone()
    probe.clear_objective()
    probe.clear_hints()
    proto = probe.proto
    first, base = len(proto.variables), len(proto.constraints)
    order = list(safe)
    for k, idx in enumerate(order):
        proto.variables.add().domain.extend([0, 1])
        ct = proto.constraints.add()
        ct.enforcement_literal.append(first + k)
        ct.linear.vars.append(idx)
        ct.linear.coeffs.append(1)
        value = values.get(idx, 0)
        ct.linear.domain.extend([value, value])
    proto.assumptions.extend(range(first, first + len(order)))
    return probe, order, first, base


def _set_targets(probe: cp_model.CpModel, order: list[int], base: int, values: dict[int, int],
                 changed: list[int]) -> None:
    """Point the constraints of the ``changed`` variables (their first at ``base``) at their new ``values``."""
    at = {idx: k for k, idx in enumerate(order)}
    for idx in changed:
        domain = probe.proto.constraints[base + at[idx]].linear.domain
        domain.clear()
        domain.extend([values[idx], values[idx]])


def accept_reached(model: BatchModel, values: dict[int, int], clock: Clock,
                   seconds: float) -> tuple[list[int], cp_model.IntVar | None] | None:
    """Make kube-scheduler's own final placement (``values``: its arrival/keep counts) a solution of
    ``model``, and return it (a value per variable) with the literal that selects it, or None.

    A placement kube-scheduler reaches is valid under arrival semantics even where batch semantics refuses
    it (docs/optimal_trust.md). The model becomes "batch semantics, or exactly this placement": a literal
    ``reached`` that, when true, fixes every arrival and keep variable at ``values`` and lifts every
    constraint built so far (each gets ``not reached`` as an enforcement literal; the placement models
    are all linear). Objectives built later keep their own constraints either way. The literal is None
    when the model accepts ``values`` as they are; the result is None when the model has a constraint
    that cannot take an enforcement literal."""
    full = _fixed_probe(model, values, seconds, clock)
    if full is not None:  # this part of the batch accepts it as it is
        return full, None
    proto = model.cp.proto
    if any(ct.WhichOneof("constraint") != "linear" for ct in _read_constraints(model)):
        return None
    reached = model.cp.new_bool_var("kube_reached")
    lifted = -reached.Index() - 1  # the negated literal, in proto terms
    for ct in proto.constraints:
        ct.enforcement_literal.append(lifted)
    mark = len(proto.constraints), len(proto.variables)
    for cv in model.vars:
        for v in cv.arr_vars + cv.keep_vars:
            model.cp.add(v == values.get(v.Index(), 0)).only_enforce_if(reached)
    clock.work("copy", len(proto.constraints))
    model.written(mark)
    full = _fixed_probe(model, {**values, reached.Index(): 1}, seconds, clock)
    return None if full is None else (full, reached)


def _read_constraints(model: BatchModel):  # type: ignore[no-untyped-def]
    """The model's constraints as Python protobufs (to read which kind each is)."""
    from .neighbourhood import LinearView

    return LinearView.read(model.cp).constraints
