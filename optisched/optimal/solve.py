"""Optimal mode: the whole batch as one CP-SAT model, solved tier by tier, with a certificate.

1. Greedy mode runs first: its placement is the hint and the fallback (the answer is never worse).
2. The batch becomes pod classes (:mod:`.classes`) and one :class:`.model.BatchModel` with every filter
   of the profile as constraints, plus the batch preemption rules (:mod:`optisched.optimal.eviction.batch`).
3. Tiers (:mod:`.tiers`): pods placed per priority level, highest first (no lower-priority pod placed
   at the expense of a higher one); then disruption of running pods; then the user's objective when one
   is asked for (:mod:`.user_objectives`); then the profile's score (:mod:`.score`).
4. The answer is decoded to a node per pod and re-checked by the greedy filters (:mod:`.check`).
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from ortools.sat.python import cp_model

from .. import collector
from ..errors import InputError
from ..greedy.scheduler import GreedyOptions, GreedyResult, GreedyScheduler
from ..model.state import ClusterState, for_release
from ..options import check_weight
from ..policy.eviction import EvictionPolicy, kept_notes
from ..profile import SchedulerConfig
from .bound import LevelBound
from .candidates import choose_candidates
from .check import Violation, check_answer, check_budgets
from .classes import Batch, build_batch
from .clock import Clock, model_terms
from .components import group_components, sub_batch
from .decode import decode, variable_values
from .eviction.batch import encode_eviction_rules, encode_move_cap
from .eviction.pdb_model import budget_use, victim_budgets, violation_objective
from .explain import Explanation, explain_unplaced
from .goal_tier import TierStarts, prepare_goal, previews
from .hint import accept_reached, accepts, repair_hint, repair_placement
from .model import BatchModel, BuildTimeout, stopper
from .neighbourhood import NodeSearch
from .score import score_objective
from .tiers import Linear, Progress, Tier, TierSolver
from .user_objectives import check_objective, objective_names, user_objective

__all__ = ["Certificate", "OptimalOptions", "OptimalResult", "greedy_answer", "parse_weights", "solve_optimal"]


# Search on large models restricted to candidate nodes (presolve off): CP-SAT's bound is not used
# there (the LP's is), so both workers run LNS from small neighbourhoods (2 % of the variables),
# starting from the complete hint: the defaults spend the time on the LP and on building half-model
# neighbourhoods (docs/performance.md, "Optimal mode").
LNS_PARAMS = {"use_lns_only": True, "lns_initial_difficulty": 0.02}
# without a complete hint a full-problem worker (without the LP) looks for the first solution beside LNS
LNS_FIRST_SOLUTION = {"subsolvers": ["no_lp"], "lns_initial_difficulty": 0.02}
STOP_AFTER = ("placed",)
# CPU seconds per pending pod of decoding and re-checking an answer, the most a loaded machine was seen to
# take (docs/optimal_trust.md, "The time limit is a promise")
RECHECK_CPU = 7e-4
# the LP bounds' share of the time before the deadline (GLOP is stopped there; the cheaper bound stands)
LP_SHARE = 0.1
INTERRUPTED = "interrupted (Ctrl-C or SIGTERM): the best answer found before it, not the end of the search"
NOT_ATTEMPTED = "not attempted: the run was interrupted first"
NO_LP = "no LP bound: the time limit had passed before it was built; the bounds shown are the levels' pod counts"


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
    weights: tuple[tuple[str, int], ...] = ()  # one weighted objective instead of the tiers (see parse_weights)
    node_search: bool = True  # under LNS, placement tiers by node neighbourhoods (.neighbourhood) not CP-SAT's LNS
    eviction: EvictionPolicy = field(default_factory=EvictionPolicy)  # which running pods may leave (moves, victims)
    deterministic: bool = True  # budgets in deterministic time: the same answer on every run (see .clock)
    stop_after: str | None = None  # "placed": end after the placement tiers (no disruption, objective, score)
    goal_first: bool = False  # the objective's tier before disruption (reschedule: the goal, then fewest moves)
    staged: bool = False  # moves are staged in waves that hold each PodDisruptionBudget per wave, not in total
    max_moves: int | None = None  # at most this many running pods leave their node (one model: no independent parts)
    arrival_order: bool = True  # also admit placements some queue order reaches pod by pod (.order); else batch only
    # where the user objectives' tiers may start (.goal_tier): a node per pod row for the first one, or a
    # TierStarts asked per tier; not compared
    start: np.ndarray | TierStarts | None = field(default=None, compare=False)


@dataclass
class Certificate:
    """How good the answer is: per tier the objective, the best bound and the gap."""

    status: str  # OPTIMAL | FEASIBLE | INFEASIBLE | UNKNOWN
    tiers: list[Tier]
    seconds: float
    source: str  # "solver" or "greedy" (the greedy placement was at least as good)
    greedy_optimal: bool
    notes: list[str] = field(default_factory=list)
    interrupted: bool = False  # Ctrl-C ended the run early: the best answer found before it

    def to_dict(self) -> dict:
        return {"status": self.status, "tiers": [t.to_dict() for t in self.tiers], "seconds": round(self.seconds, 3),
                "source": self.source, "greedyOptimal": self.greedy_optimal, "notes": self.notes,
                "interrupted": self.interrupted}


@dataclass
class OptimalResult:
    state: ClusterState
    batch: Batch
    node_of: np.ndarray  # node row per pod row after the batch, -1 = not placed
    certificate: Certificate
    greedy: GreedyResult
    violations: list[Violation]
    explanations: list[Explanation] = field(default_factory=list)
    used: float = 0.0  # nominal seconds of the run's clock (deterministic work by default) spent
    order: list[np.ndarray] = field(default_factory=list)  # pod rows per class in the arrival order relied on
    evicted: list[np.ndarray] = field(default_factory=list)  # parallel: victims in place until that block (.victim_times)
    ledger: dict[str, dict[str, float]] = field(default_factory=dict)  # per phase: work counted, CPU (.clock)

    def placements(self) -> dict[str, str | None]:
        names = self.state.node_names
        return {p.key: (names[n] if (n := int(self.node_of[i])) >= 0 else None) for i, p in enumerate(self.state.pods)}

    @property
    def unschedulable(self) -> dict[int, str]:
        """Pending pods the answer leaves without a node, with the greedy FitError for context."""
        out = {}
        untried = set(self.greedy.not_attempted)
        for c in self.batch.classes:
            for p in c.pending:
                if self.node_of[p] < 0:
                    out[p] = NOT_ATTEMPTED if p in untried else \
                        self.greedy.unschedulable.get(p, "not placed by the optimal batch")
        return out


def _level_name(priority: int) -> str:
    return f"placed[priority={priority}]"


def placed_per_level(batch: Batch, node_of: np.ndarray) -> dict[int, int]:
    """Batch pods on a node per priority level."""
    out = dict.fromkeys(batch.levels, 0)
    for c in batch.classes:
        rows = c.pending + [p for pods in c.running.values() for p in pods]
        out[c.priority] += int(np.count_nonzero(node_of[rows] >= 0))
    return out


def _objectives(model: BatchModel, objective: str | tuple[str, ...] | None = None,
                goal_first: bool = False) -> list[tuple[str, str, Linear | Callable[[], Linear]]]:
    """(name, sense, objective) of every tier, in order; the objectives with auxiliary variables are built
    when their tier comes (a function), so the placement tiers solve without their constraints. With
    ``goal_first`` the user objectives come before disruption (a descheduler's goals, then fewest moves);
    several user objectives are one tier each, in the order given."""
    batch = model.batch
    def build(name: str) -> Callable[[], Linear]:
        return lambda: user_objective(model, name)

    users: list[tuple[str, str, Linear | Callable[[], Linear]]] = [
        (f"objective:{name}", "min", build(name)) for name in objective_names(objective)]
    out: list[tuple[str, str, Linear | Callable[[], Linear]]] = []
    for level in batch.levels:
        lin = Linear()
        for c in batch.classes:
            if c.priority == level:
                for _, v, u in model.vars[c.index].terms():
                    lin.add(v, 1, u)
        out.append((_level_name(level), "max", lin))
    if victim_budgets(batch):  # preemption breaks as few budgets as it can, before anything else is weighed
        out.append(("pdb-violations", "min", lambda: violation_objective(model)))
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
        out.append(("disruption", "min", lin))
    if not goal_first:
        out += users
    if any(cv.arr_vars for cv in model.vars):
        out.append(("score", "max", lambda: _score(model)))
    return out


def _score(model: BatchModel) -> Linear:
    score, fidelity = score_objective(model)
    model.fidelity.update({f"score:{k}": v for k, v in fidelity.items()})
    return score


def _lex_key(batch: Batch, node_of: np.ndarray, goal_first: bool = False, staged: bool = False) -> tuple:
    """The tiers the fallback is compared on; with ``goal_first`` disruption is not one (the goal, which
    the key does not see, comes before it); ``staged``: moves beyond a budget are the waves' concern."""
    per = placed_per_level(batch, node_of)
    left = sum(1 for c in batch.classes for n, pods in c.running.items() for p in pods if node_of[p] != n)
    broken = 0 if staged else sum(u.violated for u in budget_use(batch, node_of))  # the pdb-violations tier comes first
    return (*[per[lv] for lv in batch.levels], -broken, *(() if goal_first else (-left,)))


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


WEIGHT_KEYS = ("placed", "disruption", "objective", "score")


def parse_weights(text: str | dict[str, int] | None) -> tuple[tuple[str, int], ...]:
    """``"placed=1000,disruption=1,score=1"`` (or a dict) as weights for one objective: ``placed`` counts
    every pod on a node (``placed[priority=N]`` one level, overriding it), ``disruption`` the tier of that
    name, ``objective`` the user objective, ``score`` the profile's score. Maximized tiers add, minimized
    ones subtract; a tier without a weight is left out."""
    if not text:
        return ()
    items = text.items() if isinstance(text, dict) else [kv.split("=", 1) for kv in text.split(",") if kv.strip()]
    out = []
    for item in items:
        if len(item) != 2:
            raise InputError(f"--weights: {'='.join(item)!r} is not NAME=INTEGER")
        name, value = str(item[0]).strip(), str(item[1]).strip()
        level = name.startswith("placed[priority=") and name.endswith("]") and \
            name[len("placed[priority="):-1].lstrip("-").isdigit()
        if name not in WEIGHT_KEYS and not level:
            raise InputError(f"--weights: {name!r} is not a tier; tiers: {', '.join(WEIGHT_KEYS)}, placed[priority=N]")
        try:
            weight = int(value)
        except ValueError:
            raise InputError(f"--weights: {name}={value!r} is not an integer") from None
        out.append((name, check_weight(weight, f"--weights {name}")))
    return tuple(out)


def _weight_of(weights: dict[str, int], name: str) -> int:
    if name in weights:
        return weights[name]
    if name.startswith("placed["):
        return weights.get("placed", 0)
    return weights.get(name.split(":", 1)[0], 0)


def _solve_weighted(g: _Group, deadline: float, raw: np.ndarray, options: OptimalOptions, clock: Clock) -> None:
    """One objective: Σ weight · tier (minimized tiers subtracted), solved once; each weighted tier's value
    at the answer is reported beside it (status ``VALUE``: it has no bound of its own)."""
    weights = dict(options.weights)
    g.solver.deadline = deadline
    g.objectives = _objectives(g.model, options.objective)
    g.raw_values = variable_values(g.model, raw)
    combined, parts = Linear(), []
    for name, sense, lin in g.objectives:
        w = _weight_of(weights, name)
        if w == 0:
            continue
        if callable(lin):
            g.model.deadline = clock.now() + 0.4 * (deadline - clock.now())
            try:
                lin = lin()
            except BuildTimeout:
                g.skipped.append(name)
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
        parts.append((name, sense, lin))
    tier = g.solver.solve("weighted", combined, "max", 1.0)
    tier.greedy, tier.fidelity = combined.value(g.raw_values), combined.fidelity
    g.tiers.append(tier)
    for name, sense, lin in parts:
        value = g.solver.evaluate(lin) if g.solver.full is not None else 0
        g.tiers.append(Tier(f"weighted:{name}", sense, value, value, "VALUE", 0.0, lin.value(g.raw_values),
                            lin.fidelity))


def _level_caps(batch: Batch) -> dict[int, int]:
    caps = dict.fromkeys(batch.levels, 0)
    for c in batch.classes:
        caps[c.priority] += c.size
    return caps


@dataclass
class _Group:
    """One independent part of the batch: its sub-batch, model, solver, tiers and base model."""

    batch: Batch
    model: BatchModel
    solver: TierSolver
    base: cp_model.CpModel
    reached: cp_model.IntVar | None = None  # true: the part is at kube-scheduler's placement (hint.accept_reached)
    tiers: list[Tier] = field(default_factory=list)
    cp_valid: bool = True  # CP-SAT's bounds are valid (unrestricted model, earlier tiers optimal)
    objectives: list | None = None
    raw_values: dict[int, int] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)  # tiers not built in time
    lp: LevelBound | None = None  # this part's own LP bound per level: a placement tier that reaches it stops
    lns: bool = False  # searched by LNS (large restricted model): no tie-breaking between placement levels
    search: NodeSearch | None = None  # under LNS, the placement tiers' own node-neighbourhood search
    goal_first: bool = False  # the objective's tier before disruption (OptimalOptions.goal_first)
    raw_start: bool = False  # the solver starts from kube-scheduler's own placement (not a repaired copy)
    start: np.ndarray | TierStarts | None = None  # offered to the user objectives' tiers (.goal_tier)
    built: dict[str, Linear] = field(default_factory=dict)  # each tier's objective, once built


def _build_groups(batch: Batch, config: SchedulerConfig, options: OptimalOptions, raw: np.ndarray,
                  hint: np.ndarray, deadline: float, progress: Progress | None,
                  clock: Clock, refused: bool = False) -> tuple[list[_Group], LevelBound | None]:
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
        solver = TierSolver(m.cp, workers=options.workers, seed=options.seed, deadline=deadline, progress=progress,
                            presolve=len(m.cp.proto.variables) <= options.presolve_limit, clock=clock)
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
        groups.append(_Group(sub, m, solver, base, reached=reached, cp_valid=not m.restricted, lp=part_lp, lns=lns,
                             search=search, goal_first=options.goal_first, raw_start=raw_start,
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
                forbidden = {(local[ci], rule): m for (ci, rule), m in whole.forbidden_by.items() if ci in local}
                clock.work("pod", len(sub.state.pods))
                m = BatchModel(sub, config, build=False, domains=(whole.allowed[part], whole.cap[part], forbidden),
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


def _order_blocks(g: _Group) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The pod rows of each class of the arrival order the part's answer takes (none: batch semantics),
    and of the victims that leave just before each (.victim_times)."""
    order = g.model.order.blocks(g.solver.value)
    if order is None:
        return [], []
    return [np.flatnonzero(g.batch.class_of == k) for k in order], g.model.order.evicted(g.solver.value)


def _as_is(full: list[int] | None) -> tuple[list[int], None] | None:
    return None if full is None else (full, None)


def _above(model: BatchModel, level: int) -> list:
    """The variables of the classes above ``level`` (what a placement tier under LNS pins)."""
    return [v for c in model.classes if c.priority > level
            for v in model.vars[c.index].arr_vars + model.vars[c.index].keep_vars]


def _solve_group(g: _Group, deadline: float, raw: np.ndarray, objective: str | tuple[str, ...] | None,
                 placement: bool, clock: Clock, only: str | None = None) -> None:
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
    placing = [name for name, _, _ in objectives if name.startswith("placed[")]
    # a user objective (a goal) counts double each tier after it too: its tier decides the plan, the ones
    # after it only break its ties
    after = [sum(1 for n, _, _ in objectives[i + 1:] if not n.startswith("placed[")) for i in range(len(objectives))]
    weights = [2 ** (len(placing) - placing.index(name)) if name in placing else
               2 ** after[i] if name.startswith("objective:") else 1 for i, (name, _, _) in enumerate(objectives)]
    for i, (name, sense, lin) in enumerate(objectives):
        if name.startswith("placed[") != placement or only not in (None, name):
            continue
        level = int(name[len("placed[priority="):-1]) if name.startswith("placed[") else None
        # the next placement tier breaks ties, so this one does not spoil it; not under LNS, where the
        # search is what limits the level, and every step that only helps the next level is a step
        # less for this one
        later = Linear()
        nxt = objectives[i + 1] if i + 1 < len(objectives) else None
        # (node neighbourhoods weigh the tiers after by themselves: _search)
        searching = g.search is not None and level is not None and g.search.ready()
        if not searching and level is not None and nxt is not None and nxt[0].startswith("placed[") and not g.lns:
            later = nxt[2].scaled(1)
        elif not searching and level is not None and nxt is not None and nxt[0] == "disruption":
            later = nxt[2].scaled(-1)  # the last level breaks ties by less disruption
        rest = tuple(x for n, _, x in objectives[i + 1:] if n.startswith("placed["))
        share = 1.0 if only is not None else weights[i] / sum(
            w for (n, _, _), w in zip(objectives[i:], weights[i:]) if n.startswith("placed[") == placement)
        if callable(lin):
            left = deadline - clock.now()
            # building the score takes 25-40 µs per variable (0.08 s for 2,100 variables, 1.0 s for 41,000,
            # 2.6 s for 75,000 on generated clusters): a small part needs a fraction of a second
            need = min(1.0, 1e-4 * len(g.model.cp.proto.variables))
            if left < need or not clock.wall_allows(need):
                g.skipped.append(name)  # no time to build it: the tier is left out of the certificate
                continue
            g.model.deadline = clock.now() + 0.6 * left  # the rest solves it
            mark = len(g.model.cp.proto.constraints), len(g.model.cp.proto.variables)
            try:
                with clock.phase("objectives"):
                    lin = lin()
                    clock.work("objective term", model_terms(g.model.cp.proto, *mark) + len(lin.vars))
            except BuildTimeout:  # its partial terms are harmless; nothing after it is built
                g.skipped += [n for n, _, _ in objectives[i:]]
                break
            finally:
                g.model.deadline = None
        # under CP-SAT's LNS a level's tier pins the levels above at the incumbent: the search is what
        # limits a level there, and steps that move pods of levels already decided are steps lost. The
        # last level pins nothing more: the level just above may still move, to break ties by
        # disruption. Node neighbourhoods choose for themselves whether a step moves the levels above.
        clock.work("tier term", len(lin.vars) if searching else
                   len(lin.vars) + len(later.vars) + sum(len(x.vars) for x in rest if isinstance(x, Linear)))
        if level is not None and g.lns and g.search is None and name != placing[-1]:
            g.solver.pin(_above(g.model, level))
        cap = caps.get(level) if level is not None else None
        if level is not None and isinstance(g.start, TierStarts):  # a placement tier's start (no bound)
            prepare_goal(g.model, g.solver, name, lin, sense, g.tiers, g.start, clock,
                         [(t, g.built[t.name]) for t in g.tiers if t.name in g.built])
        if name.startswith("objective:"):
            cap = prepare_goal(g.model, g.solver, name, lin, sense, g.tiers, g.start, clock,
                               [(t, g.built[t.name]) for t in g.tiers if t.name in g.built])
            g.start = g.start if isinstance(g.start, TierStarts) else None  # an array: the first tier's only
        g.built[name] = lin
        if level is not None and g.lp is not None:
            relaxed = g.lp.bound(level)
            cap = cap if relaxed is None or cap is None else min(cap, relaxed)
        if searching:
            assert level is not None
            tier = _search(g, name, lin, level, share, cap, objectives[i + 1:])
        else:
            tier = g.solver.solve(name, lin, sense, share, cap, later, rest)
        if level is not None and g.lp is not None:
            g.lp.fix(level, tier.objective)
        tier.greedy = lin.value(g.raw_values)
        tier.fidelity = lin.fidelity
        g.tiers.append(tier)


def _ensure_objectives(g: _Group, raw: np.ndarray, objective: str | tuple[str, ...] | None,
                       clock: Clock) -> list:
    """The group's tiers' objectives (built the first time) and greedy's values for them."""
    if g.objectives is None:
        with clock.phase("objectives"):
            g.objectives = _objectives(g.model, objective, g.goal_first)
            g.raw_values = variable_values(g.model, raw)
            clock.work("objective term", 2 * len(g.model.cp.proto.variables))
    return g.objectives


def _closed(g: _Group, level: int, raw: np.ndarray, objective: str | tuple[str, ...] | None,
            clock: Clock) -> bool:
    """Whether the part's incumbent already reaches its own LP bound on ``level`` (the tier ends at once)."""
    if g.lp is None or g.solver.full is None:
        return False
    relaxed = g.lp.bound(level)  # (asked again by the tier: the same answer, no second solve)
    lin = next(x for name, _, x in _ensure_objectives(g, raw, objective, clock) if name == _level_name(level))
    clock.work("tier term", len(lin.vars))
    return relaxed is not None and g.solver.evaluate(lin) >= relaxed


def _settle_reached(g: _Group) -> bool:
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
    for name, sense, lin in g.objectives or []:
        if name.startswith("placed["):
            continue
        lin = lin() if callable(lin) else lin
        value, (lo, hi) = lin.value(g.raw_values), lin.bounds()
        best = hi if sense == "max" else lo
        g.tiers.append(Tier(name, sense, value, best, "OPTIMAL" if value == best else "FEASIBLE", 0.0, value,
                            lin.fidelity))
    return True


def _search(g: _Group, name: str, lin: Linear, level: int, share: float, cap: int | None, after: list) -> Tier:
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
            solver.progress(name, value, cap, time.perf_counter() - solver.t0)  # type: ignore[misc]

    return solver.search(name, lin, share, cap, lambda x, budget: search.run(
        x, level, lin, tuple(later), budget, cap, report)[0])


def _combine(groups: list[_Group], levels: list[int], lp: LevelBound | None) -> list[Tier]:
    """The batch's tiers: sums over the groups, bounded by the LP relaxation of the whole batch."""
    names = [f"placed[priority={lv}]" for lv in levels]
    names += [n for g in groups for t in g.tiers for n in [t.name] if n not in names]
    left_out = {n for g in groups for n in g.skipped}  # a tier some part could not build covers no batch
    names = [n for n in dict.fromkeys(names) if n not in left_out]
    out = []
    valid = all(g.cp_valid for g in groups)
    for name in names:
        parts = [t for g in groups for t in g.tiers if t.name == name]
        if not parts:
            continue
        sense = parts[0].sense
        tier = Tier(name, sense, sum(t.objective for t in parts), sum(t.bound for t in parts),
                    "OPTIMAL" if all(t.status == "OPTIMAL" for t in parts) else
                    ("FEASIBLE" if any(t.status in ("OPTIMAL", "FEASIBLE") for t in parts) else parts[0].status),
                    sum(t.seconds for t in parts), sum(t.greedy or 0 for t in parts),
                    "SURROGATE" if any(t.fidelity == "SURROGATE" for t in parts) else parts[0].fidelity)
        if name.startswith("placed["):
            level = int(name[len("placed[priority="):-1])
            relaxed = lp.bound(level) if lp is not None else None
            if relaxed is not None:
                tier.bound = max(tier.objective, min(tier.bound, relaxed) if valid else relaxed)
            if lp is not None:
                lp.fix(level, tier.objective)
            if tier.objective == tier.bound:
                tier.status = "OPTIMAL"
            elif tier.status == "OPTIMAL":  # optimal for a model restricted to candidate nodes only
                tier.status = "FEASIBLE"
            valid = valid and tier.status == "OPTIMAL"
        out.append(tier)
    return out


def _by_size(groups: list[_Group], sizes: list[float], end: float, clock: Clock,
             key: Callable[[int], Any] | None = None) -> Iterator[tuple[_Group, float]]:
    """The groups, smallest first (or by ``key`` of their index), each with its deadline: its size's share
    of the time left until ``end`` when its turn comes. What a part closes early is left to the parts
    after it (200 nodes: the GPU part closes its placement tiers in 0.6 s of a 1.3 s share)."""
    order = sorted(range(len(groups)), key=key or (lambda k: sizes[k]))
    for i, k in enumerate(order):
        now = clock.now()
        yield groups[k], now + (end - now) * sizes[k] / sum(sizes[j] for j in order[i:])


def _plain_first(state: ClusterState, config: SchedulerConfig, options: OptimalOptions, progress: Progress | None,
                 greedy: GreedyResult, clock: Clock) -> np.ndarray | None:
    """With ``movable``, the answer without moves first: every placement it may return is allowed with
    moves too, so it is the movable run's hint, and the placement tiers, which never go below their hint,
    keep the movable answer at least as good on every level.

    It runs the placement tiers of a plain run with the same limit, so with the same budgets: their answer
    is a separate plain run's (deterministic time), and the movable answer is never below it. It ends as
    soon as its tiers are proven (small batches take a fraction of the limit); the movable model gets what
    is left, charged to ``clock`` as the plain pass used it."""
    if not options.movable or options.weights or clock.interrupted or not state.pending:
        return None  # nothing pending: the answer without moves is the cluster as it is, the hint already
    plain = solve_optimal(state, config, replace(options, movable=False, stop_after="placed"), progress, greedy,
                          explain=False)
    clock.charge(plain.used)
    return plain.node_of


def solver_deadline(time_limit: float, pending: int) -> float:
    """When the solver phases end: the rest of ``time_limit`` decodes, re-checks and explains."""
    return time_limit - min(0.5 * time_limit, max(0.3, 0.1 * time_limit, RECHECK_CPU * pending))


def solve_optimal(state: ClusterState, config: SchedulerConfig, options: OptimalOptions = OptimalOptions(),
                  progress: Progress | None = None, greedy: GreedyResult | None = None,
                  explain: bool = True) -> OptimalResult:
    """Place the batch optimally (see the module docstring); ``greedy`` reuses a greedy run; ``explain``:
    say why pods stay pending (probes in the time left)."""
    state = for_release(state, config.kubernetes_version)
    with collector.paused():  # (millions of variables and terms: docs/optimal_trust.md)
        return _solve_optimal(state, config, options, progress, greedy, explain)


def _solve_optimal(state: ClusterState, config: SchedulerConfig, options: OptimalOptions,
                   progress: Progress | None, greedy: GreedyResult | None, explain: bool) -> OptimalResult:
    check_objective(options.objective)
    end = options.time_limit
    deadline = solver_deadline(end, len(state.pending))
    clock = Clock(deadline, options.deterministic)  # the wall-clock safety net: the solver phases end here

    def phase(name: str) -> None:
        if progress is not None:
            progress(name, None, None, time.perf_counter() - clock.t0)

    phase("greedy placement (the hint)")
    if greedy is None:
        with clock.phase("greedy"):
            greedy = GreedyScheduler(state, config, GreedyOptions(record=False, interruptible=True)).run()
            clock.work("check", len(state.pending))
    if clock.interrupted:
        return _greedy_only(state, config, options, greedy, clock)
    raw = greedy.snapshot.node_of.copy()
    start = _plain_first(state, config, options, progress, greedy, clock)
    with clock.phase("batch"):
        clock.work("pod", len(state.pods))  # (charged first: a stop it decides comes at the first pod)
        try:
            batch = build_batch(state, config, movable=options.movable, preemption=options.preemption,
                                policy=options.eviction, tick=stopper(clock, deadline))
        except BuildTimeout:  # a class per pod: the greedy answer's accounting needs no signatures
            batch = build_batch(state, config, movable=options.movable, preemption=options.preemption,
                                policy=options.eviction, grouped=False)
            return _greedy_only(state, config, options, greedy, clock, batch)
    if not clock.wall_allows(0.0):  # the greedy hint (or the plain pass) took the whole limit, or Ctrl-C
        return _greedy_only(state, config, options, greedy, clock, batch)
    phase("building the model")
    try:
        with clock.phase("repair"):  # stops part-way once the limit has passed
            fallback = repair_placement(batch, config, raw, clock=clock, deadline=deadline)
    except BuildTimeout:
        return _greedy_only(state, config, options, greedy, clock, batch)
    if clock.past(deadline):  # the repair took what was left: no model would be solved
        return _greedy_only(state, config, options, greedy, clock, batch)
    # the plain answer, when the solver's, passed batch semantics: the hint, so no tier goes below it
    hint = start if start is not None and not np.array_equal(start, raw) else fallback
    try:
        groups, lp = _build_groups(batch, config, options, raw, hint, deadline, progress, clock,
                                   refused=hint is fallback and bool((fallback != raw).any()))
    except BuildTimeout:  # the limit passed while the placement model was built: nothing to solve
        return _greedy_only(state, config, options, greedy, clock, batch)
    # the safety net keeps the wall time the re-check will take at the CPU share the run has had so far
    # (on a loaded machine a CPU second takes several wall seconds); never beyond half the limit. The deterministic budgets are unchanged: only a run the net stops may differ.
    after = clock.wall_for(RECHECK_CPU * len(state.pending))
    reserve = min(0.5 * end, max(end - deadline, after))
    clock.limit = end - reserve
    with clock.phase("tiers"):
        _solve_tiers(groups, raw, options, deadline, clock)
    clock.limit += max(0.0, reserve - after) / 2  # the whole batch's LP: half of what the re-check leaves
    with clock.phase("lp solves"):
        tiers = _combine(groups, batch.levels, lp)
    with clock.phase("check"):
        result = _answer(state, config, batch, groups, tiers, greedy, fallback, raw, clock.t0, phase,
                         bool(options.weights), options.goal_first, options.staged)
    result.certificate.notes += kept_notes(state, batch.kept, batch.class_of >= 0)
    phase("explaining pods left pending")
    clock.limit = end - max(0.1, 0.02 * options.time_limit)
    with clock.phase("explain"):
        for g in groups if explain and not clock.interrupted else []:
            # the probes stop short of the limit: handing a large model to CP-SAT takes time its own
            # limit does not count
            result.explanations += explain_unplaced(g.model, result.node_of, tiers, g.base,
                                                    end - max(0.1, 0.02 * options.time_limit), clock)
    lp_notes = lp.notes if lp is not None else [NO_LP]
    result.certificate.notes += list(dict.fromkeys(lp_notes + [n for g in groups if g.lp for n in g.lp.notes]))
    if clock.wall_hit:
        result.certificate.notes.append("the wall-clock limit stopped the search before its deterministic "
                                        "budget: this answer may differ from another run's")
    if clock.interrupted:
        result.certificate.interrupted = True
        result.certificate.notes.append(INTERRUPTED)
    result.certificate.seconds = time.perf_counter() - clock.t0
    result.used = clock.now()
    result.ledger = clock.ledger
    return result


def _greedy_only(state: ClusterState, config: SchedulerConfig, options: OptimalOptions, greedy: GreedyResult,
                 clock: Clock, batch: Batch | None = None) -> OptimalResult:
    """Interrupted, or past the wall-clock limit, before the model was built: greedy mode's placement (so
    far) is the answer (each of its pods passed kube-scheduler's filters on arrival); the pods an
    interrupted greedy run did not reach are not attempted."""
    if batch is None:
        batch = build_batch(state, config, movable=options.movable, preemption=options.preemption,
                            policy=options.eviction)
    note = INTERRUPTED + " (before the model was built)" if clock.interrupted else \
        "the wall-clock limit had passed before the model was built: kube-scheduler's placement is the answer" \
        if clock.wall_hit or not clock.deterministic else \
        "the time limit was used up before the model was built (its work counted, docs/optimal_trust.md): " \
        "kube-scheduler's placement is the answer"
    cert = Certificate("UNKNOWN", [], time.perf_counter() - clock.t0, "greedy", False, [note],
                       interrupted=clock.interrupted)
    return OptimalResult(state, batch, greedy.snapshot.node_of.copy(), cert, greedy, [], used=clock.now(),
                         ledger=clock.ledger)


def greedy_answer(state: ClusterState, config: SchedulerConfig, options: OptimalOptions, greedy: GreedyResult,
                  note: str) -> OptimalResult:
    """kube-scheduler's placement (``greedy``) as optimal mode's answer, no tier solved, ``note`` saying why
    (the solver's process crashed: :mod:`optisched.worker`)."""
    result = _greedy_only(state, config, options, greedy, Clock(options.time_limit, options.deterministic))
    result.certificate.notes = [note]
    return result


def _solve_tiers(groups: list[_Group], raw: np.ndarray, options: OptimalOptions, deadline: float,
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
            g.tiers.sort(key=lambda t: [x[0] for x in g.objectives or ()].index(t.name))


def _place_by_level(groups: list[_Group], sizes: list[float], raw: np.ndarray,
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
        for g, part_until in _by_size(parts, part_sizes, until, clock, key=lambda j: (not closed[j], part_sizes[j])):
            _solve_group(g, part_until, raw, objective, True, clock, only=_level_name(level))


def _as_greedy(tiers: list[Tier]) -> None:
    """The tiers' values at greedy mode's placement (the answer returned instead of the solver's)."""
    for t in tiers:
        if t.greedy is None or t.status == "VALUE":
            continue
        t.objective = t.greedy
        t.bound = max(t.bound, t.objective) if t.sense == "max" else min(t.bound, t.objective)
        t.status = "OPTIMAL" if t.bound == t.objective else "FEASIBLE"


def _answer(state: ClusterState, config: SchedulerConfig, batch: Batch, groups: list[_Group], tiers: list[Tier],
            greedy: GreedyResult, fallback: np.ndarray, raw: np.ndarray, t0: float,
            phase, weighted: bool = False, goal_first: bool = False, staged: bool = False) -> OptimalResult:  # type: ignore[no-untyped-def]
    """Decode the incumbents, re-check them, keep the repaired greedy placement when it is better."""
    notes: list[str] = []
    node_of, source = fallback, "greedy"
    witnessed = np.zeros(len(node_of), dtype=bool)  # parts left at kube-scheduler's own placement
    blocks: list[np.ndarray] = []  # pod rows per class, in the arrival order the answer relies on
    evicted: list[np.ndarray] = []  # parallel: victims still in place until that block lands
    if all(g.solver.full is not None for g in groups):
        node_of = state.pod_node.copy()
        node_of[batch.class_of >= 0] = -1
        for g in groups:
            rows = g.batch.class_of >= 0
            if g.reached is not None and g.solver.value(g.reached):
                node_of[rows], witnessed[rows] = raw[rows], True
                continue
            arrivals, kept = g.model.counts(g.solver.value)
            node_of[rows] = decode(g.batch, arrivals, kept)[rows]
            arrive, leave = _order_blocks(g)
            blocks, evicted = blocks + arrive, evicted + leave
        source = "solver"
    phase("checking the answer with the greedy filters")
    notes += [g.model.order.note for g in groups if g.model.order.note]
    violations = check_answer(state, config, node_of, raw, batch.class_of, witnessed, blocks, evicted) + \
        ([] if staged else check_budgets(batch, node_of))
    if (fallback != raw).any():
        how = "the model takes it as one more solution, the solver's start" if all(g.raw_start for g in groups) else \
            "the neighbourhood search starts from a repaired copy; kube-scheduler's own placement stays the floor"
        notes.append(f"batch semantics refuses kube-scheduler's placement of {int((fallback != raw).sum())} pod(s) "
                     f"(rules checked only at their arrival, docs/optimal_trust.md): {how}")
    # the floor is greedy mode's own placement: kube-scheduler reaches it cycle by cycle (each pod passed
    # its filters when it arrived), so it is a valid answer even where batch semantics is stricter.
    # With weights, the solver kept the better of the hint and its search by the weighted objective.
    worse = not weighted and _lex_key(batch, raw, goal_first, staged) > _lex_key(batch, node_of, goal_first, staged)
    if source == "solver" and (violations or worse):
        source = "greedy"
        notes.append("kube-scheduler's placement (greedy mode) is returned: it is at least as good as the solver's")
    if source == "greedy":  # the violations always describe the placement returned, never the one replaced
        node_of = raw.copy()
        violations = check_answer(state, config, node_of, raw) + check_budgets(batch, node_of)
        _as_greedy(tiers)
    statuses = {t.status for t in tiers} - {"VALUE"}
    status = "OPTIMAL" if statuses <= {"OPTIMAL"} else \
        ("FEASIBLE" if all(g.solver.full is not None for g in groups) else "UNKNOWN")
    placed_tiers = [t for t in tiers if t.name.startswith("placed[") or t.name == "weighted"]
    greedy_optimal = not (fallback != raw).any() and bool(placed_tiers) and \
        all(t.greedy == t.bound for t in placed_tiers)
    if len(groups) > 1:
        notes.append(f"solved as {len(groups)} independent parts")
    skipped = list(dict.fromkeys(n for g in groups for n in g.skipped))
    if skipped:
        notes.append(f"not enough time left to build the {', '.join(skipped)} tier(s): left out")
    if blocks and source == "solver":
        notes.append(f"the answer is checked in an arrival order of {len(blocks)} classes, each pod on arrival "
                     "(docs/optimal_trust.md)")
    cert = Certificate(status, tiers, time.perf_counter() - t0, source, greedy_optimal, notes)
    return OptimalResult(state, batch, node_of, cert, greedy, violations, order=blocks if source == "solver" else [],
                         evicted=evicted if source == "solver" else [])
