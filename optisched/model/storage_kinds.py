"""CSIStorageCapacity and VolumeAttachment (``storage.k8s.io/v1``): the storage objects that say how much a
driver can still provision where, and which volumes are attached to which node.

What ``kubectl get csistoragecapacities,volumeattachments -A -o yaml`` writes loads as it is. Quantities are
read as bytes, rounded up as ``resource.Quantity.Value()`` does.
"""
from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator

from .objects import _M, KubeObject, LabelSelector, _resource_list

__all__ = ["CSIStorageCapacity", "VolumeAttachment"]


def _quantity(v: Any) -> int | None:
    return None if v is None else _resource_list({"storage": v})["storage"]


Quantity = Annotated[int | None, BeforeValidator(_quantity)]


class CSIStorageCapacity(KubeObject):
    """What a CSI driver reports it can still provision for one class in one topology segment."""

    kind: str = "CSIStorageCapacity"
    storage_class_name: str
    node_topology: LabelSelector | None = None
    capacity: Quantity = None
    maximum_volume_size: Quantity = None

    @property
    def volume_limit(self) -> int | None:
        """``volumeLimit`` in ``volumebinding/binder.go``: ``maximumVolumeSize`` when set (it is more precise),
        else ``capacity``."""
        return self.maximum_volume_size if self.maximum_volume_size is not None else self.capacity


class VolumeAttachmentSource(_M):
    persistent_volume_name: str | None = None


class VolumeAttachmentSpec(_M):
    attacher: str = ""
    node_name: str = ""
    source: VolumeAttachmentSource = VolumeAttachmentSource()


class VolumeAttachment(KubeObject):
    """A volume the attach/detach controller attaches (or still detaches) on a node."""

    kind: str = "VolumeAttachment"
    spec: VolumeAttachmentSpec = VolumeAttachmentSpec()
