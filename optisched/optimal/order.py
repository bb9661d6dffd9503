"""Arrival order: the model admits a placement when *some queue order* lets every pod pass on arrival.

kube-scheduler checks a pod's filters once, when the pod arrives (kubernetes v1.35.4,
``pkg/scheduler/schedule_one.go``: one scheduling cycle per pod, against the snapshot of that moment), in
the queue's order (``pkg/scheduler/framework/plugins/queuesort/priority_sort.go``: higher priority first,
then earlier creation): pods that come later are not re-checked against it, nor it against them. Batch semantics (every pod checked against the final cluster) refuses
some placements kube-scheduler reaches this way, where a rule's verdict counts pods that may come after:

* PodTopologySpread ``DoNotSchedule``: a pod matching the selector (with or without the constraint)
  lands after the carrier in the domain it counted, or in another one;
* InterPodAffinity, required affinity: the first pod of a self-affine group went anywhere (no pod matched
  yet), later matching pods went elsewhere.

Here the classes whose checks count each other (:class:`Interaction`, declared by each rule module beside
its encoding) get an order: an integer position per class and, per pair of such classes of one priority,
a literal "comes before". PrioritySort's order fixes the pairs of different priorities (higher first).
Each rule adds, next to its batch constraints, the same check counting only the pods of the classes
that came before, the carrier's own class, and the running pods kept (:meth:`ArrivalOrder.prefix_terms`);
one literal ``ordered`` chooses the order semantics for the whole model, its negation batch semantics.
The semantics, in a Kubernetes engineer's words, is in docs/optimal_trust.md ("Arrival order").

A preemption victim the carriers' selectors match may stay in place until the first pod of higher
priority lands on its node, and is counted by the carriers that came before (:mod:`.victim_times`;
anti-affinity sees it too). A class of identical pods arrives as one block (its pods one after
another); within the block, its pods are checked against the cluster at the block's end, as batch
semantics checks them against the final cluster. The size is bounded: one product variable per (carrier, earlier class of its priority, domain);
above :data:`MAX_ORDER_TERMS` of them, or :data:`MAX_ORDER_CLASSES` classes in the order, the model keeps
batch semantics alone and :attr:`ArrivalOrder.note` says so; above :data:`MAX_VICTIM_TERMS` victim
terms, the victims leave before any pod arrives (as under batch semantics) and the note says that.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from ortools.sat.python import cp_model

from .victim_times import VictimTimes, steady_victims

# the rule modules build :class:`Interaction` at run time, and the model builds this module's order: so it
# imports nothing of the package (a PodClass and a BatchModel are read by their attributes)
PodClass = Any
BatchModel = Any

__all__ = ["MAX_ORDER_CLASSES", "MAX_ORDER_TERMS", "MAX_VICTIM_TERMS", "ArrivalOrder", "Interaction"]

MAX_ORDER_TERMS = 20_000  # product variables: about 4 constraints each
MAX_ORDER_CLASSES = 400
MAX_VICTIM_TERMS = 5_000  # (carrier, victim group) literals and their rivals (.victim_times)

Terms = dict[int, list[tuple[cp_model.IntVar, int]]]


@dataclass(frozen=True)
class Interaction:
    """``carrier``'s check (a constraint of its rule) counts the pods ``others`` place on nodes with a
    value in ``codes`` (and ``counted``, when given): those pods change its verdict when they come first.
    ``victims_only``: only the preemption victims among ``others`` do (a check the rule makes both ways
    between arriving pods, as anti-affinity: :mod:`.victim_times`)."""

    carrier: PodClass
    others: tuple[PodClass, ...]
    codes: np.ndarray
    counted: np.ndarray | None = None
    victims_only: bool = False


class ArrivalOrder:
    """The order variables of one :class:`BatchModel`; inactive (:attr:`enabled` false) when no two
    classes interact, or past the caps."""

    def __init__(self, model: BatchModel, interactions: list[Interaction], steady: set[int] | None = None) -> None:
        self.model = model
        self.enabled = False
        self.note = ""
        self.ordered: cp_model.IntVar | None = None
        self.carriers: set[int] = set()
        self.members: list[PodClass] = []
        self._pos: dict[int, cp_model.IntVar] = {}
        self._before: dict[tuple[int, int], cp_model.IntVar] = {}
        self._products: dict[tuple, cp_model.IntVar] = {}
        self.victims = VictimTimes(self, steady or set())
        live = self._live(interactions)
        if not live:
            return
        members = self._members(live)
        pairs = {(i.carrier.index, d.index, n): (i.carrier, d, n) for i in live for d, n in self.victims.groups(i)}
        victim_cost = self.victims.cost(pairs.values(), members)
        if victim_cost > MAX_VICTIM_TERMS:
            self.victims.off = True
            self.note = (f"preemption victims leave before any pod arrives: {victim_cost} victim terms "
                         f"(cap {MAX_VICTIM_TERMS})")
            live = self._live(interactions)
            if not live:
                return
            members = self._members(live)
        cost = sum(self._domains(d, i) for i in live if not i.victims_only for d in i.others
                   if d.index != i.carrier.index and d.priority == i.carrier.priority)
        if cost > MAX_ORDER_TERMS or len(members) > MAX_ORDER_CLASSES:
            self.note = (f"arrival order not encoded: {len(members)} interacting classes, {cost} order terms "
                         f"(caps {MAX_ORDER_CLASSES} and {MAX_ORDER_TERMS}); batch semantics alone")
            return
        self.enabled = True
        self.carriers = {i.carrier.index for i in live}
        self.members = sorted(members.values(), key=lambda c: c.index)
        self.ordered = model.cp.new_bool_var("ordered")
        n = len(self.members)
        for c in self.members:
            self._pos[c.index] = model.cp.new_int_var(0, max(0, n - 1), f"pos{c.index}")

    def _live(self, interactions: list[Interaction]) -> list[Interaction]:
        """The interactions an order changes: another class's arrivals, or victims still in place."""
        model = self.model
        return [i for i in interactions if self.victims.groups(i) or not i.victims_only and any(
            d.index != i.carrier.index and model.vars[d.index].arr_vars for d in i.others)]

    def _members(self, live: list[Interaction]) -> dict[int, PodClass]:
        """The classes that get a position: every carrier, the classes whose arrivals it counts, the
        classes of the victims it may count."""
        members = {c.index: c for i in live for c in (i.carrier, *(() if i.victims_only else i.others))}
        members.update({d.index: d for i in live for d, _ in self.victims.groups(i)})
        return members

    def _domains(self, d: PodClass, i: Interaction) -> int:
        cv = self.model.vars[d.index]
        dom = i.codes[cv.arr_nodes]
        ok = dom >= 0
        if i.counted is not None:
            ok &= i.counted[cv.arr_nodes]
        return len(np.unique(dom[ok]))

    @classmethod
    def plan(cls, model: BatchModel) -> ArrivalOrder:
        """Ask every filter rule with an ``arrival_interactions`` side which classes its checks link."""
        found: list[Interaction] = []
        for name, fw, classes in model._rule_groups():
            rule = fw.filter_rules[name]
            if hasattr(rule, "arrival_interactions"):
                found += rule.arrival_interactions(model, classes)
        return cls(model, found, steady_victims(model))

    def active(self, c: PodClass) -> bool:
        """``c``'s checks have an order-aware variant (it carries a constraint others interact with)."""
        return self.enabled and c.index in self.carriers

    def before(self, a: PodClass, b: PodClass) -> cp_model.LiteralT:
        """Class ``a``'s pods arrive before class ``b``'s: PrioritySort between priorities, a literal within one."""
        if a.priority != b.priority:
            return a.priority > b.priority
        if a.index == b.index:
            return False
        lo, hi = sorted((a.index, b.index))
        lit = self._before.get((lo, hi))
        if lit is None:
            cp = self.model.cp
            lit = self._before[(lo, hi)] = cp.new_bool_var(f"before{lo}_{hi}")
            cp.add(self._pos[lo] + 1 <= self._pos[hi]).only_enforce_if(lit)
            cp.add(self._pos[hi] + 1 <= self._pos[lo]).only_enforce_if(lit.Not())
        return lit if a.index == lo else lit.Not()

    def prefix_terms(self, carrier: PodClass, classes: list[PodClass], codes: np.ndarray,
                     counted: np.ndarray | None, tag: str) -> Terms:
        """Like :meth:`BatchModel.domain_terms`, but as ``carrier``'s block ends: its own class and the
        running pods kept count whole, another class's arrivals only when it came before (``tag`` names
        ``codes``/``counted`` for the cache of product variables)."""
        model = self.model
        out: Terms = {}
        for d in classes:
            # a class outside the order has no pods to place here (else it would interact): keeps alone
            earlier = d.index == carrier.index or d.index not in self._pos or self.before(d, carrier)
            if earlier is True:
                parts = model.domain_terms([d], codes, counted)
            else:
                parts = self._keeps(d, codes, counted)
                for dom, term in self.victims.seen(carrier, d, codes, counted):
                    parts.setdefault(dom, []).append(term)
                if earlier is not False:
                    for dom, terms in model.domain_terms([d], codes, counted, arrivals_only=True).items():
                        parts.setdefault(dom, []).append(self._product(d, carrier, terms, earlier, tag, dom))
            for dom, terms in parts.items():
                out.setdefault(dom, []).extend(terms)
        return out

    def _keeps(self, d: PodClass, codes: np.ndarray, counted: np.ndarray | None) -> Terms:
        cv = self.model.vars[d.index]
        out: Terms = {}
        for n, v, u in zip(cv.keep_nodes.tolist(), cv.keep_vars, cv.keep_ub.tolist()):
            if codes[n] >= 0 and (counted is None or counted[n]):
                out.setdefault(int(codes[n]), []).append((v, u))
        return out

    def _product(self, d: PodClass, carrier: PodClass, terms: list[tuple[cp_model.IntVar, int]],
                 lit: cp_model.LiteralT, tag: str, dom: int) -> tuple[cp_model.IntVar, int]:
        """A variable equal to ``d``'s arrivals in the domain when ``lit`` holds, else 0."""
        key = (d.index, carrier.index, tag, dom)
        hit = self._products.get(key)
        expr, ub = self.model.total(terms)
        if hit is None:
            cp = self.model.cp
            hit = self._products[key] = cp.new_int_var(0, ub, f"early{d.index}_{carrier.index}_{tag}_{dom}")
            cp.add(hit <= expr)
            cp.add(hit <= ub * lit)
            cp.add(hit >= expr - ub * (1 - lit))
        return hit, ub

    def when(self, ordered: bool) -> list[cp_model.LiteralT]:
        """The enforcement literal of a constraint that holds under the order (or under batch semantics)."""
        assert self.ordered is not None
        return [self.ordered if ordered else self.ordered.Not()]

    def blocks(self, value) -> list[int] | None:  # type: ignore[no-untyped-def]
        """The classes in arrival order at a solution (read with ``value(var)``), or None when the solution
        takes batch semantics."""
        if not self.enabled or not value(self.ordered):
            return None
        return [c.index for c in sorted(self.members, key=lambda c: (-c.priority, value(self._pos[c.index]), c.index))]

    def evicted(self, value) -> list[np.ndarray]:  # type: ignore[no-untyped-def]
        """Parallel to :meth:`blocks`: the running pod rows whose victims leave just before each block
        lands (the rows that stay are filtered out by the re-check); empty under batch semantics."""
        order = self.blocks(value)
        return [] if order is None else self.victims.evicted(value, order)

    def position(self, c: PodClass, value) -> tuple[int, int]:  # type: ignore[no-untyped-def]
        """Where ``c`` arrives at a solution, as :meth:`blocks` sorts: (-priority, position); a class
        without a position comes after every class of its priority that has one."""
        pos = self._pos.get(c.index)
        return -c.priority, (len(self.members) if pos is None else int(value(pos)))

    def size(self) -> tuple[int, int]:
        """(variables, constraints) the order added: positions, before literals, products, victim times."""
        nv, nc = self.victims.size()
        nv += len(self._pos) + len(self._before) + len(self._products) + int(self.ordered is not None)
        return nv, nc + 2 * len(self._before) + 3 * len(self._products)
