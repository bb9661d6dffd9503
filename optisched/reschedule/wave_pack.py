"""The fewest waves for a plan's moves under every budget at once: a small CP-SAT bin-packing.

A wave's evictions must fit every PodDisruptionBudget that covers them (``disruptionsAllowed``; a pod
several budgets select counts against each, as kubernetes v1.35.4 ``pkg/registry/core/pod/storage/
eviction.go`` checks every matching budget) and every workload's ``--max-unavailable-per-workload``.
Filling waves first-fit in queue order is the fewest waves for one budget (``ceil(moves / allowed)``),
not for several that overlap: three budgets of one disruption over a-b, b-c and c-d, with a and d
first in the queue, take {a, d}, {b}, {c} where {a, c}, {b, d} will do.

The model: a boolean per move and wave (at most as many waves as first-fit needs), per wave and budget
(and workload) at most its allowance, waves used in order, fewest used. The landing dependencies it
can see are capacity: a replacement lands on its target only when the target has room once that wave's
evictions are made, so on each node that pods both leave and reach, per resource and wave, the pods
arrived so far minus the pods gone so far must fit the room the node had. (What else the kube-scheduler
replay disagrees with is re-planned wave by wave, :mod:`.waves`.) First-fit is the hint, and the answer
when the model finds nothing in its time; when first-fit already meets the largest budget's lower
bound it is proven minimal without a model.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from ortools.sat.python import cp_model

from .. import cpsat

__all__ = ["Flows", "WaveSchedule", "fewest_waves", "first_fit", "lower_bound", "schedule_moves"]

# above this many move x wave booleans the model is not built: first-fit stands (not proven minimal)
MAX_BOOLS = 200_000
# the solve's wall-clock limit, as a multiple of its deterministic seconds (a safety net for a loaded machine)
WALL_NET = 4.0


@dataclass(frozen=True)
class Flows:
    """The moves' nodes and requests: ``source``/``target`` node rows (-1: none), ``requests`` [moves,
    resources], and ``room`` [nodes, resources], each node's free room before the first wave."""

    source: np.ndarray
    target: np.ndarray
    requests: np.ndarray
    room: np.ndarray

    def subset(self, rows: list[int]) -> Flows:
        return Flows(self.source[rows], self.target[rows], self.requests[rows], self.room)


class WaveSchedule:
    """A wave index per move (in the order given) and whether the count is proven the fewest."""

    def __init__(self, wave_of: list[int], proven: bool) -> None:
        self.wave_of = wave_of
        self.proven = proven

    @property
    def count(self) -> int:
        return max(self.wave_of, default=-1) + 1


def first_fit(groups: Sequence[Sequence[int]], limits: Sequence[int], moves: int) -> list[int]:
    """Waves filled in order: each wave takes, in move order, every move all of whose ``groups`` (budget
    or workload ids per move) still have room (``limits`` per id); the old staging, without replays."""
    wave_of = [-1] * moves
    left = list(range(moves))
    wave = 0
    while left:
        used: dict[int, int] = defaultdict(int)
        rest = []
        for m in left:
            if all(used[g] < limits[g] for g in groups[m]):
                for g in groups[m]:
                    used[g] += 1
                wave_of[m] = wave
            else:
                rest.append(m)
        if len(rest) == len(left):  # a group with no room at all: nothing can ever take these
            for m in rest:
                wave_of[m] = wave
            break
        left, wave = rest, wave + 1
    return wave_of


def lower_bound(groups: Sequence[Sequence[int]], limits: Sequence[int]) -> int:
    """The largest group's ``ceil(moves / limit)``: no schedule has fewer waves."""
    count: dict[int, int] = defaultdict(int)
    for gs in groups:
        for g in gs:
            count[g] += 1
    return max([-(-n // max(1, limits[g])) for g, n in count.items()] + [1 if groups else 0])


def fewest_waves(groups: Sequence[Sequence[int]], limits: Sequence[int], moves: Flows,
                 seconds: float = 5.0, seed: int = 0) -> WaveSchedule:
    """The fewest waves for the moves (see the module docstring). ``groups[m]``: the budget and workload
    ids move ``m`` counts against, ``limits[id]``: how many a wave may take; ``moves``: where each move
    leaves and goes and the room of the nodes. ``seconds``: CP-SAT's deterministic time."""
    greedy = first_fit(groups, limits, len(groups))
    possible = [m for m, gs in enumerate(groups) if all(limits[g] > 0 for g in gs)]
    if len(possible) < len(groups):  # moves no wave can take: solved without them, last in line
        inner = fewest_waves([groups[m] for m in possible], limits, moves.subset(possible), seconds, seed)
        wave_of = [inner.count] * len(groups)
        for k, m in enumerate(possible):
            wave_of[m] = inner.wave_of[k]
        return WaveSchedule(wave_of, inner.proven)
    waves = max(greedy, default=-1) + 1
    bound = lower_bound(groups, limits)
    fits = _fits(greedy, moves, waves)
    if (waves <= bound and fits) or len(groups) * waves > MAX_BOOLS:
        return WaveSchedule(greedy, waves <= bound and fits)
    model = cp_model.CpModel()
    x = [[model.new_bool_var(f"x{m}_{w}") for w in range(waves)] for m in range(len(groups))]
    used = [model.new_bool_var(f"used{w}") for w in range(waves)]
    for m, row in enumerate(x):
        model.add_exactly_one(row)
        for w in range(waves):
            model.add_implication(row[w], used[w])
            model.add_hint(row[w], greedy[m] == w)
    for w in range(waves - 1):
        model.add_implication(used[w + 1], used[w])
    members: dict[int, list[int]] = defaultdict(list)
    for m, gs in enumerate(groups):
        for g in gs:
            members[g].append(m)
    for g, ms in members.items():
        if len(ms) > limits[g]:
            for w in range(waves):
                model.add(sum(x[m][w] for m in ms) <= limits[g])
    _capacity(model, x, moves, waves)
    for w in range(waves):
        model.add_hint(used[w], w < waves)
    model.add(sum(used) >= bound)
    model.minimize(sum(used))
    return _solve(model, x, used, greedy, seconds, seed)


def _capacity(model: cp_model.CpModel, x: list[list[cp_model.IntVar]], moves: Flows, waves: int) -> None:
    """Per node that moves both leave and reach, per resource and wave: arrivals minus departures so far
    within the room the node had before the first wave (a wave's evictions free room for its own
    replacements). Vectorized over moves: the nodes and the moves touching them come from numpy."""
    src, dst = moves.source, moves.target
    both = np.intersect1d(src[src >= 0], dst[dst >= 0])
    done: dict[int, list[cp_model.IntVar]] = {}
    for n in both.tolist():
        ms = np.flatnonzero((src == n) | (dst == n))
        sign = np.where(dst[ms] == n, 1, -1)
        for r in np.flatnonzero(moves.requests[ms].any(axis=0)).tolist():
            coefs = (sign * moves.requests[ms, r]).tolist()
            for w in range(waves - 1):
                model.add(sum(c * _done(model, x, done, m)[w] for m, c in zip(ms.tolist(), coefs))
                          <= int(moves.room[n, r]))


def _fits(wave_of: list[int], moves: Flows, waves: int) -> bool:
    """Whether a schedule keeps every node within its room after each wave (the capacity rule of
    :func:`_capacity`), checked with numpy: per wave, the net requests each node has gained so far."""
    if not wave_of:
        return True
    src, dst = moves.source, moves.target
    net = np.zeros((waves, *moves.room.shape), dtype=np.int64)
    w = np.asarray(wave_of, dtype=np.int64)
    on = dst >= 0
    np.add.at(net, (w[on], dst[on]), moves.requests[on])
    on = src >= 0
    np.subtract.at(net, (w[on], src[on]), moves.requests[on])
    return bool((np.cumsum(net, axis=0)[:-1] <= moves.room).all())


def _done(model: cp_model.CpModel, x: list[list[cp_model.IntVar]], done: dict[int, list[cp_model.IntVar]],
          m: int) -> list[cp_model.IntVar]:
    """Per wave, whether move ``m`` is made by then (built once per move)."""
    hit = done.get(m)
    if hit is None:
        hit = done[m] = [model.new_bool_var(f"done{m}_{w}") for w in range(len(x[m]))]
        for w, v in enumerate(hit):
            model.add(v == sum(x[m][: w + 1]))
    return hit


def _solve(model: cp_model.CpModel, x: list[list[cp_model.IntVar]], used: list[cp_model.IntVar],
           greedy: list[int], seconds: float, seed: int) -> WaveSchedule:
    solver = cp_model.CpSolver()
    solver.parameters.max_deterministic_time = seconds
    solver.parameters.max_time_in_seconds = WALL_NET * seconds  # the deterministic limit decides; a net only
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = seed
    # No LP relaxation: the bound that matters (the largest budget's) is a constraint of the model, and the
    # LP's propagation on the capacity rows cost 25 s of wall for 5 deterministic seconds at 840 moves
    # without a solution, where the search alone proves 18 waves optimal in 4 s.
    solver.parameters.linearization_level = 0
    status = cpsat.solve(solver, model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return WaveSchedule(greedy, False)
    found = [next(w for w, v in enumerate(row) if solver.value(v)) for row in x]
    if max(found) + 1 >= max(greedy) + 1 and status != cp_model.OPTIMAL:
        return WaveSchedule(greedy, False)
    return WaveSchedule(found, status == cp_model.OPTIMAL)



def schedule_moves(pods: list[int], targets: list[int], owners: list[str | None], budgets_of: Callable[[int], list[int]],
                   allowed: list[int], caps: dict[str, int], current: np.ndarray, placed_at: np.ndarray,
                   state_requests: np.ndarray, allocatable: np.ndarray, pack: bool, seconds: float = 5.0) -> WaveSchedule:
    """The waves for moves of ``pods`` (rows, queue order) to ``targets`` (node rows, -1: none) from
    ``current``: first-fit, or with ``pack`` the fewest (:func:`fewest_waves`). Budget ids are the
    PodDisruptionBudgets' (``budgets_of``, ``allowed``), then one per workload with a cap; ``placed_at``:
    every pod's node once the pending ones are placed (the room before the first wave)."""
    ids = {o: len(allowed) + k for k, o in enumerate(caps)}
    limits = list(allowed) + list(caps.values())
    groups = [budgets_of(p) + ([ids[o]] if o in ids else []) for p, o in zip(pods, owners)]
    if not pack:
        return WaveSchedule(first_fit(groups, limits, len(groups)), False)
    on = placed_at >= 0
    used = np.zeros_like(allocatable)
    np.add.at(used, placed_at[on], state_requests[on])
    rows = np.asarray(pods, dtype=np.int64)
    flows = Flows(current[rows], np.asarray(targets, dtype=np.int64), state_requests[rows], allocatable - used)
    return fewest_waves(groups, limits, flows, seconds)
