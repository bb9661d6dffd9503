"""DynamicResources: a pod's ResourceClaims must be allocatable on the node; allocated claims must be
usable there. Devices come from ResourceSlices through the structured allocator.

Upstream: ``pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go`` of v1.35.4, with the
default feature gates of 1.35 (DRAPrioritizedList and DRAAdminAccess on, and either may be turned off:
the profile's gates, :mod:`optisched.profile.gates`; extended resources, device taints, consumable
capacity, binding conditions and partitionable devices off). Its points, as optisched runs them:

- **PreEnqueue**: every claim exists, is not being deleted and, for a template, is the pod's own; else
  the pod is never attempted (``not handled``, with upstream's reason).
- **PreFilter**: Skip without claims; a DeviceClass a claim to allocate names that does not exist is
  ``request R: device class C does not exist`` (UnschedulableAndUnresolvable, so no node is tried); with
  DRAPrioritizedList off, a request with ``firstAvailable`` is ``resource claim NS/NAME, request R: has
  subrequests, but the DRAPrioritizedList feature is disabled`` (Unschedulable).
- **Filter**: an allocated claim whose allocation's node selector rejects the node is
  ``resourceclaim not available on the node``; the claims still to allocate go through the allocator on
  the node, and no solution is ``cannot allocate all claims``. Every rejection is
  UnschedulableAndUnresolvable: preemption never tries such a node. An allocator error (a CEL runtime
  error, a class that vanished) aborts the cycle, as upstream's Filter Error does.
- **PostFilter**: without claims, ``no new claims to deallocate``; else a claim that was unavailable on
  some node and is reserved for nobody but the pod is deallocated (``deallocation of ResourceClaim
  completed``; upstream picks one at random from a map, optisched the first in the pod's order), else
  ``still not schedulable``.
- **Score** (weight 2): per claim, ``8 - i`` for the i-th ``firstAvailable`` subrequest allocated;
  normalized by the maximum (``DefaultNormalizeScore``).
- **Reserve / PreBind**: the devices the Filter found on the chosen node are allocated at once and the
  claims reserved for the pod (:meth:`reserve`), so the next cycle sees them taken.

CP-SAT side (RELAXED): a pod may use only the nodes where its claims can be allocated against the
claims allocated before the batch (the greedy verdict over every node); the devices the batch's pods take
from each other are counted per node for plain ``exactly`` requests (:meth:`encode_filter`), and checked
by the re-check for the rest.
"""
from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ...framework import (
    ClusterEvent,
    Code,
    CycleState,
    Fidelity,
    FilterAborted,
    FilterResult,
    Plugin,
    PodNotHandled,
    Status,
    default_normalize,
)
from ...model.dra import ALLOCATION_MODE_ALL, AllocationResult, Device, DeviceClass, ResourceClaim, qualify
from .. import names
from .claims import Claim, ClaimBook, ClaimNotReady, claim_book
from .requests import kobj

if TYPE_CHECKING:
    from ...model.snapshot import Snapshot
    from ...optimal.classes import PodClass
    from ...optimal.model import BatchModel
    from ...optimal.tiers import Linear

__all__ = ["CANNOT_ALLOCATE", "FIRST_AVAILABLE_MAX", "NOT_AVAILABLE", "DynamicResources", "new_allocator"]

CANNOT_ALLOCATE = "cannot allocate all claims"
NOT_AVAILABLE = "resourceclaim not available on the node"
NO_CLAIMS = "no new claims to deallocate"
DEALLOCATED = "deallocation of ResourceClaim completed"
STILL = "still not schedulable"
FIRST_AVAILABLE_MAX = 8  # resourceapi.FirstAvailableDeviceRequestMaxSize


class _Selectors:
    """The allocator's view of CEL: each expression compiled once, each device's view built once. A compile
    error is marked as such (the allocator words it ``CEL compile error``); an expression using what is not
    implemented is NotImplementedError: the pod is not handled, never guessed."""

    def __init__(self) -> None:
        from .cel import CELError, NotHandled, compile_selector, device_view

        self._compile, self._view = compile_selector, device_view
        self._error, self._not_handled = CELError, NotHandled
        self._views: dict[int, Any] = {}

    def matches(self, expression: str, driver: str, device: Device) -> bool:
        try:
            program = self._compile(expression)
        except self._not_handled as e:
            raise NotImplementedError(f"CEL selector {expression!r}: {e}") from None
        except self._error as e:
            e.compile_error = True  # type: ignore[attr-defined]
            raise
        view = self._views.get(id(device))
        if view is None:
            view = self._views[id(device)] = (self._view(driver, device), device)
        try:
            return bool(program.matches(view[0]))
        except self._not_handled as e:
            raise NotImplementedError(f"CEL selector {expression!r}: {e}") from None


def new_allocator(classes: dict[str, DeviceClass], slices: Sequence[Any], *, admin_access: bool = True) -> Any:
    """The structured allocator over ``slices`` with the plugin's CEL view (each expression compiled once,
    each device's view built once): what the Filter calls, for readers that ask it the same question
    (``admin_access``: the DRAAdminAccess gate, on by default in 1.35)."""
    from .allocator import Allocator

    return Allocator(classes, slices, _Selectors(), admin_access=admin_access)


@dataclass
class _State:
    """PreFilter's ``stateData``: the pod's claims in order, which still need an allocation, the nodes each
    allocated claim is usable on, and per node the Filter's allocation (``nodeAllocations``)."""

    claims: list[tuple[str, Claim]]
    to_allocate: list[Claim]
    available: list[np.ndarray | None]
    allocated: AbstractSet[str] = frozenset()
    answers: _Answers | None = None  # the allocator's answers for these claims, per node
    unavailable: set[int] = field(default_factory=set)

    def allocation(self, row: int) -> list[AllocationResult] | None:
        """The Filter's allocation on node ``row`` (``nodeAllocations``), None where it found none."""
        if self.answers is None or not self.answers.ok[row]:
            return None
        return self.answers.results.get(row)


@dataclass(frozen=True)
class Demand:
    """One request of a claim as optimal mode counts it: its alternatives (selector expressions, allocation
    mode, count), and the attribute a ``matchAttribute`` constraint makes its devices share (None: free)."""

    alternatives: list[tuple[list[str], str, int]]
    attribute: str | None = None


def _attribute(cand: Any, name: str) -> Any:
    """The value of the (fully qualified) attribute ``name`` on a candidate device, None when it has none."""
    driver = cand.slice.spec.driver
    for key, attr in cand.device.attributes.items():
        if qualify(key, driver) == name:
            return attr.value
    return None


class _Answers:
    """The allocator's answers for one set of claims (by spec): per node the version of its pools the
    answer holds for (-1: none yet), whether it found an allocation, and the allocation."""

    def __init__(self, n: int) -> None:
        self.version = np.full(n, -1, dtype=np.int64)
        self.ok = np.zeros(n, dtype=bool)
        self.results: dict[int, list[AllocationResult]] = {}
        self.scores: dict[int, tuple[list[AllocationResult], int]] = {}  # by id of a result: its score


class DynamicResources(Plugin):
    name = names.DYNAMIC_RESOURCES
    points = frozenset({"preEnqueue", "preFilter", "filter", "postFilter", "score", "reserve", "preBind"})
    # a deleted pod's claims may be deallocated (a ResourceClaim update: isSchedulableAfterClaimChange queues)
    events = frozenset({ClusterEvent.ASSIGNED_POD_DELETE})
    placement_free = True  # reads claims and slices, never the pods on the node: a dry run keeps the answer

    def __init__(self, snapshot: Snapshot, profile: object) -> None:
        self.snapshot, self.profile = snapshot, profile
        self.state = snapshot.state
        cluster = self.state.cluster
        self.book: ClaimBook = claim_book(snapshot)
        self.classes: dict[str, DeviceClass] = {c.metadata.name: c for c in cluster.device_classes}
        self._allocator: Any = None
        # the allocator's answers per (claims to allocate, node), kept while no device of a pool the node
        # can use is taken or freed: a node's version moves when one is (nodes without slices of their own
        # share one refusal)
        self._answers: dict[tuple[str, ...], _Answers] = {}
        self._spec_keys: dict[str, str] = {}
        self._local_pools: dict[str, list[int]] = {}  # driver/pool of node-local slices -> node rows
        self._shared = False  # some slice is selected by node selector or for all nodes
        has_slice = np.zeros(self.state.num_nodes, dtype=bool)
        for sl in cluster.resource_slices:
            pool = f"{sl.spec.driver}/{sl.spec.pool.name}"
            row = self.state.node_index.get(sl.spec.node_name) if sl.spec.node_name else None
            if row is not None:
                self._local_pools.setdefault(pool, []).append(row)
                has_slice[row] = True
            elif not sl.spec.node_name:
                self._shared = True
        self._own_slices = has_slice if not self._shared else np.ones(self.state.num_nodes, dtype=bool)
        self._version = np.zeros(self.state.num_nodes, dtype=np.int64)
        self._seen = 0
        self._node_errors: dict[int, str] = {}  # FailedOnNode's message, the node's reason instead

    @property
    def allocator(self) -> Any:
        if self._allocator is None:
            self._allocator = new_allocator(self.classes, self.state.cluster.resource_slices,
                                            admin_access=self._gate("DRAAdminAccess"))
        return self._allocator

    def _gate(self, name: str) -> bool:
        """A feature gate of the profile (``feature.Features``); the release's default without one."""
        gates = getattr(self.profile, "feature_gates", None)
        return True if gates is None else bool(gates.enabled(name))

    # ------------------------------------------------------------------ PreEnqueue
    def pre_enqueue(self, pod: int) -> str | None:
        """Why the pod stays out of the queue (``foreachPodResourceClaim``'s error), or None."""
        return self.book.not_ready(pod)

    # ------------------------------------------------------------------ PreFilter
    def pre_filter(self, cycle: CycleState) -> Status:
        cycle.data[self.name] = None
        try:
            entries = self.book.claims_of(cycle.pod)
        except ClaimNotReady as e:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (str(e),))
        claims = [(e, c) for e, c in entries if c is not None]
        if not claims:
            return Status.skip()
        to_allocate: list[Claim] = []
        available: list[np.ndarray | None] = []
        for _, claim in claims:
            if claim.allocation is not None:
                available.append(self.book.available_on(claim))
                continue
            available.append(None)
            to_allocate.append(claim)
            bad = self._check_classes(claim.obj)
            if bad is not None:
                return bad
        cycle.data[self.name] = _State(claims, to_allocate, available,
                                       self.book.allocated_devices if to_allocate else frozenset())
        return Status()

    def _check_classes(self, claim: ResourceClaim) -> Status | None:
        """``validateDeviceClass`` for every request and subrequest of a claim to allocate; with
        DRAPrioritizedList off, a request with subrequests is Unschedulable."""
        prioritized = self._gate("DRAPrioritizedList")
        for request in claim.spec.devices.requests:
            if request.exactly is None and not prioritized:
                why = (f"resource claim {kobj(claim)}, request {request.name}: has subrequests, but the "
                       "DRAPrioritizedList feature is disabled")
                return Status(Code.UNSCHEDULABLE, (why,))
            subs = ([(request.name, request.exactly.device_class_name)] if request.exactly is not None
                    else [(f"{request.name}/{s.name}", s.device_class_name) for s in request.first_available])
            for ref, cls in subs:
                if cls not in self.classes:
                    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                                  (f"request {ref}: device class {cls} does not exist",))
        return None

    # ------------------------------------------------------------------ Filter
    def filter(self, cycle: CycleState, nodes: np.ndarray) -> FilterResult:
        st: _State | None = cycle.data.get(self.name)
        n = len(nodes)
        if st is None:
            return FilterResult.passing(n)
        unavailable = np.zeros(n, dtype=bool)
        for index, mask in enumerate(st.available):
            if mask is not None:
                miss = ~mask[nodes]
                if miss.any():
                    st.unavailable.add(index)
                    unavailable |= miss
        cannot = np.zeros(n, dtype=bool)
        if st.to_allocate:
            self._catch_up()
            claims = [c.obj for c in st.to_allocate]
            book = self._answer_book(tuple(self._spec_key(c) for c in st.to_allocate))
            st.answers = book
            rows = nodes[~unavailable]
            known = book.version[rows] == self._version[rows]
            cannot[np.flatnonzero(~unavailable)[known & ~book.ok[rows]]] = True
            for pos in np.flatnonzero(~unavailable)[~known].tolist():
                if not self._allocate(book, claims, int(nodes[pos]), st.allocated):
                    cannot[pos] = True
        code = np.where(unavailable | cannot, np.int8(Code.UNSCHEDULABLE_AND_UNRESOLVABLE), np.int8(0))
        errors = np.zeros(n, dtype=bool)
        if self._node_errors and cannot.any():
            texts: dict[str, np.ndarray] = {}
            for pos in np.flatnonzero(cannot).tolist():
                text = self._node_errors.get(int(nodes[pos]))
                if text is not None:
                    texts.setdefault(text, np.zeros(n, dtype=bool))[pos] = True
            for mask in texts.values():
                errors |= mask
            extra = list(texts.items())
        else:
            extra = []
        reasons = [(m, text) for m, text in ((unavailable, NOT_AVAILABLE), (cannot & ~errors, CANNOT_ALLOCATE))
                   if m.any()] + [(m, text) for text, m in extra]
        return FilterResult(code, reasons)

    def _spec_key(self, claim: Claim) -> str:
        key = self._spec_keys.get(claim.key)
        if key is None:
            key = self._spec_keys[claim.key] = claim.obj.spec.model_dump_json()
        return key

    def _catch_up(self) -> None:
        """Move the version of every node whose pools' devices were taken or freed since the last look."""
        changed = self.book.changed_pools
        if self._seen == len(changed):
            return
        if self._shared:
            self._version += 1
        else:
            for pool in set(changed[self._seen:]):
                rows = self._local_pools.get(pool)
                if rows:
                    self._version[rows] += 1
        self._seen = len(changed)

    def _answer_book(self, sig: tuple[str, ...]) -> _Answers:
        book = self._answers.get(sig)
        if book is None:
            book = self._answers[sig] = _Answers(self.state.num_nodes)
        return book

    def _allocate(self, book: _Answers, claims: list[ResourceClaim], row: int, allocated: AbstractSet[str]) -> bool:
        """The allocator on node ``row``; its answer is kept in ``book`` at the node's version (a node without
        slices of its own that cannot allocate answers for every such node)."""
        from .allocator import AllocationError, FailedOnNode

        try:
            result = self.allocator.allocate(self.state.nodes[row], claims, allocated)
        except FailedOnNode as e:  # ErrFailedAllocationOnNode: this node fails, with the error as its reason
            self._node_errors[row] = str(e)
            return False
        except AllocationError as e:
            raise FilterAborted(self.name, str(e)) from None
        except NotImplementedError as e:
            raise PodNotHandled(str(e)) from None
        answer = list(result) if result is not None and len(result) == len(claims) else None
        if answer is None and not self._own_slices[row]:
            others = ~self._own_slices
            book.version[others], book.ok[others] = self._version[others], False
        book.version[row], book.ok[row] = self._version[row], answer is not None
        if answer is not None:
            book.results[row] = answer
        return answer is not None

    # ------------------------------------------------------------------ PostFilter
    def post_filter(self, cycle: CycleState) -> tuple[str, list[str]]:
        """The PostFilter's status message and the claims it deallocated (by key)."""
        st: _State | None = cycle.data.get(self.name)
        if st is None:
            return NO_CLAIMS, []
        pod_ref = self.state.pods[cycle.pod].metadata.uid or self.state.pods[cycle.pod].key
        for index in sorted(st.unavailable):
            claim = st.claims[index][1]
            if not claim.reserved_for or claim.reserved_for == [pod_ref]:
                self.book.deallocate(claim)
                return DEALLOCATED, [claim.key]
        return STILL, []

    # ------------------------------------------------------------------ Score
    def pre_score(self, cycle: CycleState, nodes: np.ndarray) -> Status:
        return Status()

    def score(self, cycle: CycleState, nodes: np.ndarray) -> np.ndarray:
        """``computeScore``: the rank of each allocated ``firstAvailable`` subrequest (8 for the first)."""
        st: _State | None = cycle.data.get(self.name)
        out = np.zeros(len(nodes), dtype=np.int64)
        if st is None or not st.to_allocate:
            return out
        claims = [c.obj for _, c in st.claims]
        ranked = any(r.first_available for c in claims for r in c.spec.devices.requests)
        if not ranked and len(claims) == len(st.to_allocate):
            return out  # every claim scores 0 (and computeScore's index check cannot fail)
        assert st.answers is not None  # the Filter ran for these claims
        memo = st.answers.scores
        for i, row in enumerate(nodes.tolist()):
            results = st.allocation(row)
            if results is None:
                continue
            key = id(results)
            hit = memo.get(key)
            if hit is None or hit[0] is not results:
                hit = memo[key] = (results, _first_available_score(claims, results))
            out[i] = hit[1]
        return out

    def normalize(self, cycle: CycleState, scores: np.ndarray) -> np.ndarray:
        return default_normalize(scores, reverse=False)

    # ------------------------------------------------------------------ Reserve / PreBind
    def reserve(self, cycle: CycleState, node: int) -> dict[str, dict]:
        """Allocate the claims on ``node`` as the Filter found them and reserve every claim for the pod;
        returns what each claim got, by claim key (``podClaim``, ``node``, ``devices``, ``requests``,
        ``existing``: allocated before this cycle)."""
        st: _State | None = cycle.data.get(self.name)
        if st is None:
            return {}
        results = st.allocation(node) or []
        fresh = {c.key: r for c, r in zip(st.to_allocate, results)}
        existing = {c.key for _, c in st.claims if c.allocation is not None}
        self.book.bind(cycle.pod, fresh)
        node_name = self.state.node_names[node]
        return {claim.key: {"podClaim": entry, "node": node_name, "devices": list(claim.devices),
                            "requests": [r.request for r in claim.allocation.devices.results]
                            if claim.allocation is not None else [],
                            "existing": claim.key in existing}
                for entry, claim in st.claims}

    def deleted(self, pod: int) -> list[str]:
        """A pod was deleted (a preemption victim): the claims it leaves reserved for nobody are freed."""
        return self.book.delete(pod)

    def settle(self, pods: Sequence[int], node_of: np.ndarray) -> list[tuple[int, tuple[str, ...]]]:
        """Allocate, pod by pod, the claims of the pods an answer places (``node_of``), as binding them in
        this order would, on a snapshot that holds the answer: what each pod's devices are, and which
        pods' claims cannot be allocated there (with the Filter's reasons). A pod that ran elsewhere
        first leaves its claims (its replacement gets its own from the template; a claim it shared
        stays allocated to its other pods). Sound, not complete: an order in which the allocator's first
        solutions block a later pod is reported though another order might fit them all."""
        out: list[tuple[int, tuple[str, ...]]] = []
        for p in pods:
            if not self.state.pods[p].spec.resource_claims:
                continue
            if self.state.pod_node[p] >= 0:
                self.book.delete(p)
            node = int(node_of[p])
            cycle = CycleState(p, self.snapshot, self.profile)  # type: ignore[arg-type]
            st = self.pre_filter(cycle)
            if st.code == Code.SKIP:
                continue
            if not st.ok:
                out.append((p, st.reasons))
                continue
            try:
                res = self.filter(cycle, np.array([node], dtype=np.int64))
            except FilterAborted as e:
                out.append((p, (str(e),)))
                continue
            if res.code[0]:
                out.append((p, tuple(res.reasons_of(0))))
                continue
            self.reserve(cycle, node)
        return out

    # ------------------------------------------------------------------ CP-SAT side
    score_fidelity = Fidelity.SURROGATE

    def encode_score(self, model: BatchModel, classes: list[PodClass], weight: int, objective: Linear) -> None:
        """Per arrival, the greedy score against the fixed pods' claims: the ``firstAvailable`` rank of
        the allocation the node would give the class's pod, normalized over the nodes the class may use
        (SURROGATE: kube scores against the devices the batch's earlier pods took, and normalizes over
        the nodes feasible then)."""
        from ...optimal.score_terms import SCORE_SCALE, add_arrival_scores

        for c in classes:
            nodes = np.flatnonzero(model.allowed[c.index])
            cycle = CycleState(c.rep, model.snapshot, model.cycle(c).profile)
            if len(nodes) == 0 or not self.pre_filter(cycle).ok:
                continue
            st: _State | None = cycle.data.get(self.name)
            if st is None or not st.to_allocate:
                continue
            try:
                fits = nodes[self.filter(cycle, nodes).code == 0]
                raw = self.score(cycle, fits)
            except (FilterAborted, PodNotHandled):
                continue
            per_node = np.zeros(model.state.num_nodes, dtype=np.int64)
            per_node[fits] = self.normalize(cycle, raw)
            add_arrival_scores(model, c, per_node, SCORE_SCALE * weight, objective)

    filter_fidelity = Fidelity.RELAXED

    def restrict(self, model: BatchModel, classes: list[PodClass]) -> None:
        """The greedy verdict over every node, against the claims allocated before the batch."""
        model.restrict_by_filter(self, classes)

    def encode_filter(self, model: BatchModel, classes: list[PodClass]) -> None:
        """The devices the batch's pods take from each other, per node, for the classes whose claims to
        allocate have no constraint and are not shared with another pod: each request of a class needs
        ``count`` free matching devices per pod the batch puts on the node (All: every matching device),
        and no device serves two; a ``firstAvailable`` request splits the class's pods on the node among
        its subrequests, each pod taking one; a ``matchAttribute`` constraint splits them among the values
        of its attribute, a pod's constrained devices all sharing one; an ``adminAccess`` request takes no
        device from another pod.
        Devices that match the same (sub)requests are interchangeable, so they are counted per such group:
        an exact transportation problem, which the allocator's complete search realizes. Classes with more
        than one constraint or a shared claim stay RELAXED: the re-check allocates their devices."""
        from ortools.sat.python import cp_model

        demands: dict[int, list[Demand]] = {}
        for c in classes:
            spec = self._exact_demands(c.rep, model.cycle(c).profile)
            if spec:
                demands[c.index] = spec
        if not demands:
            return
        allocated = self.book.allocated_devices
        for n, terms in model.each(enumerate(model.node_arrivals()), model.CHECK_EVERY):
            terms = [t for t in terms if t[0].index in demands]
            if not terms:
                continue
            cands = self._free_candidates(n, allocated)
            if cands is None:
                continue
            rows: list[tuple[Any, int, tuple[bool, ...]]] = []  # (pods variable, devices per pod, matches)
            for c, v, ub in terms:
                rows += self._demand_rows(model, n, c.index, v, ub, demands[c.index], cands)
            groups: dict[tuple[bool, ...], int] = {}
            for i in range(len(cands)):
                sig = tuple(m[i] for _, _, m in rows)
                groups[sig] = groups.get(sig, 0) + 1
            use: dict[tuple[bool, ...], list[Any]] = {g: [] for g in groups}
            for j, (v, k, _) in enumerate(rows):
                zs = []
                for g, size in groups.items():
                    if g[j]:
                        z = model.cp.new_int_var(0, size, f"dra{n}_{j}_{len(use[g])}")
                        zs.append(z)
                        use[g].append(z)
                model.cp.add(cp_model.LinearExpr.sum(zs) == k * v)
            for g, size in groups.items():
                if len(use[g]) > 1:
                    model.cp.add(cp_model.LinearExpr.sum(use[g]) <= size)

    def _demand_rows(self, model: BatchModel, node: int, ci: int, v: Any, ub: int, requests: list[Demand],
                     cands: list[tuple[Any, int]]) -> list[tuple[Any, int, tuple[bool, ...]]]:
        """One class's demand rows on one node: per request (per subrequest of a ``firstAvailable`` one,
        with the pods that take it; per value of a ``matchAttribute`` constraint's attribute, with the
        pods whose devices share it), the pods variable, the devices each takes and the devices that
        match. None of them when a selector fails to evaluate (the Filter refused such nodes already)."""
        from ortools.sat.python import cp_model

        attribute = next((d.attribute for d in requests if d.attribute), None)
        values: list[Any] = [None]
        shares: list[Any] = [v]
        if attribute is not None:
            held = [_attribute(cand, attribute) for cand, _ in cands]
            values = sorted({x for x in held if x is not None}, key=repr)
            shares = [model.cp.new_int_var(0, ub, f"dra{node}_{ci}_v{i}") for i in range(len(values))]
            model.cp.add(cp_model.LinearExpr.sum(shares) == v)
        rows = []
        for r, demand in enumerate(requests):
            matches = [self._matching(cands, exprs) for exprs, _, _ in demand.alternatives]
            if any(m is None for m in matches):
                return []
            for vi, (value, pods) in enumerate(zip(values, shares) if demand.attribute else [(None, v)]):
                if len(demand.alternatives) == 1:
                    takers = [pods]
                else:
                    takers = [model.cp.new_int_var(0, ub, f"dra{node}_{ci}_{r}_{vi}_{s}")
                              for s in range(len(demand.alternatives))]
                    model.cp.add(cp_model.LinearExpr.sum(takers) == pods)
                for var, (_, mode, count), match in zip(takers, demand.alternatives, matches):
                    assert match is not None
                    if demand.attribute:
                        match = tuple(m and _attribute(c, demand.attribute) == value
                                      for m, (c, _) in zip(match, cands))
                    rows.append((var, sum(match) if mode == ALLOCATION_MODE_ALL else count, match))
        return rows

    def _exact_demands(self, pod: int, profile: object) -> list[Demand] | None:
        """The pod's requests that take devices, each as its alternatives (one for ``exactly``, one per
        subrequest for ``firstAvailable``) of (selector expressions, mode, count) and the attribute a
        ``matchAttribute`` constraint makes its devices share; None when the pod's claims hold more than
        one constraint, a ``distinctAttribute`` or a subrequest named in a constraint, or a claim is shared
        with another pod (or when it allocates nothing)."""
        cycle = CycleState(pod, self.snapshot, profile)  # type: ignore[arg-type]
        if not self.pre_filter(cycle).ok:
            return None
        st: _State | None = cycle.data.get(self.name)
        if st is None or not st.to_allocate:
            return None
        constraints = [k for claim in st.to_allocate for k in claim.obj.spec.devices.constraints]
        if len(constraints) > 1 or any(not k.match_attribute or k.distinct_attribute or
                                       any("/" in r for r in k.requests) for k in constraints):
            return None
        out = []
        for claim in st.to_allocate:
            if not claim.generated and self._claim_shared(claim):
                return None
            own = claim.obj.spec.devices.constraints
            for req in claim.obj.spec.devices.requests:
                if req.exactly is not None and req.exactly.admin_access:
                    continue  # admin access takes no device from another pod
                subs = [req.exactly] if req.exactly is not None else req.first_available
                alternatives = []
                for sub in subs:
                    cls = self.classes[sub.device_class_name]
                    exprs = [sel.cel.expression for sel in (*cls.spec.selectors, *sub.selectors)
                             if sel.cel is not None]
                    alternatives.append((exprs, sub.allocation_mode, sub.count))
                bound = own[0].match_attribute if own and (not own[0].requests or req.name in own[0].requests) \
                    else None
                out.append(Demand(alternatives, bound))
        return out

    def _claim_shared(self, claim: Claim) -> bool:
        """Whether more than one pod names this claim."""
        users = sum(1 for entries in self.book.entries if not isinstance(entries, str)
                    for _, key in entries if key == claim.key)
        return users > 1

    def _free_candidates(self, node: int, allocated: AbstractSet[str]) -> list[tuple[Any, int]] | None:
        """The devices of the node's usable pools that no claim holds, in the allocator's order; None when
        the node's pools cannot be read (an unmodelled field: left RELAXED)."""
        try:
            pools = self.allocator.index.pools(self.state.nodes[node])
        except (ValueError, NotImplementedError):
            return None
        return [(cand, di) for pool in pools if not pool.incomplete and not pool.invalid
                for cand, di in self.allocator.candidates(pool) if cand.id not in allocated]

    def _matching(self, cands: list[tuple[Any, int]], exprs: list[str]) -> tuple[bool, ...] | None:
        try:
            return tuple(all(self.allocator.selector_matches(e, cand, di) for e in exprs) for cand, di in cands)
        except Exception:  # noqa: BLE001 - a CEL error: the Filter already refused such nodes
            return None


def _first_available_score(claims: Sequence[ResourceClaim], results: Sequence[AllocationResult]) -> int:
    """``computeScore`` over the pod's claims and the node's allocation results, index by index."""
    score = 0
    for i, claim in enumerate(claims):
        if i >= len(results):
            raise FilterAborted(names.DYNAMIC_RESOURCES, f"number of allocations {len(results)} is smaller "
                                "than number of claims", "score")
        subs = {r.request for r in results[i].devices.results if "/" in r.request}
        for req in claim.spec.devices.requests:
            for j, sub in enumerate(req.first_available):
                if f"{req.name}/{sub.name}" in subs:
                    score += FIRST_AVAILABLE_MAX - j
    return score
