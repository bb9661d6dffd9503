"""Read the scheduler's inputs from a live cluster, read-only (the ``kube`` extra: the kubernetes client).

The same objects ``kubectl get nodes,pods,pdb,priorityclasses,namespaces,services,replicasets,
statefulsets,replicationcontrollers,pv,pvc,storageclass,csinode,csidriver,csistoragecapacities,volumeattachments -A -o json`` would list, fetched
as raw JSON so they go through the same validation as files. Only ``list`` calls are made, never for
Secrets, in pages of :data:`CHUNK` objects as kubectl lists (``--chunk-size``), each page's
``metadata.managedFields`` dropped as it arrives, so memory follows what is kept, not the largest list.
:func:`snapshot_list` keeps what such a read returned as one ``kind: List`` document, so a run can be
repeated offline.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import yaml

from ..errors import InputError
from .cluster import Cluster
from .loader import cluster_from_objects

__all__ = ["CHUNK", "LISTS", "check_snapshot_path", "list_live", "load_live", "snapshot_list", "write_snapshot"]

# (kind, apiVersion, API class, list method)
LISTS = [
    ("Node", "v1", "CoreV1Api", "list_node"),
    ("Pod", "v1", "CoreV1Api", "list_pod_for_all_namespaces"),
    ("Namespace", "v1", "CoreV1Api", "list_namespace"),
    ("Service", "v1", "CoreV1Api", "list_service_for_all_namespaces"),
    ("ReplicationController", "v1", "CoreV1Api", "list_replication_controller_for_all_namespaces"),
    ("PriorityClass", "scheduling.k8s.io/v1", "SchedulingV1Api", "list_priority_class"),
    ("PodDisruptionBudget", "policy/v1", "PolicyV1Api", "list_pod_disruption_budget_for_all_namespaces"),
    ("ReplicaSet", "apps/v1", "AppsV1Api", "list_replica_set_for_all_namespaces"),
    ("StatefulSet", "apps/v1", "AppsV1Api", "list_stateful_set_for_all_namespaces"),
    ("PersistentVolume", "v1", "CoreV1Api", "list_persistent_volume"),
    ("PersistentVolumeClaim", "v1", "CoreV1Api", "list_persistent_volume_claim_for_all_namespaces"),
    ("StorageClass", "storage.k8s.io/v1", "StorageV1Api", "list_storage_class"),
    ("CSINode", "storage.k8s.io/v1", "StorageV1Api", "list_csi_node"),
    ("CSIDriver", "storage.k8s.io/v1", "StorageV1Api", "list_csi_driver"),
    ("CSIStorageCapacity", "storage.k8s.io/v1", "StorageV1Api", "list_csi_storage_capacity_for_all_namespaces"),
    ("VolumeAttachment", "storage.k8s.io/v1", "StorageV1Api", "list_volume_attachment"),
    ("DeviceClass", "resource.k8s.io/v1", "ResourceV1Api", "list_device_class"),
    ("ResourceSlice", "resource.k8s.io/v1", "ResourceV1Api", "list_resource_slice"),
    ("ResourceClaim", "resource.k8s.io/v1", "ResourceV1Api", "list_resource_claim_for_all_namespaces"),
    ("ResourceClaimTemplate", "resource.k8s.io/v1", "ResourceV1Api",
     "list_resource_claim_template_for_all_namespaces"),
]
# served only where the API group is (resource.k8s.io/v1 since 1.34): a 404 there means no such objects
OPTIONAL = frozenset({"DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate"})

CHUNK = 500
"""Objects per list call, kubectl's default ``--chunk-size``; later pages follow ``metadata.continue``,
from the same consistent read of the API server."""


def _client() -> tuple[Any, Any]:
    try:
        from kubernetes import client, config  # type: ignore[import-not-found]
    except ImportError:
        raise InputError("reading a live cluster needs the kubernetes client: pip install 'optisched[kube]'") from None
    return client, config


def _source(kubeconfig: str | None, context: str | None) -> str:
    return f"kubeconfig {kubeconfig or '~/.kube/config'}" + (f" context {context}" if context else "")


def list_live(kubeconfig: str | None = None, context: str | None = None) -> list[dict]:
    """The raw objects of every kind in :data:`LISTS` from the cluster of ``context`` in ``kubeconfig``
    (defaults as kubectl's), each with its ``kind`` and ``apiVersion`` (list items carry neither)."""
    return read_live(kubeconfig, context)[0]


def read_live(kubeconfig: str | None = None, context: str | None = None) -> tuple[list[dict], str | None]:
    """:func:`list_live`'s objects and the API server's ``/version`` ``gitVersion`` (``v1.36.2``; None when
    it does not answer it), read through one client."""
    client, config = _client()
    source = _source(kubeconfig, context)
    try:
        config.load_kube_config(config_file=kubeconfig, context=context)
    except Exception as e:  # noqa: BLE001 - ConfigException, FileNotFoundError, ... all mean the same to a user
        raise InputError(f"cannot load the kubeconfig: {e}", source=source) from None
    api_client = client.ApiClient()
    objs: list[dict] = []
    for kind, api_version, api_name, method in LISTS:
        list_call = getattr(getattr(client, api_name)(api_client), method)
        for item in _pages(list_call, kind, source):
            item.setdefault("kind", kind)
            item.setdefault("apiVersion", api_version)
            objs.append(item)
    return objs, _server_version(client, api_client)


def _pages(list_call: Any, kind: str, source: str) -> Iterator[dict]:
    """The items of one list, page by page, without their managedFields."""
    token = None
    while True:
        try:
            resp = list_call(limit=CHUNK, _preload_content=False, **({"_continue": token} if token else {}))
            data = json.loads(resp.data)
        except Exception as e:  # noqa: BLE001 - ApiException, urllib3 and TLS errors alike
            if kind in OPTIONAL and getattr(e, "status", None) == 404:
                return
            raise InputError(f"listing {kind} objects failed: {e}", source=source) from None
        for item in data.get("items") or []:
            if isinstance(item.get("metadata"), dict):
                item["metadata"].pop("managedFields", None)
            yield item
        token = (data.get("metadata") or {}).get("continue")
        if not token:
            return


def _server_version(client: Any, api_client: Any) -> str | None:
    try:
        data = json.loads(client.VersionApi(api_client).get_code(_preload_content=False).data)
    except Exception:  # noqa: BLE001 - a server that hides /version: the run follows the default release
        return None
    version = data.get("gitVersion") if isinstance(data, dict) else None
    return version if isinstance(version, str) and version else None


def load_live(kubeconfig: str | None = None, context: str | None = None) -> Cluster:
    """List the objects from the cluster of ``context`` in ``kubeconfig`` (defaults as kubectl's), with
    the API server's version."""
    source = _source(kubeconfig, context)
    objects, version = read_live(kubeconfig, context)
    cluster = cluster_from_objects(objects, source=source)
    if version is not None:
        cluster.kubernetes_version = (version, f"{source} /version")
    return cluster


def snapshot_list(objects: list[dict], version: str | None = None) -> dict[str, Any]:
    """``objects`` as one ``kind: List`` document, without ``metadata.managedFields`` (which kubectl
    hides too and nothing here reads); everything else, status included, as the API server sent it.
    ``version``: the API server's, kept as the List's top-level ``kubernetesVersion``."""
    items = []
    for obj in objects:
        meta = obj.get("metadata")
        if isinstance(meta, dict) and "managedFields" in meta:
            obj = {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
        items.append(obj)
    doc: dict[str, Any] = {"apiVersion": "v1", "kind": "List", "metadata": {}, "items": items}
    if version is not None:
        doc["kubernetesVersion"] = version
    return doc


def check_snapshot_path(path: str, kubeconfig: str | None, force: bool) -> None:
    """Refuse, before anything is read, an output that exists (unless ``force``), that is the kubeconfig,
    or whose folder is missing."""
    if path == "-":
        return
    out = Path(path).expanduser()
    kc = Path(kubeconfig or "~/.kube/config").expanduser()
    if out.exists() and kc.exists() and out.resolve() == kc.resolve():
        raise InputError("is the kubeconfig this snapshot reads; choose another output", source=path)
    if out.exists() and not force:
        raise InputError("exists; give --force to overwrite it", source=path)
    if not out.parent.is_dir():
        raise InputError(f"folder {str(out.parent)!r} does not exist", source=path)


def write_snapshot(objects: list[dict], path: str, stdout: IO[str] | None = None, version: str | None = None) -> None:
    """Write :func:`snapshot_list` of ``objects`` (and the API server's ``version``) as JSON (``.json``) or
    YAML (anything else; ``-`` is stdout). A file is written beside its target and renamed into place,
    so no half snapshot is left."""
    doc = snapshot_list(objects, version)
    if path == "-":
        _dump(doc, stdout or sys.stdout, "yaml")
        return
    out = Path(path).expanduser()
    fmt = "json" if out.suffix == ".json" else "yaml"
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            _dump(doc, f, fmt)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _dump(doc: dict[str, Any], stream: IO[str], fmt: str) -> None:
    if fmt == "json":
        json.dump(doc, stream, indent=1)
        stream.write("\n")
        return
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    yaml.dump(doc, stream, Dumper=dumper, sort_keys=False, default_flow_style=False)
