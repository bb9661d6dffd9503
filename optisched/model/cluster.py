"""The loaded cluster: validated objects, priorities resolved as admission would."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .objects import (
    Namespace,
    Node,
    Pod,
    PodDisruptionBudget,
    PreemptionPolicy,
    PriorityClass,
    ReplicaSet,
    ReplicationController,
    Service,
    StatefulSet,
)

if TYPE_CHECKING:
    from ..profile import SchedulerConfig
    from .dra import DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice
    from .gang_objects import PodGroup, Topology, Workload
    from .storage import CSIDriver, CSINode, PersistentVolume, PersistentVolumeClaim, StorageClass
    from .storage_kinds import CSIStorageCapacity, VolumeAttachment

__all__ = ["SYSTEM_PRIORITY_CLASSES", "Cluster"]

SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}
"""Built in to every cluster (``pkg/apis/scheduling``): dumps reference them without listing them."""


@dataclass
class Cluster:
    """Everything the loaders read, in input order. Objects are frozen; nothing here mutates them."""

    nodes: list[Node] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    priority_classes: list[PriorityClass] = field(default_factory=list)
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)
    namespaces: list[Namespace] = field(default_factory=list)
    services: list[Service] = field(default_factory=list)
    replica_sets: list[ReplicaSet] = field(default_factory=list)
    stateful_sets: list[StatefulSet] = field(default_factory=list)
    replication_controllers: list[ReplicationController] = field(default_factory=list)
    persistent_volumes: list[PersistentVolume] = field(default_factory=list)
    persistent_volume_claims: list[PersistentVolumeClaim] = field(default_factory=list)
    storage_classes: list[StorageClass] = field(default_factory=list)
    csi_nodes: list[CSINode] = field(default_factory=list)
    csi_drivers: list[CSIDriver] = field(default_factory=list)
    csi_storage_capacities: list[CSIStorageCapacity] = field(default_factory=list)
    volume_attachments: list[VolumeAttachment] = field(default_factory=list)
    device_classes: list[DeviceClass] = field(default_factory=list)
    resource_slices: list[ResourceSlice] = field(default_factory=list)
    resource_claims: list[ResourceClaim] = field(default_factory=list)
    resource_claim_templates: list[ResourceClaimTemplate] = field(default_factory=list)
    workloads: list[Workload] = field(default_factory=list)
    pod_groups: list[PodGroup] = field(default_factory=list)
    topologies: list[Topology] = field(default_factory=list)
    config: SchedulerConfig | None = None
    # the Kubernetes version the input names (a List's top-level ``kubernetesVersion``, which ``optisched
    # snapshot`` writes from the API server's /version), with where it was read; None: not named
    kubernetes_version: tuple[str, str] | None = None
    # the minor release whose rules a compiled state follows (``compile_cluster``); None: not compiled
    release: str | None = None
    skipped: Counter = field(default_factory=Counter)
    sources: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    origins: dict[tuple[str, str | None, str], str] = field(default_factory=dict)  # (kind, namespace, name) -> file

    def namespace_labels(self) -> dict[str, dict[str, str]]:
        """Labels per namespace; namespaces only referenced by pods get ``kubernetes.io/metadata.name``."""
        out = {ns.metadata.name: {**ns.metadata.labels, "kubernetes.io/metadata.name": ns.metadata.name}
               for ns in self.namespaces}
        for p in self.pods:
            ns = p.metadata.namespace or "default"
            out.setdefault(ns, {"kubernetes.io/metadata.name": ns})
        return out


def resolve_priority(pod: Pod, classes: dict[str, PriorityClass], default: PriorityClass | None) -> Pod:
    """Fill ``spec.priority`` and ``spec.preemptionPolicy`` as the Priority admission plugin does.

    A pod that already carries ``spec.priority`` (an admitted pod from a dump) keeps it.
    Raises ``KeyError`` with the class name when the pod names an unknown class.
    """
    spec = pod.spec
    name = spec.priority_class_name
    value: int | None
    policy = spec.preemption_policy
    if name:
        if name in classes:
            pc = classes[name]
            value, policy = pc.value, policy or pc.preemption_policy
        elif name in SYSTEM_PRIORITY_CLASSES:
            value = SYSTEM_PRIORITY_CLASSES[name]
        elif spec.priority is not None:
            value = spec.priority
        else:
            raise KeyError(name)
    elif default is not None:
        value, name, policy = default.value, default.metadata.name, policy or default.preemption_policy
    else:
        value = 0
    if spec.priority is not None:
        value = spec.priority
    policy = policy or PreemptionPolicy.PREEMPT_LOWER_PRIORITY
    # Admission defaults, applied once at load time to the pod this loader just built (never to user data).
    object.__setattr__(spec, "priority", value)
    object.__setattr__(spec, "priority_class_name", name)
    object.__setattr__(spec, "preemption_policy", policy)
    return pod
