"""VolumeBinding: a pod's claims must be bound, or bindable, on the node.

Upstream: ``pkg/scheduler/framework/plugins/volumebinding/volume_binding.go`` and ``binder.go`` (v1.35).
PreFilter skips pods without claims, stops a pod with a missing claim, a lost claim, a claim being deleted,
or an unbound claim that is not ``WaitForFirstConsumer`` (a missing class counts as Immediate,
``IsDelayBindingMode``). A claim is bound only when fully bound (``volumeName`` and the PV controller's
``pv.kubernetes.io/bind-completed`` annotation, ``isPVCFullyBound``); a claim with ``volumeName`` alone is
pre-bound and counts as an unbound Immediate claim, whatever its class, until the controller binds it.
Filter: a bound claim's PV must exist and its node affinity admit the node. A delayed claim with the
``volume.kubernetes.io/selected-node`` annotation admits that node only and is provisioned there; the
others, smallest request first, take the smallest available PV of their class that fits the node
(capacity, access modes, volume mode, selector, node affinity; a PV pre-bound to the claim wins) or need
dynamic provisioning (``volume_provisioning``: the class's topology and CSIStorageCapacity).
Reserve/assume: when the pod lands, the PVs it matched are taken and the claims it provisions get the
node as selected node, so later pods cannot match those PVs and a later pod sharing such a claim follows
it; storage capacity is not consumed (upstream does not either).
Score (``scorer.go``): with StorageCapacityScoring off (the default in 1.35 and 1.36) the plugin scores
nothing (PreScore skips). With it on (1.37's default; ``--feature-gates`` in 1.35/1.36), a node scores
``VolumeBindingArgs.shape`` of each storage class's utilization ``requested × 100 / capacity`` (100 when
the capacity is 0 or too small), averaged over the classes and rounded: over the PVs the pod's claims
match there when any does (requested: the claims' sizes; capacity: the PVs'), else over the claims it
provisions there (capacity: the first CSIStorageCapacity that fits, in input order: upstream takes the
informer's, i.e. unordered; a class's capacity is the last claim's, as upstream assigns it).
PreFilter narrows the nodes to those local PVs name (``GetEligibleNodes``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...framework import MAX_NODE_SCORE, Code, CycleState, Fidelity, FilterResult, Plugin, Status
from ...model.objects import Pod
from ...model.quantity import value
from ...model.selectors import label_selector_matches, node_selector_mask
from ...model.snapshot import Snapshot
from ...model.state import HOSTNAME_LABEL
from ...model.storage import (
    SELECTED_NODE_ANNOTATION,
    BindingMode,
    PersistentVolume,
    PersistentVolumeClaim,
    pod_claims,
)
from ...optimal.score_terms import encode_static
from ...profile.gates import gate_enabled
from ...profile.plugin_config import DEFAULT_VOLUME_SHAPE
from .. import names
from ..shape_score import broken_linear, go_round
from .volume_common import claim_not_found, storage_of, unresolvable, uses_volumes
from .volume_provisioning import REASON_SPACE, Provisioning

if TYPE_CHECKING:
    from ...optimal.classes import PodClass
    from ...optimal.model import BatchModel
    from ...optimal.tiers import Linear

__all__ = ["REASON_BIND", "REASON_IMMEDIATE", "REASON_NODE", "REASON_PV_MISSING", "REASON_SPACE", "VolumeBinding"]

REASON_BIND = "node(s) didn't find available persistent volumes to bind"
REASON_NODE = "node(s) didn't match PersistentVolume's node affinity"
REASON_PV_MISSING = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
REASON_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
STORAGE_CAPACITY_SCORING = "StorageCapacityScoring"
MAX_CUSTOM_PRIORITY_SCORE = 10  # config.MaxCustomPriorityScore
PV_KEY = tuple[int, str]  # (class index, claim name)


class _ClassResources:
    """``classResourceMap`` over nodes: per storage class, requested and capacity bytes and where it is."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.classes: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def add(self, cls: str, at: np.ndarray, requested: int, capacity: np.ndarray | int, *, accumulate: bool) -> None:
        """Static bindings add capacity (``+=``); a dynamic provision sets it (``=``, the last claim's)."""
        req, cap, present = self.classes.setdefault(cls, (np.zeros(self.n, np.int64), np.zeros(self.n, np.int64),
                                                          np.zeros(self.n, dtype=bool)))
        req[at] += requested
        value = np.broadcast_to(np.asarray(capacity, dtype=np.int64), (self.n,))
        cap[at] = cap[at] + value[at] if accumulate else value[at]
        present |= at

    def any_present(self) -> np.ndarray:
        out = np.zeros(self.n, dtype=bool)
        for _, _, present in self.classes.values():
            out |= present
        return out

    def score(self, shape: list[tuple[int, int]]) -> np.ndarray:
        """``buildScorerFunction``: each class's ``f(requested, capacity)``, averaged over the classes present
        on the node with ``math.Round``; 0 where none is."""
        total = np.zeros(self.n, dtype=np.int64)
        count = np.zeros(self.n, dtype=np.int64)
        for req, cap, present in self.classes.values():
            util = np.where((cap == 0) | (req > cap), 100, (req * 100) // np.maximum(cap, 1))
            total += np.where(present, broken_linear(shape, util), 0)
            count += present
        return np.where(count > 0, go_round(total / np.maximum(count, 1)), 0)


class VolumeBinding(Plugin):
    name = names.VOLUME_BINDING
    points = frozenset({"preFilter", "filter", "preScore", "score", "reserve", "preBind"})
    placement_free = True  # Filter reads no pod on the node: a preemption dry run cannot change it

    def __init__(self, snapshot: Snapshot, profile: object) -> None:
        self.state = snapshot.state
        self.storage = storage_of(snapshot)
        self.taken: dict[str, str] = {}  # PV name -> "ns/claim" it was assumed for
        self.assumed: dict[str, str] = {}  # "ns/claim" -> PV name
        self.selected: dict[str, str] = {}  # "ns/claim" -> node name it was assumed to be provisioned on
        self.provisioning = Provisioning(self.state, self.storage)
        self._names = np.array(self.state.node_names, dtype=object)
        self._masks: dict[str, np.ndarray] = {}
        self._cands: dict[tuple[str, str, int], list[PersistentVolume]] = {}
        self._settled: set[int] = set()  # pods whose claims are all bound
        self.capacity_scoring = gate_enabled(profile, STORAGE_CAPACITY_SCORING)
        args = getattr(profile, "volume_binding", None)
        shape = (getattr(args, "shape", ()) or DEFAULT_VOLUME_SHAPE) if self.capacity_scoring else ()
        # New(): each point's score times MaxNodeScore / MaxCustomPriorityScore
        self.shape = [(p.utilization, p.score * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE)) for p in shape]
        snapshot.subscribe(self)

    # ------------------------------------------------------------------ node masks
    def pv_mask(self, pv: PersistentVolume) -> np.ndarray:
        """Nodes the PV's required node affinity admits (``CheckNodeAffinity``), cached per PV."""
        m = self._masks.get(pv.metadata.name)
        if m is None:
            aff = pv.spec.node_affinity
            m = np.ones(self.state.num_nodes, dtype=bool)
            if aff is not None and aff.required is not None:
                m = node_selector_mask(self.state, aff.required)
            self._masks[pv.metadata.name] = m
        return m

    # ------------------------------------------------------------------ claims
    def _bound(self, ns: str, pvc: PersistentVolumeClaim) -> str:
        """The PV a claim is bound to: fully bound, or assumed for an earlier pod in this run."""
        return pvc.spec.volume_name if pvc.fully_bound else self.assumed.get(f"{ns}/{pvc.metadata.name}", "")

    def selected_node(self, ns: str, pvc: PersistentVolumeClaim) -> str | None:
        """The claim's ``volume.kubernetes.io/selected-node``, as given or as assumed in this run."""
        sel = pvc.metadata.annotations.get(SELECTED_NODE_ANNOTATION)
        return sel if sel is not None else self.selected.get(f"{ns}/{pvc.metadata.name}")

    def classify(self, pod: Pod) -> tuple[list, list, Status]:
        """``podHasPVCs`` and ``GetPodVolumeClaims``: (bound PV names, unbound delayed claims in volume
        order) or the status stopping the pod."""
        cat = self.storage
        ns = pod.metadata.namespace or "default"
        bound, delayed, immediate = [], [], False
        for claim in pod_claims(pod):
            pvc = cat.claim(ns, claim.name)
            if pvc is None:
                return [], [], unresolvable(  # podHasPVCs: normal just after the pod is created
                    f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{claim.name}"'
                    if claim.ephemeral else claim_not_found(claim.name))
            if pvc.status.phase == "Lost":
                return [], [], unresolvable(f'persistentvolumeclaim "{claim.name}" bound to non-existent '
                                            f'persistentvolume "{pvc.spec.volume_name}"')
            if pvc.metadata.deletion_timestamp is not None:
                return [], [], unresolvable(f'persistentvolumeclaim "{claim.name}" is being deleted')
            volume = self._bound(ns, pvc)
            if volume:
                bound.append(volume)
                continue
            sc = cat.classes.get(pvc.class_name) if pvc.class_name else None
            if sc is not None and sc.volume_binding_mode == BindingMode.WAIT_FOR_FIRST_CONSUMER \
                    and not pvc.spec.volume_name:
                delayed.append(pvc)
            else:  # Immediate, or pre-bound by volumeName: the PV controller binds it first
                immediate = True
        if immediate:
            return [], [], unresolvable(REASON_IMMEDIATE)
        return bound, delayed, Status()

    def pre_filter(self, cycle: CycleState) -> Status:
        pod = cycle.pod_obj
        if not uses_volumes(pod, self.storage) or not pod_claims(pod):
            return Status.skip()
        bound, delayed, status = self.classify(pod)
        if not status.ok:
            return status
        cycle.data[self.name] = (bound, delayed)
        eligible = self.eligible_nodes(bound)
        return Status() if eligible is None else Status(nodes=np.isin(self.state.node_names, sorted(eligible)))

    def eligible_nodes(self, bound: list[str]) -> set[str] | None:
        """``GetEligibleNodes``: the node names local PVs (``kubernetes.io/hostname In`` terms) allow, or
        None (every node) when no bound PV is local or one is missing."""
        out: set[str] | None = None
        for name in bound:
            pv = self.storage.volumes.get(name)
            if pv is None:
                return None
            aff = pv.spec.node_affinity
            names: set[str] = set()
            for term in aff.required.node_selector_terms if aff and aff.required else ():
                hosts: set[str] | None = None
                for e in term.match_expressions:
                    if e.key == HOSTNAME_LABEL and e.operator == "In":
                        hosts = set(e.values) if hosts is None else hosts & set(e.values)
                names |= hosts or set()
            if names:
                out = names if out is None else out & names
        return out

    def _index(self) -> tuple[dict[str, list[PersistentVolume]], dict[tuple[str, str], PersistentVolume]]:
        """Free PVs per class, smallest capacity first (input order among equals), and PVs pre-bound to a
        claim by ``claimRef``; built once."""
        idx = self.__dict__.get("_idx")
        if idx is None:
            free: dict[str, list[PersistentVolume]] = {}
            pre: dict[tuple[str, str], PersistentVolume] = {}
            for pv in self.storage.volumes.values():
                ref = pv.spec.claim_ref
                if ref is not None:
                    pre.setdefault((ref.namespace or "default", ref.name), pv)
                elif pv.status.phase == "Available" and pv.metadata.deletion_timestamp is None:
                    free.setdefault(pv.class_name, []).append(pv)
            idx = self.__dict__["_idx"] = ({k: sorted(v, key=lambda pv: pv.storage) for k, v in free.items()}, pre)
        return idx

    def candidates(self, ns: str, pvc: PersistentVolumeClaim) -> list[PersistentVolume]:
        """``FindMatchingVolume``'s node-independent tests, smallest capacity first; a PV pre-bound to
        the claim is the only candidate. Cached per claim until a PV is taken."""
        key = (ns, pvc.metadata.name, len(self.taken))
        hit = self._cands.get(key)
        if hit is not None:
            return hit
        free, pre = self._index()
        if (ns, pvc.metadata.name) in pre:
            pv = pre[(ns, pvc.metadata.name)]
            out = [pv] if pv.storage >= pvc.storage else []
        else:
            modes = set(pvc.spec.access_modes)
            out = [pv for pv in free.get(pvc.class_name, ())
                   if pv.metadata.name not in self.taken and pv.storage >= pvc.storage
                   and pv.spec.volume_mode == pvc.spec.volume_mode and modes <= set(pv.spec.access_modes)
                   and (pvc.spec.selector is None or label_selector_matches(pvc.spec.selector, pv.metadata.labels))]
        self._cands[key] = out
        return out

    def match(self, ns: str, delayed: list, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        """``FindPodVolumes`` for the delayed claims, per node: (bind conflict, not enough space) and, per
        claim matched against PVs, the index (into its candidates) of the PV it takes there, -1 for none."""
        names = self._names[nodes]
        bind = np.zeros(len(nodes), dtype=bool)
        order, matching = [], []
        for pvc in delayed:
            sel = self.selected_node(ns, pvc)
            if sel is None:
                matching.append(pvc)
            else:  # fast path: only the selected node, provisioned there
                bind |= names != sel
                order.append((pvc, np.ones(len(nodes), dtype=bool)))
        chosen_pvs: dict[str, np.ndarray] = {}  # PV name -> nodes where an earlier claim took it
        picks = {}
        for pvc in sorted(matching, key=lambda c: c.storage):  # byPVCSize: smallest request first (stable)
            pick = np.full(len(nodes), -1, dtype=np.int64)
            for i, pv in enumerate(self.candidates(ns, pvc)):
                taken = chosen_pvs.get(pv.metadata.name)
                take = (pick < 0) & self.pv_mask(pv)[nodes] & (True if taken is None else ~taken)
                pick[take] = i
                if take.any():
                    chosen_pvs[pv.metadata.name] = take if taken is None else taken | take
            picks[pvc.metadata.name] = pick
            order.append((pvc, pick < 0))
        no_topology, space = self.provisioning.check(order, nodes, bind)
        return bind | no_topology, space, picks

    def filter(self, cycle: CycleState, nodes: np.ndarray) -> FilterResult:
        data = cycle.data.get(self.name)
        if data is None:
            return FilterResult.passing(len(nodes))
        bound, delayed = data
        node_conflict = np.zeros(len(nodes), dtype=bool)
        missing = False
        for name in bound:
            pv = self.storage.volumes.get(name)
            if pv is None:
                missing = True
            else:
                node_conflict |= ~self.pv_mask(pv)[nodes]
        ns = cycle.pod_obj.metadata.namespace or "default"
        no_bind = space = np.zeros(len(nodes), dtype=bool)
        if delayed:
            no_bind, space, _ = self.match(ns, delayed, nodes)
        fails = node_conflict | no_bind | space | missing
        res = FilterResult(np.where(fails, np.int8(Code.UNSCHEDULABLE_AND_UNRESOLVABLE), np.int8(0)))
        for mask, text in ((node_conflict, REASON_NODE), (no_bind, REASON_BIND), (space, REASON_SPACE),
                           (np.full(len(nodes), missing), REASON_PV_MISSING)):
            if mask.any():
                res.reasons.append((mask, text))
        return res

    # ------------------------------------------------------------------ score
    def pre_score(self, cycle: CycleState, nodes: np.ndarray) -> Status:
        """No scorer (the gate off): Skip; else every pod is scored (a pod without claims scores 0)."""
        return Status() if self.capacity_scoring else Status.skip()

    def score(self, cycle: CycleState, nodes: np.ndarray) -> np.ndarray:
        out = np.zeros(len(nodes), dtype=np.int64)
        pod = cycle.pod_obj
        if not self.capacity_scoring or not uses_volumes(pod, self.storage) or not pod_claims(pod):
            return out
        data = cycle.data.get(self.name)
        delayed = data[1] if data is not None else self.classify(pod)[1]
        if not delayed:
            return out  # every claim bound: podVolumes holds no binding or provision
        ns = pod.metadata.namespace or "default"
        _, _, picks = self.match(ns, delayed, nodes)
        n = len(nodes)
        static = _ClassResources(n)  # per class over nodes: the PVs the claims match
        dynamic = _ClassResources(n)  # per class over nodes: the claims provisioned
        provisioned = []  # claimsToProvision in upstream's order: selected-node claims, then unmatched by size
        for pvc in delayed:
            if self.selected_node(ns, pvc) is not None:
                provisioned.append((pvc, np.ones(n, dtype=bool)))
        for pvc in sorted((c for c in delayed if c.metadata.name in picks), key=lambda c: c.storage):
            pick = picks[pvc.metadata.name]
            provisioned.append((pvc, pick < 0))
            for i, pv in enumerate(self.candidates(ns, pvc)):
                at = pick == i
                if at.any():  # BindingInfo.StorageClassName: the PV's spec.storageClassName
                    static.add(pv.spec.storage_class_name or "", at, value(pvc.storage), value(pv.storage),
                               accumulate=True)
        for pvc, applies in provisioned:
            cap = self.provisioning.node_capacity(pvc, nodes)
            got = applies & (cap >= 0)  # NodeCapacity nil (no size, or the driver does not opt in): skipped
            if got.any():
                dynamic.add(pvc.spec.storage_class_name or "", got, value(pvc.storage), cap, accumulate=False)
        has_static = static.any_present()
        return np.where(has_static, static.score(self.shape), dynamic.score(self.shape))

    def normalize(self, cycle: CycleState, scores: np.ndarray) -> np.ndarray:
        return scores  # ScoreExtensions: none

    # ------------------------------------------------------------------ assume
    def on_add(self, pod: int, node: int) -> None:
        """``AssumePodVolumes``: the PVs the pod matched on ``node`` are bound to its claims."""
        p = self.state.pods[pod]
        if not p.spec.volumes or not self.storage.present or pod in self._settled:
            return
        _, delayed, status = self.classify(p)
        if status.ok and not delayed:
            self._settled.add(pod)  # every claim bound: nothing to assume, now or later
        if not status.ok or not delayed:
            return
        ns = p.metadata.namespace or "default"
        cands = {pvc.metadata.name: self.candidates(ns, pvc) for pvc in delayed}
        _, _, picks = self.match(ns, delayed, np.array([node], dtype=np.int64))
        for pvc in delayed:
            key = f"{ns}/{pvc.metadata.name}"
            pick = picks.get(pvc.metadata.name)
            if pick is not None and pick[0] >= 0:
                name = cands[pvc.metadata.name][int(pick[0])].metadata.name
                self.taken[name] = key
                self.assumed[key] = name
            elif self.selected_node(ns, pvc) is None:  # provisioned: the claim gets the selected node
                self.selected[key] = str(self.state.node_names[node])

    def on_remove(self, pod: int, node: int) -> None:
        """A removed pod keeps its claims bound, as the API server does."""

    # ------------------------------------------------------------------ CP-SAT side
    filter_fidelity = Fidelity.RELAXED

    def restrict(self, model: BatchModel, classes: list[PodClass]) -> None:
        """Bound claims (PV node affinity) and the per-node bindability of delayed claims against the PVs
        the fixed pods hold: the greedy verdict over every node. RELAXED: two batch pods may both count on
        one free PV; the greedy re-check of every plan (which assumes PVs in order) rejects such a plan."""
        model.restrict_by_filter(self, classes)

    score_fidelity = Fidelity.SURROGATE

    def encode_score(self, model: BatchModel, classes: list[PodClass], weight: int, objective: Linear) -> None:
        """``weight × score(pod, node)`` per arrival, against the fixed pods (nothing when the gate is off).
        Exact for claims provisioned dynamically (capacity is not consumed); the PV a claim matches, and so
        a static binding's score, can change with what the batch's other pods take (SURROGATE)."""
        if self.capacity_scoring:
            encode_static(self, model, classes, weight, objective)

    def encode_filter(self, model: BatchModel, classes: list[PodClass]) -> None:
        """Static PVs as a matching: each delayed claim of a class takes one candidate PV or is provisioned,
        each free PV goes to one claim, and the class's pods land only where the choice fits. Greedy's
        smallest-PV-first order is not encoded (RELAXED): the re-check catches a matching it cannot follow."""
        from .volume_encoding import claim_matching

        users: dict[PV_KEY, list] = {}
        for c in model.each(classes, model.LIGHT_EVERY):
            if not c.pending:
                continue
            _, delayed, status = self.classify(self.state.pods[c.rep])
            ns = self.state.pods[c.rep].metadata.namespace or "default"
            for pvc in delayed if status.ok else ():
                sel = self.selected_node(ns, pvc)
                cands = self.candidates(ns, pvc) if sel is None else []
                prov = self.provisioning.allowed(pvc) & (True if sel is None else self._names == sel)
                users.setdefault((c.index, pvc.metadata.name), [c, [(pv.metadata.name, self.pv_mask(pv))
                                                                    for pv in cands], prov])
        claim_matching(model, list(users.values()))
