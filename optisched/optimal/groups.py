"""The batch's independent parts, each with its model, its solver started from a complete hint, and its
LP bound: what the tier loop (:mod:`.tier_loop`) solves and the certificate (:mod:`.certify`) sums.

The parts are the batch's components (:mod:`.components`, at most four; one when moves are capped); a
large batch keeps candidate nodes only (:mod:`.candidates`) and is then searched by LNS, its placement
tiers by node neighbourhoods (:mod:`.neighbourhood`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from ortools.sat.python import cp_model

from ..profile import SchedulerConfig
from .bound import LevelBound
from .candidates import choose_candidates
from .classes import Batch
from .clock import Clock
from .components import group_components, sub_batch
from .decode import variable_values
from .eviction.batch import encode_eviction_rules, encode_move_cap
from .goal_tier import TierStarts, previews
from .hint import accept_reached, accepts, repair_hint
from .model import BatchModel, BuildTimeout
from .neighbourhood import NodeSearch
from .options import OptimalOptions
from .tier_key import TierKey
from .tiers import Linear, Progress, Tier, TierSolver

__all__ = ["LNS_FIRST_SOLUTION", "LNS_PARAMS", "LP_SHARE", "Group", "build_groups", "domain_keys",
           "order_blocks"]


# Search on large models restricted to candidate nodes (presolve off): CP-SAT's bound is not used
# there (the LP's is), so both workers run LNS from small neighbourhoods (2 % of the variables),
# starting from the complete hint: the defaults spend the time on the LP and on building half-model
# neighbourhoods (docs/performance.md, "Optimal mode").
LNS_PARAMS = {"use_lns_only": True, "lns_initial_difficulty": 0.02}
# without a complete hint a full-problem worker (without the LP) looks for the first solution beside LNS
LNS_FIRST_SOLUTION = {"subsolvers": ["no_lp"], "lns_initial_difficulty": 0.02}
# the LP bounds' share of the time before the deadline (GLOP is stopped there; the cheaper bound stands)
LP_SHARE = 0.1


@dataclass
class Group:
    """One independent part of the batch: its sub-batch, model, solver, tiers and base model."""

    batch: Batch
    model: BatchModel
    solver: TierSolver
    base: cp_model.CpModel
    # true: the part is at kube-scheduler's placement (hint.accept_reached)
    reached: cp_model.IntVar | None = None
    tiers: list[Tier] = field(default_factory=list)
    cp_valid: bool = True  # CP-SAT's bounds are valid (unrestricted model, earlier tiers optimal)
    objectives: list | None = None  # (tier, sense, objective) of every tier (.tier_loop.Objective)
    raw_values: dict[int, int] = field(default_factory=dict)
    skipped: list[TierKey] = field(default_factory=list)  # tiers not built in time
    lp: LevelBound | None = None  # this part's own LP bound per level: a placement tier that reaches it stops
    lns: bool = False  # searched by LNS (large restricted model): no tie-breaking between placement levels
    search: NodeSearch | None = None  # under LNS, the placement tiers' own node-neighbourhood search
    goal_first: bool = False  # the objective's tier before disruption (OptimalOptions.goal_first)
    raw_start: bool = False  # the solver starts from kube-scheduler's own placement (not a repaired copy)
    start: np.ndarray | TierStarts | None = None  # offered to the user objectives' tiers (.goal_tier)
    built: dict[TierKey, Linear] = field(default_factory=dict)  # each tier's objective, once built


def build_groups(batch: Batch, config: SchedulerConfig, options: OptimalOptions, raw: np.ndarray,
                  hint: np.ndarray, deadline: float, progress: Progress | None,
                  clock: Clock, refused: bool = False) -> tuple[list[Group], LevelBound | None]:
    """The independent parts' models and solvers, each with a complete hint: ``hint`` (greedy's placement
    repaired for batch semantics, or the plain run's answer) or, when ``refused`` (``hint`` is greedy's
    placement repaired, batch semantics having refused some of it), kube-scheduler's placement ``raw``
    itself: as one more solution (:func:`.hint.accept_reached`), or under LNS when the model takes it as it
    is (an arrival order admits it, :mod:`.order`)."""
    with clock.phase("restrict"):  # (charged first: a stop it decides comes at the first check)
        clock.work("pod", len(batch.state.pods))
        clock.work("cell", len(batch.classes) * batch.state.num_nodes)
        whole = BatchModel(batch, config, build=False, arrival_order=options.arrival_order, clock=clock,
                           deadline=deadline)
    candidates = None
    usable = whole.allowed & (whole.cap > 0)
    if whole.size() > options.max_variables:
        per_class = max(8, options.max_variables // max(1, len(batch.classes)))
        with clock.phase("candidates"):
            # kube-scheduler's own nodes stay candidates where batch semantics refused some: an arrival
            # order may admit its placement, which is then the start
            candidates = choose_candidates(batch, usable, raw if refused else hint, per_class, options.seed,
                                           domain_keys(batch), previews(options.start, hint))
            clock.work("candidate", len(batch.classes))
    profile = config.profiles[0]
    spread = getattr(profile, "spread", None)
    defaults = spread.effective_default_constraints if spread is not None else ()
    with clock.phase("components"):
        parts = group_components(batch, usable, candidates, whole.snapshot, defaults,
                                 max_groups=1 if options.max_moves is not None else 4)
        clock.work("edge", whole.size() if candidates is None else sum(len(v) for v in candidates.values()))
    models = _part_models(batch, config, options, whole, parts, candidates, deadline, clock)
    lp_share = LP_SHARE * deadline  # the LP's share of the limit, split among the relaxations built
    # (only parts restricted to candidate nodes may build their own, below)
    part_lps = sum(1 for _, m in models if m.restricted)
    lp = _relaxation(whole, clock, lp_share / (2 if part_lps else 1), deadline)
    # each LNS part's own LP (its placement tiers stop at it: a closed level that ran its whole share
    # would starve the parts solved after it), unless the relaxation is large enough that building it
    # again per part costs seconds the search needs more
    groups = []
    for sub, m in models:
        if clock.past(deadline):  # no tier would solve it: kube-scheduler's placement is the answer
            raise BuildTimeout
        with clock.phase("eviction rules"), m.charged(deadline):  # stops part-way past the limit
            encode_eviction_rules(m, budgets=not options.staged)
            if options.max_moves is not None:
                encode_move_cap(m, options.max_moves)
        m.clock = clock
        solver = TierSolver(m.cp, workers=options.workers, seed=options.seed, deadline=deadline,
                            progress=progress, presolve=len(m.cp.proto.variables) <= options.presolve_limit,
                            clock=clock)
        lns = m.restricted and not solver.presolve
        reached, raw_start = _start(m, solver, raw, hint, refused, lns, deadline, clock)
        if lns:
            solver.params.update(LNS_PARAMS if solver.full is not None else LNS_FIRST_SOLUTION)
        with clock.phase("copies"):
            # (used only while the model is all linear: NodeSearch.ready says, tier by tier)
            search = NodeSearch(m, options.seed, clock) \
                if lns and solver.full is not None and options.node_search else None
            base = m.cp.clone()
            clock.work("copy", (2 if search is not None else 1) * m.terms)
        part_lp = _relaxation(m, clock, lp_share / (2 * part_lps), deadline) if lns and lp is not None \
            and not lp.large else None
        groups.append(Group(sub, m, solver, base, reached=reached, cp_valid=not m.restricted, lp=part_lp,
                            lns=lns, search=search, goal_first=options.goal_first, raw_start=raw_start,
                            start=options.start))
    return groups, lp


def _part_models(batch: Batch, config: SchedulerConfig, options: OptimalOptions, whole: BatchModel,
                 parts: list[list[int]], candidates: dict[int, np.ndarray] | None, deadline: float,
                 clock: Clock) -> list[tuple[Batch, BatchModel]]:
    """The model of each part (the whole batch's when it is one), each rule's work charged as it is
    written; building stops (:class:`.model.BuildTimeout`) once the limit has passed."""
    with clock.phase("model"):
        if len(parts) <= 1:
            whole.build(candidates)
            models = [(batch, whole)]
        else:
            models = []
            for part in parts:
                sub, _ = sub_batch(batch, part)
                local = {ci: k for k, ci in enumerate(part)}
                forbidden = {(local[ci], rule): m for (ci, rule), m in whole.forbidden_by.items()
                             if ci in local}
                clock.work("pod", len(sub.state.pods))
                domains = (whole.allowed[part], whole.cap[part], forbidden)
                m = BatchModel(sub, config, build=False, domains=domains,
                               arrival_order=options.arrival_order, clock=clock, deadline=deadline)
                m.build({local[ci]: v for ci, v in candidates.items() if ci in local} if candidates else None)
                models.append((sub, m))
    for _, m in models:
        m.deadline = None  # (objectives built later set their own)
    return models


def _relaxation(model: BatchModel, clock: Clock, seconds: float, deadline: float) -> LevelBound | None:
    """The LP bound of ``model`` with ``seconds`` of the limit for its solves; None (an optional part)
    once the limit has passed (the certificate's bounds are then the levels' sizes or CP-SAT's own)."""
    if clock.past(deadline):
        return None
    with clock.phase("lp"):
        lp = LevelBound(model, clock=clock, seconds=seconds)
        clock.work("lp", lp.nonzeros + lp.columns)
    return lp


def _start(m: BatchModel, solver: TierSolver, raw: np.ndarray, hint: np.ndarray, refused: bool, lns: bool,
           deadline: float, clock: Clock) -> tuple[cp_model.IntVar | None, bool]:
    """The solver's complete starting solution (``solver.full``) and how it was found: (the literal of
    kube-scheduler's own placement, or None; whether the start is that placement).

    kube-scheduler's placement where batch semantics refuses it: a solution of its own (not under LNS,
    whose steps need the constraints as they are); else the repaired copy (under LNS only when the model
    takes it as it is: an arrival order admits it, .order). Neither once the limit has passed (no tier
    will solve: kube-scheduler's placement is the answer)."""
    seconds = max(0.5, 0.1 * (deadline - clock.now()))
    reached, raw_start = None, not refused
    if clock.past(deadline) or not clock.affords(len(m.cp.proto.variables)):
        return reached, raw_start
    with clock.phase("hint"):
        found = None if not refused else \
            accept_reached(m, variable_values(m, raw), clock, seconds) if not lns \
            else _as_is(accepts(m, variable_values(m, raw), clock, seconds))
        if found is not None:
            (solver.full, reached), raw_start = found, True
        else:
            solver.full = repair_hint(m, variable_values(m, hint), clock, seconds=seconds)
    return reached, raw_start


def _as_is(full: list[int] | None) -> tuple[list[int], None] | None:
    return None if full is None else (full, None)


def order_blocks(g: Group) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The pod rows of each class of the arrival order the part's answer takes (none: batch semantics),
    and of the victims that leave just before each (.victim_times)."""
    order = g.model.order.blocks(g.solver.value)
    if order is None:
        return [], []
    return [np.flatnonzero(g.batch.class_of == k) for k in order], g.model.order.evicted(g.solver.value)


def domain_keys(batch: Batch) -> dict[int, list[str]]:
    """Per class, the topology keys (other than the hostname) its own spread and affinity terms use."""
    out: dict[int, list[str]] = {}
    for c in batch.classes:
        spec = batch.state.pods[c.rep].spec
        keys = [t.topology_key for t in spec.topology_spread_constraints]
        aff = spec.affinity
        for group in (aff.pod_affinity, aff.pod_anti_affinity) if aff else ():
            if group is not None:
                keys += [t.topology_key for t in group.required_during_scheduling_ignored_during_execution]
        keys = [k for k in dict.fromkeys(keys) if k != "kubernetes.io/hostname"]
        if keys:
            out[c.index] = keys
    return out
