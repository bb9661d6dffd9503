"""Optimal mode's options, as the engine takes them (:func:`.solve.solve_optimal`), and ``--weights``.

The command line builds them from its options (:mod:`optisched.cli`), the library API from its keyword
arguments (:mod:`optisched.api`); nothing here imports typer.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError
from ..options import check_weight
from ..policy.eviction import EvictionPolicy
from .goal_tier import TierStarts
from .tier_key import TierKey

__all__ = ["WEIGHT_KEYS", "OptimalOptions", "parse_weights"]


@dataclass(frozen=True)
class OptimalOptions:
    time_limit: float = 60.0
    workers: int = 2
    seed: int = 0
    movable: bool = False  # running pods may move (rescheduling); else only preemption victims leave
    preemption: bool = True
    max_variables: int = 30_000  # above this, classes keep candidate nodes only (see .candidates)
    presolve_limit: int = 20_000  # CP-SAT presolve only for models with at most this many variables
    # a user objective (user_objectives.OBJECTIVES), a tier before the score; several (a tuple): one tier
    # each, lexicographic in the order given
    objective: str | tuple[str, ...] | None = None
    # one weighted objective instead of the tiers (see parse_weights)
    weights: tuple[tuple[str, int], ...] = ()
    # under LNS, placement tiers by node neighbourhoods (.neighbourhood), not CP-SAT's LNS
    node_search: bool = True
    # which running pods may leave (moves, victims)
    eviction: EvictionPolicy = field(default_factory=EvictionPolicy)
    deterministic: bool = True  # budgets in deterministic time: the same answer on every run (see .clock)
    stop_after: str | None = None  # "placed": end after the placement tiers (no disruption, objective, score)
    # the objective's tier before disruption (reschedule: the goal, then fewest moves)
    goal_first: bool = False
    staged: bool = False  # moves staged in waves that hold each PodDisruptionBudget per wave, not in total
    # at most this many running pods leave their node (one model: no independent parts)
    max_moves: int | None = None
    # also admit placements some queue order reaches pod by pod (.order); else batch semantics only
    arrival_order: bool = True
    # where the user objectives' tiers may start (.goal_tier): a node per pod row for the first one, or a
    # TierStarts asked per tier; not compared
    start: np.ndarray | TierStarts | None = field(default=None, compare=False)



WEIGHT_KEYS = ("placed", "disruption", "objective", "score")


def parse_weights(text: str | dict[str, int] | None) -> tuple[tuple[str, int], ...]:
    """``"placed=1000,disruption=1,score=1"`` (or a dict) as weights for one objective: ``placed`` counts
    every pod on a node (``placed[priority=N]`` one level, overriding it), ``disruption`` the tier of that
    name, ``objective`` the user objective, ``score`` the profile's score. Maximized tiers add, minimized
    ones subtract; a tier without a weight is left out."""
    if not text:
        return ()
    items = text.items() if isinstance(text, dict) else \
        [kv.split("=", 1) for kv in text.split(",") if kv.strip()]
    out = []
    for item in items:
        if len(item) != 2:
            raise InputError(f"--weights: {'='.join(item)!r} is not NAME=INTEGER")
        name, value = str(item[0]).strip(), str(item[1]).strip()
        if name not in WEIGHT_KEYS and not TierKey.parse(name).is_level:
            raise InputError(f"--weights: {name!r} is not a tier; tiers: {', '.join(WEIGHT_KEYS)}, "
                             "placed[priority=N]")
        try:
            weight = int(value)
        except ValueError:
            raise InputError(f"--weights: {name}={value!r} is not an integer") from None
        out.append((name, check_weight(weight, f"--weights {name}")))
    return tuple(out)

