"""What a user objective's tier gets before it is solved: a start from outside the solver, and a bound.

* **Start** (``OptimalOptions.start``, a node per pod row): a placement found by a simulator, e.g.
  cluster-autoscaler's scale-down simulation (:mod:`optisched.reschedule.start`). It is made a solution
  of the model as the earlier tiers left it (:func:`.hint.repair_hint`: what the model refuses goes back
  to the pod staying where it runs) and becomes the incumbent when the tier's objective is better there,
  so the tier's search starts from it instead of from the cluster as it is.
* **Bound**: ``pack`` gets :func:`.user_objectives.pack_floor` (capacity: the pods the placement tiers
  keep on a node need room), which CP-SAT's own bound often does not reach (LNS proves none; the LP
  relaxation of the used flags is weak). The tier stops when its incumbent meets it.
"""
from __future__ import annotations

import numpy as np

from .clock import Clock
from .decode import variable_values
from .hint import repair_hint
from .model import BatchModel
from .tiers import Linear, Tier, TierSolver
from .user_objectives import pack_floor

__all__ = ["prepare_goal", "within"]

PLACED = "placed[priority="


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


def prepare_goal(model: BatchModel, solver: TierSolver, name: str, lin: Linear, sense: str, tiers: list[Tier],
                 start: np.ndarray | None, clock: Clock) -> int | None:
    """Offer ``start`` to the tier ``name`` (see the module docstring) and return the tier's known bound
    (None: none besides the solver's). ``tiers``: the part's tiers solved so far."""
    floor = None
    if name == "objective:pack":
        placed = {int(t.name[len(PLACED):-1]): t.objective for t in tiers if t.name.startswith(PLACED)}
        floor = pack_floor(model, placed)
    if start is not None and clock.affords(len(model.cp.proto.variables)):
        # a quarter of the tier's time: fixing a large model at the start (presolve, LP) takes seconds,
        # and a start found is worth more than what the search does in that time from the cluster as is
        seconds = max(0.5, 0.25 * (solver.deadline - clock.now()))
        full = repair_hint(model, variable_values(model, within(model, start)), clock, seconds=seconds)
        if full is not None:
            solver.offer(full, lin, sense)
    return floor
