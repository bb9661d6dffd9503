"""VolumeZone: the zone and region labels of a pod's bound PersistentVolumes must match the node's.

Upstream: ``pkg/scheduler/framework/plugins/volumezone/volume_zone.go`` (v1.35). PreFilter collects, per
bound claim, the PV's beta and GA zone/region labels (values split on ``__``); unbound claims of a
``WaitForFirstConsumer`` class are skipped (VolumeBinding owns them), other unbound claims make the pod
unschedulable. Filter passes nodes without any topology label (single-zone clusters) and otherwise
needs every PV label's value on the node (a beta PV label may match the node's GA label).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...framework import Code, CycleState, Fidelity, FilterResult, Plugin, Status
from ...model.snapshot import Snapshot
from ...model.storage import BindingMode, PersistentVolume
from .. import names
from .volume_common import (
    claim_not_found,
    class_not_found,
    pv_not_found,
    storage_of,
    unresolvable,
    uses_volumes,
)

if TYPE_CHECKING:
    from ...optimal.classes import PodClass
    from ...optimal.model import BatchModel

__all__ = ["REASON", "TOPOLOGY_LABELS", "VolumeZone", "pv_topologies"]

REASON = "node(s) had no available volume zone"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
TOPOLOGY_LABELS = (BETA_ZONE, BETA_REGION, "topology.kubernetes.io/zone", "topology.kubernetes.io/region")
_GA = {BETA_ZONE: "topology.kubernetes.io/zone", BETA_REGION: "topology.kubernetes.io/region"}


def _zones(value: str) -> set[str] | None:
    """``volumehelpers.LabelZonesToSet``: ``__``-separated values; an empty member makes it invalid."""
    out = set()
    for z in value.split("__"):
        if not z.strip():
            return None
        out.add(z.strip())
    return out


def pv_topologies(pv: PersistentVolume) -> list[tuple[str, set[str]]]:
    """``getPVTopologies``: (label key, allowed values) for each topology label on the PV."""
    out = []
    for key in TOPOLOGY_LABELS:
        if key in pv.metadata.labels:
            zones = _zones(pv.metadata.labels[key])
            if zones is not None:
                out.append((key, zones))
    return out


class VolumeZone(Plugin):
    name = names.VOLUME_ZONE
    points = frozenset({"preFilter", "filter"})
    placement_free = True  # Filter reads no pod on the node: a preemption dry run cannot change it

    def __init__(self, snapshot: Snapshot, profile: object) -> None:
        self.state = snapshot.state
        self.storage = storage_of(snapshot)

    def topologies(self, cycle: CycleState) -> tuple[list[tuple[str, set[str]]], Status]:
        """``getPVbyPod``: the pod's PV topologies, or the status that stops the pod."""
        pod, cat = cycle.pod_obj, self.storage
        out: list[tuple[str, set[str]]] = []
        for v in pod.spec.volumes:
            if v.persistent_volume_claim is None:
                continue
            name = v.persistent_volume_claim.claim_name
            if not name:
                return [], unresolvable("PersistentVolumeClaim had no name")
            pvc = cat.claim(pod.metadata.namespace, name)
            if pvc is None:
                return [], unresolvable(claim_not_found(name))
            if not pvc.spec.volume_name:
                sc_name = pvc.class_name
                if not sc_name:
                    return [], unresolvable("PersistentVolumeClaim had no pv name and storageClass name")
                sc = cat.classes.get(sc_name)
                if sc is None:
                    return [], unresolvable(class_not_found(sc_name))
                if sc.volume_binding_mode == BindingMode.WAIT_FOR_FIRST_CONSUMER:
                    continue
                return [], unresolvable("PersistentVolume had no name")
            pv = cat.volumes.get(pvc.spec.volume_name)
            if pv is None:
                return [], unresolvable(pv_not_found(pvc.spec.volume_name))
            out.extend(pv_topologies(pv))
        return out, Status()

    def pre_filter(self, cycle: CycleState) -> Status:
        if not uses_volumes(cycle.pod_obj, self.storage):
            return Status.skip()
        topo, status = self.topologies(cycle)
        if not status.ok:
            return status
        if not topo:
            return Status.skip()
        cycle.data[self.name] = topo
        return Status()

    def filter(self, cycle: CycleState, nodes: np.ndarray) -> FilterResult:
        topo = cycle.data.get(self.name)
        if topo is None:
            topo, status = self.topologies(cycle)
            if not status.ok:
                return FilterResult.from_mask(np.ones(len(nodes), bool), status.reasons[0], status.code)
        constrained = np.zeros(len(nodes), dtype=bool)
        for key in TOPOLOGY_LABELS:
            constrained |= self.state.label(key).codes[nodes] >= 0
        fails = np.zeros(len(nodes), dtype=bool)
        for key, values in topo:
            col = self.state.label(key)
            has = col.codes[nodes] >= 0
            ok = col.isin(sorted(values))[nodes]
            if key in _GA:  # the node lacks the beta key: try its GA label
                ok = np.where(has, ok, self.state.label(_GA[key]).isin(sorted(values))[nodes])
            fails |= ~ok
        return FilterResult.from_mask(fails & constrained, REASON, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    # ------------------------------------------------------------------ CP-SAT side
    filter_fidelity = Fidelity.EXACT

    def restrict(self, model: BatchModel, classes: list[PodClass]) -> None:
        """The PV labels and the node's labels decide: the greedy verdict over every node is the domain."""
        model.restrict_by_filter(self, classes)

    def encode_filter(self, model: BatchModel, classes: list[PodClass]) -> None:
        """Nothing here depends on where other pods go."""
