"""What the volume plugins share: the storage catalog of a snapshot, a pod's claims, and the API
server's not-found messages the plugins pass on as reasons (``apierrors.NewNotFound(...).Error()``)."""
from __future__ import annotations

from ...framework import Code, Status
from ...model.objects import Pod
from ...model.snapshot import Snapshot
from ...model.storage import StorageCatalog, catalog

__all__ = ["claim_not_found", "class_not_found", "pv_not_found", "storage_of", "unresolvable", "uses_volumes"]


def claim_not_found(name: str) -> str:
    return f'persistentvolumeclaim "{name}" not found'


def pv_not_found(name: str) -> str:
    return f'persistentvolume "{name}" not found'


def class_not_found(name: str) -> str:
    return f'storageclass.storage.k8s.io "{name}" not found'


def unresolvable(reason: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (reason,))


def storage_of(snapshot: Snapshot) -> StorageCatalog:
    return catalog(snapshot.state.cluster)


def uses_volumes(pod: Pod, storage: StorageCatalog) -> bool:
    """Cheap PreFilter gate: the pod has volumes and the input holds storage objects."""
    return bool(pod.spec.volumes) and storage.present
