"""When a preemption victim leaves, in an arrival order: at the first arrival of a higher priority on its node.

kube-scheduler evicts a victim in the preemptor's scheduling cycle (kubernetes v1.35.4,
``pkg/scheduler/framework/preemption/preemption.go``: ``prepareCandidate`` deletes the victims, then the
preemptor is retried on its nominated node, ``pkg/scheduler/schedule_one.go``): every pod that arrived
before it saw the victim running. Its spread constraint counted it, its required affinity could be
satisfied by it; the final cluster no longer holds it.

In an arrival order (:mod:`.order`) the running pods of class ``d`` that leave node ``n`` (a *victim
group*) leave together, either before any pod arrives (as batch semantics has it) or — a literal
``late`` per group — when the first class of higher priority than ``d`` lands on ``n``. Nothing arrives
on ``n`` before that moment (a class of ``d``'s priority or lower comes after every higher one), so the
rules that look at one node (resources, host ports, volumes) never see the victims; only the rules that
count pods over a topology domain do. Of those, the order encodes PodTopologySpread ``DoNotSchedule``
and required affinity (:meth:`VictimTimes.seen`); a victim that another rule would see from elsewhere
— anti-affinity either way, a ReadWriteOncePod claim — is *steady* (:func:`steady_victims`: the rules
declare it beside their encodings) and always leaves first.

Per (carrier class ``c``, victim group) a literal ``sees``: ``c``'s block ends while the group is still
there, i.e. ``late`` and every class above ``d`` that lands on ``n`` comes after ``c``. It is exact both
ways (each class that lands there is a witness when ``sees`` is false), so the victims it counts are the
ones the re-check (:func:`optisched.optimal.check.check_in_order`) leaves in place until their group's
moment (:meth:`VictimTimes.evicted`). Only victims whose labels an ordered carrier's selector matches
get these variables; their number counts toward ``MAX_ORDER_TERMS``.
"""
from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from typing import Any

import numpy as np
from ortools.sat.python import cp_model

PodClass = Any
BatchModel = Any
ArrivalOrder = Any

__all__ = ["VictimTimes", "steady_victims"]


def steady_victims(model: BatchModel) -> set[int]:
    """Classes whose victims leave before any pod arrives: a rule other than those the order encodes
    would see them from another node (each rule's ``arrival_steady_victims``)."""
    out: set[int] = set()
    for name, fw, classes in model._rule_groups():
        rule = fw.filter_rules[name]
        if hasattr(rule, "arrival_steady_victims"):
            out |= rule.arrival_steady_victims(model, classes)
    return out


class VictimTimes:
    """The victim groups of one :class:`~.order.ArrivalOrder` and the literals that time them."""

    def __init__(self, order: ArrivalOrder, steady: set[int]) -> None:
        self.order = order
        self.model = order.model
        self.steady = steady
        self.off = False  # past MAX_VICTIM_TERMS: every victim leaves before any pod arrives
        self._above: dict[tuple[int, int], list[tuple[PodClass, cp_model.IntVar, int]]] = {}
        self._late: dict[tuple[int, int], cp_model.IntVar] = {}
        self._lands: dict[tuple[int, int], cp_model.IntVar] = {}
        self._sees: dict[tuple[int, int, int], cp_model.IntVar] = {}
        self._seen: dict[tuple[int, int, int], tuple[cp_model.IntVar, int]] = {}
        self._extra = [0, 0]  # witnesses: variables, constraints

    def above(self, d: PodClass, n: int) -> list[tuple[PodClass, cp_model.IntVar, int]]:
        """(class, arrival variable, upper bound) of the classes of higher priority than ``d`` that may
        land on node ``n``: the first of them to arrive is when ``d``'s victims there leave."""
        hit = self._above.get((d.index, n))
        if hit is None:
            hit = self._above[(d.index, n)] = [(c, v, u) for c, v, u in self.model.node_arrivals()[n]
                                               if c.priority > d.priority]
        return hit

    def groups(self, i: Any) -> list[tuple[PodClass, int]]:  # an order.Interaction
        """The victim groups (class, node) whose pods ``i``'s carrier may count before they leave."""
        return list(self._groups(i.carrier, i.others, i.codes, i.counted))

    def _groups(self, c: PodClass, classes: Any, codes: np.ndarray,
                counted: np.ndarray | None) -> Iterator[tuple[PodClass, int]]:
        if self.off:
            return
        for d in classes:
            if d.index == c.index or not d.running or d.voluntary or d.priority >= c.priority or d.index in self.steady:
                continue
            for n in sorted(d.running):
                if codes[n] >= 0 and (counted is None or counted[n]) and self.above(d, n):
                    yield d, n

    def _rivals(self, c: PodClass, d: PodClass, n: int, members: Any) -> list[PodClass]:
        """The classes of ``c``'s priority in the order (``members``: class indices) that may land on
        ``n`` first: whether ``c`` came before them is a literal. A class of that priority outside the
        order arrives after every class in it (its own checks are against the final cluster)."""
        return [p for p, _, _ in self.above(d, n) if p.priority == c.priority and p.index != c.index and p.index in members]

    def cost(self, pairs: Any, members: Any) -> int:
        """Order terms of the (carrier, victim class, node) ``pairs``: two each, and one per rival."""
        return sum(2 + len(self._rivals(c, d, n, members)) for c, d, n in pairs)

    def seen(self, c: PodClass, d: PodClass, codes: np.ndarray,
             counted: np.ndarray | None) -> Iterator[tuple[int, tuple[cp_model.IntVar, int]]]:
        """(value code, (variable, upper bound)): ``d``'s victims on each node of the domain that
        ``c``'s check counts — those that left, while they are still there when ``c``'s block ends."""
        if not self.order.enabled:
            return
        for _, n in self._groups(c, [d], codes, counted):
            yield int(codes[n]), self._seen_at(c, d, n)

    def _seen_at(self, c: PodClass, d: PodClass, n: int) -> tuple[cp_model.IntVar, int]:
        key = (c.index, d.index, n)
        hit = self._seen.get(key)
        if hit is None:
            cp, ub = self.model.cp, len(d.running[n])
            keep, lit = self.model.keep_var(d, n), self._sees_at(c, d, n)
            z = cp.new_int_var(0, ub, f"victims{d.index}_{n}_{c.index}")
            cp.add(z + keep <= ub)
            cp.add(z <= ub * lit)
            cp.add(z + keep - ub * lit >= 0)
            hit = self._seen[key] = (z, ub)
        return hit

    def _sees_at(self, c: PodClass, d: PodClass, n: int) -> cp_model.IntVar:
        """True exactly when ``d``'s victims on ``n`` leave late and no class above ``d`` landing on
        ``n`` comes before ``c``'s block ends: none of higher priority than ``c``, not ``c`` itself (they
        left before it), each rival after it."""
        key = (c.index, d.index, n)
        lit = self._sees.get(key)
        if lit is not None:
            return lit
        cp = self.model.cp
        lit = self._sees[key] = cp.new_bool_var(f"sees{c.index}_{d.index}_{n}")
        late = self._late_at(d, n)
        cp.add(lit <= late)
        first, ub = self.model.total([(v, u) for p, v, u in self.above(d, n)
                                      if p.priority > c.priority or p.index == c.index])
        if ub:
            cp.add(first + ub * lit <= ub)
        witnesses: list[Any] = [first]
        for p in self._rivals(c, d, n, self.order._pos):
            lands, before = self._lands_at(p, n), self.order.before(c, p)
            cp.add(lit + lands - before <= 1)
            w = cp.new_bool_var(f"evicts{p.index}_{d.index}_{n}_{c.index}")
            cp.add(w <= lands)
            cp.add(w + before <= 1)
            witnesses.append(w)
            self._extra[0] += 1
            self._extra[1] += 3
        cp.add(cp_model.LinearExpr.sum(witnesses) >= 1).only_enforce_if([late, lit.Not()])
        self._extra[1] += 3
        return lit

    def _late_at(self, d: PodClass, n: int) -> cp_model.IntVar:
        """``d``'s victims on ``n`` leave when the first class above ``d`` lands there (else before
        any pod arrives); late needs such a class."""
        late = self._late.get((d.index, n))
        if late is None:
            late = self._late[(d.index, n)] = self.model.cp.new_bool_var(f"late{d.index}_{n}")
            self.model.cp.add(cp_model.LinearExpr.sum([v for _, v, _ in self.above(d, n)]) >= 1).only_enforce_if(late)
        return late

    def _lands_at(self, p: PodClass, n: int) -> cp_model.IntVar:
        """True exactly when the batch places a pod of ``p`` on ``n``."""
        b = self._lands.get((p.index, n))
        if b is None:
            cv = self.model.vars[p.index]
            i = int(np.searchsorted(cv.arr_nodes, n))
            v, ub = cv.arr_vars[i], int(cv.arr_ub[i])
            b = self._lands[(p.index, n)] = self.model.cp.new_bool_var(f"lands{p.index}_{n}")
            self.model.cp.add(v <= ub * b)
            self.model.cp.add(v >= b)
        return b

    def evicted(self, value: Any, order: list[int]) -> list[np.ndarray]:
        """Per block of ``order`` (class indices, as :meth:`ArrivalOrder.blocks`): the running rows of
        the groups that leave just before it lands (every group whose ``late`` holds)."""
        classes = self.model.classes
        keys = [self.order.position(classes[k], value) for k in order]
        out: list[list[int]] = [[] for _ in order]
        for (di, n), late in self._late.items():
            if not value(late):
                continue
            firsts = [self.order.position(p, value) for p, v, _ in self.above(classes[di], n) if value(v)]
            k = bisect_left(keys, min(firsts)) if firsts else len(order)
            if k < len(order):
                out[k] += classes[di].running[n]
        return [np.array(rows, dtype=np.int64) for rows in out]

    def size(self) -> tuple[int, int]:
        """(variables, constraints) of the victim times."""
        nv = len(self._late) + len(self._lands) + len(self._sees) + len(self._seen) + self._extra[0]
        nc = len(self._late) + 2 * len(self._lands) + 2 * len(self._sees) + 3 * len(self._seen) + self._extra[1]
        return nv, nc
