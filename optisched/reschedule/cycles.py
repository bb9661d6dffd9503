"""Cyclic moves: A must leave n1 for B while B must leave n2 for A, and no wave can start with either.

A target can ask for moves that wait on each other: each move's target node has room only once another
move of the cycle has left it. Taken one at a time, the first replacement finds its target full (it stays
pending, or kube-scheduler sends it back to the node it left), so the waves (:mod:`.waves`) cannot start
any of them. Kubernetes cannot swap two pods; what a plan can do, in this order of preference:

1. **order**: evict the whole cycle in one wave, in an order such that kube-scheduler's queue
   (PrioritySort: priority, then the replacements in eviction order) lands every replacement on its
   target; each order is checked by the replay, and the wave must fit the budgets;
2. **detour**: one pod of the cycle goes to a third node first, where kube-scheduler puts its
   replacement when it is evicted alone, which frees its node for the others; it moves on to its target
   later (two moves, both counted, both in the waves);
3. **drop**: neither works; the move is dropped and the cycle reported.

The checks are callbacks the waves give (a joint wave's replay, a lone eviction's landing), so the rules
for budgets and consistency stay in :mod:`.waves`.
"""
from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, cast

__all__ = ["CycleReport", "Resolution", "find_cycle", "resolve_cycle"]

LONGEST = 4  # longer chains of moves waiting on each other are not searched for
ALL_ORDERS = 3  # cycles up to this long try every eviction order; longer ones their rotations


class MoveLike(Protocol):
    """What a cycle reads of a move (:class:`.waves.Move`, a dataclass: a detour's legs are copies)."""

    pod: int
    key: str
    source: str
    target: str | None
    reason: str


@dataclass
class CycleReport:
    """One cycle of moves and what the plan did with it (``order``, ``detour`` or ``dropped``)."""

    pods: list[str]
    outcome: str
    detail: str

    def to_dict(self) -> dict:
        return {"pods": self.pods, "outcome": self.outcome, "detail": self.detail}

    def line(self) -> str:
        return f"cycle {' -> '.join(self.pods)}: {self.outcome} ({self.detail})"


@dataclass
class Resolution:
    """What to emit for a stuck cycle: ``wave`` (the moves of the next wave, in eviction order) with its
    replay ``landing``; for a detour, ``wave`` is the first leg and ``onward`` the pod's move from the
    third node, which stays to be staged. An empty ``wave``: the cycle's first move is dropped."""

    report: CycleReport
    wave: list[Any]
    landing: Any = None
    onward: Any = None


def find_cycle(first: MoveLike, remaining: Sequence[MoveLike]) -> list[MoveLike] | None:
    """The shortest chain of moves starting at ``first`` where each move's target is the next move's
    source and the last move's target is ``first``'s source (at most :data:`LONGEST` moves): a breadth-first
    search over nodes, each reached once, so a plan with many moves between the same nodes stays cheap."""
    if first.target is None:
        return None
    leaving: dict[str, list[MoveLike]] = {}
    for m in remaining:
        if m is not first and m.target is not None:
            leaving.setdefault(m.source, []).append(m)
    came: dict[str, MoveLike] = {}  # node reached -> the move that reached it
    frontier = [first.target]
    for _ in range(LONGEST - 1):
        nxt = []
        for node in frontier:
            for m in leaving.get(node, []):
                assert m.target is not None
                if m.target == first.source:
                    chain = [m]
                    while chain[-1].source != first.target:
                        chain.append(came[chain[-1].source])
                    return [first, *reversed(chain)]
                if m.target not in came and m.target != first.target:
                    came[m.target] = m
                    nxt.append(m.target)
        frontier = nxt
    return None


def _orders(cycle: list[MoveLike]) -> list[list[MoveLike]]:
    if len(cycle) <= ALL_ORDERS:
        return [list(p) for p in itertools.permutations(cycle)]
    return [cycle[i:] + cycle[:i] for i in range(len(cycle))]


def resolve_cycle(first: MoveLike, remaining: Sequence[MoveLike], together: Callable[[list], Any],
                  alone: Callable[[Any], str | None], avoid: frozenset[str]) -> Resolution | None:
    """How to stage the cycle ``first`` belongs to (None: it is in none). ``together(moves)``: the replay
    of those moves evicted as one wave in that order when it fits the budgets and lands every replacement
    on its target, else None; ``alone(move)``: where kube-scheduler puts the move's replacement when it is
    evicted by itself, within the budgets, without preempting (None otherwise); ``avoid``: nodes no detour
    may use (those the plan empties)."""
    cycle = find_cycle(first, remaining)
    if cycle is None:
        return None
    pods = [m.key for m in cycle]
    for order in _orders(cycle):
        landing = together(order)
        if landing is not None:
            return Resolution(CycleReport(pods, "order", "evicted in one wave, in the order "
                                          + ", ".join(m.key for m in order)), order, landing)
    for m in cycle:
        via = alone(m)
        if via is None or via in (m.source, m.target) or via in avoid:
            continue
        others = ", ".join(k for k in pods if k != m.key)
        leg = replace(cast(Any, m), target=via, reason=f"{m.reason}; detour via {via} (1 of 2), cycle with {others}")
        landing = together([leg])
        if landing is None:
            continue
        onward = replace(cast(Any, m), source=via, reason=f"{m.reason}; detour via {via} (2 of 2)")
        return Resolution(CycleReport(pods, "detour", f"{m.key} via {via}: two moves"), [leg], landing, onward)
    others = ", ".join(k for k in pods if k != first.key)
    return Resolution(CycleReport(pods, "dropped", f"cycle with {others}: no eviction order or detour "
                                  "lands every replacement on its target"), [])
