"""The staging realizes one target, or the target is solved again without the moves it could not stage.

A target whose moves the staging drops (budgets, refused landings, cycles, the deadline, a wave that
would leave the cluster worse than left alone) is no longer a plan: the moves kept were chosen for an end
state that is not reached, and the nodes it empties are not all emptied. So, while time is left, the
target is solved again with the dropped pods pinned to their nodes, starting from the end state of the
waves kept, and staged again (at most :data:`ROUNDS` solves), and the best of these stagings is kept.
Its waves are consistent with its replays, which held the first target's emptied nodes cordoned: when
a staging again fits in the time left, the kept end state is staged as its own target (no solve), so
the replays hold exactly the nodes that plan empties; otherwise, or when that staging realizes less, the
nodes it cordons but leaves in use are cordoned for the plan's duration only (``cordonDuringPlan``), as
its replays held them. Either way ``cordon`` is what the emitted plan empties and every prediction was
made with the cordons a run sets.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..model.state import ClusterState
from ..optimal.result import OptimalResult
from ..profile import SchedulerConfig
from .accept import landing_check
from .goals import Goal, empty_nodes
from .monotone import Measures
from .waves import Budgets, Move, Staging, stage

__all__ = ["Realized", "realize", "reasons_of"]

ROUNDS = 4  # target solves at most, the first one included
RESTAGES = 3  # stagings of the kept end state as its own target, at most, once no solve is left

# solve(pods pinned, warm start, seconds) -> the target and the solve's answer
Solve = Callable[[frozenset[str], np.ndarray, float], tuple[np.ndarray, OptimalResult]]


def reasons_of(state: ClusterState, target: np.ndarray, goals: list[Goal], emptied: set[str],
               bad: dict[int, str]) -> dict[int, str]:
    """Why each moved pod moves, in the goal's words; ``bad``: pods whose node a repaired rule rejects."""
    names = state.node_names
    out = {}
    for p in np.flatnonzero((state.pod_node >= 0) & (target != state.pod_node)).tolist():
        src = names[int(state.pod_node[p])]
        if target[p] < 0:
            out[p] = "fit-pending: evicted to make room"
        elif Goal.REPAIR in goals and p in bad:
            out[p] = f"repair: {bad[p]} {'on' if bad[p] == 'Duplicates' else 'rejects'} {src}"
        elif Goal.CONSOLIDATE in goals and src in emptied:
            out[p] = f"consolidate: empties {src}"
        elif Goal.FIT_PENDING in goals:
            out[p] = "fit-pending: makes room for pending pods"
        else:
            out[p] = f"{goals[0]}: moves off {src}"
    return out


@dataclass
class Realized:
    staging: Staging
    target: np.ndarray  # the target the emitted waves realize
    result: OptimalResult  # the last solve's answer
    pinned: list[tuple[Move, str]] = field(default_factory=list)  # dropped in an earlier round, with why
    solves: int = 1
    restages: int = 0
    kept: int = 1  # the solve whose staging the waves are (1: the first target's)


@dataclass
class Rounds:
    """What every staging of the plan shares (see :func:`realize`)."""

    state: ClusterState
    config: SchedulerConfig
    goals: list[Goal]
    budgets: Budgets
    counted: np.ndarray
    soft: bool
    targets: dict[str, int] | None
    bad: dict[int, str]
    measures: Measures

    def stage(self, target: np.ndarray, deadline: float, reasons: dict[int, str] | None = None) -> Staging:
        """Stage ``target``: the nodes it empties cordoned before the first wave, and with ``consolidate``
        the nodes empty before it that it keeps empty cordoned for the plan's duration."""
        state, goals = self.state, self.goals
        names = state.node_names
        was_empty = empty_nodes(state, state.pod_node)
        empty = empty_nodes(state, target)
        emptied = {names[n] for n in np.flatnonzero(empty & ~was_empty).tolist()}
        idle = {names[n] for n in np.flatnonzero(empty & was_empty).tolist()} if Goal.CONSOLIDATE in goals else set()
        if reasons is None:
            reasons = reasons_of(state, target, goals, emptied, self.bad)
        accept = landing_check(state, self.config, goals, target, self.counted, self.soft, self.targets)
        return stage(state, self.config, target, reasons, self.budgets, frozenset(emptied),
                     Goal.FIT_PENDING in goals, frozenset(idle), accept=accept, deadline=deadline,
                     guard=self.measures)


def final_rows(state: ClusterState, staging: Staging) -> np.ndarray:
    """The staging's predicted end state as node rows (-1: pending or gone)."""
    return np.array([state.node_index[n] if (n := staging.final.get(p.key)) is not None else -1
                     for p in state.pods], dtype=np.int64)


def emptied_by(state: ClusterState, staging: Staging) -> set[str]:
    """The nodes the staging's end state empties that were not empty before it."""
    was_empty = empty_nodes(state, state.pod_node)
    end = empty_nodes(state, final_rows(state, staging))
    return {state.node_names[n] for n in np.flatnonzero(end & ~was_empty).tolist()}


def exact(state: ClusterState, staging: Staging) -> bool:
    """The staging kept every move, and the nodes it cordons are the ones its end state empties."""
    return not staging.dropped and emptied_by(state, staging) == set(staging.cordoned)


def _hold(state: ClusterState, staging: Staging) -> None:
    """Out of time with a staging that cordons nodes its end state does not empty: those stay cordoned
    for the plan's duration only (its replays held them so), and ``cordon`` is what it empties."""
    emptied = emptied_by(state, staging)
    if emptied == set(staging.cordoned):
        return
    extra = sorted(set(staging.cordoned) - emptied)
    staging.cordoned = sorted(emptied & set(staging.cordoned))
    staging.held = sorted(set(staging.held) | set(extra))
    if extra:
        staging.notes.append(f"cordoned during the plan though it does not empty them (its replays held them "
                             f"so; no time was left to stage it again): {', '.join(extra)}")


def realize(rounds: Rounds, target: np.ndarray, result: OptimalResult, solve: Solve, end: float,
            least: float) -> Realized:
    """Stage ``target`` (until ``least`` seconds before ``end``, ``time.perf_counter()``), re-plan while
    it drops moves and time is left (:func:`_replans`), stage the kept end state again while that is
    not :func:`exact` and fits (:func:`_restages`); a staging that still cordons a node it does not
    empty holds it for the plan's duration (:func:`_hold`)."""
    state = rounds.state
    done, pinned = _replans(rounds, Realized(rounds.stage(target, end - least), target, result), solve, end, least)
    done = _restages(rounds, done, pinned, end)
    _hold(state, done.staging)
    if done.staging.dropped:  # what the waves realize is their own end state
        done.target = final_rows(state, done.staging)
    done.pinned = [pinned[k] for k in pinned if all(m.key != k for m, _ in done.staging.dropped)]
    return done


def _replans(rounds: Rounds, done: Realized, solve: Solve, end: float,
             least: float) -> tuple[Realized, dict[str, tuple[Move, str]]]:
    """While the staging drops moves and ``least`` seconds and a staging as long as the last are left,
    solve again with every dropped pod pinned, from the kept waves' end state (that end state itself
    when the solve finds less), for half the time left, and stage that; the best staging of the rounds
    (:func:`_score`) and the pins its target was solved with."""
    pinned: dict[str, tuple[Move, str]] = {}
    best = done
    while done.staging.dropped and done.solves < ROUNDS:
        left = end - time.perf_counter()
        if left < least + done.staging.seconds:  # a solve and a staging as long as the last no longer fit
            break
        for m, why in done.staging.dropped:
            pinned.setdefault(m.key, (m, why))
        kept = final_rows(rounds.state, done.staging)
        target, result = solve(frozenset(pinned), kept, 0.5 * left)
        if rounds.measures.rank(target) > rounds.measures.rank(kept):  # the solve found less than the waves kept
            target, result = kept, done.result
        done = Realized(rounds.stage(target, _share(end), _kept_reasons(done.staging) if target is kept else None),
                        target, result, list(pinned.values()), done.solves + 1, 0, done.solves + 1)
        best = min(best, done, key=lambda r: _score(rounds, r))
    if best is done:
        return done, pinned
    # a later round's staging, shorter of time, realized less than an earlier one
    return Realized(best.staging, best.target, best.result, best.pinned, done.solves, 0, best.kept), \
        {m.key: (m, why) for m, why in best.pinned}


def _restages(rounds: Rounds, done: Realized, pinned: dict[str, tuple[Move, str]], end: float) -> Realized:
    """While ``done`` is not :func:`exact` and a staging as long again fits before ``end``, its end state
    staged as its own target (no solve), unless that realizes less; ``pinned`` takes its drops."""
    while not exact(rounds.state, done.staging) and done.restages < RESTAGES and \
            end - time.perf_counter() > 1.5 * done.staging.seconds:
        for m, why in done.staging.dropped:
            pinned.setdefault(m.key, (m, why))
        kept = final_rows(rounds.state, done.staging)
        again = Realized(rounds.stage(kept, end, _kept_reasons(done.staging)), kept, done.result,
                         list(pinned.values()), done.solves, done.restages + 1, done.kept)
        if _score(rounds, again)[0] > _score(rounds, done)[0]:  # it dropped moves the first one kept
            break
        done = again
    return done


def _score(rounds: Rounds, done: Realized) -> tuple:
    """How good a round's staging is: its end state on the goals, then fewer moves dropped."""
    return rounds.measures.rank(final_rows(rounds.state, done.staging)), len(done.staging.dropped)


def _kept_reasons(staging: Staging) -> dict[int, str]:
    """Why each pod the staging's waves move moves (a detour's reason, for its last leg)."""
    return {m.pod: m.reason.split("; detour via")[0] for w in staging.waves for m in w.moves}


def _share(end: float) -> float:
    """A staging's deadline: half the time left before ``end``, so a re-plan still fits after it."""
    now = time.perf_counter()
    return now + max(0.5 * (end - now), 0.5)

