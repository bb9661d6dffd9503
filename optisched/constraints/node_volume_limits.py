"""NodeVolumeLimits (CSI): a node attaches at most ``allocatable.count`` volumes of each CSI driver.

Upstream: ``pkg/scheduler/framework/plugins/nodevolumelimits/csi.go`` (v1.35). A pod's claims (and its
ephemeral volumes' claims) resolve to ``driver/volumeHandle`` through the bound PV's ``csi`` source, or,
unbound or with a missing PV, to the class's provisioner and a handle unique to the claim. Volumes
already attached on the node (any pod there uses them) count once; the pod fails with ``Unschedulable``
where attached + its new volumes exceed the driver's limit from CSINode (or the node's
``attachable-volumes-csi-<driver>`` allocatable). A claim the new pod names but that is missing stops it
(``UnschedulableAndUnresolvable``); a missing claim of a pod already on the node is not counted.
Not modelled: VolumeAttachment objects and in-tree volumes migrated to CSI.
"""
from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

import numpy as np

from ..framework import Code, CycleState, Fidelity, FilterResult, Status
from ..model.objects import Pod
from ..model.snapshot import Snapshot
from ..model.storage import StorageCatalog, pod_claims
from .volume_common import claim_not_found, storage_of, uses_volumes

if TYPE_CHECKING:
    from ..optimal.classes import PodClass
    from ..optimal.model import BatchModel

__all__ = ["REASON", "LimitsWorld", "NodeVolumeLimits", "csi_volumes"]

REASON = "node(s) exceed max volume count"
LIMIT_PREFIX = "attachable-volumes-csi-"
NANO = 10**9


class MissingClaim(Exception):
    pass


def csi_volumes(pod: Pod, cat: StorageCatalog, *, new: bool) -> list[tuple[str, str]]:
    """``filterAttachableVolumes``: the pod's (driver, volume handle) pairs, each once. A missing claim
    raises :class:`MissingClaim` for a new pod and is skipped for a scheduled one."""
    ns = pod.metadata.namespace or "default"
    out: dict[tuple[str, str], None] = {}
    for claim in pod_claims(pod):
        pvc = cat.claim(ns, claim.name)
        if pvc is None:
            if new:
                raise MissingClaim(f"looking up PVC {ns}/{claim.name}: {claim_not_found(claim.name)}")
            continue
        pv = cat.volumes.get(pvc.spec.volume_name) if pvc.spec.volume_name else None
        if pv is not None:
            if pv.spec.csi is not None:
                out[(pv.spec.csi.driver, pv.spec.csi.volume_handle)] = None
            continue
        sc = cat.classes.get(pvc.class_name) if pvc.class_name else None
        if sc is not None:  # getCSIDriverInfoFromSC: a handle no real volume has
            out[(sc.provisioner, f"unbound-{ns}/{claim.name}")] = None
    return list(out)


class NodeVolumeLimits:
    name = "NodeVolumeLimits"

    def __init__(self, snapshot: Snapshot, profile: object) -> None:
        self.state = state = snapshot.state
        self.storage = storage_of(snapshot)
        n = state.num_nodes
        self._vols: dict[int, list[tuple[str, str]]] = {}
        self.refs: dict[tuple[str, str], np.ndarray] = defaultdict(lambda: np.zeros(n, dtype=np.int32))
        self.attached: dict[str, np.ndarray] = defaultdict(lambda: np.zeros(n, dtype=np.int32))
        self._limits: dict[str, np.ndarray] = {}
        snapshot.subscribe(self)

    def limit(self, driver: str) -> np.ndarray:
        """Per node: the driver's attach limit, -1 where none is set (``getVolumeLimits``)."""
        out = self._limits.get(driver)
        if out is None:
            out = np.full(self.state.num_nodes, -1, dtype=np.int64)
            for i, node in enumerate(self.state.nodes):
                v = node.allocatable.get(LIMIT_PREFIX + driver)
                if v is not None:
                    out[i] = v // NANO
                csi = self.storage.csi_nodes.get(node.metadata.name)
                for d in csi.spec.drivers if csi else ():
                    if d.name == driver and d.allocatable is not None and d.allocatable.count is not None:
                        out[i] = d.allocatable.count
            self._limits[driver] = out
        return out

    def volumes_of(self, pod: int) -> list[tuple[str, str]]:
        vols = self._vols.get(pod)
        if vols is None:
            p = self.state.pods[pod]
            vols = self._vols[pod] = csi_volumes(p, self.storage, new=False) if uses_volumes(p, self.storage) else []
        return vols

    def _update(self, pod: int, node: int, d: int) -> None:
        for key in self.volumes_of(pod):
            before = self.refs[key][node]
            self.refs[key][node] += d
            if (before == 0) != (before + d == 0):
                self.attached[key[0]][node] += d

    def on_add(self, pod: int, node: int) -> None:
        self._update(pod, node, 1)

    def on_remove(self, pod: int, node: int) -> None:
        self._update(pod, node, -1)

    def pre_filter(self, cycle: CycleState) -> Status:
        pod = cycle.pod_obj
        if not uses_volumes(pod, self.storage) or not pod_claims(pod):
            return Status.skip()
        try:
            cycle.data[self.name] = csi_volumes(pod, self.storage, new=True)
        except MissingClaim as e:
            cycle.data[self.name] = str(e)
        return Status()

    def filter(self, cycle: CycleState, nodes: np.ndarray) -> FilterResult:
        vols = cycle.data.get(self.name)
        if isinstance(vols, str):  # Filter reports the missing claim on every node
            return FilterResult.from_mask(np.ones(len(nodes), bool), vols, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
        fails = np.zeros(len(nodes), dtype=bool)
        by_driver: dict[str, list[str]] = defaultdict(list)
        for driver, handle in vols or ():
            by_driver[driver].append(handle)
        for driver, handles in by_driver.items():
            limit = self.limit(driver)[nodes]
            new = np.zeros(len(nodes), dtype=np.int64)
            for h in handles:
                refs = self.refs.get((driver, h))
                new += 1 if refs is None else (refs[nodes] == 0)
            have = self.attached[driver][nodes] if driver in self.attached else 0
            fails |= (limit >= 0) & (have + new > limit)
        return FilterResult.from_mask(fails, REASON)

    # ------------------------------------------------------------------ CP-SAT side
    filter_fidelity = Fidelity.EXACT

    def restrict(self, model: BatchModel, classes: list[PodClass]) -> None:
        """Against the fixed pods' attached volumes: the greedy verdict over every node."""
        model.restrict_by_filter(self, classes)

    def encode_filter(self, model: BatchModel, classes: list[PodClass]) -> None:
        """Per node and driver with a limit, where the batch may place a user: the distinct volumes of the
        classes there, beyond those the fixed pods attach, fit in the room the fixed pods leave."""
        from .volume_encoding import unique_within_limit

        users: dict[str, dict[str, list[PodClass]]] = defaultdict(lambda: defaultdict(list))
        for c in classes:
            for driver, handle in self.volumes_of(c.rep):
                users[driver][handle].append(c)
        for driver, handles in users.items():
            limit = self.limit(driver)
            for n in np.flatnonzero(limit >= 0).tolist():
                fresh = {h: g for h, g in handles.items()
                         if (driver, h) not in self.refs or self.refs[(driver, h)][n] == 0}
                room = int(limit[n]) - int(self.attached[driver][n] if driver in self.attached else 0)
                unique_within_limit(model, n, fresh, room, model.any_arrival(n))


class LimitsWorld:
    """NodeVolumeLimits over candidate nodes with victims taken off and put back (vectorized
    preemption's dry runs): per node, the volumes attached of the drivers the preemptor uses."""

    def __init__(self, rule: NodeVolumeLimits, cycle: CycleState, nodes: np.ndarray) -> None:
        self.rule = rule
        vols = cycle.data.get(rule.name) or []
        self.missing = vols if isinstance(vols, str) else None
        self.mine = [] if self.missing else list(vols)
        drivers = {d for d, _ in self.mine}
        self.limit = {d: rule.limit(d)[nodes] for d in drivers}
        self.attached = {d: (rule.attached[d][nodes].copy() if d in rule.attached else np.zeros(len(nodes), np.int64))
                         for d in drivers}
        self.nodes = nodes
        self.refs: dict[tuple[str, str], np.ndarray] = {}

    def _refs(self, key: tuple[str, str]) -> np.ndarray:
        r = self.refs.get(key)
        if r is None:
            src = self.rule.refs.get(key)
            r = self.refs[key] = src[self.nodes].copy() if src is not None else np.zeros(len(self.nodes), np.int32)
        return r

    def move(self, pos: np.ndarray, pods: np.ndarray, sign: int) -> None:
        for q, p in zip(pos.tolist(), pods.tolist()):
            for key in self.rule.volumes_of(p):
                if key[0] not in self.attached:
                    continue
                r = self._refs(key)
                before = int(r[q])
                r[q] += sign
                if (before == 0) != (before + sign == 0):
                    self.attached[key[0]][q] += sign

    def check(self, qs: np.ndarray) -> FilterResult:
        if self.missing:
            return FilterResult.from_mask(np.ones(len(qs), bool), self.missing, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
        fails = np.zeros(len(qs), dtype=bool)
        for d in self.attached:
            new = np.zeros(len(qs), dtype=np.int64)
            for driver, h in self.mine:
                if driver == d:
                    new += self._refs((d, h))[qs] == 0
            lim = self.limit[d][qs]
            fails |= (lim >= 0) & (self.attached[d][qs] + new > lim)
        return FilterResult.from_mask(fails, REASON)
