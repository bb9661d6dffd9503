"""Dynamic provisioning of WaitForFirstConsumer claims, per node: the class's topology and CSIStorageCapacity.

Upstream: ``pkg/scheduler/framework/plugins/volumebinding/binder.go`` (v1.35) ``checkVolumeProvisions`` and
``hasEnoughCapacity``. A class provisions where its ``allowedTopologies`` allow (terms ORed, requirements
ANDed) and not at all with no provisioner or ``kubernetes.io/no-provisioner``. When the provisioner is a
CSIDriver with ``storageCapacity: true`` and the claim requests storage, some CSIStorageCapacity of the
claim's class must offer the size (``maximumVolumeSize`` if set, else ``capacity``) to the node
(``nodeTopology`` selects the node's labels; no ``nodeTopology`` offers nothing). Claims are checked in
order and the first one that fails decides the reason: no topology gives
``node(s) didn't find available persistent volumes to bind``, no capacity
``node(s) did not have enough free storage``. Assume does not consume capacity (upstream only records the
selected node on the claim), so two pods may each count on the same free space; the driver's next
CSIStorageCapacity update is what kube-scheduler would see next.
"""
from __future__ import annotations

import numpy as np

from ...model.objects import LabelSelector
from ...model.quantity import value
from ...model.selectors import labels_mask
from ...model.state import ClusterState
from ...model.storage import PersistentVolumeClaim, StorageCatalog

__all__ = ["NO_PROVISIONER", "REASON_SPACE", "Provisioning", "selector_mask"]

NO_PROVISIONER = "kubernetes.io/no-provisioner"
REASON_SPACE = "node(s) did not have enough free storage"


def selector_mask(state: ClusterState, sel: LabelSelector) -> np.ndarray:
    """Nodes whose labels ``metav1.LabelSelectorAsSelector(sel)`` matches (an empty selector matches all)."""
    mask = labels_mask(state, sel.match_labels)
    for r in sel.match_expressions:
        col = state.label(r.key)
        op = r.operator.value
        mask &= (col.isin(r.values) if op == "In" else ~col.isin(r.values) if op == "NotIn"
                 else col.has() if op == "Exists" else ~col.has())
    return mask


class Provisioning:
    """Per-node provisioning verdicts, cached per class and per (class, requested size)."""

    def __init__(self, state: ClusterState, storage: StorageCatalog) -> None:
        self.state = state
        self.storage = storage
        self._masks: dict[object, np.ndarray] = {}

    def topology(self, class_name: str) -> np.ndarray:
        """Nodes where the class may provision; none for a class that is not in the input."""
        key = ("class", class_name)
        m = self._masks.get(key)
        if m is None:
            sc = self.storage.classes.get(class_name)
            n = self.state.num_nodes
            if sc is None or sc.provisioner in ("", NO_PROVISIONER):
                m = np.zeros(n, dtype=bool)
            elif not sc.allowed_topologies:
                m = np.ones(n, dtype=bool)
            else:
                m = np.zeros(n, dtype=bool)
                for term in sc.allowed_topologies:
                    t = np.ones(n, dtype=bool)
                    for req in term.match_label_expressions:
                        t &= self.state.label(req.key).isin(req.values)
                    m |= t
            self._masks[key] = m
        return m

    def capacity(self, pvc: PersistentVolumeClaim) -> np.ndarray:
        """``hasEnoughCapacity``: nodes some CSIStorageCapacity of the claim's class has room for it on;
        every node when the claim requests no storage or the driver does not opt in."""
        requests = pvc.spec.resources.requests
        sc = self.storage.classes.get(pvc.class_name)
        driver = self.storage.drivers.get(sc.provisioner) if sc is not None else None
        if "storage" not in requests or driver is None or not driver.spec.storage_capacity:
            return np.ones(self.state.num_nodes, dtype=bool)
        key = ("capacity", pvc.class_name, requests["storage"])
        m = self._masks.get(key)
        if m is None:
            m = np.zeros(self.state.num_nodes, dtype=bool)
            for cap in self.storage.capacities:
                limit = cap.volume_limit
                if (cap.storage_class_name == pvc.class_name and limit is not None and limit >= requests["storage"]
                        and cap.node_topology is not None):
                    m |= selector_mask(self.state, cap.node_topology)
            self._masks[key] = m
        return m

    def node_capacity(self, pvc: PersistentVolumeClaim, nodes: np.ndarray) -> np.ndarray:
        """``DynamicProvision.NodeCapacity`` of ``hasEnoughCapacity`` on each of ``nodes``: the ``capacity``
        of the first CSIStorageCapacity (input order) of the claim's class with room for it that the node
        can reach; -1 where there is none to record (no storage request, a driver that does not opt in, no
        fitting capacity), in bytes. A fitting object without ``capacity`` counts 0 (kube-scheduler dereferences it)."""
        requests = pvc.spec.resources.requests
        sc = self.storage.classes.get(pvc.class_name)
        driver = self.storage.drivers.get(sc.provisioner) if sc is not None else None
        out = np.full(len(nodes), -1, dtype=np.int64)
        if "storage" not in requests or driver is None or not driver.spec.storage_capacity:
            return out
        for cap in self.storage.capacities:
            limit = cap.volume_limit
            if (cap.storage_class_name == pvc.class_name and limit is not None and limit >= requests["storage"]
                    and cap.node_topology is not None):
                fresh = (out < 0) & selector_mask(self.state, cap.node_topology)[nodes]
                out[fresh] = value(cap.capacity or 0)  # Quantity.Value(): bytes, rounded up
        return out

    def allowed(self, pvc: PersistentVolumeClaim) -> np.ndarray:
        """Nodes where the claim can be provisioned: topology and capacity (the CP-SAT side's mask)."""
        return self.topology(pvc.class_name) & self.capacity(pvc)

    def check(self, order: list[tuple[PersistentVolumeClaim, np.ndarray]], nodes: np.ndarray,
              decided: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``checkVolumeProvisions`` over ``nodes``: ``order`` holds each claim to provision with the nodes it
        applies to; nodes already ``decided`` are left alone. Returns (no topology, not enough space)."""
        bind = np.zeros(len(nodes), dtype=bool)
        space = np.zeros(len(nodes), dtype=bool)
        decided = decided.copy()
        for pvc, applies in order:
            todo = applies & ~decided
            if not todo.any():
                continue
            topo = self.topology(pvc.class_name)[nodes]
            cap = self.capacity(pvc)[nodes]
            bind |= todo & ~topo
            space |= todo & topo & ~cap
            decided |= todo & ~(topo & cap)
        return bind, space
