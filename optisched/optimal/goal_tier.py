"""What a user objective's tier gets before it is solved: a start from outside the solver, and a bound.

* **Start** (``OptimalOptions.start``): a placement found by a simulator, e.g. cluster-autoscaler's
  scale-down simulation (:mod:`optisched.reschedule.tier_start`). Either a node per pod row, for the
  first user objective's tier only, or a :class:`TierStarts`, asked once per tier (placement tiers
  too) with the answer of the tiers before it, so that every tier of a lexicographic run has one. A start worse
  than the incumbent on a tier already fixed is not offered (each tier's ``Linear`` evaluated on it:
  the model would refuse it, and repairing it would spend the tier's time to give the incumbent back);
  else it is made a solution of the model as the earlier tiers left it (:func:`.hint.repair_hint`: what
  the model refuses goes back to the pod staying where it runs) and becomes the incumbent when the
  tier's objective is better there, so the tier's search starts from it instead of from the answer so
  far.
* **Bound**: ``pack`` gets :func:`.user_objectives.pack_floor` (capacity: the pods the placement tiers
  keep on a node need room), which CP-SAT's own bound often does not reach (LNS proves none; the LP
  relaxation of the used flags is weak). The tier stops when its incumbent meets it.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from .clock import Clock
from .decode import decode, variable_values
from .hint import repair_hint
from .model import BatchModel
from .tier_key import TierKey
from .tiers import Linear, Tier, TierSolver
from .user_objectives import pack_floor

__all__ = ["TierStarts", "incumbent", "prepare_goal", "previews", "within"]

PACK = TierKey.user("pack")


@runtime_checkable
class TierStarts(Protocol):
    """Per user objective's tier, where its search starts (see the module docstring)."""

    def start(self, tier: TierKey, node_of: np.ndarray, rows: np.ndarray) -> np.ndarray | None:
        """A placement (a node per pod row) for ``tier`` (a user objective's, ``objective:NAME``, or a
        placement tier, ``placed[priority=L]``) found from ``node_of``, the answer of the tiers before it, moving only the
        pods ``rows`` (bool [P]: the part being solved); None for none."""

    def outcome(self, tier: TierKey, what: str) -> None:
        """What became of the start offered to ``tier``: ``taken``, or why not."""


def previews(start: np.ndarray | TierStarts | None, node_of: np.ndarray) -> tuple[np.ndarray, ...]:
    """The placements a large model keeps candidate nodes for (:func:`.candidates.choose_candidates`): a
    start given as an array, or what a :class:`TierStarts` with a ``preview`` method expects to offer
    from ``node_of`` (the placement the solve starts from). A start moving a pod to a node that is no
    candidate of its class is sent back there by the model (:func:`within`): at 1,000 nodes, 1,375 of
    the 1,419 moves of the scale-down simulation's start were, and the start emptied 11 nodes, not 85."""
    if isinstance(start, np.ndarray):
        return (start,)
    preview = getattr(start, "preview", None)
    found = preview(node_of) if preview is not None else None
    return () if found is None else (found,)


def incumbent(model: BatchModel, solver: TierSolver) -> np.ndarray:
    """The solver's incumbent as a node per pod row (the pods of other parts where they run)."""
    state = model.state
    node_of = state.pod_node.copy()
    if solver.full is None:
        return node_of
    rows = model.batch.class_of >= 0
    arrivals, kept = model.counts(solver.value)
    node_of[rows] = decode(model.batch, arrivals, kept)[rows]
    return node_of


def _lowered(values: dict[int, int], earlier: Sequence[tuple[Tier, Linear]]) -> TierKey | None:
    """The first tier fixed so far that ``values`` are worse on than its fixed value, or None."""
    for tier, lin in earlier:
        value = lin.value(values)
        if value < tier.objective if tier.sense == "max" else value > tier.objective:
            return tier.key
    return None



def within(model: BatchModel, start: np.ndarray) -> np.ndarray:
    """``start`` with every batch pod the model cannot put where it says (no arrival variable there: a
    model restricted to candidate nodes) back where it runs, or pending."""
    out = np.asarray(start, dtype=np.int64).copy()
    state = model.state
    for c in model.classes:
        has = np.zeros(state.num_nodes, dtype=bool)
        has[model.vars[c.index].arr_nodes] = True
        rows = np.array(c.pending + [p for pods in c.running.values() for p in pods], dtype=np.int64)
        if not len(rows):
            continue
        to = out[rows]
        off = (to >= 0) & (to != state.pod_node[rows]) & ~has[np.maximum(to, 0)]
        out[rows[off]] = state.pod_node[rows[off]]
    return out


def prepare_goal(model: BatchModel, solver: TierSolver, key: TierKey, lin: Linear, sense: str, tiers: list[Tier],
                 start: np.ndarray | TierStarts | None, clock: Clock,
                 earlier: Sequence[tuple[Tier, Linear]] = ()) -> int | None:
    """Offer ``start`` to the tier ``key`` (see the module docstring) and return the tier's known bound
    (None: none besides the solver's). ``tiers``: the part's tiers solved so far; ``earlier``: those of
    them with their objective, which the start must not make worse."""
    floor = None
    if key == PACK:
        placed = {t.key.level: t.objective for t in tiers if t.key.level is not None}
        floor = pack_floor(model, placed)
    if start is None or not clock.affords(len(model.cp.proto.variables)):
        return floor
    starts = start if isinstance(start, TierStarts) else None
    if starts is not None:
        start = starts.start(key, incumbent(model, solver), model.batch.class_of >= 0)
        if start is None:
            return floor
    values = variable_values(model, within(model, start))  # type: ignore[arg-type]
    lowered = _lowered(values, earlier)
    if lowered is not None:
        what = f"not offered: worse on {lowered}"
    else:
        # a quarter of the tier's time: fixing a large model at the start (presolve, LP) takes seconds,
        # and a start found is worth more than what the search does in that time from the cluster as is
        seconds = max(0.5, 0.25 * (solver.deadline - clock.now()))
        full = repair_hint(model, values, clock, seconds=seconds)
        what = "the model refuses it" if full is None else \
            "taken" if solver.offer(full, lin, sense) else "no better than the answer so far"
    if starts is not None:
        starts.outcome(key, what)
    return floor
