"""The batch as one CP-SAT model: an integer per (pod class, node), rules encoded by their own modules.

Variables: ``arrive[c][n]`` counts class ``c``'s pods the batch *places* on node ``n`` (pending pods, or
running pods re-placed after leaving their node); ``keep[c][n]`` counts its running pods that stay on
their node. What is on a node at the end is ``x(c, n) = arrive + keep``. Fixed pods (bound, never
moving) live in :attr:`BatchModel.snapshot`, so every greedy rule sees them as usual.

Building runs in three phases, calling each profile's filter rules (``optisched/plugins/``):

1. ``restrict``: per class, the nodes the rule rules out whatever the batch does (static filters,
   conflicts with fixed pods). Variables exist only on the nodes every rule allows;
2. variables, each bounded by how many of the class's pods fit on the node alone;
3. ``encode_filter``: the constraints that depend on where the batch's pods go (resources, host
   ports, topology spread, inter-pod affinity); with ``arrival_order``, the rules whose verdict counts
   pods that may come later also get an order-aware variant (:mod:`.order`).

Batch semantics: every pod the batch places passes every filter against the final cluster with
itself removed (what an independent re-check with the greedy filters verifies, :mod:`.check`).
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
from ortools.sat.python import cp_model

from ..framework import Code, CycleState, Fidelity
from ..greedy.framework_runner import Framework
from ..model.snapshot import Snapshot
from ..profile import SchedulerConfig
from .classes import Batch, PodClass
from .clock import Clock, model_terms
from .order import ArrivalOrder
from .score_errors import unscorable

__all__ = ["BatchModel", "BuildTimeout", "ClassVars", "stopper"]


T = TypeVar("T")


class BuildTimeout(Exception):
    """The model, or an objective's terms, could not be built before the model's ``deadline``."""


def stopper(clock: Clock, deadline: float) -> Callable[[], None]:
    """A check for a long loop outside the model (the batch's classes, the repair): raises
    :class:`BuildTimeout` once ``deadline`` (a ``clock`` value) or the wall-clock limit has passed."""
    def tick() -> None:
        if clock.past(deadline):
            raise BuildTimeout
    return tick


@dataclass
class ClassVars:
    """One class's variables: arrivals on ``arr_nodes`` and kept running pods on ``keep_nodes``."""

    arr_nodes: np.ndarray  # int64 node rows
    arr_vars: list[cp_model.IntVar]
    arr_ub: np.ndarray  # int64 upper bound of each arrival variable
    keep_nodes: np.ndarray
    keep_vars: list[cp_model.IntVar]
    keep_ub: np.ndarray

    def terms(self) -> Iterable[tuple[int, cp_model.IntVar, int]]:
        """(node, variable, upper bound) of everything the class has on nodes at the end."""
        yield from zip(self.arr_nodes.tolist(), self.arr_vars, self.arr_ub.tolist())
        yield from zip(self.keep_nodes.tolist(), self.keep_vars, self.keep_ub.tolist())


class BatchModel:
    """A CP-SAT model of placing ``batch`` under ``config``'s filters (objectives are added by tiers)."""

    # fixed pods, classes or nodes between two checks of the time in a long loop of the build: a check (a
    # perf_counter read, a count of the terms written since the last) costs microseconds, a class's or a
    # node batch's encoding milliseconds
    CHECK_EVERY = 64
    # classes between two checks in a loop where most classes write little or nothing (host ports, claims,
    # the resource limits of phase 1, the variables): a check there would cost more than the class
    LIGHT_EVERY = 8

    def __init__(self, batch: Batch, config: SchedulerConfig, *,
                 candidates: dict[int, np.ndarray] | None = None, build: bool = True,
                 domains: tuple[np.ndarray, np.ndarray, dict] | None = None, replace_running: bool = True,
                 arrival_order: bool = False, clock: Clock | None = None, deadline: float | None = None) -> None:
        self.batch = batch
        # building stops (BuildTimeout) between rules once ``deadline`` (a ``clock`` value, else a
        # ``time.perf_counter()`` one) has passed; each rule's work is charged to ``clock`` as it is written
        self.deadline = deadline
        self.clock = clock
        self.terms = 0  # variables, constraints and terms written so far (clock.model_terms)
        self.arrival_order = arrival_order  # also admit placements some queue order reaches (.order)
        self.replace_running = replace_running  # running pods that leave may arrive elsewhere (else: evicted)
        self.state = state = batch.state
        self.config = config
        self.classes: list[PodClass] = batch.classes
        self.cp = cp_model.CpModel()
        self._mark: tuple[int, int] | None = None  # while building: what was charged up to (constraints, variables)
        self.check_time()
        self.snapshot = Snapshot(state, with_bound=False)
        for k, p in enumerate(np.flatnonzero(batch.fixed).tolist()):
            if k % self.CHECK_EVERY == 0:
                self.check_time()
            self.snapshot.add(p, int(state.pod_node[p]))
        self.check_time()
        self.allowed = np.ones((len(self.classes), state.num_nodes), dtype=bool)
        # int32: classes × nodes reaches tens of millions of entries on large batches
        self.cap = np.repeat(np.array([min(c.size, 2**31 - 1) for c in self.classes], dtype=np.int32)[:, None],
                             state.num_nodes, axis=1) if self.classes else np.zeros((0, state.num_nodes), np.int32)
        self.fidelity: dict[str, Fidelity] = {}
        self.forbidden_by: dict[tuple[int, str], np.ndarray] = {}  # (class, rule) -> nodes it ruled out
        self._rule = ""
        self.frameworks = {}
        for profile in config.profiles:  # each rule's state over the fixed pods
            self.check_time()
            self.frameworks[profile.scheduler_name] = Framework(self.snapshot, profile)
        self.by_profile: dict[str, list[PodClass]] = {}
        for c in self.classes:
            self.by_profile.setdefault(c.scheduler_name, []).append(c)
        self._cycles: dict[int, CycleState] = {}
        self._presence: dict[tuple, dict[int, cp_model.IntVar]] = {}
        self._node_terms: list[list[tuple[PodClass, cp_model.IntVar, int]]] | None = None
        self._matching: dict[object, list[PodClass]] = {}
        self._by_pair: dict[tuple[str, str], list[PodClass]] = {}
        for c in self.classes:
            for pair in state.pods[c.rep].metadata.labels.items():
                self._by_pair.setdefault(pair, []).append(c)
        self._node_arrivals: list[list[tuple[PodClass, cp_model.IntVar, int]]] | None = None
        # (node, priority) -> arrival variables of the classes that may preempt there (preemptors_of)
        self.preemptors_cache: dict[tuple[int, int], list[cp_model.IntVar]] = {}
        self._arrival_flag: dict[tuple[int, int | None], cp_model.IntVar] = {}
        if domains is not None:  # phase 1 already ran for these classes (see optisched.optimal.components)
            self.allowed, self.cap, self.forbidden_by = domains
        for name, fw, classes in self._rule_groups():
            rule = fw.filter_rules[name]
            self.fidelity[name] = rule.filter_fidelity
            if domains is None:
                self.check_time()
                self._rule = name
                rule.restrict(self, classes)  # (each rule checks the time between classes: self.each)
        if domains is None:  # a pod whose PreScore fails lands only where one node alone is left (.score_errors)
            timed = self.each(self.classes, self.LIGHT_EVERY)
            for c, plugin in unscorable(timed, state.pods, self.frameworks, self.allowed, self.cap):
                self._rule = f"{plugin} PreScore"
                self.forbid(c, np.ones(state.num_nodes, dtype=bool))
        self._rule = ""
        self.vars: list[ClassVars] = []
        self.restricted = False  # some class lost allowed nodes to a candidate list
        if build:
            self.build(candidates)

    def build(self, candidates: dict[int, np.ndarray] | None = None) -> None:
        """Phases 2 and 3: variables on the allowed (and, when given, candidate) nodes, then the rules."""
        self.restricted = bool(candidates)
        self.check_time()
        with self.charged():
            self.vars = [self._make_vars(c, candidates) for c in self.each(self.classes, self.LIGHT_EVERY)]
            self.order = ArrivalOrder.plan(self) if self.arrival_order else ArrivalOrder(self, [])
            for name, fw, classes in self._rule_groups():
                self.checkpoint()
                fw.filter_rules[name].encode_filter(self, classes)
            self.placed = [self._placed(c) for c in self.each(self.classes, self.CHECK_EVERY)]

    @contextmanager
    def charged(self, deadline: float | None = None) -> Iterator[None]:
        """Inside, what is written is charged to the clock at each :meth:`checkpoint` and at the end;
        ``deadline`` (else :attr:`deadline`) stops the writing part-way (:class:`BuildTimeout`)."""
        outer = self.deadline
        self.deadline = outer if deadline is None else deadline
        self._mark = len(self.cp.proto.constraints), len(self.cp.proto.variables)
        try:
            yield
        finally:
            self.written(self._mark)
            self._mark, self.deadline = None, outer

    def written(self, since: tuple[int, int]) -> tuple[int, int]:
        """Count the variables and constraints written since ``since`` (a mark: constraints, variables)
        into :attr:`terms`, charge them to the clock, and return the mark of now."""
        proto = self.cp.proto
        units = model_terms(proto, *since)
        self.terms += units
        if self.clock is not None:
            self.clock.work("term", units)
        return len(proto.constraints), len(proto.variables)

    def checkpoint(self) -> None:
        """Inside a phase of the build (between classes, or batches of nodes, of a rule's encoding): charge
        what was written since the last charge, then :meth:`check_time`. A stop decided by counted work
        falls at the same checkpoint on every run; only the wall-clock safety net's may move."""
        if self._mark is not None:
            proto = self.cp.proto
            if (len(proto.constraints), len(proto.variables)) != self._mark:  # (2 µs when nothing was written)
                self._mark = self.written(self._mark)
        self.check_time()

    def each(self, items: Iterable[T], every: int = 1) -> Iterator[T]:
        """``items``, with a :meth:`checkpoint` before every ``every``-th one (a rule's loop over classes
        or nodes, so that the build stops part-way once the limit has passed)."""
        for k, item in enumerate(items):
            if k % every == 0:
                self.checkpoint()
            yield item

    def check_time(self) -> None:
        """Raise :class:`BuildTimeout` once ``deadline`` (a :attr:`clock` value, else a
        ``time.perf_counter()`` one) has passed."""
        if self.deadline is None:
            return
        if self.clock.past(self.deadline) if self.clock is not None else time.perf_counter() > self.deadline:
            raise BuildTimeout

    def size(self) -> int:
        """Arrival variables the model would have on every allowed node."""
        return int(np.count_nonzero(self.allowed & (self.cap > 0)))

    # ------------------------------------------------------------------ building blocks for rules
    def _rule_groups(self) -> Iterable[tuple[str, Framework, list[PodClass]]]:
        for sched, classes in self.by_profile.items():
            fw = self.frameworks[sched]
            for name in fw.filter_names:
                yield name, fw, classes

    def cycle(self, c: PodClass) -> CycleState:
        """A CycleState for the class's representative pod against the fixed pods."""
        cyc = self._cycles.get(c.index)
        if cyc is None:
            profile = self.frameworks[c.scheduler_name].profile
            cyc = self._cycles[c.index] = CycleState(c.rep, self.snapshot, profile)
        return cyc

    def forbid(self, c: PodClass, mask: np.ndarray) -> None:
        """Rule class ``c``'s pods out of the nodes where ``mask`` is true (phase 1 only); which rule did
        is kept for explanations (:mod:`.explain`)."""
        self.allowed[c.index] &= ~mask
        if mask.any():
            key = (c.index, self._rule)
            prev = self.forbidden_by.get(key)
            self.forbidden_by[key] = mask.copy() if prev is None else (prev | mask)

    def limit(self, c: PodClass, most: np.ndarray | int) -> None:
        """At most ``most`` (per node, or everywhere) of class ``c``'s pods on a node (phase 1 only)."""
        self.cap[c.index] = np.minimum(self.cap[c.index], np.minimum(most, 2**31 - 1))
        none = np.broadcast_to(np.asarray(most) <= 0, self.cap[c.index].shape)
        if none.any():
            self.forbid(c, np.asarray(none))

    def restrict_by_filter(self, rule, classes: list[PodClass]) -> None:  # type: ignore[no-untyped-def]
        """Phase 1 for a rule whose verdict depends only on the pod, the node and the fixed pods: the
        greedy PreFilter + Filter over every node *is* the encoding."""
        nodes = np.arange(self.state.num_nodes)
        for c in self.each(classes):
            cyc = CycleState(c.rep, self.snapshot, self.cycle(c).profile)
            st = rule.pre_filter(cyc)
            if st.code == Code.SKIP:
                continue
            if st.code != Code.SUCCESS:
                self.forbid(c, np.ones(len(nodes), dtype=bool))
                continue
            if st.nodes is not None:
                self.forbid(c, ~st.nodes)
            self.forbid(c, rule.filter(cyc, nodes).code != 0)

    def _make_vars(self, c: PodClass, candidates: dict[int, np.ndarray] | None) -> ClassVars:
        mask = self.allowed[c.index].copy()
        if candidates is not None and c.index in candidates:
            keep_mask = np.zeros_like(mask)
            keep_mask[candidates[c.index]] = True
            mask &= keep_mask
        if not c.pending and not self.replace_running:
            mask[:] = False
        nodes = np.flatnonzero(mask)
        ub = self.cap[c.index, nodes]
        nodes, ub = nodes[ub > 0], ub[ub > 0]
        vs = [self.cp.new_int_var(0, int(u), f"a{c.index}_{n}") for n, u in zip(nodes.tolist(), ub.tolist())]
        knodes = np.array(sorted(c.running), dtype=np.int64)
        kub = np.array([len(c.running[n]) for n in knodes.tolist()], dtype=np.int64)
        kvs = [self.cp.new_int_var(0, int(u), f"k{c.index}_{n}") for n, u in zip(knodes.tolist(), kub.tolist())]
        return ClassVars(nodes, vs, ub, knodes, kvs, kub)

    def _placed(self, c: PodClass) -> cp_model.LinearExpr:
        """Pods of the class on a node at the end; arrivals are limited to the pods that need a node
        (running pods that leave count only when the eviction policy lets them land elsewhere)."""
        cv = self.vars[c.index]
        if cv.keep_vars and c.may_move:
            left = sum(int(u) for u in cv.keep_ub) - cp_model.LinearExpr.sum(cv.keep_vars)
            self.cp.add(cp_model.LinearExpr.sum(cv.arr_vars) <= len(c.pending) + left)
        else:
            self.cp.add(cp_model.LinearExpr.sum(cv.arr_vars) <= len(c.pending))
        return cp_model.LinearExpr.sum(cv.arr_vars + cv.keep_vars)

    def node_terms(self) -> list[list[tuple[PodClass, cp_model.IntVar, int]]]:
        """Per node: (class, variable, upper bound) of everything that may be there at the end."""
        if self._node_terms is None:
            out: list[list[tuple[PodClass, cp_model.IntVar, int]]] = [[] for _ in range(self.state.num_nodes)]
            for c in self.classes:
                for n, v, u in self.vars[c.index].terms():
                    out[n].append((c, v, u))
            self._node_terms = out
        return self._node_terms

    def node_arrivals(self) -> list[list[tuple[PodClass, cp_model.IntVar, int]]]:
        """Per node: (class, arrival variable, upper bound)."""
        if self._node_arrivals is None:
            out: list[list[tuple[PodClass, cp_model.IntVar, int]]] = [[] for _ in range(self.state.num_nodes)]
            for c in self.classes:
                cv = self.vars[c.index]
                for n, v, u in zip(cv.arr_nodes.tolist(), cv.arr_vars, cv.arr_ub.tolist()):
                    out[n].append((c, v, u))
            self._node_arrivals = out
        return self._node_arrivals

    def any_arrival(self, node: int, resource: int | None = None) -> cp_model.IntVar:
        """A boolean that is true when the batch places a pod on ``node`` (one requesting ``resource``,
        a column of ``ClusterState.resources``, when given)."""
        b = self._arrival_flag.get((node, resource))
        if b is None:
            req = self.state.pod_requests
            terms = [(v, u) for c, v, u in self.node_arrivals()[node] if resource is None or req[c.rep, resource] > 0]
            b = self._arrival_flag[(node, resource)] = self.cp.new_bool_var(f"any{node}_{resource}")
            self.cp.add(cp_model.LinearExpr.sum([v for v, _ in terms]) <= sum(u for _, u in terms) * b)
        return b

    def keep_var(self, c: PodClass, node: int) -> cp_model.IntVar:
        cv = self.vars[c.index]
        return cv.keep_vars[int(np.searchsorted(cv.keep_nodes, node))]

    def domain_terms(self, classes: Iterable[PodClass], codes: np.ndarray, counted: np.ndarray | None = None,
                     *, arrivals_only: bool = False) -> dict[int, list[tuple[cp_model.IntVar, int]]]:
        """Variables of ``classes`` grouped by topology value code (nodes without the key, or not
        ``counted``, are left out): value code -> [(variable, upper bound)]."""
        out: dict[int, list[tuple[cp_model.IntVar, int]]] = {}
        for c in classes:
            cv = self.vars[c.index]
            groups = [(cv.arr_nodes, cv.arr_vars, cv.arr_ub)]
            if not arrivals_only:
                groups.append((cv.keep_nodes, cv.keep_vars, cv.keep_ub))
            for nodes, vs, ub in groups:
                if len(nodes) == 0:
                    continue
                dom = codes[nodes]
                ok = dom >= 0
                if counted is not None:
                    ok &= counted[nodes]
                for i in np.flatnonzero(ok).tolist():
                    out.setdefault(int(dom[i]), []).append((vs[i], int(ub[i])))
        return out

    def classes_where(self, key: object, pred, pairs: Iterable[tuple[str, str]] = ()) -> list[PodClass]:  # type: ignore[no-untyped-def]
        """The classes (of every profile) whose representative pod satisfies ``pred``, cached by ``key``.
        ``pairs``: label pairs every match carries (a selector's matchLabels), to look at fewer classes."""
        hit = self._matching.get(key)
        if hit is None:
            pods = self.state.pods
            pool = self.classes
            buckets = [self._by_pair.get(pair, []) for pair in pairs]
            if buckets:
                pool = min(buckets, key=len)
            hit = self._matching[key] = [c for c in pool if pred(pods[c.rep])]
        return hit

    @staticmethod
    def total(terms: list[tuple[cp_model.IntVar, int]]) -> tuple[cp_model.LinearExpr, int]:
        """(sum of the variables, its upper bound)."""
        return cp_model.LinearExpr.sum([v for v, _ in terms]), sum(u for _, u in terms)

    def presence(self, c: PodClass, key: str, codes: np.ndarray,
                 mask: np.ndarray | None = None, tag: str = "") -> dict[int, cp_model.IntVar]:
        """Per topology value: a boolean that is true whenever the batch places a pod of ``c`` there
        (on a node of ``mask`` when given; ``tag`` names that mask for the cache). ``arrive > 0``
        implies it; it may be true without arrivals, which only tightens the rules it enables."""
        cache_key = (c.index, key, tag)
        hit = self._presence.get(cache_key)
        if hit is not None:
            return hit
        out: dict[int, cp_model.IntVar] = {}
        for code, terms in self.domain_terms([c], codes, mask, arrivals_only=True).items():
            y = self.cp.new_bool_var(f"y{c.index}_{key}_{code}")
            total_ub = sum(u for _, u in terms)
            arrivals = cp_model.LinearExpr.sum([v for v, _ in terms])
            self.cp.add(arrivals <= total_ub * y)
            self.cp.add(arrivals >= y)
            out[code] = y
        self._presence[cache_key] = out
        return out

    # ------------------------------------------------------------------ reading a solution
    def counts(self, value) -> tuple[list[dict[int, int]], list[dict[int, int]]]:  # type: ignore[no-untyped-def]
        """(arrivals, kept) per class as {node: count}, read with ``value(var)``."""
        arr, kept = [], []
        for cv in self.vars:
            arr.append({n: int(value(v)) for n, v in zip(cv.arr_nodes.tolist(), cv.arr_vars) if value(v)})
            kept.append({n: int(value(v)) for n, v in zip(cv.keep_nodes.tolist(), cv.keep_vars)})
        return arr, kept
