"""Storage objects the volume plugins read: PersistentVolume, PersistentVolumeClaim, StorageClass,
CSINode and CSIDriver (``core/v1``, ``storage.k8s.io/v1``), and the lookups the rules share.

What ``kubectl get pv,pvc,storageclass,csinode,csidriver -A -o yaml`` writes loads as it is. A claim's
class follows ``storagehelpers.GetPersistentVolumeClaimClass`` (the beta annotation wins over
``spec.storageClassName``); a pod's ephemeral volume owns the claim ``<pod>-<volume>``
(``k8s.io/component-helpers/storage/ephemeral.VolumeClaimName``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, field_validator

from .objects import _M, KubeObject, LabelSelector, NodeSelector, Pod, ResourceList, _none_as_empty
from .storage_kinds import CSIStorageCapacity, VolumeAttachment

__all__ = [
    "BETA_CLASS_ANNOTATION",
    "BIND_COMPLETED_ANNOTATION",
    "SELECTED_NODE_ANNOTATION",
    "BindingMode",
    "CSIDriver",
    "CSINode",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "PodClaim",
    "StorageCatalog",
    "StorageClass",
    "catalog",
    "pod_claims",
    "storage_warnings",
]

BETA_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
BIND_COMPLETED_ANNOTATION = "pv.kubernetes.io/bind-completed"
SELECTED_NODE_ANNOTATION = "volume.kubernetes.io/selected-node"


def _list(v: Any) -> Any:
    return _none_as_empty(v)


class BindingMode(StrEnum):
    IMMEDIATE = "Immediate"
    WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"


class ObjectReference(_M):
    namespace: str = ""
    name: str = ""
    uid: str = ""


class VolumeNodeAffinity(_M):
    required: NodeSelector | None = None


class CSISource(_M):
    driver: str
    volume_handle: str


class PVSpec(_M):
    """The PV fields the plugins read; the in-tree sources are kept as given for CSI migration
    (``volume_migration``)."""

    capacity: ResourceList = Field(default_factory=dict)
    access_modes: Annotated[list[str], BeforeValidator(_list)] = Field(default_factory=list)
    storage_class_name: str = ""
    node_affinity: VolumeNodeAffinity | None = None
    claim_ref: ObjectReference | None = None
    csi: CSISource | None = None
    volume_mode: str = "Filesystem"
    aws_elastic_block_store: dict | None = None
    gce_persistent_disk: dict | None = None
    azure_disk: dict | None = None
    cinder: dict | None = None
    portworx_volume: dict | None = None


class PhaseStatus(_M):
    """``status.phase`` of a PV or a claim, all the plugins read of their status."""

    phase: str = "Pending"


class PersistentVolume(KubeObject):
    kind: str = "PersistentVolume"
    spec: PVSpec = PVSpec()
    status: PhaseStatus = PhaseStatus()

    @property
    def class_name(self) -> str:
        """``storagehelpers.GetPersistentVolumeClass``."""
        return self.metadata.annotations.get(BETA_CLASS_ANNOTATION, self.spec.storage_class_name or "")

    @property
    def storage(self) -> int:
        return self.spec.capacity.get("storage", 0)


class PVCResources(_M):
    requests: ResourceList = Field(default_factory=dict)


class PVCSpec(_M):
    storage_class_name: str | None = None
    access_modes: Annotated[list[str], BeforeValidator(_list)] = Field(default_factory=list)
    resources: PVCResources = PVCResources()
    volume_name: str = ""
    selector: LabelSelector | None = None
    volume_mode: str = "Filesystem"

    @field_validator("volume_name", mode="before")
    @classmethod
    def _empty(cls, v: Any) -> Any:
        return "" if v is None else v


class PersistentVolumeClaim(KubeObject):
    kind: str = "PersistentVolumeClaim"
    spec: PVCSpec = PVCSpec()
    status: PhaseStatus = PhaseStatus()

    @property
    def class_name(self) -> str:
        """``storagehelpers.GetPersistentVolumeClaimClass``."""
        ann = self.metadata.annotations
        if BETA_CLASS_ANNOTATION in ann:
            return ann[BETA_CLASS_ANNOTATION]
        return self.spec.storage_class_name or ""

    @property
    def storage(self) -> int:
        return self.spec.resources.requests.get("storage", 0)

    @property
    def key(self) -> str:
        return f"{self.metadata.namespace or 'default'}/{self.metadata.name}"

    @property
    def fully_bound(self) -> bool:
        """``isPVCFullyBound`` (``volumebinding/binder.go``): a volume name and the PV controller's
        ``pv.kubernetes.io/bind-completed`` annotation. A claim with only ``volumeName`` is pre-bound and
        waits for the controller."""
        return bool(self.spec.volume_name) and BIND_COMPLETED_ANNOTATION in self.metadata.annotations


class TopologyRequirement(_M):
    key: str
    values: Annotated[list[str], BeforeValidator(_list)] = Field(default_factory=list)


class TopologySelectorTerm(_M):
    match_label_expressions: Annotated[list[TopologyRequirement], BeforeValidator(_list)] = Field(default_factory=list)


class StorageClass(KubeObject):
    kind: str = "StorageClass"
    provisioner: str
    volume_binding_mode: BindingMode = BindingMode.IMMEDIATE
    allowed_topologies: Annotated[list[TopologySelectorTerm], BeforeValidator(_list)] = Field(default_factory=list)

    @field_validator("volume_binding_mode", mode="before")
    @classmethod
    def _default_mode(cls, v: Any) -> Any:
        return BindingMode.IMMEDIATE if v is None else v


class DriverAllocatable(_M):
    count: int | None = Field(None, ge=0)


class CSINodeDriver(_M):
    name: str
    node_id: str = Field("", alias="nodeID")
    allocatable: DriverAllocatable | None = None
    topology_keys: Annotated[list[str], BeforeValidator(_list)] = Field(default_factory=list)


class CSINodeSpec(_M):
    drivers: Annotated[list[CSINodeDriver], BeforeValidator(_list)] = Field(default_factory=list)


class CSINode(KubeObject):
    kind: str = "CSINode"
    spec: CSINodeSpec = CSINodeSpec()


class CSIDriverSpec(_M):
    attach_required: bool = True
    storage_capacity: bool | None = None


class CSIDriver(KubeObject):
    kind: str = "CSIDriver"
    spec: CSIDriverSpec = CSIDriverSpec()


@dataclass(frozen=True)
class PodClaim:
    """One claim a pod's volume names: ``ephemeral`` claims are generated as ``<pod>-<volume>``."""

    volume: str
    name: str
    ephemeral: bool


def pod_claims(pod: Pod) -> list[PodClaim]:
    """The claims of a pod's ``persistentVolumeClaim`` and ``ephemeral`` volumes, in volume order."""
    out = []
    for v in pod.spec.volumes:
        if v.persistent_volume_claim is not None:
            out.append(PodClaim(v.name, v.persistent_volume_claim.claim_name, False))
        elif v.ephemeral is not None:
            out.append(PodClaim(v.name, f"{pod.metadata.name}-{v.name}", True))
    return out


@dataclass
class StorageCatalog:
    """Storage objects by key. ``present`` is false when the input holds no claim, volume or class at all
    (a dump without the storage kinds): the volume rules then leave pods alone, as before they existed."""

    claims: dict[tuple[str, str], PersistentVolumeClaim] = field(default_factory=dict)
    volumes: dict[str, PersistentVolume] = field(default_factory=dict)
    classes: dict[str, StorageClass] = field(default_factory=dict)
    csi_nodes: dict[str, CSINode] = field(default_factory=dict)
    drivers: dict[str, CSIDriver] = field(default_factory=dict)
    capacities: list[CSIStorageCapacity] = field(default_factory=list)
    attachments: list[VolumeAttachment] = field(default_factory=list)

    @property
    def present(self) -> bool:
        return bool(self.claims or self.volumes or self.classes)

    def claim(self, namespace: str | None, name: str) -> PersistentVolumeClaim | None:
        return self.claims.get((namespace or "default", name))


def catalog(cluster: Any) -> StorageCatalog:  # a model.cluster.Cluster (which holds this module's objects)
    """The cluster's storage objects by key, built once per cluster."""
    cat = cluster.__dict__.get("_storage")
    if cat is None:
        cat = StorageCatalog(
            {(c.metadata.namespace or "default", c.metadata.name): c for c in cluster.persistent_volume_claims},
            {v.metadata.name: v for v in cluster.persistent_volumes},
            {s.metadata.name: s for s in cluster.storage_classes},
            {n.metadata.name: n for n in cluster.csi_nodes},
            {d.metadata.name: d for d in cluster.csi_drivers},
            list(cluster.csi_storage_capacities), list(cluster.volume_attachments))
        cluster.__dict__["_storage"] = cat
    return cat


def storage_warnings(cluster: Any) -> list[str]:  # a model.cluster.Cluster
    """References kube accepts at creation but that keep a pod pending (a claim whose class or volume is
    missing, a pod whose claim is missing): warnings, since the API server admits them too."""
    cat = catalog(cluster)
    if not cat.present:
        return []
    out = []
    for c in cluster.persistent_volume_claims:
        if not c.spec.volume_name and c.class_name and c.class_name not in cat.classes:
            out.append(f"{c.ref}: storageClassName {c.class_name!r} is not in the input; pods using it stay pending")
        elif c.spec.volume_name and c.spec.volume_name not in cat.volumes:
            out.append(f"{c.ref}: volumeName {c.spec.volume_name!r} is not in the input; pods using it stay pending")
        elif c.spec.volume_name and not c.fully_bound:
            out.append(f"{c.ref}: volumeName {c.spec.volume_name!r} without the {BIND_COMPLETED_ANNOTATION} "
                       "annotation is pre-bound, not bound; pods using it stay pending until the PV controller binds it")
    for p in cluster.pods:
        if p.spec.node_name:
            continue
        for claim in pod_claims(p):
            if cat.claim(p.metadata.namespace, claim.name) is None:
                out.append(f"{p.ref}: claim {claim.name!r} (volume {claim.volume!r}) is not in the input; "
                           "the pod stays pending")
    return out
