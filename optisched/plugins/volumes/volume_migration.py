"""In-tree volumes counted as the CSI volumes they were migrated to (NodeVolumeLimits).

Upstream: ``pkg/scheduler/framework/plugins/nodevolumelimits/utils.go`` ``isCSIMigrationOn`` and
``k8s.io/csi-translation-lib`` (v1.35). On a node with a CSINode, migration is on for AWS EBS, GCE PD,
Azure Disk and Cinder (their gates are locked on, so the ``storage.alpha.kubernetes.io/migrated-plugins``
annotation is not read for them); Portworx counts only where the CSINode's annotation lists
``kubernetes.io/portworx-volume``; Azure File and vSphere are migratable but never counted; without a
CSINode nothing is migrated. The volume handle is the one the translation library gives: EBS's
``volumeID`` (an ``aws://zone/vol-…`` URL gives its last part), GCE's
``projects/UNSPECIFIED/zones/<zone>/disks/<pd>`` from the PV's zone label (a ``a__b`` list gives the
region form; inline volumes have no zone), Azure's ``diskURI``, Cinder's and Portworx's ``volumeID``.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...model.objects import Volume
from ...model.storage import PersistentVolume, StorageCatalog

__all__ = ["IN_TREE", "MIGRATED_PLUGINS_ANNOTATION", "inline_volume", "migrated_mask", "provisioner_driver",
           "pv_volume"]

MIGRATED_PLUGINS_ANNOTATION = "storage.alpha.kubernetes.io/migrated-plugins"
ZONE, BETA_ZONE = "topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone"
IN_TREE = {  # spec field -> (in-tree plugin, CSI driver)
    "aws_elastic_block_store": ("kubernetes.io/aws-ebs", "ebs.csi.aws.com"),
    "gce_persistent_disk": ("kubernetes.io/gce-pd", "pd.csi.storage.gke.io"),
    "azure_disk": ("kubernetes.io/azure-disk", "disk.csi.azure.com"),
    "cinder": ("kubernetes.io/cinder", "cinder.csi.openstack.org"),
    "portworx_volume": ("kubernetes.io/portworx-volume", "pxd.portworx.com"),
}
ALWAYS_ON = {"kubernetes.io/aws-ebs", "kubernetes.io/gce-pd", "kubernetes.io/azure-disk", "kubernetes.io/cinder"}
NEVER_ON = {"kubernetes.io/azure-file", "kubernetes.io/vsphere-volume"}  # migratable, not in isCSIMigrationOn
DRIVER_OF = {plugin: driver for plugin, driver in IN_TREE.values()}

Migrated = tuple[str, str, str]  # (CSI driver, volume handle, in-tree plugin)


def _field(source: Any, name: str) -> str:
    if isinstance(source, Mapping):
        return str(source.get(name) or "")
    return str(getattr(source, {"volumeID": "volume_id", "pdName": "pd_name"}.get(name, name), "") or "")


def _ebs_handle(volume_id: str) -> str:
    """``KubernetesVolumeIDToEBSVolumeID``: a bare id, or the path of an ``aws://`` URL."""
    if not volume_id.startswith("aws://"):
        return volume_id
    rest = volume_id[len("aws://"):]
    return rest.split("/", 1)[1].strip("/") if "/" in rest else ""


def _gce_handle(pd: str, labels: Mapping[str, str] | None) -> str:
    zones = ((labels or {}).get(ZONE) or (labels or {}).get(BETA_ZONE) or "").split("__")
    if len(zones) > 1:
        regions = {z.rsplit("-", 1)[0] for z in zones}
        region = regions.pop() if len(regions) == 1 else "UNSPECIFIED"
        return f"projects/UNSPECIFIED/regions/{region}/disks/{pd}"
    return f"projects/UNSPECIFIED/zones/{zones[0] or 'UNSPECIFIED'}/disks/{pd}"


def _translate(field: str, source: Any, labels: Mapping[str, str] | None) -> Migrated | None:
    plugin, driver = IN_TREE[field]
    if field == "aws_elastic_block_store":
        handle = _ebs_handle(_field(source, "volumeID"))
    elif field == "gce_persistent_disk":
        handle = _gce_handle(_field(source, "pdName"), labels)
    elif field == "azure_disk":
        handle = _field(source, "diskURI")
    else:
        handle = _field(source, "volumeID")
    return (driver, handle, plugin) if handle else None


def pv_volume(pv: PersistentVolume) -> Migrated | None:
    """``TranslateInTreePVToCSI`` for the PV's in-tree source, or None (not migratable)."""
    for field in IN_TREE:
        source = getattr(pv.spec, field)
        if source is not None:
            return _translate(field, source, pv.metadata.labels)
    return None


def inline_volume(vol: Volume) -> Migrated | None:
    """``TranslateInTreeInlineVolumeToCSI`` for a pod's inline in-tree volume, or None."""
    for field in IN_TREE:
        source = getattr(vol, field, None)
        if source is not None:
            return _translate(field, source, None)
    return None


def provisioner_driver(provisioner: str) -> tuple[str, str] | None:
    """``getCSIDriverInfoFromSC``: (CSI driver, in-tree plugin or "") for a class's provisioner; None for a
    migratable provisioner that is never counted."""
    if provisioner in NEVER_ON:
        return None
    if provisioner in DRIVER_OF:
        return DRIVER_OF[provisioner], provisioner
    return provisioner, ""


def migrated_mask(state: Any, cat: StorageCatalog, plugin: str) -> np.ndarray:  # a model.state.ClusterState
    """Per node: ``isCSIMigrationOn(csiNode, plugin)``."""
    out = np.zeros(state.num_nodes, dtype=bool)
    for i, name in enumerate(state.node_names):
        csi = cat.csi_nodes.get(name)
        if csi is None:
            continue
        if plugin in ALWAYS_ON:
            out[i] = True
        elif plugin == "kubernetes.io/portworx-volume":
            listed = csi.metadata.annotations.get(MIGRATED_PLUGINS_ANNOTATION, "")
            out[i] = plugin in listed.split(",")
    return out
