"""VolumeRestrictions: in-tree disks a node's pods already mount, and ReadWriteOncePod claims in use.

Upstream: ``pkg/scheduler/framework/plugins/volumerestrictions/volume_restrictions.go`` (v1.35).
Disk conflicts (``isVolumeConflict``): the same GCE PD or iSCSI IQN unless both mounts are read-only;
the same AWS EBS volume ID always; the same Ceph RBD pool and image with an overlapping monitor unless
both are read-only -> ``Unschedulable``. A ReadWriteOncePod claim that any scheduled pod already uses
(``IsPVCUsedByPods``, counted at PreFilter and kept by AddPod/RemovePod) -> ``Unschedulable`` on every node
(``satisfyReadWriteOncePod``: preemption may evict the holder). PreFilter skips pods with neither kind of
volume.
"""
from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

import numpy as np

from ...framework import Code, CycleState, Fidelity, FilterResult, Plugin, Status
from ...model.objects import Pod, Volume
from ...model.snapshot import Snapshot
from .. import names
from .volume_common import claim_not_found, storage_of, unresolvable

if TYPE_CHECKING:
    from ...optimal.classes import PodClass
    from ...optimal.model import BatchModel

__all__ = ["REASON_DISK", "REASON_RWOP", "VolumeRestrictions", "disk_keys"]

REASON_DISK = "node(s) had no available disk"
REASON_RWOP = "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
RWOP = "ReadWriteOncePod"


def disk_keys(v: Volume) -> list[tuple[tuple, bool]]:
    """(key, shareable read-only) of each identity the volume has: two mounts of one key conflict unless
    both are shareable. RBD has one key per monitor, so any overlap meets."""
    if v.gce_persistent_disk is not None:
        return [(("gce", v.gce_persistent_disk.pd_name), v.gce_persistent_disk.read_only)]
    if v.aws_elastic_block_store is not None:
        return [(("ebs", v.aws_elastic_block_store.volume_id), False)]
    if v.iscsi is not None:
        return [(("iscsi", v.iscsi.iqn), v.iscsi.read_only)]
    if v.rbd is not None:
        return [(("rbd", m, v.rbd.pool, v.rbd.image), v.rbd.read_only) for m in v.rbd.monitors]
    return []


def pod_disks(pod: Pod) -> list[tuple[tuple, bool]]:
    return [k for v in pod.spec.volumes for k in disk_keys(v)]


class PodVolumeKeys:
    """Per pod row: its disks' keys, its claims ("ns/claim") and whether it has either; listed once per
    state (``snapshot.shared``), as every snapshot of a run (the model's, the checks') reads the same."""

    per_state = True

    def __init__(self, snapshot: Snapshot) -> None:
        pods = snapshot.state.pods
        self.disks = [pod_disks(p) for p in pods]
        self.claims = [VolumeRestrictions._claim_keys(p) for p in pods]
        self.has = [bool(d or c) for d, c in zip(self.disks, self.claims)]


class VolumeRestrictions(Plugin):
    name = names.VOLUME_RESTRICTIONS
    points = frozenset({"preFilter", "filter"})

    def __init__(self, snapshot: Snapshot, profile: object) -> None:
        n = snapshot.state.num_nodes
        self.state = snapshot.state
        self.storage = storage_of(snapshot)
        keys = snapshot.shared(PodVolumeKeys)
        self._disks, self._claims, self._has = keys.disks, keys.claims, keys.has
        self.writers: dict[tuple, np.ndarray] = defaultdict(lambda: np.zeros(n, dtype=np.int32))
        self.readers: dict[tuple, np.ndarray] = defaultdict(lambda: np.zeros(n, dtype=np.int32))
        self.claim_users: dict[str, int] = defaultdict(int)  # "ns/claim" -> scheduled pods using it
        snapshot.subscribe(self)

    @staticmethod
    def _claim_keys(p: Pod) -> list[str]:
        ns = p.metadata.namespace or "default"
        return [f"{ns}/{v.persistent_volume_claim.claim_name}" for v in p.spec.volumes if v.persistent_volume_claim]

    def _update(self, pod: int, node: int, d: int) -> None:
        if not self._has[pod]:
            return
        for key, ro in self._disks[pod]:
            (self.readers if ro else self.writers)[key][node] += d
        for k in self._claims[pod]:
            self.claim_users[k] += d

    def on_add(self, pod: int, node: int) -> None:
        self._update(pod, node, 1)

    def on_remove(self, pod: int, node: int) -> None:
        self._update(pod, node, -1)

    def rwop_claims(self, pod: Pod) -> tuple[list[str], Status]:
        """``readWriteOncePodPVCsForPod``: keys of the pod's claims with the ReadWriteOncePod mode."""
        out: list[str] = []
        if not self.storage.present:
            return out, Status()
        ns = pod.metadata.namespace or "default"
        for v in pod.spec.volumes:
            if v.persistent_volume_claim is None:
                continue
            pvc = self.storage.claim(ns, v.persistent_volume_claim.claim_name)
            if pvc is None:
                return [], unresolvable(claim_not_found(v.persistent_volume_claim.claim_name))
            if RWOP in pvc.spec.access_modes:
                out.append(f"{ns}/{v.persistent_volume_claim.claim_name}")
        return out, Status()

    def arrival_steady_victims(self, model: object, classes: list) -> set[int]:
        """Running classes whose preemption victims an arrival order keeps out from the start: a
        ReadWriteOncePod claim they hold would refuse its other users on every node while they wait
        for their preemptor (:mod:`optisched.optimal.victim_times`)."""
        return {c.index for c in classes if c.running and self.rwop_claims(self.state.pods[c.rep])[0]}

    def pre_filter(self, cycle: CycleState) -> Status:
        pod = cycle.pod_obj
        if not pod.spec.volumes:
            return Status.skip()
        claims, status = self.rwop_claims(pod)
        if not status.ok:
            return status
        if not self._disks[cycle.pod] and not any(self.claim_users.get(k, 0) > 0 for k in claims):
            return Status.skip()
        cycle.data[self.name] = claims
        return Status()

    def filter(self, cycle: CycleState, nodes: np.ndarray) -> FilterResult:
        conflict = np.zeros(len(nodes), dtype=bool)
        for key, ro in self._disks[cycle.pod]:
            if key in self.writers:
                conflict |= self.writers[key][nodes] > 0
            if not ro and key in self.readers:
                conflict |= self.readers[key][nodes] > 0
        res = FilterResult.from_mask(conflict, REASON_DISK)
        claims = cycle.data.get(self.name)
        if claims is None:
            claims = self.rwop_claims(cycle.pod_obj)[0]
        if any(self.claim_users.get(k, 0) > 0 for k in claims):
            passing = ~conflict
            res.code[passing] = np.int8(Code.UNSCHEDULABLE)
            res.reasons.append((passing, REASON_RWOP))
        return res

    # ------------------------------------------------------------------ CP-SAT side
    filter_fidelity = Fidelity.EXACT

    def restrict(self, model: BatchModel, classes: list[PodClass]) -> None:
        """Disks and claims the fixed pods hold (the greedy verdict); a pod conflicts with a copy of
        itself on a writable disk, so at most one per node."""
        users = [c for c in classes if self.state.pods[c.rep].spec.volumes]  # PreFilter skips the others
        model.restrict_by_filter(self, users)
        for c in users:
            if any(not ro for _, ro in self._disks[c.rep]):
                model.limit(c, 1)

    def encode_filter(self, model: BatchModel, classes: list[PodClass]) -> None:
        """Per node, two classes with conflicting mounts of one disk are never both present; all the pods
        of a ReadWriteOncePod claim's classes hold at most one node slot in the whole cluster."""
        from .volume_encoding import claim_at_most_one, disk_pairs_exclusive

        disk_pairs_exclusive(model, classes, self._disks)
        claim_at_most_one(model, classes, lambda c: self.rwop_claims(self.state.pods[c.rep])[0])
