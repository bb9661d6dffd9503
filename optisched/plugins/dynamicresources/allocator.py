"""The structured allocator: which devices a node gives a pod's unallocated ResourceClaims.

Upstream: ``staging/src/k8s.io/dynamic-resource-allocation/structured/internal/incubating/
allocator_incubating.go`` of v1.35.4. ``structured/allocator.go`` picks the first implementation whose
supported features cover the enabled ones; 1.35's default gates enable DRAAdminAccess and
DRAPrioritizedList (``pkg/features/kube_features.go``), which ``stable`` does not support, so kube-scheduler
runs ``incubating``. Its search is depth first and the first complete solution wins: claims in the pod's
order, each claim's requests in order, each request's devices (``count``, or every matching device for
``All``) tried in pool order with backtracking; ``firstAvailable`` tries its subrequests in order and
names results ``request/subrequest``; ``adminAccess`` may take devices in use; ``matchAttribute``
constraints; class selectors before request selectors. 1.35.4's quirks are kept: after a device of an
``All`` subrequest the search goes on with subrequest 0's data (``deviceIndices`` without
``subRequestIndex``), so an ``All`` subrequest after the first fails when subrequest 0 is an ``All`` without
devices, and otherwise stops at subrequest 0's count.

Order: 1.35 walks pools in Go map order (random); optisched fixes one order, pools by (driver, pool name),
a pool's slices by name, devices as listed in their slice, which is the order v1.36.2 sorts into
(``sortPoolsByID``, ``sortSlicesByName`` in its ``pools_incubating.go``); see :mod:`.pools`.

Gates (the profile's, :mod:`optisched.profile.gates`): with DRAAdminAccess off, a request that sets
``adminAccess`` is an error (``validateDeviceRequest``'s ``admin access is requested, but the feature is
disabled``); with DRAPrioritizedList off the plugin's PreFilter refuses ``firstAvailable`` before the
allocator runs. With both off upstream picks ``stable``, which for the requests left (no subrequests, no
admin access) searches as ``incubating`` does.

Features whose gates are off by default in 1.35 (partitionable devices' counters and per-device node
selection, device taints, binding conditions, consumable capacity with ``distinctAttribute``, extended
resources) are not modelled: a slice, class or claim using one makes :meth:`Allocator.allocate` raise
``NotImplementedError`` naming the field (the API server drops those fields unless the gate is on).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Protocol

from ...model.dra import (
    ALLOCATION_MODE_ALL,
    ALLOCATION_MODE_EXACT_COUNT,
    AllocationResult,
    Device,
    DeviceAllocation,
    DeviceAllocationResult,
    DeviceClaim,
    DeviceClass,
    DeviceSubRequest,
    ResourceClaim,
    ResourceSlice,
    device_id,
)
from ...model.objects import Node
from .pools import Pool, SliceIndex, create_node_selector
from .requests import Candidate, MatchAttribute, RequestData, allocation_config, kobj, unmodelled_request

__all__ = ["ALLOCATION_RESULTS_MAX_SIZE", "AllocationError", "Allocator", "FailedOnNode", "SelectorEvaluator"]

ALLOCATION_RESULTS_MAX_SIZE = 32  # resourceapi.AllocationResultsMaxSize


class AllocationError(Exception):
    """``Allocate`` returned an error: the scheduling attempt aborts (a CEL error, a missing DeviceClass,
    a claim the allocator cannot handle). ``str()`` is upstream's message."""

    on_node = False


class FailedOnNode(AllocationError):
    """An error wrapping ``ErrFailedAllocationOnNode``: only this node fails, with the message as its
    Unschedulable reason (``dynamicresources.go`` Filter); other nodes go on."""

    on_node = True


class SelectorEvaluator(Protocol):
    """Evaluates a DeviceClass's or request's CEL selector on one device. Raises an exception whose
    ``str()`` is CEL's error text; one with a true ``compile_error`` attribute is a compile error."""

    def matches(self, expression: str, driver: str, device: Device) -> bool: ...


class _MaxSizeExceeded(Exception):  # errAllocationResultMaxSizeExceeded
    pass


class Allocator:
    """``incubating.Allocator`` over one cluster state: the DeviceClasses by name, every ResourceSlice,
    and the CEL selectors' evaluator. ``allocate`` may be called for many nodes and pods; the classes and
    slices are read as they are now (each node's pools and each selector's outcome on a device are kept),
    so a change to them needs a new Allocator, while ``allocated`` is given per call."""

    def __init__(self, classes: Mapping[str, DeviceClass], slices: Sequence[ResourceSlice],
                 cel: SelectorEvaluator, admin_access: bool = True) -> None:
        self.classes = classes
        self.admin_access = admin_access  # Features.AdminAccess: the DRAAdminAccess gate
        self.index = SliceIndex.build(slices)
        self.cel = cel
        self._slice_keys = {id(s): i for i, s in enumerate(self.index.slices)}
        self._cel_cache: dict[tuple[str, int, int], bool | Exception] = {}
        self._candidate_cache: dict[int, list[tuple[Candidate, int]]] = {}  # pools live in self.index
        self.invocations = 0  # allocateOne calls, upstream's Stats.NumAllocateOneInvocations

    def allocate(self, node: Node, claims: Sequence[ResourceClaim],
                 allocated: AbstractSet[str]) -> list[AllocationResult] | None:
        """One ``AllocationResult`` per claim, in order, or None when ``node`` cannot satisfy them all.
        ``allocated``: ``device_id`` strings of devices that claims allocated elsewhere hold."""
        try:
            pools = self.index.pools(node)
        except ValueError as e:
            raise AllocationError(f"gather pool information: {e}") from None
        return _Search(self, node, list(claims), allocated, pools).run()

    def candidates(self, pool: Pool) -> list[tuple[Candidate, int]]:
        hit = self._candidate_cache.get(id(pool))
        if hit is None:
            keys = self._slice_keys
            hit = [(Candidate(device_id(pool.driver, pool.name, d.name), pool.name, d, s, keys[id(s)]), di)
                   for s in pool.slices for di, d in enumerate(s.spec.devices)]
            self._candidate_cache[id(pool)] = hit
        return hit

    def selector_matches(self, expression: str, candidate: Candidate, device_index: int) -> bool:
        """One CEL selector on one device; outcomes (errors too) are kept, CEL being pure."""
        key = (expression, candidate.slice_key, device_index)
        hit = self._cel_cache.get(key)
        if hit is None:
            try:
                hit = bool(self.cel.matches(expression, candidate.slice.spec.driver, candidate.device))
            except Exception as e:  # noqa: BLE001 (whatever the evaluator raises is CEL's error)
                hit = e
            self._cel_cache[key] = hit
        if isinstance(hit, Exception):
            raise hit
        return hit


class _Search:
    """One ``Allocate`` call: ``allocator`` in ``allocator_incubating.go``."""

    def __init__(self, owner: Allocator, node: Node, claims: list[ResourceClaim],
                 allocated: AbstractSet[str], pools: list[Pool]) -> None:
        self.owner, self.node, self.claims, self.allocated, self.pools = owner, node, claims, allocated, pools
        self.requests: dict[tuple[int, int, int], RequestData] = {}
        self.constraints: list[list[MatchAttribute]] = []
        self.matches: dict[tuple[str, int, int, int], bool] = {}
        self.allocating: dict[str, set[int]] = {}
        self.results: list[list[tuple[RequestData, Candidate]]] = [[] for _ in claims]

    # ------------------------------------------------------------ setup
    def run(self) -> list[AllocationResult] | None:
        for ci, claim in enumerate(self.claims):
            self._prepare(ci, claim)
        try:
            done = self._one(0, 0, 0, 0, False)
        except _MaxSizeExceeded:  # reaching the top, upstream's sentinel is returned as an error
            raise AllocationError("allocation max size exceeded") from None
        if not done:
            for pool in self.pools:
                if pool.invalid:
                    raise FailedOnNode("invalid resource pools were encountered")
            return None
        return [self._result(ci, claim) for ci, claim in enumerate(self.claims)]

    def _prepare(self, ci: int, claim: ResourceClaim) -> None:
        devices: DeviceClaim = claim.spec.devices
        min_devices = 0
        for ri, request in enumerate(devices.requests):
            reason = unmodelled_request(claim, request)
            if reason is not None:
                raise NotImplementedError(reason)
            if request.first_available:
                least = None
                for si, sub in enumerate(request.first_available):
                    rd = self._validate(ci, ri, si, sub, sub.name, request.name, False)
                    self.requests[(ci, ri, si)] = rd
                    least = rd.num_devices if least is None else min(least, rd.num_devices)
                min_devices += least or 0
            else:
                exact = request.exactly
                assert exact is not None  # the model makes one of exactly and firstAvailable set
                rd = self._validate(ci, ri, 0, exact, request.name, None, bool(exact.admin_access),
                                    exact.admin_access is not None)
                self.requests[(ci, ri, 0)] = rd
                min_devices += rd.num_devices
        if min_devices > ALLOCATION_RESULTS_MAX_SIZE:
            raise AllocationError(f"claim {kobj(claim)}: number of requested devices {min_devices} exceeds "
                                  f"the claim limit of {ALLOCATION_RESULTS_MAX_SIZE}")
        constraints = []
        for i, c in enumerate(devices.constraints):
            if c.match_attribute is not None:
                constraints.append(MatchAttribute(c.requests, c.match_attribute))
            elif c.distinct_attribute is not None:
                raise NotImplementedError(f"ResourceClaim {kobj(claim)}: spec.devices.constraints[{i}]"
                                          ".distinctAttribute (DRAConsumableCapacity) is not modelled")
            else:
                raise AllocationError(f"claim {kobj(claim)}, constraint #{i}: empty constraint "
                                      "(unsupported constraint type?)")
        self.constraints.append(constraints)

    def _validate(self, ci: int, ri: int, si: int, spec: DeviceSubRequest, name: str, parent: str | None,
                  admin: bool, has_admin: bool = False) -> RequestData:
        """``validateDeviceRequest``: the class, and for ``All`` the matching devices of every pool.
        ``has_admin``: the request sets ``adminAccess`` (even to false), refused with the gate off."""
        claim = self.claims[ci]
        where = f"claim {kobj(claim)}, request {name}"
        for i, sel in enumerate(spec.selectors):
            if sel.cel is None:
                raise AllocationError(f"{where}, selector #{i}: CEL expression empty "
                                      "(unsupported selector type?)")
        if has_admin and not self.owner.admin_access:
            raise AllocationError(f"{where}: admin access is requested, but the feature is disabled")
        if not spec.device_class_name:
            raise AllocationError(f"{where}: missing device class name (unsupported request type?)")
        cls = self.owner.classes.get(spec.device_class_name)
        if cls is None:
            raise AllocationError(f"{where}: could not retrieve device class {spec.device_class_name}: "
                                  f'deviceclass.resource.k8s.io "{spec.device_class_name}" not found')
        if cls.spec.extended_resource_name is not None:
            raise NotImplementedError(f"DeviceClass {cls.metadata.name}: spec.extendedResourceName "
                                      "(DRAExtendedResource) is not modelled")
        rd = RequestData(name, parent, cls, spec, admin)
        if spec.allocation_mode == ALLOCATION_MODE_EXACT_COUNT:
            rd.num_devices = spec.count
        elif spec.allocation_mode == ALLOCATION_MODE_ALL:
            for pool in self.pools:
                if pool.incomplete:
                    raise AllocationError(f"{where}: asks for all devices, but resource pool {pool.id} is "
                                          "currently being updated")
                if pool.invalid:
                    raise AllocationError(f"{where}: asks for all devices, but resource pool {pool.id} is "
                                          "currently invalid")
                for cand, di in self._candidates(pool):
                    if self._selectable((ci, ri, si), rd, cand, di):
                        rd.all_devices.append(cand)
            rd.num_devices = len(rd.all_devices)
        else:
            raise AllocationError(f"{where}: unsupported count mode {spec.allocation_mode}")
        return rd

    def _candidates(self, pool: Pool) -> list[tuple[Candidate, int]]:
        """The pool's devices in slice order, each with its index in its slice."""
        return self.owner.candidates(pool)

    # ------------------------------------------------------------ search
    def _in_use(self, did: str) -> bool:
        return did in self.allocated or bool(self.allocating.get(did))

    def _one(self, ci: int, ri: int, si: int, di: int, in_sub: bool) -> bool:
        """``allocateOne``: place device ``di`` of request ``ri`` (subrequest ``si``) of claim ``ci`` and
        everything after it. Raises ``_MaxSizeExceeded`` as upstream returns its sentinel error."""
        self.owner.invocations += 1
        if ci >= len(self.claims):
            return True
        claim = self.claims[ci]
        if ri >= len(claim.spec.devices.requests):
            try:
                return self._one(ci + 1, 0, 0, 0, False)
            except _MaxSizeExceeded:
                return False  # another choice in this claim may need fewer devices
        key = (ci, ri, si)
        rd = self.requests[key]
        if not in_sub and rd.parent is not None:
            return self._first_available(ci, ri, di, key)
        all_mode = rd.spec.allocation_mode == ALLOCATION_MODE_ALL
        if all_mode and not rd.all_devices:
            return False
        if di >= rd.num_devices:
            return self._one(ci, ri + 1, 0, 0, False)
        if len(self.results[ci]) + rd.num_devices - di > ALLOCATION_RESULTS_MAX_SIZE:
            raise _MaxSizeExceeded
        if all_mode:
            cand = rd.all_devices[di]
            undo = self._take(ci, rd, cand, must=True)
            if undo is None:
                return False  # every device is needed: no other order helps
            # upstream continues with subRequestIndex 0 here (deviceIndices without it), kept as is
            return self._then(undo, ci, ri, 0, di + 1, in_sub)
        for pool in self.pools:
            if pool.incomplete or pool.invalid:
                continue
            for cand, dev_index in self._candidates(pool):
                if rd.admin_access and ci in self.allocating.get(cand.id, ()):
                    continue
                if not rd.admin_access and self._in_use(cand.id):
                    continue
                if not self._selectable(key, rd, cand, dev_index):
                    continue
                undo = self._take(ci, rd, cand, must=False)
                if undo is None:
                    continue
                if self._then(undo, ci, ri, si, di + 1, in_sub):
                    return True
        return False

    def _then(self, undo: Callable[[], None], ci: int, ri: int, si: int, di: int, in_sub: bool) -> bool:
        try:
            done = self._one(ci, ri, si, di, in_sub)
        except BaseException:
            undo()
            raise
        if not done:
            undo()
        return done

    def _first_available(self, ci: int, ri: int, di: int, key: tuple[int, int, int]) -> bool:
        all_exceeded = True
        si = 0
        while (ci, ri, si) in self.requests:
            try:
                ok = self._one(ci, ri, si, di, True)
            except _MaxSizeExceeded:
                si += 1
                continue  # the next subrequest may ask for fewer devices
            all_exceeded = False
            if ok:
                self.requests[key].selected = si
                return True
            si += 1
        if all_exceeded:
            raise _MaxSizeExceeded
        return False

    def _selectable(self, key: tuple[int, int, int], rd: RequestData, cand: Candidate,
                    dev_index: int) -> bool:
        """``isSelectable``: the class's selectors, then the request's, all must match."""
        if cand.device.binding_conditions:
            return False  # DRADeviceBindingConditions is off
        mkey = (cand.id, *key)
        hit = self.matches.get(mkey)
        if hit is None:
            hit = (self._selectors_match(key[0], rd, cand, dev_index, True)
                   and self._selectors_match(key[0], rd, cand, dev_index, False))
            self.matches[mkey] = hit
        return hit

    def _selectors_match(self, ci: int, rd: RequestData, cand: Candidate, dev_index: int,
                         of_class: bool) -> bool:
        selectors = rd.device_class.spec.selectors if of_class else rd.spec.selectors
        who = f"class {rd.device_class.metadata.name}" if of_class else f"claim {kobj(self.claims[ci])}"
        for i, sel in enumerate(selectors):
            assert sel.cel is not None  # checked by _validate (request) or read as such (class)
            try:
                ok = self.owner.selector_matches(sel.cel.expression, cand, dev_index)
            except NotImplementedError:
                raise
            except Exception as e:  # noqa: BLE001
                kind = "compile" if getattr(e, "compile_error", False) else "runtime"
                raise AllocationError(f"{who}: selector #{i}: CEL {kind} error: {e}") from None
            if not ok:
                return False
        return True

    def _take(self, ci: int, rd: RequestData, cand: Candidate, *, must: bool) -> Callable[[], None] | None:
        """``allocateDevice``: use ``cand`` for ``rd`` if it is free and keeps the claim's constraints;
        returns how to undo it, or None."""
        if rd.admin_access and ci in self.allocating.get(cand.id, ()):
            return None
        if not rd.admin_access and self._in_use(cand.id):
            return None
        base = rd.parent if rd.parent is not None else rd.name
        sub = rd.name if rd.parent is not None else None
        constraints = self.constraints[ci]
        for i, c in enumerate(constraints):
            if not c.add(base, sub, cand.device, cand.slice.spec.driver):
                if must:
                    raise AllocationError(f"claim {kobj(self.claims[ci])}, request {rd.name}: cannot add "
                                          f"device {cand.id} because a claim constraint would not be "
                                          "satisfied")
                for c2 in constraints[:i]:
                    c2.remove(base, sub)
                return None
        self.allocating.setdefault(cand.id, set()).add(ci)
        results = self.results[ci]
        before = len(results)
        results.append((rd, cand))

        def undo() -> None:
            for c in constraints:
                c.remove(base, sub)
            self.allocating[cand.id].discard(ci)
            del results[before:]
        return undo

    # ------------------------------------------------------------ result
    def _result(self, ci: int, claim: ResourceClaim) -> AllocationResult:
        picked = self.results[ci]
        devices = [DeviceAllocationResult(request=rd.full_name, driver=c.slice.spec.driver, pool=c.pool,
                                          device=c.device.name,
                                          admin_access=True if rd.admin_access else None)
                   for rd, c in picked]
        try:
            selector = create_node_selector([c.slice for _, c in picked])
        except ValueError as e:
            raise AllocationError(f"create NodeSelector for claim {claim.metadata.name}: {e}") from None
        config = allocation_config(claim, lambda ri: self._chosen(ci, ri))
        return AllocationResult(devices=DeviceAllocation(results=devices, config=config),
                                node_selector=selector)

    def _chosen(self, ci: int, ri: int) -> RequestData:
        """The request, or for ``firstAvailable`` the subrequest the search chose."""
        rd = self.requests[(ci, ri, 0)]
        return self.requests[(ci, ri, rd.selected)] if rd.parent is not None else rd
