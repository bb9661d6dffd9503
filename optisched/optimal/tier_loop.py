"""The tier loop: each part's tiers solved in lexicographic order, each within its share of the time.

The tiers, in order (:func:`_objectives`): pods placed per priority level, highest first (no lower-priority
pod placed at the expense of a higher one); the PodDisruptionBudgets preemption breaks; disruption of
running pods; the user's objectives when asked for (:mod:`.user_objectives`, before disruption with
``goal_first``); the profile's score (:mod:`.score`). The placement tiers of every part come first, level
by level across the parts (:func:`_place_by_level`), then each part's tiers after them; or, with
``--weights``, one weighted objective per part (:func:`_solve_weighted`).
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .classes import Batch
from .clock import Clock, model_terms
from .decode import variable_values
from .eviction.pdb_model import victim_budgets, violation_objective
from .goal_tier import TierStarts, prepare_goal
from .groups import Group
from .model import BatchModel, BuildTimeout
from .options import OptimalOptions
from .score import score_objective
from .tier_key import TierKey, TierKind
from .tiers import Linear, Tier
from .user_objectives import objective_names, user_objective

__all__ = ["Objective", "solve_tiers"]

# a tier, its sense ("max" | "min") and its objective, or the function that builds it when its turn comes
Objective = tuple[TierKey, str, Linear | Callable[[], Linear]]
DISRUPTION = TierKey(TierKind.DISRUPTION)
PDB_VIOLATIONS = TierKey(TierKind.PDB_VIOLATIONS)
SCORE = TierKey(TierKind.SCORE)


def _objectives(model: BatchModel, objective: str | tuple[str, ...] | None = None,
                goal_first: bool = False) -> list[Objective]:
    """(tier, sense, objective) of every tier, in order; the objectives with auxiliary variables are built
    when their tier comes (a function), so the placement tiers solve without their constraints. With
    ``goal_first`` the user objectives come before disruption (a descheduler's goals, then fewest moves);
    several user objectives are one tier each, in the order given."""
    batch = model.batch
    def build(name: str) -> Callable[[], Linear]:
        return lambda: user_objective(model, name)

    users: list[Objective] = [(TierKey.user(name), "min", build(name)) for name in objective_names(objective)]
    out: list[Objective] = []
    for level in batch.levels:
        lin = Linear()
        for c in batch.classes:
            if c.priority == level:
                for _, v, u in model.vars[c.index].terms():
                    lin.add(v, 1, u)
        out.append((TierKey.placed(level), "max", lin))
    if victim_budgets(batch):  # preemption breaks as few budgets as it can, before anything else is weighed
        out.append((PDB_VIOLATIONS, "min", lambda: violation_objective(model)))
    if goal_first:
        out += users
    if any(c.running for c in batch.classes):
        rank = {p: i + 1 for i, p in enumerate(sorted(batch.levels))}
        lin = Linear()
        for c in batch.classes:
            cv = model.vars[c.index]
            for v, u in zip(cv.keep_vars, cv.keep_ub.tolist()):
                lin.const += rank[c.priority] * u
                lin.add(v, -rank[c.priority], u)
        out.append((DISRUPTION, "min", lin))
    if not goal_first:
        out += users
    if any(cv.arr_vars for cv in model.vars):
        out.append((SCORE, "max", lambda: _score(model)))
    return out


def _built(objective: Linear | Callable[[], Linear]) -> Linear:
    """An objective built with the tiers (the placement tiers', disruption's), not when its turn comes."""
    assert isinstance(objective, Linear)
    return objective


def _score(model: BatchModel) -> Linear:
    score, fidelity = score_objective(model)
    model.fidelity.update({f"score:{k}": v for k, v in fidelity.items()})
    return score


def _level_caps(batch: Batch) -> dict[int, int]:
    caps = dict.fromkeys(batch.levels, 0)
    for c in batch.classes:
        caps[c.priority] += c.size
    return caps


def solve_tiers(groups: list[Group], raw: np.ndarray, options: OptimalOptions, deadline: float,
                clock: Clock) -> None:
    """Every group's tiers: the placement tiers of all groups first (three quarters of the time), then
    the tiers after them unless ``options.stop_after`` is ``placed``; or the one weighted objective."""
    sizes = [np.sqrt(len(g.model.cp.proto.variables) + 100) for g in groups]  # small parts still get time
    if options.weights:
        for g, until in _by_size(groups, sizes, deadline, clock):
            _solve_weighted(g, until, raw, options, clock)
        return
    placing = clock.now() + 0.75 * (deadline - clock.now())  # placement tiers first, everywhere
    phases = [(True, placing)] if options.stop_after == "placed" else [(True, placing), (False, deadline)]
    for placement, end_phase in phases:
        if placement:
            _place_by_level(groups, sizes, raw, options.objective, end_phase, clock)
            continue
        for g, until in _by_size(groups, sizes, end_phase, clock):
            _solve_group(g, until, raw, options.objective, placement, clock)
        for g in groups:
            g.tiers.sort(key=lambda t: [x[0] for x in g.objectives or ()].index(t.key))


def _place_by_level(groups: list[Group], sizes: list[float], raw: np.ndarray,
                    objective: str | tuple[str, ...] | None, end: float, clock: Clock) -> None:
    """The placement tiers level by level, highest first, across the parts. A level's time is its
    weight's share of the time left until ``end`` (twice the next level's: the lexicographic order is
    decided at the highest level not yet optimal), split by size among the parts that have the level:
    first those whose incumbent already reaches their own LP bound there (their tier ends at once), then
    the others smallest first, so what a part closes early goes to the parts after it. Part by part, a
    closed level's time went to that part's lower levels instead, while another part's higher level was
    still open (200 nodes / 0.8 at 10 s: the GPU part's top level had 0.17 s, and 158 of its 160 pods;
    the larger part's top two levels were closed by its LP)."""
    levels = sorted({lv for g in groups for lv in g.batch.levels}, reverse=True)
    weight = {lv: 2 ** (len(levels) - k) for k, lv in enumerate(levels)}
    for k, level in enumerate(levels):
        now = clock.now()
        until = now + (end - now) * weight[level] / sum(weight[lv] for lv in levels[k:])
        mine = [i for i, g in enumerate(groups) if level in g.batch.levels]
        parts, part_sizes = [groups[i] for i in mine], [sizes[i] for i in mine]
        closed = [_closed(g, level, raw, objective, clock) for g in parts]
        for g, part_until in _by_size(parts, part_sizes, until, clock,
                                      key=lambda j: (not closed[j], part_sizes[j])):
            _solve_group(g, part_until, raw, objective, True, clock, only=TierKey.placed(level))


def _by_size(groups: list[Group], sizes: list[float], end: float, clock: Clock,
             key: Callable[[int], Any] | None = None) -> Iterator[tuple[Group, float]]:
    """The groups, smallest first (or by ``key`` of their index), each with its deadline: its size's share
    of the time left until ``end`` when its turn comes. What a part closes early is left to the parts
    after it (200 nodes: the GPU part closes its placement tiers in 0.6 s of a 1.3 s share)."""
    order = sorted(range(len(groups)), key=key or (lambda k: sizes[k]))
    for i, k in enumerate(order):
        now = clock.now()
        yield groups[k], now + (end - now) * sizes[k] / sum(sizes[j] for j in order[i:])


def _solve_group(g: Group, deadline: float, raw: np.ndarray, objective: str | tuple[str, ...] | None,
                 placement: bool, clock: Clock, only: TierKey | None = None) -> None:
    """Run one group's placement tiers (``placement``) or the tiers after them, until ``deadline``; with
    ``only``, that one tier (with the whole time). Objectives after the placement and disruption tiers
    are built when their turn comes (they add variables), and only when time is left to build and solve
    them."""
    g.solver.deadline = deadline
    if not placement:  # the tiers after placement may move every level's pods again
        g.solver.unpin()
        if g.search is not None and g.solver.full is not None and g.search.ready():
            # running pods the neighbourhoods let go at equal count come back first: cheap, exact, and
            # it lowers the disruption tier's start (docs/performance.md, "Optimal mode")
            until = clock.now() + 0.3 * (deadline - clock.now())
            g.solver.full = g.search.restore(np.asarray(g.solver.full, dtype=np.int64), until)[0].tolist()
    caps = _level_caps(g.batch)
    objectives = _ensure_objectives(g, raw, objective, clock)
    if not placement and _settle_reached(g):
        return
    # a higher level's time share counts double each level below (the lexicographic order is decided at
    # the highest level not yet optimal; a level that reaches its bound leaves the rest to the next)
    placing = [key for key, _, _ in objectives if key.is_level]
    # a user objective (a goal) counts double each tier after it too: its tier decides the plan, the ones
    # after it only break its ties
    after = [sum(1 for k, _, _ in objectives[i + 1:] if not k.is_level) for i in range(len(objectives))]
    weights = [2 ** (len(placing) - placing.index(key)) if key in placing else
               2 ** after[i] if key.kind == TierKind.OBJECTIVE else 1
               for i, (key, _, _) in enumerate(objectives)]
    for i, (key, sense, lin) in enumerate(objectives):
        if key.is_level != placement or only not in (None, key):
            continue
        level = key.level
        # the next placement tier breaks ties, so this one does not spoil it; not under LNS, where the
        # search is what limits the level, and every step that only helps the next level is a step
        # less for this one
        later = Linear()
        nxt = objectives[i + 1] if i + 1 < len(objectives) else None
        # (node neighbourhoods weigh the tiers after by themselves: _search)
        searching = g.search is not None and level is not None and g.search.ready()
        if not searching and level is not None and nxt is not None and nxt[0].is_level and not g.lns:
            later = _built(nxt[2]).scaled(1)
        elif not searching and level is not None and nxt is not None and nxt[0] == DISRUPTION:
            later = _built(nxt[2]).scaled(-1)  # the last level breaks ties by less disruption
        rest = tuple(_built(x) for k, _, x in objectives[i + 1:] if k.is_level)
        share = 1.0 if only is not None else weights[i] / sum(
            w for (k, _, _), w in zip(objectives[i:], weights[i:]) if k.is_level == placement)
        if callable(lin):
            left = deadline - clock.now()
            # building the score takes 25-40 µs per variable (0.08 s for 2,100 variables, 1.0 s for 41,000,
            # 2.6 s for 75,000 on generated clusters): a small part needs a fraction of a second
            need = min(1.0, 1e-4 * len(g.model.cp.proto.variables))
            if left < need or not clock.wall_allows(need):
                g.skipped.append(key)  # no time to build it: the tier is left out of the certificate
                continue
            g.model.deadline = clock.now() + 0.6 * left  # the rest solves it
            mark = len(g.model.cp.proto.constraints), len(g.model.cp.proto.variables)
            try:
                with clock.phase("objectives"):
                    lin = lin()
                    clock.work("objective term", model_terms(g.model.cp.proto, *mark) + len(lin.vars))
            except BuildTimeout:  # its partial terms are harmless; nothing after it is built
                g.skipped += [k for k, _, _ in objectives[i:]]
                break
            finally:
                g.model.deadline = None
        # under CP-SAT's LNS a level's tier pins the levels above at the incumbent: the search is what
        # limits a level there, and steps that move pods of levels already decided are steps lost. The
        # last level pins nothing more: the level just above may still move, to break ties by
        # disruption. Node neighbourhoods choose for themselves whether a step moves the levels above.
        clock.work("tier term", len(lin.vars) if searching else
                   len(lin.vars) + len(later.vars) + sum(len(x.vars) for x in rest if isinstance(x, Linear)))
        if level is not None and g.lns and g.search is None and key != placing[-1]:
            g.solver.pin(_above(g.model, level))
        cap = caps.get(level) if level is not None else None
        if level is not None and isinstance(g.start, TierStarts):  # a placement tier's start (no bound)
            prepare_goal(g.model, g.solver, key, lin, sense, g.tiers, g.start, clock,
                         [(t, g.built[t.key]) for t in g.tiers if t.key in g.built])
        if key.kind == TierKind.OBJECTIVE:
            cap = prepare_goal(g.model, g.solver, key, lin, sense, g.tiers, g.start, clock,
                               [(t, g.built[t.key]) for t in g.tiers if t.key in g.built])
            g.start = g.start if isinstance(g.start, TierStarts) else None  # an array: the first tier's only
        g.built[key] = lin
        if level is not None and g.lp is not None:
            relaxed = g.lp.bound(level)
            cap = cap if relaxed is None or cap is None else min(cap, relaxed)
        if searching:
            assert level is not None
            tier = _search(g, key, lin, level, share, cap, objectives[i + 1:])
        else:
            tier = g.solver.solve(key, lin, sense, share, cap, later, rest)
        if level is not None and g.lp is not None:
            g.lp.fix(level, tier.objective)
        tier.greedy = lin.value(g.raw_values)
        tier.fidelity = lin.fidelity
        g.tiers.append(tier)


def _ensure_objectives(g: Group, raw: np.ndarray, objective: str | tuple[str, ...] | None,
                       clock: Clock) -> list[Objective]:
    """The group's tiers' objectives (built the first time) and greedy's values for them."""
    if g.objectives is None:
        with clock.phase("objectives"):
            g.objectives = _objectives(g.model, objective, g.goal_first)
            g.raw_values = variable_values(g.model, raw)
            clock.work("objective term", 2 * len(g.model.cp.proto.variables))
    return g.objectives


def _closed(g: Group, level: int, raw: np.ndarray, objective: str | tuple[str, ...] | None,
            clock: Clock) -> bool:
    """Whether the part's incumbent already reaches its own LP bound on ``level`` (the tier ends at once)."""
    if g.lp is None or g.solver.full is None:
        return False
    relaxed = g.lp.bound(level)  # (asked again by the tier: the same answer, no second solve)
    tier = TierKey.placed(level)
    lin = _built(next(x for key, _, x in _ensure_objectives(g, raw, objective, clock) if key == tier))
    clock.work("tier term", len(lin.vars))
    return relaxed is not None and g.solver.evaluate(lin) >= relaxed


def _settle_reached(g: Group) -> bool:
    """After the placement tiers, fix the part's choice between batch semantics and kube-scheduler's own
    placement (:func:`.hint.accept_reached`): the tiers after may reuse auxiliary variables the lifted
    constraints define, so they run only under batch semantics. At kube-scheduler's placement they are
    its values (bound: the objective's range end); returns True then (nothing left to solve)."""
    if g.reached is None or g.solver.full is None:
        return False
    at = g.solver.value(g.reached)
    domain = g.model.cp.proto.variables[g.reached.Index()].domain
    domain.clear()
    domain.extend([at, at])
    if not at:
        return False
    for key, sense, lin in g.objectives or []:
        if key.is_level:
            continue
        lin = lin() if callable(lin) else lin
        value, (lo, hi) = lin.value(g.raw_values), lin.bounds()
        best = hi if sense == "max" else lo
        g.tiers.append(Tier(key, sense, value, best, "OPTIMAL" if value == best else "FEASIBLE", 0.0, value,
                            lin.fidelity))
    return True


def _above(model: BatchModel, level: int) -> list:
    """The variables of the classes above ``level`` (what a placement tier under LNS pins)."""
    return [v for c in model.classes if c.priority > level
            for v in model.vars[c.index].arr_vars + model.vars[c.index].keep_vars]


def _search(g: Group, key: TierKey, lin: Linear, level: int, share: float, cap: int | None,
            after: list[Objective]) -> Tier:
    """A placement tier under LNS, by node neighbourhoods (:class:`.neighbourhood.NodeSearch`): a step that
    ties the tier is kept when no worse on the tiers after it that are built (disruption counted down)."""
    solver, search = g.solver, g.search
    assert search is not None
    later = []
    for _, sense, x in after:
        if callable(x):
            break
        later.append(search.maximized(x, sense))
    report = None
    if solver.progress is not None:
        def report(value: int) -> None:
            solver.progress(str(key), value, cap, time.perf_counter() - solver.t0)  # type: ignore[misc]

    return solver.search(key, lin, share, cap, lambda x, budget: search.run(
        x, level, lin, tuple(later), budget, cap, report)[0])


def _weight_of(weights: dict[TierKey, int], key: TierKey) -> int:
    """``key``'s weight: its own, else its kind's (``placed`` every level, ``objective`` every objective)."""
    if key in weights:
        return weights[key]
    return weights.get(TierKey(key.kind), 0)


def _solve_weighted(g: Group, deadline: float, raw: np.ndarray, options: OptimalOptions,
                    clock: Clock) -> None:
    """One objective: Σ weight · tier (minimized tiers subtracted), solved once; each weighted tier's value
    at the answer is reported beside it (status ``VALUE``: it has no bound of its own)."""
    weights = {TierKey.parse(name): w for name, w in options.weights}  # (names checked by parse_weights)
    g.solver.deadline = deadline
    g.objectives = _objectives(g.model, options.objective)
    g.raw_values = variable_values(g.model, raw)
    combined, parts = Linear(), []
    for key, sense, lin in g.objectives:
        w = _weight_of(weights, key)
        if w == 0:
            continue
        if callable(lin):
            g.model.deadline = clock.now() + 0.4 * (deadline - clock.now())
            try:
                lin = lin()
            except BuildTimeout:
                g.skipped.append(key)
                continue
            finally:
                g.model.deadline = None
        m = w if sense == "max" else -w
        for v, c, (lo, hi) in zip(lin.vars, lin.coefs, lin.domains):
            combined.add(v, c * m, hi, lo)
        combined.const += lin.const * m
        combined.derived += lin.derived
        if lin.fidelity != "EXACT":
            combined.fidelity = lin.fidelity
        parts.append((key, sense, lin))
    tier = g.solver.solve(TierKey.weighted(), combined, "max", 1.0)
    tier.greedy, tier.fidelity = combined.value(g.raw_values), combined.fidelity
    g.tiers.append(tier)
    for key, sense, lin in parts:
        value = g.solver.evaluate(lin) if g.solver.full is not None else 0
        g.tiers.append(Tier(TierKey.weighted(key), sense, value, value, "VALUE", 0.0, lin.value(g.raw_values),
                            lin.fidelity))
