"""The ResourceClaims of a run: which claim each pod's ``spec.resourceClaims`` entry names, whether it is
allocated and to which devices, and which pods it is reserved for, as a run changes them.

Upstream (v1.35.4): ``k8s.io/dynamic-resource-allocation/resourceclaim/resourceclaim.go`` (``Name``,
``IsForPod``, ``IsReservedForPod``), the plugin's ``foreachPodResourceClaim`` and, for what the cluster
does between two scheduling cycles, the resourceclaim controller (``pkg/controller/resourceclaim``).

What optisched assumes where no controller runs:

- **Claims from templates.** A pod whose entry names a ResourceClaimTemplate and whose
  ``status.resourceClaimStatuses`` has no entry for it (a dump taken before the resourceclaim controller
  saw the pod) gets the claim that controller would make: name ``<pod>-<entry>-<5 characters>`` (random
  upstream; here derived from the pod's uid, or its namespace and name, so runs repeat), the template's
  labels, annotations and spec, the annotation ``resource.kubernetes.io/pod-claim-name``, a controller
  owner reference to the pod, and the status entry. When the template does not exist either, the pod's
  claim is never created and the pod never leaves PreEnqueue.
- **Binding** completes before the next cycle: a placed pod's claims are allocated (the devices the
  Filter found on its node) and reserved for it.
- **Deletion of a pod** (a preemption victim) removes it from its claims' ``reservedFor``; a claim left
  reserved for nobody is deallocated, its devices free for the next cycle.
- **An evicted pod's replacement** (a pending pod whose uid owns claims its status does not name: a replay
  of evictions re-creates owned pods without their status) does not inherit its predecessor's claims:
  those were deleted with that pod, and the replacement gets new ones from its templates.
"""
from __future__ import annotations

import hashlib
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ...model.dra import POD_CLAIM_NAME_ANNOTATION, AllocationResult, ResourceClaim, ResourceClaimTemplate
from ...model.objects import Pod
from ...model.selectors import node_selector_mask

if TYPE_CHECKING:
    from ...model.snapshot import Snapshot
    from ...model.state import ClusterState

__all__ = ["Claim", "ClaimBook", "ClaimNotReady", "claim_book", "generated_name"]

_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery/pkg/util/rand: what generateName draws from


class ClaimNotReady(Exception):
    """A pod's claim that does not exist, is being deleted or is not the pod's own: ``foreachPodResourceClaim``'s
    errors, which keep the pod in PreEnqueue (and make PreFilter UnschedulableAndUnresolvable)."""


def generated_name(pod: Pod, entry: str) -> str:
    """The name the resourceclaim controller gives a claim made from a template: ``<pod>-<entry>-`` and five
    characters (``generateName``; truncated as ``names.SimpleNameGenerator`` does past 58 characters)."""
    base = f"{pod.metadata.name}-{entry}-"
    if len(base) > 58:
        base = base[:58]
    seed = hashlib.sha256((pod.metadata.uid or pod.key).encode() + b"\0" + entry.encode()).digest()
    return base + "".join(_ALPHABET[b % len(_ALPHABET)] for b in seed[:5])


@dataclass
class Claim:
    """One ResourceClaim as a run sees it; ``allocation`` and ``reserved_for`` (pod uids, or ``ns/name``
    for pods without one) change as pods are bound and deleted."""

    obj: ResourceClaim
    allocation: AllocationResult | None
    reserved_for: list[str] = field(default_factory=list)
    generated: bool = False
    devices: tuple[str, ...] = ()  # the allocated device ids (``driver/pool/device``)
    held: tuple[str, ...] = ()  # those the allocation takes from others: all but the admin-access ones

    @property
    def key(self) -> str:
        return self.obj.key

    @property
    def owner_uid(self) -> str | None:
        for ref in self.obj.metadata.owner_references:
            if ref.controller:
                return ref.uid
        return None

    def set_allocation(self, allocation: AllocationResult | None) -> None:
        self.allocation = allocation
        results = allocation.devices.results if allocation is not None else []
        self.devices = tuple(r.id for r in results)
        # a device allocated with admin access is not considered allocated (``foreachAllocatedDevice``,
        # allocateddevices.go of v1.35.4): another claim may still get it
        self.held = tuple(r.id for r in results if not r.admin_access)


def pod_ref(pod: Pod) -> str:
    """How ``reservedFor`` names a pod: its uid (``ResourceClaimConsumerReference.UID``), else its key."""
    return pod.metadata.uid or pod.key


class ClaimBook:
    """Every claim of the cluster (loaded or generated), what each pod's entries resolve to, and the
    devices in use. One per snapshot (``snapshot.shared(ClaimBook)``): engines that place pods tell it
    through :meth:`bind` and :meth:`delete`; preemption dry runs do not (upstream's dry run keeps the
    allocated devices gathered at PreFilter)."""

    def __init__(self, snapshot: Snapshot) -> None:
        state: ClusterState = snapshot.state
        self.state = state
        cluster = state.cluster
        self.claims: dict[str, Claim] = {}
        gone = _left_with_their_pod(state)
        for c in cluster.resource_claims:
            if c.key in gone:
                continue
            alloc = c.status.allocation
            claim = Claim(c, None, [r.uid or f"{c.metadata.namespace}/{r.name}" for r in c.status.reserved_for])
            claim.set_allocation(alloc)
            self.claims[c.key] = claim
        templates: dict[tuple[str, str], ResourceClaimTemplate] = {
            (t.metadata.namespace or "default", t.metadata.name): t for t in cluster.resource_claim_templates}
        # per pod row: [(entry name, claim key or None: no claim to use), ...], or the ClaimNotReady text
        self.entries: list[list[tuple[str, str | None]] | str] = []
        for pod in state.pods:
            self.entries.append(self._resolve(pod, templates))
        self._in_use: dict[str, int] = {}
        for claim in self.claims.values():
            self._count(claim, +1)
        # the pools (``driver/pool``) whose devices were taken or freed, in order: a reader that keeps
        # answers per node knows from it which answers still hold
        self.changed_pools: list[str] = []
        self._masks: dict[str, np.ndarray] = {}

    # ------------------------------------------------------------------ resolution
    def _resolve(self, pod: Pod, templates: dict) -> list[tuple[str, str | None]] | str:
        if not pod.spec.resource_claims:
            return []
        ns = pod.metadata.namespace or "default"
        statuses = {s.name: s for s in pod.status.resource_claim_statuses}
        out: list[tuple[str, str | None]] = []
        for entry in pod.spec.resource_claims:
            must_own = False
            if entry.resource_claim_name is not None:
                name: str | None = entry.resource_claim_name
            elif entry.name in statuses:
                name, must_own = statuses[entry.name].resource_claim_name, True
            else:
                template = templates.get((ns, entry.resource_claim_template_name))
                if template is None:
                    return f'pod "{ns}/{pod.metadata.name}": ResourceClaim not created yet'
                name, must_own = self._generate(pod, entry.name, template), True
            if name is None:  # the controller decided no claim is needed (resourceclaim.Name's nil name)
                out.append((entry.name, None))
                continue
            claim = self.claims.get(f"{ns}/{name}")
            if claim is None:
                return f'resourceclaim.resource.k8s.io "{name}" not found'
            if claim.obj.metadata.deletion_timestamp is not None:
                return f'resourceclaim "{name}" is being deleted'
            if must_own and claim.owner_uid != pod.metadata.uid:  # metav1.IsControlledBy
                return (f"ResourceClaim {ns}/{name} was not created for pod {ns}/{pod.metadata.name} "
                        "(pod is not owner)")
            out.append((entry.name, claim.key))
        return out

    def _generate(self, pod: Pod, entry: str, template: ResourceClaimTemplate) -> str:
        ns = pod.metadata.namespace or "default"
        name = generated_name(pod, entry)
        meta = template.spec.metadata or {}
        obj = ResourceClaim.model_validate({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": ns, "labels": dict(meta.get("labels") or {}),
                         "annotations": {**(meta.get("annotations") or {}), POD_CLAIM_NAME_ANNOTATION: entry},
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pod.metadata.name,
                                              "uid": pod.metadata.uid, "controller": True}]},
            "spec": template.spec.spec.model_dump(by_alias=True, exclude_none=True)})
        self.claims[obj.key] = Claim(obj, None, generated=True)
        return name

    def claims_of(self, pod: int) -> list[tuple[str, Claim | None]]:
        """The pod's entries and their claims (None: the entry needs no claim); ClaimNotReady when one is
        missing, being deleted or not the pod's own."""
        entries = self.entries[pod]
        if isinstance(entries, str):
            raise ClaimNotReady(entries)
        return [(e, self.claims[k] if k is not None else None) for e, k in entries]

    def not_ready(self, pod: int) -> str | None:
        """Why PreEnqueue holds the pod back, or None."""
        entries = self.entries[pod]
        return entries if isinstance(entries, str) else None

    # ------------------------------------------------------------------ devices in use
    def _count(self, claim: Claim, sign: int) -> None:
        if hasattr(self, "changed_pools"):
            self.changed_pools.extend(dict.fromkeys(d.rsplit("/", 1)[0] for d in claim.held))
        for d in claim.held:
            n = self._in_use.get(d, 0) + sign
            if n:
                self._in_use[d] = n
            else:
                self._in_use.pop(d, None)

    @property
    def allocated_devices(self) -> AbstractSet[str]:
        """Every device some claim's allocation holds (``ListAllAllocatedDevices``): a live view, which a
        cycle reads while nothing is bound or deleted."""
        return self._in_use.keys()

    def available_on(self, claim: Claim) -> np.ndarray | None:
        """The nodes an allocated claim can be used on (its allocation's nodeSelector), None: every node."""
        alloc = claim.allocation
        if alloc is None or alloc.node_selector is None:
            return None
        mask = self._masks.get(claim.key)
        if mask is None:
            mask = self._masks[claim.key] = node_selector_mask(self.state, alloc.node_selector)
        return mask

    # ------------------------------------------------------------------ what a run changes
    def bind(self, pod: int, allocations: dict[str, AllocationResult]) -> None:
        """The pod is bound: ``allocations`` (claim key -> result) are written (PreBind's ``bindClaim``) and
        every claim of the pod is reserved for it."""
        ref = pod_ref(self.state.pods[pod])
        for _, claim in self.claims_of(pod):
            if claim is None:
                continue
            if claim.key in allocations and claim.allocation is None:
                claim.set_allocation(allocations[claim.key])
                self._count(claim, +1)
                self._masks.pop(claim.key, None)
            if ref not in claim.reserved_for:
                claim.reserved_for.append(ref)

    def delete(self, pod: int) -> list[str]:
        """The pod is deleted: it leaves its claims' ``reservedFor``; the claims reserved for nobody then are
        deallocated (returned, by key)."""
        if isinstance(self.entries[pod], str):
            return []
        ref = pod_ref(self.state.pods[pod])
        freed = []
        for _, claim in self.claims_of(pod):
            if claim is None or ref not in claim.reserved_for:
                continue
            claim.reserved_for.remove(ref)
            if not claim.reserved_for and claim.allocation is not None:
                self.deallocate(claim)
                freed.append(claim.key)
        return freed

    def deallocate(self, claim: Claim) -> None:
        """``status.allocation``, ``reservedFor`` and ``devices`` cleared (PostFilter's deallocation)."""
        self._count(claim, -1)
        claim.set_allocation(None)
        claim.reserved_for.clear()
        self._masks.pop(claim.key, None)


def _left_with_their_pod(state: ClusterState) -> set[str]:
    """Claims a pod made from a template whose pod is pending now without naming them: the pod was
    evicted and its controller made a new one (a replay's replacement, :mod:`optisched.plans.landing`), so
    the garbage collector deleted the claim with its owner and its devices are free."""
    pending = {p.metadata.uid: p for i, p in enumerate(state.pods)
               if p.metadata.uid and state.pod_node[i] < 0}
    gone = set()
    for c in state.cluster.resource_claims:
        owner = next((r for r in c.metadata.owner_references if r.controller and r.kind == "Pod"), None)
        pod = pending.get(owner.uid) if owner is not None else None
        named = {s.resource_claim_name for s in pod.status.resource_claim_statuses} if pod is not None else set()
        named |= {e.resource_claim_name for e in pod.spec.resource_claims} if pod is not None else set()
        if pod is not None and c.metadata.name not in named:
            gone.add(c.key)
    return gone


def claim_book(snapshot: Snapshot) -> ClaimBook:
    """The snapshot's one :class:`ClaimBook`."""
    book: ClaimBook = snapshot.shared(ClaimBook)
    return book
