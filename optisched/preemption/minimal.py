"""Provably minimal victims for one pending pod: optimal mode's preemption (CP-SAT).

kube-scheduler's DefaultPreemption (:mod:`.default_preemption`) dry-runs a sample of nodes one at a
time, reprieves victims greedily and picks a node by its candidate order. Here one CP-SAT model looks
at every node at once and minimizes, lexicographically, exactly the quantities upstream's
``pickOneNodeForPreemption`` compares:

1. the number of victims that violate a PodDisruptionBudget;
2. the highest victim priority;
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

Assumptions: the other pending pods are left out (the pod is treated as the head of the queue, as
kube-scheduler's cycle for it sees the cluster) and nominated pods reserve nothing. A pod covered by
several budgets counts once per exhausted budget in tier 1 (upstream counts it once): the tier is then
marked ``SURROGATE``; the reported key is always recounted as upstream does.
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field

import numpy as np
from ortools.sat.python import cp_model

from ..greedy.scheduler import GreedyOptions, GreedyScheduler
from ..model.objects import PreemptionPolicy
from ..model.state import ClusterState, compile_cluster
from ..optimal.check import Violation, check_placement
from ..optimal.classes import Batch, build_batch
from ..optimal.decode import decode
from ..optimal.model import BatchModel
from ..optimal.tiers import Linear, Progress, Tier, TierSolver
from ..profile import SchedulerConfig
from .batch import encode_eviction_rules
from .default_preemption import MAX_INT32, NEVER
from .pdb import PDBLedger
from .plan import preemptions

__all__ = ["SHIFT", "MinimalPreemption", "Victim", "minimal_victims", "single_pod_state", "victim_key"]

SHIFT = MAX_INT32 + 1  # upstream: sumPriorities += int64(priority) + int64(math.MaxInt32) + 1
TIER_NAMES = ("placed", "pdbViolations", "highestVictimPriority", "victimPrioritySum", "victims")


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
                           "message": self.greedy_message},
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


def _greedy(sub: ClusterState, config: SchedulerConfig, row: int, out: MinimalPreemption) -> None:
    """kube-scheduler's answer for the same pod on the same cluster (DefaultPreemption, offset 0)."""
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
    elif result.snapshot.node_of[row] >= 0:
        out.greedy_node = sub.node_names[int(result.snapshot.node_of[row])]
        out.greedy_key = (0, -SHIFT, 0, 0)
    out._start_time = sched.start_time  # type: ignore[attr-defined]
    out._ledger = sched.pdbs  # type: ignore[attr-defined]


def _tiers(model: BatchModel, batch: Batch, ledger: PDBLedger) -> tuple[list[tuple[str, Linear]], bool]:
    """The five objectives over the model's variables; whether tier 1 is exact."""
    cp = model.cp
    placed = Linear()
    evicted: list[tuple[int, cp_model.LinearExpr, int, object]] = []  # (class, evicted expr, most, class)
    for c in batch.classes:
        cv = model.vars[c.index]
        if c.pending:
            for v, u in zip(cv.arr_vars, cv.arr_ub.tolist()):
                placed.add(v, 1, u)
            continue
        if cv.arr_vars:  # a victim is evicted, not re-placed
            cp.add(cp_model.LinearExpr.sum(cv.arr_vars) == 0)
        total = int(cv.keep_ub.sum())
        if total:
            evicted.append((c.index, total - cp_model.LinearExpr.sum(cv.keep_vars), total, c))

    count, prio_sum = Linear(), Linear()
    for c in batch.classes:
        if c.pending:
            continue
        cv = model.vars[c.index]
        for v, u in zip(cv.keep_vars, cv.keep_ub.tolist()):
            count.const += u
            count.add(v, -1, u)
            prio_sum.const += (c.priority + SHIFT) * u
            prio_sum.add(v, -(c.priority + SHIFT), u)

    highest = Linear()
    top = max((c.priority + SHIFT for *_, c in evicted), default=0)
    m = cp.new_int_var(0, top, "highest_victim")
    levels: dict[int, list[tuple[cp_model.LinearExpr, int]]] = {}
    for _, expr, most, c in evicted:
        levels.setdefault(c.priority, []).append((expr, most))  # type: ignore[attr-defined]
    for prio, exprs in levels.items():
        any_ = cp.new_bool_var(f"evicts_{prio}")
        cp.add(cp_model.LinearExpr.sum([e for e, _ in exprs]) <= sum(u for _, u in exprs) * any_)
        cp.add(m >= (prio + SHIFT) * any_)
    highest.add(m, 1, top)

    pdb = Linear()
    exact = True
    covered: dict[int, list[tuple[cp_model.LinearExpr, int]]] = {}
    for _, expr, most, c in evicted:
        budgets = ledger.budgets_of(c.rep)  # type: ignore[attr-defined]
        exact = exact and len(budgets) <= 1
        for b in budgets:
            covered.setdefault(b, []).append((expr, most))
    for b, exprs in covered.items():
        most = sum(u for _, u in exprs)
        allowed = max(0, int(ledger.allowed[b]))
        if most <= allowed:
            continue
        over = cp.new_int_var(0, most - allowed, f"pdb_over_{b}")
        cp.add(over >= cp_model.LinearExpr.sum([e for e, _ in exprs]) - allowed)
        pdb.add(over, 1, most - allowed)
    if not exact:
        pdb.fidelity = "SURROGATE"
    return [("placed", placed), ("pdbViolations", pdb), ("highestVictimPriority", highest),
            ("victimPrioritySum", prio_sum), ("victims", count)], exact


def minimal_victims(state: ClusterState, config: SchedulerConfig, pod: str, *, cross_node: bool = False,
                    time_limit: float = 10.0, workers: int = 2, seed: int = 0,
                    progress: Progress | None = None, compare_greedy: bool = True) -> MinimalPreemption:
    """The victims of least upstream key that let ``pod`` (``namespace/name``, pending) fit somewhere."""
    t0 = time.perf_counter()
    row0 = state.pod_index[pod]
    out = MinimalPreemption(pod, int(state.pod_priority[row0]), cross_node)
    sub = single_pod_state(state, pod)
    row = sub.pod_index[pod]
    if compare_greedy:
        _greedy(sub, config, row, out)
    ledger = getattr(out, "_ledger", None) or PDBLedger(sub, (sub.pod_node >= 0).tolist())
    start_time = getattr(out, "_start_time", None)
    if start_time is None:
        start_time = GreedyScheduler(sub, config, GreedyOptions(record=False)).start_time
    preempts = sub.pods[row].spec.preemption_policy != PreemptionPolicy.NEVER
    batch = build_batch(sub, config, only=[row], preemption=preempts)
    if not batch.classes:
        out.status, out.message = "SKIPPED", next(iter(batch.skipped.values()), "not scheduled by any profile")
        return _done(out, t0)
    model = BatchModel(batch, config)
    if not cross_node:
        encode_eviction_rules(model)
    objectives, _ = _tiers(model, batch, ledger)
    solver = TierSolver(model.cp, workers=workers, seed=seed, deadline=t0 + time_limit, progress=progress)
    shares = [0.4, 0.35, 0.4, 0.5, 1.0]
    for (name, lin), share in zip(objectives, shares):
        sense = "max" if name == "placed" else "min"
        tier = solver.solve(name, lin, sense, share)
        tier.fidelity = lin.fidelity
        out.tiers.append(tier)
        if name == "placed" and (solver.full is None or tier.objective == 0):
            break
    placed = out.tiers[0]
    if solver.full is None or placed.objective == 0:
        out.status = "INFEASIBLE" if placed.status == "OPTIMAL" else "UNKNOWN"
        out.message = (NEVER if not preempts else "no set of lower-priority victims makes room for the pod") \
            if out.status == "INFEASIBLE" else "no answer within the time limit"
        return _done(out, t0)
    arrivals, kept = model.counts(solver.value)
    node_of = decode(batch, arrivals, kept)
    node = int(node_of[row])
    gone = [p for c in batch.classes for n, ps in c.running.items() for p in ps if node_of[p] != n]
    names = sub.node_names
    out.node = names[node]
    out.victims = tuple(Victim(sub.pods[v].key, int(sub.pod_priority[v]), names[int(sub.pod_node[v])],
                               tuple(ledger.names[i] for i in ledger.budgets_of(v)))
                        for v in sorted(gone, key=lambda p: (-int(sub.pod_priority[p]), float(start_time[p]))))
    out.key = victim_key(sub, ledger, start_time, gone)
    out.status = "OPTIMAL" if all(t.status == "OPTIMAL" for t in out.tiers) else "FEASIBLE"
    out.violations = check_placement(sub, config, node_of, batch.class_of)
    if out.violations:  # a bug, never a warning: the caller raises
        out.message = "the answer fails the greedy filters: " + "; ".join(str(v) for v in out.violations)
    elif not gone:
        out.message = f"fits on {out.node} without preemption"
    return _done(out, t0)


def _done(out: MinimalPreemption, t0: float) -> MinimalPreemption:
    out.seconds = time.perf_counter() - t0
    for attr in ("_ledger", "_start_time"):
        out.__dict__.pop(attr, None)
    return out
