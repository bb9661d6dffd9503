"""Provably minimal victims for one pending pod: optimal mode's preemption (CP-SAT).

kube-scheduler's DefaultPreemption (:mod:`.default_preemption`) dry-runs a sample of nodes one at a
time, reprieves victims greedily and picks a node by its candidate order. Here one CP-SAT model looks
at every node at once and minimizes, lexicographically, exactly the quantities upstream's
``pickOneNodeForPreemption`` compares:

1. the number of victims that violate a PodDisruptionBudget;
2. the highest victim priority (solved as its rank among the victims' priorities);
3. the sum of victim priorities (each shifted by ``MaxInt32 + 1``, as upstream sums them);
4. the number of victims.

Each tier is solved to optimality (or the time limit) and fixed before the next, so the answer's key is
never lexicographically worse than any node's upstream candidate, and a status of ``OPTIMAL`` on every
tier proves it minimal.

The model is the batch model of :mod:`optisched.optimal.model` with this pod as the whole batch and
every lower-priority running pod as a class that may leave its node: every filter of the profile is a
hard constraint, encoded by its own rule module. Victims leave only from the node the pod lands on
(:func:`.batch.encode_eviction_rules`), as in kube-scheduler; with ``cross_node`` they may leave any node,
which helps when the pod's required anti-affinity, an existing pod's anti-affinity or a topology
spread constraint counts pods on other nodes of the same domain (the limitation the Kubernetes docs
describe under "Cross node preemption"). Victims are evicted, never re-placed.

The pod may only land where kube-scheduler's filters say ``Unschedulable`` (elsewhere the status is
``UnschedulableAndUnresolvable``: taints, node affinity, a missing topology label, unmatched required
pod affinity, which no eviction changes); without ``cross_node`` only those nodes hold victims. Nodes
that provably cannot beat kube-scheduler's own answer are left out before the model is built.

Assumptions: the other pending pods are left out (the pod is treated as the head of the queue, as
kube-scheduler's cycle for it sees the cluster) and nominated pods reserve nothing. A pod covered by
several budgets counts once per exhausted budget in tier 1 (upstream counts it once): the tier is then
marked ``SURROGATE``; the reported key is always recounted as upstream does.
"""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from ortools.sat.python import cp_model

from ...framework import Code
from ...greedy.scheduler import GreedyOptions, GreedyScheduler, start_times
from ...model.objects import PreemptionPolicy
from ...model.state import ClusterState, compile_cluster
from ...preemption.default_preemption import MAX_INT32, NEVER
from ...preemption.made import preemptions
from ...preemption.pdb import PDBLedger
from ...profile import SchedulerConfig
from ..check import Violation, check_placement
from ..classes import Batch, PodClass, build_batch
from ..clock import Clock
from ..decode import decode, variable_values
from ..hint import repair_hint
from ..model import BatchModel, BuildTimeout
from ..tier_key import TierKey
from ..tiers import Linear, Progress, Tier, TierSolver
from .batch import encode_eviction_rules

__all__ = ["SHIFT", "MinimalPreemption", "Victim", "minimal_victims", "single_pod_state", "victim_key"]

SHIFT = MAX_INT32 + 1  # upstream: sumPriorities += int64(priority) + int64(math.MaxInt32) + 1
PARAMS: dict[str, object] = {"cp_model_probing_level": 0, "symmetry_level": 0}


@dataclass(frozen=True)
class Victim:
    pod: str
    priority: int
    node: str  # where it runs (and is evicted from)
    pdbs: tuple[str, ...]


@dataclass
class MinimalPreemption:
    """One preemptor's answer: its node, the victims, their key, and kube-scheduler's for comparison."""

    preemptor: str
    priority: int
    cross_node: bool
    node: str | None = None  # None: no victim set makes room (or preemption is not allowed)
    victims: tuple[Victim, ...] = ()
    key: tuple[int, int, int, int] | None = None  # (PDB violations, highest priority, priority sum, victims)
    status: str = "UNKNOWN"  # OPTIMAL: every tier proven; FEASIBLE; INFEASIBLE: no victims make room
    message: str = ""
    tiers: list[Tier] = field(default_factory=list)
    greedy_node: str | None = None
    greedy_victims: tuple[Victim, ...] = ()
    greedy_key: tuple[int, int, int, int] | None = None
    greedy_message: str = ""
    greedy_violations: list[Violation] = field(default_factory=list)  # kube-scheduler's answer, re-checked
    violations: list[Violation] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def fits_without_preemption(self) -> bool:
        return self.node is not None and not self.victims

    def to_dict(self) -> dict:
        def vs(victims: tuple[Victim, ...]) -> list[dict]:
            return [{"pod": v.pod, "priority": v.priority, "node": v.node, "pdbs": list(v.pdbs)} for v in victims]

        def key(k: tuple[int, int, int, int] | None) -> dict | None:
            if k is None:
                return None
            return {"pdbViolations": k[0], "highestVictimPriority": k[1] if k[3] else None,
                    "victimPrioritySum": k[2], "victims": k[3]}

        return {"preemptor": self.preemptor, "priority": self.priority, "crossNode": self.cross_node,
                "node": self.node, "victims": vs(self.victims), "key": key(self.key), "status": self.status,
                "message": self.message, "tiers": [t.to_dict() for t in self.tiers],
                "greedy": {"node": self.greedy_node, "victims": vs(self.greedy_victims), "key": key(self.greedy_key),
                           "message": self.greedy_message,
                           "violations": [str(v) for v in self.greedy_violations]},
                "seconds": round(self.seconds, 3)}


def victim_key(state: ClusterState, ledger: PDBLedger, start_time: np.ndarray,
               victims: list[int]) -> tuple[int, int, int, int]:
    """Upstream's comparison key of a victim set: PDB violations counted in ``filterPodsWithPDBViolation``'s
    order (most important first), highest priority, sum of shifted priorities, count."""
    ordered = sorted(victims, key=lambda p: (-int(state.pod_priority[p]), float(start_time[p])))
    violating, _ = ledger.split_by_violation(ordered)
    prios = [int(state.pod_priority[p]) for p in victims]
    return (len(violating), max(prios, default=-SHIFT), sum(p + SHIFT for p in prios), len(prios))


def single_pod_state(state: ClusterState, key: str) -> ClusterState:
    """The cluster as the pod's own cycle sees it: its bound pods and this one pending pod."""
    pods = [p for i, p in enumerate(state.pods) if state.pod_node[i] >= 0 or p.key == key]
    return compile_cluster(dataclasses.replace(state.cluster, pods=pods))


def _greedy(sub: ClusterState, config: SchedulerConfig, row: int,
            out: MinimalPreemption) -> tuple[np.ndarray | None, object | None]:
    """kube-scheduler's answer for the same pod on the same cluster (DefaultPreemption, offset 0).
    Returns the nodes its filters found ``Unschedulable`` (the only ones any eviction can help: elsewhere
    the status is ``UnschedulableAndUnresolvable``; None when its cycle gives no per-node verdicts), and
    the profile's NodeResourcesFit rule (None when the profile has none)."""
    sched = GreedyScheduler(sub, config, GreedyOptions(requeue=False))
    result = sched.run()
    out.greedy_message = result.unschedulable.get(row, "")
    plan = preemptions(result, sched.pdbs, sub.pods[row].key)
    if plan:
        names = sub.node_names
        rows = [sub.pod_index[v] for v, _, _ in plan[0].victims]
        out.greedy_node = plan[0].node
        out.greedy_victims = tuple(Victim(sub.pods[v].key, int(sub.pod_priority[v]), names[int(sub.pod_node[v])],
                                          tuple(sched.pdbs.names[i] for i in sched.pdbs.budgets_of(v))) for v in rows)
        out.greedy_key = victim_key(sub, sched.pdbs, sched.start_time, rows)
        out.greedy_violations = _recheck(sub, config, row, out.greedy_node, rows)
    elif result.snapshot.node_of[row] >= 0:
        out.greedy_node = sub.node_names[int(result.snapshot.node_of[row])]
        out.greedy_key = (0, -SHIFT, 0, 0)
    profile = next((p for p in config.profiles if p.scheduler_name == sub.pods[row].spec.scheduler_name), None)
    rule = sched.framework(profile).filter_rules.get("NodeResourcesFit") if profile is not None else None
    rec = next((r for r in result.cycles if r.pod == row), None)
    if rec is None or rec.filters is None or rec.nominated is not None:
        return None, rule
    f = rec.filters
    mask = np.zeros(sub.num_nodes, dtype=bool)
    mask[f.evaluated[f.fail_code == Code.UNSCHEDULABLE]] = True
    return mask, rule


def _recheck(state: ClusterState, config: SchedulerConfig, row: int, node: str, victims: list[int]) -> list[Violation]:
    """kube-scheduler's answer under the checker's rules (which keep host ports as kube's set, as the
    model does: ``plugins/node_ports.py``). Where it still fails them, it lies outside the model
    (:func:`_kube_floor`)."""
    node_of = state.pod_node.copy()
    node_of[row] = state.node_index[node]
    node_of[victims] = -1
    return check_placement(state, config, node_of)


INFEASIBLE_KEY = (1 << 62, 1 << 62, 1 << 62, 1 << 62)


def node_bounds(state: ClusterState, rule, row: int) -> list[tuple[int, int, int, int]]:  # type: ignore[no-untyped-def]
    """Per node, a lexicographic lower bound on the key of any victim set that makes room for pod ``row``
    there, from NodeResourcesFit alone: (0 PDB violations; the lowest priority level whose pods, all
    taken, cover the node's shortfall; the shifted priority sum of the fewest such pods that cover it,
    largest first, one at that level and the others at the lowest priority among them; that count). :data:`INFEASIBLE_KEY` where even every victim
    leaves too little. Each part bounds the key's part whenever the parts before it are equal."""
    n_nodes = state.num_nodes
    prio_p = int(state.pod_priority[row])
    bound = state.pod_node >= 0
    used = np.zeros_like(state.allocatable)
    np.add.at(used, state.pod_node[bound], state.pod_requests[bound])
    alive = np.array([p.metadata.deletion_timestamp is None for p in state.pods], dtype=bool)
    lower = np.flatnonzero(bound & alive & (state.pod_priority < prio_p))
    if rule is None:
        return [(0, -SHIFT, 0, 0)] * n_nodes
    cols, short = rule.shortfall(row, np.arange(n_nodes), used)
    where, prio = state.pod_node[lower], state.pod_priority[lower].astype(np.int64)
    size = state.pod_requests[lower][:, cols]
    top = np.full(n_nodes, np.iinfo(np.int64).max, dtype=np.int64)  # lowest level that covers the shortfall
    top[(short <= 0).all(axis=1)] = -SHIFT
    for level in np.unique(prio).tolist():
        freed = np.zeros_like(short)
        ok = prio <= level
        np.add.at(freed, where[ok], size[ok])
        top[(top == np.iinfo(np.int64).max) & (freed >= short).all(axis=1)] = level
    usable = prio <= top[where]
    w, sz, pr = where[usable], size[usable], prio[usable]
    need = np.zeros(n_nodes, dtype=np.int64)
    for j in range(len(cols)):
        order = np.lexsort((-sz[:, j], w))
        wn, sj = w[order], sz[order, j]
        csum = np.cumsum(sj)
        start = np.searchsorted(wn, wn)
        before = csum - sj - (csum - sj)[start]  # what the larger pods of the node free before this one
        hit = before < short[wn, j]
        need = np.maximum(need, np.bincount(wn[hit], minlength=n_nodes))
    lowest = np.full(n_nodes, SHIFT, dtype=np.int64)
    np.minimum.at(lowest, w, pr)
    out = []
    for n in range(n_nodes):
        t = int(top[n])
        if t == np.iinfo(np.int64).max:
            out.append(INFEASIBLE_KEY)
        else:
            k = int(need[n])
            # one victim has the highest priority, the others at least the node's lowest
            out.append((0, t, (t + SHIFT) + (k - 1) * (int(lowest[n]) + SHIFT) if k else 0, k))
    return out


def _tiers(model: BatchModel, batch: Batch, ledger: PDBLedger) -> list[tuple[str, Callable[[], Linear]]]:
    """The five objectives over the model's variables, each built when its turn comes (the auxiliary
    variables of later tiers would only slow the earlier ones down)."""
    cp = model.cp
    evicted: list[tuple[PodClass, cp_model.LinearExpr, int]] = []  # (class, pods evicted, at most)
    for c in batch.classes:
        if not c.pending:
            cv = model.vars[c.index]
            total = int(cv.keep_ub.sum())
            if total:
                evicted.append((c, total - cp_model.LinearExpr.sum(cv.keep_vars), total))

    def gone(c: PodClass, values: dict[int, int]) -> int:
        """Pods of class ``c`` evicted in ``values`` (the derived variables' values follow from it)."""
        cv = model.vars[c.index]
        return int(cv.keep_ub.sum()) - sum(values.get(v.Index(), 0) for v in cv.keep_vars)

    def _excess(classes: list[PodClass], allowed: int) -> Callable[[dict[int, int]], int]:
        """A budget's violations in ``values``: its pods evicted beyond what it allows."""
        return lambda vals: max(0, sum(gone(c, vals) for c in classes) - allowed)

    def _evicts(classes: list[PodClass]) -> Callable[[dict[int, int]], int]:
        """1 when ``values`` evicts a pod of ``classes``."""
        return lambda vals: int(any(gone(c, vals) > 0 for c in classes))

    def placed() -> Linear:
        lin = Linear()
        for c in batch.classes:
            if c.pending:
                for v, u in zip(model.vars[c.index].arr_vars, model.vars[c.index].arr_ub.tolist()):
                    lin.add(v, 1, u)
        return lin

    def pdb_violations() -> Linear:
        lin = Linear()
        covered: dict[int, list[tuple[cp_model.LinearExpr, int]]] = {}
        for c, expr, most in evicted:
            budgets = ledger.budgets_of(c.rep)
            if len(budgets) > 1:
                lin.fidelity = "SURROGATE"
            for b in budgets:
                covered.setdefault(b, []).append((expr, most))
        members: dict[int, list[PodClass]] = {}
        for c, _, _ in evicted:
            for b in ledger.budgets_of(c.rep):
                members.setdefault(b, []).append(c)
        for b, exprs in covered.items():
            most = sum(u for _, u in exprs)
            allowed = max(0, int(ledger.allowed[b]))
            if most > allowed:
                over = cp.new_int_var(0, most - allowed, f"pdb_over_{b}")
                cp.add(over >= cp_model.LinearExpr.sum([e for e, _ in exprs]) - allowed)
                lin.add(over, 1, most - allowed)
                lin.derived.append((over, _excess(members[b], allowed)))
        return lin

    def highest() -> Linear:
        """The rank of the highest victim priority (1 = the lowest priority present, 0 = no victim):
        ranks keep the order of priorities with small coefficients."""
        lin = Linear()
        levels = sorted({c.priority for c, _, _ in evicted})
        if not levels:
            return lin
        m = cp.new_int_var(0, len(levels), "highest_victim_rank")
        for rank, prio in enumerate(levels, 1):
            exprs = [(e, u) for c, e, u in evicted if c.priority == prio]
            any_ = cp.new_bool_var(f"evicts_{prio}")
            cp.add(cp_model.LinearExpr.sum([e for e, _ in exprs]) <= sum(u for _, u in exprs) * any_)
            cp.add(m >= rank * any_)
            lin.derived.append((any_, _evicts([c for c, _, _ in evicted if c.priority == prio])))
        lin.add(m, 1, len(levels))
        lin.derived.append((m, lambda vals: max((levels.index(c.priority) + 1 for c, _, _ in evicted
                                                  if gone(c, vals) > 0), default=0)))
        lin.ranks = levels  # type: ignore[attr-defined]
        return lin

    def evicted_sum(weight: Callable[[PodClass], int]) -> Linear:
        """Σ over evicted pods of ``weight(class)``: each kept pod takes its weight off the full sum."""
        lin = Linear()
        for c, _, _ in evicted:
            cv = model.vars[c.index]
            for v, u in zip(cv.keep_vars, cv.keep_ub.tolist()):
                lin.const += weight(c) * u
                lin.add(v, -weight(c), u)
        return lin

    return [("placed", placed), ("pdbViolations", pdb_violations), ("highestVictimPriority", highest),
            ("victimPrioritySum", lambda: evicted_sum(lambda c: c.priority + SHIFT)),
            ("victims", lambda: evicted_sum(lambda c: 1))]


def minimal_victims(state: ClusterState, config: SchedulerConfig, pod: str, *, cross_node: bool = False,
                    time_limit: float = 10.0, workers: int = 2, seed: int = 0,
                    progress: Progress | None = None, first_nodes: int = 32,
                    deterministic: bool = True) -> MinimalPreemption:
    """The victims of least upstream key that let ``pod`` (``namespace/name``, pending) fit somewhere.

    kube-scheduler's own answer for the pod comes first: it is reported beside the optimum, it is the
    solver's starting point, and its filter verdicts say which nodes any eviction can help. The model
    then grows over the nodes in the order of their lower bounds (:func:`node_bounds`): first the
    ``first_nodes`` most promising ones (and kube-scheduler's node), and more only while a node left
    out could still hold a better answer than the one found, so a small model usually proves the
    optimum for the whole cluster.

    Budgets read optimal mode's :class:`~optisched.optimal.clock.Clock`: deterministic time by default
    (the same answer on every run, whatever the load), the wall clock as the safety net."""
    t0 = time.perf_counter()
    clock = Clock(time_limit, deterministic)
    deadline = time_limit
    out = MinimalPreemption(pod, int(state.pod_priority[state.pod_index[pod]]), cross_node)
    state = single_pod_state(state, pod)  # from here on: the bound pods and this one
    row = state.pod_index[pod]
    candidates, rule = _greedy(state, config, row, out)
    clock.work("pod", 2 * len(state.pods))  # the cluster compiled, kube-scheduler's cycle and dry run
    clock.work("check", 1)
    if out.greedy_node is not None and not out.greedy_victims:
        out.node, out.key, out.status = out.greedy_node, out.greedy_key, "OPTIMAL"
        out.message = f"fits on {out.node} without preemption"
        return _done(out, t0)
    if state.pods[row].spec.preemption_policy == PreemptionPolicy.NEVER:
        out.status, out.message = "INFEASIBLE", NEVER
        return _done(out, t0)
    bounds = node_bounds(state, rule, row)
    ledger = PDBLedger(state, (state.pod_node >= 0).tolist())
    start_time, _ = start_times(state)
    pool = np.flatnonzero(candidates) if candidates is not None else np.arange(state.num_nodes)
    pool = np.array([n for n in sorted(pool.tolist(), key=lambda n: bounds[n]) if bounds[n] != INFEASIBLE_KEY],
                    dtype=np.int64)
    kube = state.node_index[out.greedy_node] if out.greedy_node is not None else None
    size = first_nodes
    while True:
        chosen = pool[:size]
        rest = bounds[int(pool[size])] if size < len(pool) else INFEASIBLE_KEY
        if kube is not None and kube not in set(chosen.tolist()):
            chosen = np.append(chosen, kube)
        mask = np.zeros(state.num_nodes, dtype=bool)
        mask[chosen] = True
        result = _solve_on(state, config, row, mask, cross_node, out, ledger, start_time, clock, workers, seed,
                           progress)
        if result is None:
            return _done(out, t0)
        proven = out.key is not None and out.key <= rest
        if proven or size >= len(pool) or clock.past(deadline - 0.5):
            break
        size *= 8
    if out.key is None and rest != INFEASIBLE_KEY:  # nothing found on the nodes tried, others left
        out.status, out.message = "UNKNOWN", "no answer within the time limit"
    elif out.key is not None and not proven:
        out.status = "FEASIBLE"
        out.message = f"nodes left out may hold a better answer (their bound: {rest})"
    _kube_floor(out)
    stopped = "interrupted (Ctrl-C or SIGTERM): the best answer found before it" if clock.interrupted else \
        "the wall-clock limit stopped the search before its deterministic budget: another run may differ" \
        if clock.wall_hit else ""
    if stopped:
        out.message = f"{out.message}; {stopped}" if out.message else stopped
    return _done(out, t0)


def _kube_floor(out: MinimalPreemption) -> None:
    """kube-scheduler's own answer when the model has none as good and it lies outside the model (it
    fails the re-check, :func:`_recheck`): kube-scheduler reaches it by its own dry run, so it is a
    valid answer, the floor, as greedy mode's placement is optimal mode's (``optimal.check.check_answer``).
    Not proven minimal: a smaller victim set outside the model may exist."""
    if not out.greedy_violations or out.greedy_key is None or (out.key is not None and out.key <= out.greedy_key):
        return
    failed = "; ".join(str(v) for v in out.greedy_violations)
    out.node, out.victims, out.key, out.violations = out.greedy_node, out.greedy_victims, out.greedy_key, []
    out.status = "FEASIBLE"
    out.message = (f"kube-scheduler's answer, reached by its dry run; the re-check refuses it ({failed}) and no "
                   f"victim set makes room")


def _solve_on(state: ClusterState, config: SchedulerConfig, row: int, nodes: np.ndarray, cross_node: bool,
              out: MinimalPreemption, ledger: PDBLedger, start_time: np.ndarray, clock: Clock, workers: int,
              seed: int, progress: Progress | None) -> bool | None:
    """The tiers on the model where the pod may only land on ``nodes``, until the ``clock``'s limit; fills
    ``out``. None: stop (nothing to place); False: no victim set on these nodes; True: an answer."""
    batch = build_batch(state, config, only=[row], running_on=None if cross_node else nodes)
    clock.work("pod", len(state.pods))
    if not batch.classes:
        out.status, out.message = "SKIPPED", next(iter(batch.skipped.values()), "not scheduled by any profile")
        return None
    try:  # each rule's work charged to the clock as it is written; none past the limit
        model = BatchModel(batch, config, build=False, replace_running=False, clock=clock, deadline=clock.limit)
        pc = next(c for c in batch.classes if c.pending)
        model.forbid(pc, ~nodes)
        model.build()
    except BuildTimeout:
        _as_kube(out, "the time limit passed while the model was built")
        return False
    model.deadline = None
    if not cross_node:
        mark = len(model.cp.proto.constraints), len(model.cp.proto.variables)
        encode_eviction_rules(model)
        model.written(mark)
    objectives = _tiers(model, batch, ledger)
    solver = TierSolver(model.cp, workers=workers, seed=seed, deadline=clock.limit, progress=progress, clock=clock)
    solver.params = dict(PARAMS)
    if out.greedy_node is not None:
        hint = state.pod_node.copy()
        hint[row] = state.node_index[out.greedy_node]
        hint[[state.pod_index[v.pod] for v in out.greedy_victims]] = -1
        left = clock.limit - clock.now()
        solver.full = repair_hint(model, variable_values(model, hint), clock, seconds=max(0.2, 0.1 * left))
    tiers = []
    shares = [0.4, 0.35, 0.4, 0.5, 1.0]
    for (name, make), share in zip(objectives, shares):
        sense = "max" if name == "placed" else "min"
        lin = make()
        tier = solver.solve(TierKey(name), lin, sense, share, cap=1 if name == "placed" else None)
        tier.fidelity = lin.fidelity
        ranks = getattr(lin, "ranks", None)
        if ranks is not None:  # report priorities, not ranks
            tier.objective, tier.bound = (ranks[v - 1] if v > 0 else -SHIFT for v in (tier.objective, tier.bound))
        tiers.append(tier)
        if name == "placed" and (solver.full is None or tier.objective == 0):
            break
    out.tiers = tiers
    placed = tiers[0]
    if solver.full is None or placed.objective == 0:
        out.status = "INFEASIBLE" if placed.status == "OPTIMAL" else "UNKNOWN"
        out.message = "no set of lower-priority victims makes room for the pod" if out.status == "INFEASIBLE" \
            else "no answer within the time limit"
        return False
    arrivals, kept = model.counts(solver.value)
    node_of = decode(batch, arrivals, kept)
    gone = [p for c in batch.classes for n, ps in c.running.items() for p in ps if node_of[p] != n]
    names = state.node_names
    out.node = names[int(node_of[row])]
    out.victims = tuple(Victim(state.pods[v].key, int(state.pod_priority[v]), names[int(state.pod_node[v])],
                               tuple(ledger.names[i] for i in ledger.budgets_of(v)))
                        for v in sorted(gone, key=lambda p: (-int(state.pod_priority[p]), float(start_time[p]))))
    out.key = victim_key(state, ledger, start_time, gone)
    out.status = "OPTIMAL" if all(t.status == "OPTIMAL" for t in tiers) else "FEASIBLE"
    out.message = ""
    out.violations = check_placement(state, config, node_of, batch.class_of)
    if out.violations:  # a bug, never a warning: the caller raises
        out.message = "the answer fails the greedy filters: " + "; ".join(str(v) for v in out.violations)
    elif not gone:
        out.message = f"fits on {out.node} without preemption"
    return True


def _as_kube(out: MinimalPreemption, why: str) -> None:
    """No model answer (``why``): kube-scheduler's own, when it has one and nothing better was found."""
    if out.key is not None:
        return
    if out.greedy_key is None or out.greedy_violations:
        out.status, out.message = "UNKNOWN", f"no answer within the time limit ({why})"
        return
    out.node, out.victims, out.key = out.greedy_node, out.greedy_victims, out.greedy_key
    out.status, out.message = "FEASIBLE", f"kube-scheduler's answer: {why}"


def _done(out: MinimalPreemption, t0: float) -> MinimalPreemption:
    out.seconds = time.perf_counter() - t0
    return out
